"""Plain-ViT pyramid neck (sleap-nn's Case C) and ``timm/...`` backbones, against sleap-nn.

sleap-nn 0.3.5 builds its own ``Model`` for tiny random-init encoders whose HF config sits
in the model folder (``sleap_nn_pretrained_reference.py``, in one subprocess for every
case); we load its state dict with ``strict=True`` and compare every head output on the
same input. The bench venv has no ``transformers``, so the subprocess runs this venv's
Python with the bench venv's ``sleap_nn`` and ``omegaconf`` on its path. Skipped without
``transformers``, ``timm`` or the bench venv.
"""

from __future__ import annotations

import builtins
import copy
import importlib.util
import json
import os
import subprocess
import sys
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
from sleap_infer.nets.pretrained import import_timm
from sleap_infer.runtimes import backend_maker

from cli_runs import run_cli
from conftest import counter_frames, write_video
from model_factory import config_dict

HERE = Path(__file__).resolve().parent
BENCH_SITE = next(Path("/work/main/.bench-venv/sleap-nn/lib").glob("python3*/site-packages"), None)


def _has_deps() -> bool:
    if importlib.util.find_spec("transformers") is None:
        return False
    try:
        import_timm()  # timm also needs a (importable) torchvision
    except ConfigError:
        return False
    return True


HAS_DEPS = _has_deps()
HAS_BENCH = BENCH_SITE is not None and (BENCH_SITE / "sleap_nn").is_dir()
needs_deps = pytest.mark.skipif(
    not HAS_DEPS, reason="transformers, timm or torchvision not installed"
)
needs_bench = pytest.mark.skipif(not HAS_BENCH, reason="sleap-nn bench venv absent")

TIMM_VIT = {  # a 2-block, 32-wide ViT-Tiny layout; timm builds it without a download
    "model_type": "timm_wrapper",
    "architecture": "vit_tiny_patch16_224",
    "model_args": {"depth": 2, "embed_dim": 32, "num_heads": 2},
}
TIMM_CONVNEXT = {
    "model_type": "timm_wrapper",
    "architecture": "convnext_atto",
    "model_args": {"depths": [1, 1, 1, 1], "dims": [8, 16, 24, 32]},
}
DINOV2 = {"model_type": "dinov2", "hidden_size": 16, "num_hidden_layers": 2,
          "num_attention_heads": 2, "intermediate_size": 32, "patch_size": 8,
          "image_size": 64}  # fmt: skip
VIT = {
    "model_type": "vit",
    "hidden_size": 16,
    "num_hidden_layers": 3,
    "num_attention_heads": 2,
    "intermediate_size": 32,
    "patch_size": 16,
    "image_size": 64,
}  # fmt: skip (no ViTBackbone: encoder-only goes by hidden states)
# name: (encoder config, model type, output stride, pretrained settings)
CASES: dict[str, tuple[dict[str, Any], str, int, dict[str, Any]]] = {
    "timm_vit_centroid": (TIMM_VIT, "centroid", 2, {}),
    "timm_vit_bottomup_detail": (
        TIMM_VIT, "bottomup", 4, {"detail_stem": True, "detail_channels": [8, 8, 16]}
    ),
    "timm_vit_multi_class_bottomup_sfp": (TIMM_VIT, "multi_class_bottomup", 2,
                                          {"vit_neck": "sfp", "layers": [-1]}),
    "timm_vit_embedding": (TIMM_VIT, "embedding", 2, {}),
    "timm_convnext_single_instance": (TIMM_CONVNEXT, "single_instance", 2, {}),
    "dinov2_single_instance_sfp": (
        DINOV2, "single_instance", 2,
        {"mode": "decoder", "vit_neck": "sfp", "layers": [-1], "neck_channels": [8, 8, 16, 16]},
    ),
    "dinov2_multi_class_topdown": (DINOV2, "multi_class_topdown", 4, {"mode": "decoder"}),
    "vit_centered_instance_stride8": (VIT, "centered_instance", 4, {"token_stride": 8}),
    "vit_embedding": (VIT, "embedding", 2, {}),
}  # fmt: skip


def _pretrained(hf_dir: Path, stride: int, settings: dict[str, Any]) -> dict[str, Any]:
    return {
        "source": "hf", "model_name": str(hf_dir), "weights": False, "mode": "auto",
        "in_channels": 3, "output_stride": stride, "max_stride": 32, "normalize": True,
        "filters_rate": 2.0, "convs_per_block": 2, "kernel_size": 3, "up_interpolate": True,
        **settings,
    }  # fmt: skip


def _raw(hf_dir: Path, model_type: str, stride: int, settings: dict[str, Any]) -> dict[str, Any]:
    raw = config_dict(model_type)
    raw["model_config"]["backbone_config"] = {
        "unet": None, "convnext": None, "swint": None,
        "pretrained": _pretrained(hf_dir, stride, settings),
    }  # fmt: skip
    heads = raw["model_config"]["head_configs"][model_type]
    for block in heads.values():
        block["output_stride"] = stride if model_type != "embedding" else 32
    if model_type == "multi_class_topdown":
        heads["class_vectors"]["output_stride"] = 32
    return raw


def _write_hf_config(hf_dir: Path, encoder: dict[str, Any]) -> None:
    """As ``AutoConfig.save_pretrained`` writes it (what the loader reads offline)."""
    import transformers

    import_timm()  # timm's torchvision import, on this machine's mismatched wheels
    settings = dict(encoder)
    model_type = settings.pop("model_type")
    if model_type == "timm_wrapper":
        config = transformers.TimmWrapperConfig(**settings)
    else:
        config = transformers.AutoConfig.for_model(model_type, **settings)
    config.save_pretrained(hf_dir)


def _link_sleap_nn(target: Path) -> Path:
    """A folder with only sleap-nn and its config packages (not the bench venv's torch)."""
    target.mkdir()
    assert BENCH_SITE is not None
    for name in ("sleap_nn", "omegaconf", "antlr4"):
        (target / name).symlink_to(BENCH_SITE / name)
    return target


@pytest.fixture(scope="module")
def sleap_nn_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each case's model folder (our layout, sleap-nn's weights) and sleap-nn's outputs."""
    root = tmp_path_factory.mktemp("vit_parity")
    jobs = []
    for seed, (name, (encoder, model_type, stride, settings)) in enumerate(CASES.items()):
        folder = root / name
        hf_dir = folder / "pretrained_backbone"
        _write_hf_config(hf_dir, encoder)
        raw = _raw(hf_dir, model_type, stride, settings)
        (folder / "training_config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
        shape = [2, 1, 64, 64] if model_type == "embedding" else [2, 1, 64, 96]
        jobs.append(
            {
                "name": name,
                "model_type": model_type,
                "backbone": raw["model_config"]["backbone_config"]["pretrained"],
                "heads": copy.deepcopy(raw["model_config"]["head_configs"][model_type]),
                "seed": seed,
                "shape": shape,
                "out": str(root / f"{name}.pt"),
            }
        )
    (root / "jobs.json").write_text(json.dumps(jobs))
    paths = [str(_link_sleap_nn(root / "sleap_nn_path")), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    script = HERE / "sleap_nn_pretrained_reference.py"
    subprocess.run(
        [sys.executable, str(script), str(root / "jobs.json")], check=True, env=env, timeout=600
    )
    found = {}
    for job in jobs:
        ref = torch.load(job["out"])
        folder = root / job["name"]
        save_checkpoint(folder / "best.ckpt", ref["state"])
        found[job["name"]] = {"folder": folder, **ref}
    return found


@needs_deps
@needs_bench
@pytest.mark.parametrize("name", list(CASES))
def test_outputs_equal_sleap_nns_model(name: str, sleap_nn_models: dict[str, Any]) -> None:
    case = sleap_nn_models[name]
    network = load_model(case["folder"]).network  # strict: sleap-nn's keys and shapes
    with torch.no_grad():
        got = network(case["x"])
    assert set(got) == set(case["outputs"])
    for head, theirs in case["outputs"].items():
        assert got[head].shape == theirs.shape, head
        gap = (got[head] - theirs).abs().max().item()
        assert theirs.std() > 0, f"{name} {head}: a constant output tests nothing"
        assert gap <= 1e-5, f"{name} {head}: max |diff| {gap:.2e}"


def _folder(tmp_path: Path, encoder: dict[str, Any], model_type: str, stride: int,
            settings: dict[str, Any]) -> tuple[Path, dict[str, Any]]:  # fmt: skip
    folder = tmp_path / "model"
    _write_hf_config(folder / "pretrained_backbone", encoder)
    raw = _raw(Path("timm/not_downloaded"), model_type, stride, settings)
    (folder / "training_config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return folder, raw


@needs_deps
@pytest.mark.parametrize(
    ("encoder", "settings", "message"),
    [
        (DINOV2, {"mode": "decoder", "layers": [1, 2]}, "dpt neck taps one layer per pyramid"),
        (DINOV2, {"mode": "decoder", "layers": [3]}, "tap 3 is out of range"),
        (TIMM_VIT, {"vit_neck": "sfp", "layers": [1, 2]}, "reads exactly one tapped layer"),
        (TIMM_VIT, {"token_stride": 12}, "token_stride must be a power of two"),
        (TIMM_VIT, {"max_stride": 16, "token_stride": 16}, "max_stride 16 must be a multiple"),
        (TIMM_VIT, {"neck_channels": [8, 8]}, "neck_channels needs 4 counts"),
        (TIMM_VIT, {"detail_stem": True, "detail_channels": [8]}, "detail_channels must give 3"),
        (TIMM_VIT, {"vit_neck": "fpn"}, "vit_neck 'fpn' is not one of dpt, sfp"),
    ],
)
def test_neck_settings_sleap_nn_refuses_are_one_line(
    tmp_path: Path, encoder: dict[str, Any], settings: dict[str, Any], message: str
) -> None:
    folder, raw = _folder(tmp_path, encoder, "centroid", 2, settings)
    with pytest.raises(ConfigError, match=message) as err:
        build_network(parse_config(raw, source=str(folder / "training_config.yaml")))
    assert "\n" not in str(err.value)


@needs_deps
def test_a_hub_timm_config_without_model_type_is_read(tmp_path: Path) -> None:
    """A ``timm/...`` repo's own config.json has no model_type (``pretrained_cfg`` marks it)."""
    folder, raw = _folder(tmp_path, TIMM_VIT, "centroid", 2, {})
    path = folder / "pretrained_backbone" / "config.json"
    hub = {k: v for k, v in TIMM_VIT.items() if k != "model_type"}
    path.write_text(json.dumps({**hub, "num_classes": 1000, "pretrained_cfg": {"mean": [0.5]}}))
    network = build_network(parse_config(raw, source=str(folder / "training_config.yaml")))
    assert network.backbone.is_timm and network.backbone.token_path


@needs_deps
def test_info_and_predict_run_a_timm_vit_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, raw = _folder(tmp_path, TIMM_VIT, "centroid", 2, {"detail_stem": True})
    torch.manual_seed(0)
    network = build_network(parse_config(raw, source=str(folder / "training_config.yaml")))
    save_checkpoint(folder / "best.ckpt", network.state_dict())
    out = tmp_path / "info.json"
    code, _ = run_cli(capsys, "info", folder, "--json", out)
    assert code == 0
    (facts,) = json.loads(out.read_text())["models"]
    steps = "\n".join(facts["forward_pass"])
    assert "timm_wrapper" in steps and "vit_tiny_patch16_224" in steps
    assert "plain ViT: layers [1, 1, 2, 2] through the dpt pyramid neck" in steps
    assert "token stride 16" in steps and "detail stem" in steps
    video = write_video(tmp_path / "clip.mp4", counter_frames(6, 64, 96))
    predictions = tmp_path / "out.slp"
    code, err = run_cli(capsys, "predict", video, "-m", folder, "-o", predictions,
                        "--frames", "0-3", "--peak-threshold", "0")  # fmt: skip
    assert code == 0, err
    assert predictions.is_file()


@needs_deps
@pytest.mark.skipif(importlib.util.find_spec("onnxruntime") is None, reason="no onnxruntime")
@pytest.mark.parametrize(
    ("encoder", "settings"), [(TIMM_VIT, {"detail_stem": True}), (DINOV2, {"mode": "decoder"})]
)
def test_onnx_export_matches_torch(
    tmp_path: Path, encoder: dict[str, Any], settings: dict[str, Any]
) -> None:
    """The token resampling, the taps and the neck export (one graph per input shape)."""
    folder, raw = _folder(tmp_path, encoder, "centroid", 2, settings)
    # Random maps can be all negative; sigmoid maps always have peaks above 0.
    raw["model_config"]["head_configs"]["centroid"]["confmaps"]["use_sigmoid_activation"] = True
    (folder / "training_config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    torch.manual_seed(0)
    network = build_network(parse_config(raw, source=str(folder / "training_config.yaml")))
    save_checkpoint(folder / "best.ckpt", network.state_dict())
    model = load_model(folder)
    options = PredictOptions(peak_threshold=0.0, max_instances=8)
    frames = np.random.default_rng(5).integers(0, 256, (2, 64, 96, 1), dtype=np.uint8)
    ref = build_layer([model], backend_maker("torch", "cpu"), options).predict(frames)
    got = build_layer([model], backend_maker("onnx", "cpu"), options).predict(frames)
    assert ref.valid.sum() >= 8
    np.testing.assert_array_equal(got.valid, ref.valid)
    np.testing.assert_allclose(got.extras["centroids"], ref.extras["centroids"], atol=1e-3)
    np.testing.assert_allclose(got.instance_scores, ref.instance_scores, atol=1e-5)


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="no transformers")
def test_without_timm_one_line_names_the_extra(tmp_path: Path, monkeypatch) -> None:
    real_import = builtins.__import__

    def no_timm(name, *args, **kwargs):
        if name == "timm" or name.startswith("timm."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    folder = tmp_path / "model"
    (folder / "pretrained_backbone").mkdir(parents=True)
    (folder / "pretrained_backbone" / "config.json").write_text(json.dumps(TIMM_VIT))
    raw = _raw(Path("timm/not_downloaded"), "centroid", 2, {})
    monkeypatch.setattr(builtins, "__import__", no_timm)
    config = parse_config(raw, source=str(folder / "training_config.yaml"))
    with pytest.raises(ConfigError, match=r"needs timm \(and torchvision\): pip install") as err:
        build_network(config)
    assert "\n" not in str(err.value)
