"""``infer info`` and ``infer system``: the facts they report are the real ones.

Model facts are checked against numbers worked out by hand from the sleap-nn
layouts (parameters, FLOPs) and against the files themselves (node names from
the YAML, the checkpoint's hash); system facts against this interpreter.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from torch import nn

from sleap_infer.bench import runtime_checks
from sleap_infer.bench.runtime_checks import Probe, probe
from sleap_infer.bench.system import nvidia_driver, system_facts
from sleap_infer.core.artifact import EXPORT_LAYOUT_VERSION
from sleap_infer.model.info import count_flops, network_input, parameter_count
from sleap_infer.model.loader import load_model
from sleap_infer.runtimes.inventory import describe_models

import fake_tensorrt
from cli_runs import error_lines, run_cli
from conftest import fixture_model


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty export cache per test: other tests' exports of the fixtures stay out."""
    root = tmp_path / "cache"
    monkeypatch.setenv("SLEAP_INFER_CACHE", str(root))
    return root


def _copy(model: Path, tmp_path: Path) -> Path:
    dst = tmp_path / model.name
    shutil.copytree(model, dst)
    return dst


def _info_json(capsys: pytest.CaptureFixture[str], tmp_path: Path, *models: Path) -> dict:
    out = tmp_path / "info.json"
    code, err = run_cli(capsys, "info", *models, "--json", out)
    assert code == 0, err
    return json.loads(out.read_text())


# -------------------------------------------------------------------- model facts
def test_centroid_facts_match_the_files(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = fixture_model(shared, "centroid")
    data = _info_json(capsys, tmp_path, path)
    facts = data["models"][0]
    network = load_model(path).network
    # 127 161: the state-dict listing in docs/sleap-nn-model-format.md, summed by hand.
    assert facts["parameters"] == sum(p.numel() for p in network.parameters()) == 127_161
    assert facts["config_total_params"] == 127_161
    assert facts["backbone_parameters"] == 127_161 - (36 + 1)  # minus the 1x1 head conv
    raw = yaml.safe_load((path / "training_config.yaml").read_text())
    nodes = [n["name"] for n in raw["data_config"]["skeletons"][0]["nodes"]]
    assert facts["skeleton"]["nodes"] == nodes == ["A", "B"]
    assert facts["skeleton"]["edges"] == [["A", "B"]]
    assert facts["model_type"] == "centroid" and facts["backbone"]["type"] == "unet"
    assert facts["preprocessing"]["max_height"] == 384
    assert facts["preprocessing"]["output_strides"] == [4]
    assert facts["flops"]["input"]["shape"] == [1, 384, 384]
    assert facts["flops"]["total"] > 0
    digest = hashlib.sha256((path / "best.ckpt").read_bytes()).hexdigest()
    assert facts["checkpoint"] == {
        "file": "best.ckpt",
        "bytes": (path / "best.ckpt").stat().st_size,
        "sha256": digest,
    }
    assert facts["exports"] == [] and facts["training"] == {"log": None, "metrics": []}
    # The JSON file holds exactly what was gathered (it round-trips).
    assert data["models"] == describe_models([path])
    assert json.loads(json.dumps(data)) == data


def test_table_names_what_json_says(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = fixture_model(shared, "centroid")
    code, err = run_cli(capsys, "info", path)
    assert code == 0
    digest = hashlib.sha256((path / "best.ckpt").read_bytes()).hexdigest()
    assert f"sha256 best.ckpt: {digest}" in err  # on one line, whatever the width
    flat = " ".join(err.split())
    for text in ("centroid", "127,161", "GFLOPs per 1x384x384 frame", "A->B", "none (no"):
        assert text in flat, text


def test_single_instance_flops_counted_by_hand(shared: Path) -> None:
    """RGB 320x560 at scale 0.5 -> 3x160x280 (already a multiple of max_stride 4)."""
    model = load_model(fixture_model(shared, "single_instance"))
    facts = describe_models([model.path])[0]
    assert facts["parameters"] == parameter_count(model.network) == 18_250
    assert facts["flops"]["input"]["shape"] == [3, 160, 280]
    assert facts["flops"]["input"]["size_from"] == "max_height x max_width"
    # Multiply-adds per output pixel of each conv (k*k*Cin*Cout), times its pixels.
    full, half, quarter = 160 * 280, 80 * 140, 40 * 70
    macs = (
        full * (9 * 3 * 8 + 9 * 8 * 8)  # stack0_enc0_conv0, conv1
        + half * (9 * 8 * 16 + 9 * 16 * 16)  # enc1 after the first pool
        + quarter * (9 * 16 * 32 + 9 * 32 * 32)  # middle expand, contract (after last pool)
        + quarter * (32 * 2)  # the 1x1 confmaps head
    )
    assert facts["flops"]["total"] == 2 * macs == 226_150_400


def test_flops_count_what_a_conv_does() -> None:
    conv = nn.Conv2d(1, 2, 3, padding=1)
    assert count_flops(conv, (1, 1, 4, 4)) == 2 * (4 * 4) * (3 * 3 * 1 * 2)  # 576
    assert count_flops(nn.Linear(8, 3), (5, 8)) == 2 * 5 * 8 * 3


def test_flops_scale_with_area(shared: Path) -> None:
    network = load_model(fixture_model(shared, "centroid")).network
    small = count_flops(network, (1, 1, 384, 384))
    assert small > 0
    assert count_flops(network, (1, 1, 768, 768)) == 4 * small  # convolutions only: exact


def test_top_down_pair_prints_each_model(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    centroid = fixture_model(shared, "centroid")
    instance = fixture_model(shared, "multi_class_topdown")
    out = tmp_path / "pair.json"
    code, err = run_cli(capsys, "info", centroid, instance, "--json", out)
    assert code == 0
    assert err.count("sha256 best.ckpt:") == 2
    first, second = json.loads(out.read_text())["models"]
    assert (first["model_type"], second["model_type"]) == ("centroid", "multi_class_topdown")
    assert second["class_names"] == ["female", "male"]
    assert second["preprocessing"]["crop_size"] == 128
    assert second["flops"]["input"]["kind"] == "crop"
    assert second["flops"]["input"]["shape"] == [1, 128, 128]
    assert [h["output_stride"] for h in second["heads"]] == [2, None]  # a vector head


def test_crop_models_are_sized_by_their_crop_and_tiled_ones_by_their_tile(shared: Path) -> None:
    instance = load_model(fixture_model(shared, "centered_instance")).config
    assert network_input(instance)["shape"] == [1, 96, 96]
    tiled = load_model(shared / "models" / "synthetic_single_instance_tiled").config
    assert network_input(tiled) == {
        "kind": "tile",
        "shape": [1, 64, 64],
        "size_from": "tile_size",
        "why_unknown": None,
    }


def test_input_size_sizes_flops_when_the_config_has_no_max_size(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SLEAP 1.x configs often set no target size; neither may a hand-written sleap-nn one."""
    original = fixture_model(shared, "centroid")
    folder = _copy(original, tmp_path)
    raw = yaml.safe_load((folder / "training_config.yaml").read_text())
    raw["data_config"]["preprocessing"].update(max_height=None, max_width=None)
    (folder / "training_config.yaml").write_text(yaml.safe_dump(raw))
    unsized = _info_json(capsys, tmp_path, folder)["models"][0]["flops"]
    assert unsized["total"] is None and "--input-size" in unsized["input"]["why_unknown"]
    out = tmp_path / "sized.json"
    crop_model = fixture_model(shared, "centered_instance")
    code, err = run_cli(
        capsys, "info", folder, crop_model, "--input-size", "380x380", "--json", out
    )
    assert code == 0, err
    sized, crops = (m["flops"] for m in json.loads(out.read_text())["models"])
    assert sized["input"]["shape"] == [1, 384, 384]  # padded to max_stride 8, as frames are
    assert sized["input"]["size_from"] == "--input-size"
    assert sized["total"] == describe_models([original])[0]["flops"]["total"]
    assert crops["input"]["shape"] == [1, 96, 96]  # crop models keep their crop
    code, err = run_cli(capsys, "info", folder, "--input-size", "big")
    assert code == 2 and len(error_lines(err)) == 1
    (tmp_path / "file").write_text("")
    code, err = run_cli(capsys, "info", folder, "--json", tmp_path / "file" / "x.json")
    assert code == 1 and len(error_lines(err)) == 1 and "--json" in err


def test_missing_model_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = run_cli(capsys, "info", tmp_path / "nope")
    assert code == 1
    assert err.strip().splitlines() == error_lines(err)
    assert len(error_lines(err)) == 1 and "does not exist" in err


def test_corrupt_checkpoint_is_one_error_line(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = _copy(fixture_model(shared, "centroid"), tmp_path)
    (broken / "best.ckpt").write_bytes((broken / "best.ckpt").read_bytes()[:1000])
    code, err = run_cli(capsys, "info", broken)
    assert code == 1
    assert len(err.strip().splitlines()) == 1 and len(error_lines(err)) == 1
    assert "best.ckpt" in err


# ----------------------------------------------------------- training files, exports
def _write_training_files(folder: Path) -> None:
    (folder / "training_log.csv").write_text(
        "epoch,train_loss,val_loss,learning_rate,train_time,val_time\n"
        "0,0.9,0.8,0.0001,1.0,0.1\n"
        "1,0.5,0.30,0.0001,1.0,0.1\n"
        "2,0.4,0.35,0.00005,1.0,0.1\n"
    )
    nested = {  # sleap-nn's layout
        "voc_metrics": {"oks_voc.mAP": np.float64(0.625), "oks_voc.mAR": 0.7},
        "mOKS": {"mOKS": 0.5},
        "distance_metrics": {"avg": 2.5, "p50": np.float32(1.5), "p95": float("nan")},
        "pck_metrics": {"mPCK": 0.8, "pcks": np.zeros((3, 2, 4))},
    }
    np.savez_compressed(folder / "metrics.val.0.npz", metrics=nested)
    np.savez_compressed(folder / "metrics.train.0.npz", metrics={"mOKS": {"mOKS": 0.1}})
    (folder / "metrics.train.0.json").write_text(json.dumps({"mOKS": {"mOKS": 0.9}}))
    flat = {"oks_voc.mAP": 0.25, "dist.avg": 4.0, "vis.precision": 1.0}  # SLEAP 1.x's layout
    np.savez_compressed(folder / "metrics.test.npz", metrics=flat)


class _RunsCode:
    """Pickles as a call of ``Path.touch``: loading it must not create the file."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple:
        return (Path.touch, (self.target,))


def test_training_log_and_metrics_are_read(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy(fixture_model(shared, "centroid"), tmp_path)
    _write_training_files(folder)
    marker = tmp_path / "pwned"
    np.savez(folder / "val_1_pred_metrics.npz", metrics={"x": _RunsCode(marker)})
    training = _info_json(capsys, tmp_path, folder)["models"][0]["training"]
    assert training["log"]["epochs"] == 3
    assert (training["log"]["best_val_loss"], training["log"]["best_epoch"]) == (0.30, 1)
    assert training["log"]["last_train_loss"] == 0.4
    assert training["log"]["last_learning_rate"] == 0.00005
    by_split = {(m["split"], m["dataset"]): m for m in training["metrics"]}
    assert set(by_split) == {("test", 0), ("train", 0), ("val", 0), ("val", 1)}
    val = by_split[("val", 0)]["headline"]
    assert val["mAP (OKS VOC)"] == 0.625 and val["mOKS"] == 0.5 and val["Distance p50"] == 1.5
    assert val["Distance p95"] is None  # NaN stays valid JSON
    assert by_split[("train", 0)]["file"] == "metrics.train.0.json"  # JSON beats the npz
    assert by_split[("train", 0)]["headline"] == {"mOKS": 0.9}
    assert by_split[("test", 0)]["headline"] == {
        "mAP (OKS VOC)": 0.25,
        "Average distance": 4.0,
        "Visibility precision": 1.0,
    }
    assert not marker.exists()  # the allow-list refused Path.touch


def _fake_export(folder: Path, sha256: str, shape: list[int]) -> None:
    folder.mkdir(parents=True)
    (folder / "model.onnx").write_bytes(b"not really onnx")
    metadata = {
        "layout_version": EXPORT_LAYOUT_VERSION,
        "graph_outputs": "decoded",
        "model_type": "centroid",
        "source": {"checkpoint_sha256": sha256},
        "input": {"shape": shape},
        "outputs": [],
        "decode": {},
        "files": {"onnx": "model.onnx"},
        "precision": "fp32",
    }
    (folder / "export_metadata.json").write_text(json.dumps(metadata))


def test_exports_next_to_the_model_and_in_the_cache_are_listed(
    shared: Path, tmp_path: Path, _own_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _copy(fixture_model(shared, "centroid"), tmp_path)
    digest = hashlib.sha256((folder / "best.ckpt").read_bytes()).hexdigest()
    _fake_export(folder / "exported", digest, ["batch", 1, 384, 384])
    _fake_export(folder / "exported" / "old", "0" * 64, [4, 1, 384, 384])
    _fake_export(_own_cache / "abc", digest, [1, 1, 384, 384])
    _fake_export(_own_cache / "other", "1" * 64, [1, 1, 384, 384])  # another model's
    exports = _info_json(capsys, tmp_path, folder)["models"][0]["exports"]
    listed = {(Path(e["path"]).name, e["where"], e["usable"]) for e in exports}
    assert listed == {
        ("exported", "model", True),
        ("old", "model", False),
        ("abc", "cache", True),
    }
    stale = next(e for e in exports if not e["usable"])
    assert "different checkpoint" in stale["why_not"]


# -------------------------------------------------------------------- system facts
def test_system_json_reports_this_interpreter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "system.json"
    code, err = run_cli(capsys, "system", "--json", out)
    assert code == 0 and not error_lines(err)
    facts = json.loads(out.read_text())
    versions = facts["versions"]
    assert versions["torch"] == torch.__version__
    assert versions["numpy"] == np.__version__
    assert versions["python"] == sys.version.split()[0]
    rows = {(r["runtime"], r["device"]): r for r in facts["runtimes"]}
    assert rows[("torch", "cpu")]["available"]
    assert facts["devices"]["cpu"]["usable_cores"] >= 1
    if not torch.cuda.is_available():  # this machine: say so, and why
        cuda = facts["devices"]["cuda"]
        assert not cuda["available"] and cuda["gpus"] == []
        assert "CUDA" in cuda["reason"]
        assert not rows[("torch", "cuda")]["available"]
        assert rows[("torch", "cuda")]["detail"] == cuda["reason"]
        assert not rows[("trt", "cuda")]["available"] and rows[("trt", "cuda")]["detail"]
    for text in ("Versions", "Devices", "Runtimes", torch.__version__):
        assert text in err


def test_probe_tells_missing_from_broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert probe("surely_not_installed_xyz") == Probe(
        "surely_not_installed_xyz", reason="not installed"
    )
    package = tmp_path / "site" / "broken_trt_xyz"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "raise OSError('libnvinfer.so.10: cannot open shared object file')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    broken = probe("broken_trt_xyz")
    assert not broken.ok
    assert broken.reason == (
        "installed, but importing it fails: OSError: libnvinfer.so.10: cannot open shared "
        "object file"
    )


def test_system_without_onnxruntime_and_with_a_gpu_less_tensorrt(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No onnxruntime: its rows say so and nothing crashes. TensorRT importable but no GPU:
    the trt row gives the reason a run would stop with."""
    real = runtime_checks.probe

    def fake_probe(module: str) -> Probe:
        if module == "onnxruntime":
            return Probe(module, reason="not installed")
        return real(module)

    monkeypatch.setattr("sleap_infer.bench.system.probe", fake_probe)
    monkeypatch.setitem(sys.modules, "tensorrt", fake_tensorrt)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    facts = system_facts()
    rows = {(r["runtime"], r["device"]): r for r in facts["runtimes"]}
    for device in ("cpu", "cuda"):
        assert not rows[("onnx", device)]["available"]
        assert rows[("onnx", device)]["detail"].startswith("onnxruntime is not installed")
    assert facts["onnxruntime_providers"] == []
    assert facts["versions"]["tensorrt"] == fake_tensorrt.__version__
    trt = rows[("trt", "cuda")]
    assert not trt["available"] and "needs a CUDA GPU" in trt["detail"]
    code, err = run_cli(capsys, "system")
    assert code == 0 and "onnxruntime is not installed" in " ".join(err.split())


@pytest.mark.parametrize(
    "text",
    [
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024",
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build",
    ],
)
def test_driver_version_from_the_kernel_module(tmp_path: Path, text: str) -> None:
    proc = tmp_path / "version"
    proc.write_text(text + "\nGCC version:  gcc version 12.2.0\n")
    assert nvidia_driver(proc) == "550.54.15"
