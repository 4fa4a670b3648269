"""Stem-strided UNets (issue 50 item 2): sleap-nn 0.3.5 trains and predicts with
``stem_stride: 2``; ours rebuilds the same layers, loads their checkpoints strictly and
computes the same outputs."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest
import torch

from sleap_infer.core.config import UNetConfig
from sleap_infer.core.errors import ConfigError
from sleap_infer.model.config import parse_config
from sleap_infer.nets.unet import UNet

import scene
from cli_runs import run_cli
from model_factory import config_dict, write_model_dir

HERE = Path(__file__).parent
KEYS = HERE / "sleap_nn_0_3_5_stem_unet_keys.txt"
BENCH_PYTHON = Path("/work/main/.bench-venv/sleap-nn/bin/python")

# The two layouts whose state dicts KEYS lists, in its order.
LAYOUTS = [
    UNetConfig(filters=8, filters_rate=1.5, max_stride=16, stem_stride=2, output_stride=2),
    UNetConfig(
        filters=8,
        filters_rate=2.0,
        max_stride=16,
        stem_stride=2,
        output_stride=1,
        up_interpolate=False,
    ),
]


def sleap_nn_keys() -> list[list[tuple[str, tuple[int, ...]]]]:
    """KEYS as one ``[(key, shape)]`` list per layout."""
    layouts: list[list[tuple[str, tuple[int, ...]]]] = []
    for line in KEYS.read_text().splitlines():
        if line.startswith("#"):
            if not layouts or layouts[-1]:
                layouts.append([])
            continue
        key, shape = line.split()
        layouts[-1].append((key, tuple(int(n) for n in shape.split("x"))))
    return layouts


@pytest.mark.parametrize("index", [0, 1])
def test_state_dict_is_sleap_nns_key_for_key(index: int) -> None:
    ours = [(k, tuple(v.shape)) for k, v in UNet(LAYOUTS[index]).state_dict().items()]
    assert ours == sleap_nn_keys()[index]


def test_strides_count_from_twice_the_max_stride() -> None:
    """The stem's pool adds a level: deepest 32 for max_stride 16; heads attach by stride."""
    net = UNet(LAYOUTS[0]).eval()
    assert net.max_stride == 32
    assert net.stride_to_filters == {32: 40, 16: 27, 8: 18, 4: 12, 2: 8}
    out = net(torch.rand(1, 1, 48, 80))
    assert out.strides == [16, 8, 4, 2]
    assert [tuple(x.shape) for x in out.levels][-1] == (1, 8, 24, 40)
    # Output stride 1: the last block has no skip left, one conv (sleap-nn's layout).
    last = UNet(LAYOUTS[1]).decoders[0].decoder_stack[-1]
    assert [n for n, _ in last.blocks.named_children()][-2:] == [
        "stack0_dec4_s2_to_s1_refine_conv0",
        "stack0_dec4_s2_to_s1_refine_conv0_act_relu",
    ]


def test_stem_stride_two_parses_and_four_is_refused_in_one_line() -> None:
    config = parse_config(config_dict("single_instance", unet={"stem_stride": 2}))
    assert config.backbone.stem_stride == 2  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="stem_stride 4: sleap-nn runs stem-strided UNets"):
        parse_config(config_dict("single_instance", unet={"stem_stride": 4}))
    with pytest.raises(ConfigError, match="max_stride must be at least 4"):
        parse_config(config_dict("single_instance", unet={"stem_stride": 2, "max_stride": 2}))


@pytest.mark.skipif(not BENCH_PYTHON.exists(), reason="sleap-nn bench venv absent")
@pytest.mark.parametrize("index", [0, 1])
def test_outputs_equal_sleap_nns_unet(tmp_path: Path, index: int) -> None:
    cfg = LAYOUTS[index]
    torch.manual_seed(index)
    net = UNet(cfg).eval()
    x = torch.rand(1, 1, 48, 80)  # not a multiple of 32: exercises the same-pad pools
    config = dataclasses.asdict(cfg)
    torch.save({"config": config, "state": net.state_dict(), "x": x}, tmp_path / "in.pt")
    script = HERE / "sleap_nn_unet_reference.py"
    subprocess.run(
        [str(BENCH_PYTHON), str(script), str(tmp_path / "in.pt"), str(tmp_path / "out.pt")],
        check=True,
        timeout=300,
    )
    ref = torch.load(tmp_path / "out.pt")
    with torch.no_grad():
        out = net(x)
    assert out.strides == ref["strides"]
    assert torch.equal(out.middle, ref["middle"])
    for ours, theirs in zip(out.levels, ref["outputs"], strict=True):
        assert torch.equal(ours, theirs)


def test_info_and_predict_run_a_stem_strided_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Both used to exit 1 with "sleap-nn cannot run stem-strided UNets"."""
    raw = config_dict("single_instance", unet={"stem_stride": 2, "max_stride": 16})
    model = write_model_dir(tmp_path / "model", raw, seed=5)
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=3)
    code, err = run_cli(capsys, "info", model)
    assert code == 0, err
    out = tmp_path / "v.slp"
    code, err = run_cli(
        capsys, "predict", video, "-m", model, "--device", "cpu", "-o", out, "--progress", "none"
    )
    assert code == 0 and out.exists(), err
