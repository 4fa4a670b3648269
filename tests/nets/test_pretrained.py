"""``backbone_config.pretrained``: HuggingFace encoders through ``transformers`` (extra ``hf``).

A random-init model is built offline from an explicit ConvNeXtV2 config (no download:
the HF config sits in ``pretrained_backbone/config.json`` of the model folder). Its
state-dict layout is sleap-nn 0.3.5's, as its own ``Model`` wrote it for the same
config (``tools/pretrained_parity.py``, which also compares outputs: equal). Skipped
without ``transformers``, except the refusals that must work without it.
"""

from __future__ import annotations

import builtins
import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from sleap_infer.core.errors import ConfigError
from sleap_infer.core.options import PredictOptions
from sleap_infer.layers import build_layer
from sleap_infer.model.checkpoint import save_checkpoint
from sleap_infer.model.config import parse_config
from sleap_infer.model.loader import load_model
from sleap_infer.nets import build_network
from sleap_infer.runtimes import backend_maker

from cli_runs import run_cli
from model_factory import config_dict

HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
needs_transformers = pytest.mark.skipif(not HAS_TRANSFORMERS, reason="transformers not installed")

# A tiny ConvNeXtV2 (4 stages of one block, widths 8..32), as AutoConfig would save it.
HF_CONFIG = {
    "model_type": "convnextv2",
    "num_channels": 3,
    "depths": [1, 1, 1, 1],
    "hidden_sizes": [8, 16, 24, 32],
    "num_stages": 4,
    "patch_size": 4,
    "stage_names": ["stem", "stage1", "stage2", "stage3", "stage4"],
}
PRETRAINED = {
    "source": "hf",
    "model_name": "facebook/convnextv2-nano-22k-224",  # never downloaded
    "weights": True,
    "mode": "auto",
    "in_channels": 3,
    "output_stride": 2,
    "max_stride": 32,
    "normalize": True,
}
# sleap-nn 0.3.5's Model for this config: every key outside the HF encoder, with shapes.
SLEAP_NN_KEYS = {
    "backbone.image_mean": (1, 3, 1, 1),
    "backbone.image_std": (1, 3, 1, 1),
    **{
        f"backbone.dec.decoder_stack.{j}.blocks.pretrained_dec{j}_s{s}_to_s{s // 2}_{name}": shape
        for j, s, convs in ((0, 32, 2), (1, 16, 2), (2, 8, 2), (3, 4, 1))
        for k in range(convs)
        for name, shape in (
            (f"refine_conv{k}.weight", None),
            (f"refine_conv{k}.bias", None),
        )
    },
    "head_layers.0.CentroidConfmapsHead.0.weight": (1, 8, 1, 1),
    "head_layers.0.CentroidConfmapsHead.0.bias": (1,),
}
REFINE_SHAPES = {  # (out, in) of each refine conv: skip + upsampled, then out
    "pretrained_dec0_s32_to_s16_refine_conv0": (32, 56),
    "pretrained_dec0_s32_to_s16_refine_conv1": (32, 32),
    "pretrained_dec1_s16_to_s8_refine_conv0": (16, 48),
    "pretrained_dec1_s16_to_s8_refine_conv1": (16, 16),
    "pretrained_dec2_s8_to_s4_refine_conv0": (8, 24),
    "pretrained_dec2_s8_to_s4_refine_conv1": (8, 8),
    "pretrained_dec3_s4_to_s2_refine_conv0": (8, 8),  # past the last skip: one conv
}
SLEAP_NN_ENCODER_KEYS = 66
FRAMES = np.random.default_rng(5).integers(0, 256, (2, 64, 96, 1), dtype=np.uint8)


def _raw(pretrained: dict[str, Any] | None = None) -> dict[str, Any]:
    raw = config_dict("centroid")
    raw["model_config"]["backbone_config"] = {
        "unet": None,
        "convnext": None,
        "swint": None,
        "pretrained": {**PRETRAINED, **(pretrained or {})},
    }
    confmaps = raw["model_config"]["head_configs"]["centroid"]["confmaps"]
    confmaps["use_sigmoid_activation"] = True
    return raw


def _folder(tmp_path: Path, raw: dict[str, Any], hf_config: dict | None = HF_CONFIG) -> Path:
    folder = tmp_path / "pretrained_centroid"
    folder.mkdir(parents=True, exist_ok=True)
    if hf_config is not None:
        (folder / "pretrained_backbone").mkdir(exist_ok=True)
        (folder / "pretrained_backbone" / "config.json").write_text(json.dumps(hf_config))
    (folder / "training_config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return folder


def _model_folder(tmp_path: Path, raw: dict[str, Any] | None = None) -> Path:
    raw = copy.deepcopy(raw or _raw())
    folder = _folder(tmp_path, raw)
    torch.manual_seed(0)
    net = build_network(parse_config(raw, source=str(folder / "training_config.yaml")))
    net.backbone.image_mean.copy_(torch.tensor([0.5, 0.4, 0.3]).view(1, 3, 1, 1))
    net.backbone.image_std.copy_(torch.tensor([0.2, 0.25, 0.3]).view(1, 3, 1, 1))
    save_checkpoint(folder / "best.ckpt", net.state_dict())
    return folder


@needs_transformers
def test_loads_strictly_with_sleap_nn_layout(tmp_path: Path) -> None:
    model = load_model(_model_folder(tmp_path))
    state = model.network.state_dict()
    encoder = [k for k in state if k.startswith("backbone.enc.")]
    assert len(encoder) == SLEAP_NN_ENCODER_KEYS
    rest = {k: tuple(v.shape) for k, v in state.items() if not k.startswith("backbone.enc.")}
    assert set(rest) == set(SLEAP_NN_KEYS)
    for key, shape in rest.items():
        conv = key.split(".blocks.")[-1].rsplit(".", 1)[0]
        if conv in REFINE_SHAPES:
            out, cin = REFINE_SHAPES[conv]
            assert shape == ((out, cin, 3, 3) if key.endswith("weight") else (out,)), key
        else:
            assert shape == SLEAP_NN_KEYS[key], key
    # The normalisation statistics are the checkpoint's.
    np.testing.assert_allclose(model.network.backbone.image_std.flatten(), [0.2, 0.25, 0.3])


@needs_transformers
def test_the_encoder_is_transformers_own_and_normalised(tmp_path: Path) -> None:
    """Our encoder is transformers' ConvNextV2Backbone on (x - mean) / std of RGB-repeated
    gray frames; the maps are the sigmoid of the head's logits."""
    import transformers

    model = load_model(_model_folder(tmp_path))
    net = model.network
    hf_config = transformers.ConvNextV2Config(**HF_CONFIG)
    hf_config.out_indices = (0, 1, 2, 3, 4)
    reference = transformers.ConvNextV2Backbone(hf_config).eval()
    reference.load_state_dict(
        {k.removeprefix("backbone.enc."): v for k, v in net.state_dict().items() if ".enc." in k}
    )
    x = torch.from_numpy(FRAMES).permute(0, 3, 1, 2).float() / 255.0
    rgb = x.repeat(1, 3, 1, 1)
    normalised = (rgb - torch.tensor([0.5, 0.4, 0.3]).view(1, 3, 1, 1)) / torch.tensor(
        [0.2, 0.25, 0.3]
    ).view(1, 3, 1, 1)
    with torch.no_grad():
        expected = reference(normalised).feature_maps
        got = net.backbone.enc(normalised).feature_maps
        for a, b in zip(got, expected):
            assert torch.equal(a, b)
        maps = net(torch.from_numpy(FRAMES).permute(0, 3, 1, 2))["CentroidConfmapsHead"]
        feats = net.backbone(rgb)
        logits = net.head_layers[0].CentroidConfmapsHead[0](feats.levels[-1])
    assert feats.strides == [16, 8, 4, 2]
    torch.testing.assert_close(maps, torch.sigmoid(logits), atol=1e-6, rtol=0)


@needs_transformers
@pytest.mark.parametrize("runtime", ["onnx", "openvino"])
def test_exports_match_torch(tmp_path: Path, runtime: str) -> None:
    needs = {"onnx": "onnxruntime", "openvino": "openvino"}[runtime]
    if importlib.util.find_spec(needs) is None:
        pytest.skip(f"{needs} is not installed")
    model = load_model(_model_folder(tmp_path))
    options = PredictOptions(peak_threshold=0.0, max_instances=8)
    ref = build_layer([model], backend_maker("torch", "cpu"), options).predict(FRAMES)
    got = build_layer([model], backend_maker(runtime, "cpu"), options).predict(FRAMES)
    assert ref.valid.sum() >= 8
    np.testing.assert_array_equal(got.valid, ref.valid)
    np.testing.assert_allclose(got.extras["centroids"], ref.extras["centroids"], atol=1e-3)
    np.testing.assert_allclose(got.instance_scores, ref.instance_scores, atol=1e-5)


@needs_transformers
def test_info_shows_what_changes_the_forward_pass(tmp_path: Path, capsys) -> None:
    folder = _model_folder(tmp_path)
    out = tmp_path / "info.json"
    code, _ = run_cli(capsys, "info", folder, "--json", out)
    assert code == 0
    (facts,) = json.loads(out.read_text())["models"]
    steps = "\n".join(facts["forward_pass"])
    assert "pretrained HuggingFace backbone facebook/convnextv2-nano-22k-224" in steps
    assert "pretrained_backbone/config.json" in steps
    assert "mean [0.5, 0.4, 0.3]" in steps and "std [0.2, 0.25, 0.3]" in steps
    assert "CentroidConfmapsHead: sigmoid after the head (use_sigmoid_activation: true)" in steps
    assert "hf_config" not in facts["backbone"]


@needs_transformers
def test_no_hf_config_is_one_line_and_no_download(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty_hf_home"))
    folder = _folder(tmp_path, _raw(), hf_config=None)
    (folder / "best.ckpt").write_bytes(b"")
    with pytest.raises(ConfigError) as err:
        load_model(folder)
    message = str(err.value)
    assert "\n" not in message
    assert str(folder / "pretrained_backbone" / "config.json") in message
    assert "never download" in message


def test_without_transformers_one_line_names_the_extra(tmp_path: Path, monkeypatch) -> None:
    real_import = builtins.__import__

    def no_transformers(name, *args, **kwargs):
        if name == "transformers" or name.startswith("transformers."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_transformers)
    folder = _folder(tmp_path, _raw())
    config = parse_config(_raw(), source=str(folder / "training_config.yaml"))  # JSON only
    with pytest.raises(ConfigError, match=r"needs transformers: pip install 'sleap-infer\[hf\]'"):
        build_network(config)
    bare = _folder(tmp_path / "bare", _raw(), hf_config=None)
    with pytest.raises(ConfigError, match=r"pip install 'sleap-infer\[hf\]'"):
        parse_config(_raw(), source=str(bare / "training_config.yaml"))
