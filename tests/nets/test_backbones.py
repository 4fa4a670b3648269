"""ConvNeXt and Swin-T backbones: strict loading, layout, strides and the block maths."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from sleap_infer.core.errors import ConfigError
from sleap_infer.model.config import parse_config
from sleap_infer.model.loader import load_model
from sleap_infer.nets import build_network
from sleap_infer.nets.torchvision_blocks import (
    ShiftedWindowAttention,
    relative_position_index,
    shift_attention_mask,
)

from model_factory import TINY_CONVNEXT, TINY_SWINT, config_dict, write_model_dir

BACKBONES = {"convnext": TINY_CONVNEXT, "swint": TINY_SWINT}


def _randomize(module: torch.nn.Module, seed: int = 0) -> None:
    """Random values everywhere (layer_scale starts at 1e-6, which would hide the blocks)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.2)


@pytest.mark.parametrize("backbone", list(BACKBONES))
@pytest.mark.parametrize("model_type", ["single_instance", "bottomup", "multi_class_topdown"])
def test_self_built_checkpoint_loads_strictly(
    tmp_path: Path, backbone: str, model_type: str
) -> None:
    raw = config_dict(model_type, backbone=(backbone, BACKBONES[backbone]))
    model = load_model(write_model_dir(tmp_path / "m", raw, seed=1))
    assert model.config.backbone_type == backbone
    assert model.config.max_stride == 32
    assert sum(p.numel() for p in model.network.parameters()) == model.config.total_params
    again = load_model(tmp_path / "m")
    x = torch.randint(0, 255, (2, 1, 64, 96), dtype=torch.uint8)
    out_a, out_b = model.network(x), again.network(x)
    for name in out_a:
        assert torch.equal(out_a[name], out_b[name]), name
    if model_type == "bottomup":
        assert out_a["MultiInstanceConfmapsHead"].shape == (2, 3, 32, 48)  # stride 2
        assert out_a["PartAffinityFieldsHead"].shape == (2, 4, 16, 24)  # stride 4
    if model_type == "multi_class_topdown":
        probs = out_a["ClassVectorsHead"]
        assert probs.shape == (2, 2)
        torch.testing.assert_close(probs.sum(dim=1), torch.ones(2))


@pytest.mark.parametrize("backbone", list(BACKBONES))
def test_decoder_strides_and_widths(backbone: str) -> None:
    cfg = parse_config(config_dict("single_instance", backbone=(backbone, BACKBONES[backbone])))
    net = build_network(cfg).eval()
    widths = {"convnext": [8, 16, 24, 32], "swint": [8, 16, 32, 64]}[backbone]
    # Middle at stride 32 is deepest * rate; decoder widths shrink to the stem width.
    expected = {32: int(widths[-1] * 1.5), 16: int(8 * 1.5**3), 8: int(8 * 1.5**2), 4: 12, 2: 8}
    assert net.backbone.stride_to_filters == expected
    with torch.inference_mode():
        feats = net.backbone(torch.rand(1, 1, 64, 64))
    assert feats.strides == [16, 8, 4, 2]
    assert [f.shape[-1] for f in feats.levels] == [4, 8, 16, 32]
    assert [f.shape[1] for f in feats.levels] == [expected[s] for s in feats.strides]
    assert feats.middle.shape == (1, expected[32], 2, 2)


def test_output_stride_one_adds_a_block_without_skip() -> None:
    settings = dict(TINY_CONVNEXT, output_stride=1)
    raw = config_dict("single_instance", backbone=("convnext", settings))
    raw["model_config"]["head_configs"]["single_instance"]["confmaps"]["output_stride"] = 1
    net = build_network(parse_config(raw))
    keys = [k for k in net.state_dict() if "decoder_stack.4." in k]
    # One refine conv and no concatenation: its input is the previous block's width.
    assert keys == [
        "backbone.dec.decoder_stack.4.blocks.dec4_s2_to_s1_refine_conv0.weight",
        "backbone.dec.decoder_stack.4.blocks.dec4_s2_to_s1_refine_conv0.bias",
    ]
    assert net.state_dict()[keys[0]].shape == (8, 8, 3, 3)
    out = net(torch.zeros(1, 1, 64, 64, dtype=torch.uint8))
    assert out["SingleInstanceConfmapsHead"].shape == (1, 3, 64, 64)


@pytest.mark.parametrize(
    ("backbone", "n_keys", "millions"), [("convnext", 200, 87.9), ("swint", 205, 87.6)]
)
def test_named_tiny_layouts_match_sleap_nn(backbone: str, n_keys: int, millions: float) -> None:
    settings = {"model_type": "tiny", "output_stride": 2, "in_channels": 1}
    cfg = parse_config(config_dict("single_instance", backbone=(backbone, settings)))
    with torch.device("meta"):  # 88M parameters: shapes only
        net = build_network(cfg)
    state = net.state_dict()
    assert len(state) == n_keys  # counts sleap-nn's tiny os-2 checkpoints have (with one head)
    assert round(sum(p.numel() for p in net.parameters()) / 1e6, 1) == millions
    if backbone == "convnext":
        assert state["backbone.enc.features.0.0.weight"].shape == (96, 1, 4, 4)
        assert state["backbone.enc.features.5.8.layer_scale"].shape == (384, 1, 1)
        assert state["backbone.enc.features.6.1.weight"].shape == (768, 384, 2, 2)
    else:
        prefix = "backbone.enc.features.5.3.attn."
        assert state[prefix + "relative_position_bias_table"].shape == (169, 12)
        assert state[prefix + "relative_position_index"].shape == (49 * 49,)
        assert state["backbone.enc.features.6.reduction.weight"].shape == (768, 1536)
        assert state["backbone.enc.norm.weight"].shape == (768,)
    assert "backbone.middle_blocks.1.blocks.convnext_middle_contract_conv0.weight" in state


def test_unsupported_backbone_settings_are_rejected() -> None:
    bad = dict(TINY_CONVNEXT, block_contraction=True)
    with pytest.raises(ConfigError, match="block_contraction"):
        parse_config(config_dict("single_instance", backbone=("convnext", bad)))
    bad = dict(TINY_SWINT, arch={"embed": 8, "depths": [2, 2, 2, 2], "num_heads": [3, 2, 2, 4]})
    with pytest.raises(ConfigError, match="not divisible by 3 heads"):
        parse_config(config_dict("single_instance", backbone=("swint", bad)))
    bad = dict(TINY_CONVNEXT, arch={"depths": [1, 1, 1], "channels": [8, 16, 24]})
    with pytest.raises(ConfigError, match="4 stages"):
        parse_config(config_dict("single_instance", backbone=("convnext", bad)))


def test_relative_position_index_values() -> None:
    idx = relative_position_index((2, 2)).reshape(4, 4)
    # Token 0 = (0, 0), token 3 = (1, 1); table is (3 x 3) row-major over (dy + 1, dx + 1).
    assert idx[0].tolist() == [4, 3, 1, 0]
    assert idx[3].tolist() == [8, 7, 5, 4]
    assert idx.diagonal().tolist() == [4, 4, 4, 4]


def test_shift_mask_separates_wrapped_tokens() -> None:
    # 4x4 map, 2x2 windows, shift (1, 1): the last window mixes all four corner bands.
    mask = shift_attention_mask(4, 4, (2, 2), (1, 1), torch.device("cpu"), torch.float32)
    assert mask.shape == (4, 4, 4)
    assert torch.count_nonzero(mask[0]) == 0  # top-left window: no wrapped tokens
    assert (mask[3] == -100).sum() == 12  # four tokens from four bands: only self pairs are 0
    # Shift along rows only: columns are never split.
    rows_only = shift_attention_mask(4, 4, (2, 2), (1, 0), torch.device("cpu"), torch.float32)
    assert torch.count_nonzero(rows_only[0]) == 0
    assert (rows_only[2] == -100).sum() == 8  # rows from two bands, same columns


def test_window_attention_equals_plain_attention_on_one_window() -> None:
    torch.manual_seed(0)
    attn = ShiftedWindowAttention(8, (3, 3), (0, 0), num_heads=2)
    _randomize(attn)
    x = torch.randn(2, 3, 3, 8)
    with torch.no_grad():
        got = attn(x)
        tokens = x.reshape(2, 9, 8)
        q, k, v = attn.qkv(tokens).reshape(2, 9, 3, 2, 4).permute(2, 0, 3, 1, 4)
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=attn.position_bias())
        ref = attn.proj(ref.transpose(1, 2).reshape(2, 9, 8)).reshape(2, 3, 3, 8)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)


def test_window_attention_pads_odd_maps() -> None:
    torch.manual_seed(0)
    attn = ShiftedWindowAttention(8, (3, 3), (1, 1), num_heads=2)
    _randomize(attn)
    x = torch.randn(1, 5, 7, 8)
    with torch.no_grad():
        out = attn(x)
        # Zero padding to whole windows happens inside: an explicitly padded map gives the
        # same values on the original 5x7 area.
        padded = attn(F.pad(x, (0, 0, 0, 2, 0, 1)))
    assert out.shape == x.shape
    torch.testing.assert_close(out, padded[:, :5, :7], atol=1e-6, rtol=1e-6)
    assert not torch.allclose(out, padded[:, 1:6, 1:8])


def test_blocks_match_torchvision() -> None:
    """Same weights, same outputs as torchvision's modules (runs where torchvision imports)."""
    tv_convnext = pytest.importorskip("torchvision.models.convnext")
    tv_swin = pytest.importorskip("torchvision.models.swin_transformer")
    from sleap_infer.nets import torchvision_blocks as ours

    torch.manual_seed(0)
    pairs: list[tuple[torch.nn.Module, torch.nn.Module, torch.Tensor]] = [
        (
            ours.CNBlock(16),
            tv_convnext.CNBlock(16, layer_scale=1e-6, stochastic_depth_prob=0.0),
            torch.randn(2, 16, 9, 11),
        ),
        (
            ours.LayerNorm2d(16, eps=1e-6),
            tv_convnext.LayerNorm2d(16, eps=1e-6),
            torch.randn(2, 16, 5, 6),
        ),
        (ours.PatchMerging(8), tv_swin.PatchMerging(8), torch.randn(2, 7, 9, 8)),
    ]
    # No shift, full shift, a shift along one axis only (window covers the other), odd sizes.
    for shape, shift in [
        ((2, 8, 8, 16), (0, 0)),
        ((2, 8, 8, 16), (2, 2)),
        ((1, 9, 4, 16), (2, 2)),
        ((1, 10, 13, 16), (2, 2)),
    ]:
        pairs.append(
            (
                ours.SwinTransformerBlock(16, 4, (4, 4), shift),
                tv_swin.SwinTransformerBlock(16, 4, [4, 4], list(shift)),
                torch.randn(*shape),
            )
        )
    for mine, theirs, x in pairs:
        _randomize(mine)
        theirs.load_state_dict(mine.state_dict(), strict=True)
        mine.eval()
        theirs.eval()
        with torch.no_grad():
            torch.testing.assert_close(mine(x), theirs(x), atol=1e-5, rtol=1e-5)
