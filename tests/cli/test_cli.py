"""``infer`` end to end, run as a user would (a subprocess), plus its error lines."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio
import torch

import scene
from conftest import SYNTHETIC_MODEL, fixture_model, predicted_poses


def infer(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sleap_infer", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def test_help_lists_every_command() -> None:
    res = infer("--help")
    assert res.returncode == 0
    for cmd in ("predict", "export", "bench"):
        assert cmd in res.stdout
    res = infer("predict", "--help")
    assert res.returncode == 0
    for flag in (
        "--model",
        "--backend",
        "--device",
        "--batch-size",
        "--peak-threshold",
        "--no-refine",
        "--frames",
        "--output",
        "--format",
        "--recursive",
        "--resume",
        "--overwrite",
        "--shard",
        "--devices",
    ):
        assert flag in res.stdout, flag


def test_predict_small_robot_with_sleap_nn_model(shared: Path, tmp_path: Path) -> None:
    out = tmp_path / "robot.slp"
    res = infer(
        "predict",
        str(shared / "videos" / "small_robot.mp4"),
        "--model",
        str(fixture_model(shared, "single_instance")),
        "-o",
        str(out),
        "--device",
        "cpu",
        "--batch-size",
        "8",
    )
    assert res.returncode == 0, res.stderr
    labels = sio.load_slp(str(out))
    assert len(labels) == 166
    assert len(labels.skeleton.nodes) == 2
    assert [lf.frame_idx for lf in labels] == list(range(166))
    assert all(len(lf.instances) == 1 for lf in labels)
    prov = labels.provenance
    # The default, --backend auto: torch on a first run of 166 frames, OpenVINO once an
    # earlier test has cached this model's export (the session's tests share one cache).
    assert prov["backend_choice"]["asked"] == "auto"
    assert prov["backend"] in ("torch", "openvino") and prov["device"] == "cpu"
    assert prov["model_types"] == ["single_instance"]
    assert prov["frames_processed"] == 166
    assert "torch" in prov["versions"] and "sleap-io" in prov["versions"]
    assert "166 frames" in res.stderr and "FPS" in res.stderr


def test_synthetic_model_is_accurate_and_frames_are_selectable(tmp_path: Path) -> None:
    video = tmp_path / "synthetic.mp4"
    truth = scene.write_video(video, n_frames=60, seed=5)
    out = tmp_path / "pred.slp"
    res = infer(
        "predict",
        str(video),
        "--model",
        str(SYNTHETIC_MODEL),
        "-o",
        str(out),
        "--frames",
        "0-9,40-",
        "--device",
        "cpu",
    )
    assert res.returncode == 0, res.stderr
    labels = sio.load_slp(str(out))
    assert [lf.frame_idx for lf in labels] == [*range(10), *range(40, 60)]
    pts = np.stack([lf.instances[0].numpy() for lf in labels])
    err = np.linalg.norm(pts - truth[[lf.frame_idx for lf in labels]], axis=-1)
    assert np.nanmean(err) < 1.5, np.nanmean(err)


def test_default_output_name_next_to_video(tmp_path: Path) -> None:
    video = tmp_path / "clip.mp4"
    scene.write_video(video, n_frames=5)
    res = infer("predict", str(video), "-m", str(SYNTHETIC_MODEL), "--device", "cpu", "-q")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "clip.mp4.predictions.slp").exists()


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["predict", "{video}", "-m", "{tmp}/nope"], 1, "nope: model path does not exist"),
        (["predict", "{tmp}/missing.mp4", "-m", "{model}"], 1, "missing.mp4: video not found"),
        (
            ["predict", "{video}", "-m", "{model}", "--backend", "caffe"],
            2,
            "--backend: 'caffe' is not one of 'auto', 'torch', 'onnx', 'openvino', 'trt'",
        ),
        (["predict", "{video}", "-m", "{model}", "--device", "cuda:3"], 1, "cuda:3"),
        (["predict", "{video}", "-m", "{model}", "--device", "gpu"], 2, "--device 'gpu': unknown"),
        (["predict", "{video}", "-m", "{model}", "--devices", "cpu,tpu"], 2, "--devices 'tpu'"),
        (["predict", "{video}", "-m", "{model}", "-q", "--progress", "json"], 2, "-q/--quiet"),
        (["predict", "{video}", "-m", "{model}", "--progress", "tty"], 2, "--progress: 'tty'"),
        (["predict", "{video}", "-m", "{model}", "--summary-json", "{tmp}"], 1, "is a folder"),
        (["bench", "{tmp}/nope"], 1, "nope: model path does not exist"),
        (["bench", "{model}", "--device", "gpu"], 2, "--device 'gpu': unknown device"),
        (["export", "{model}", "--device", "gpu"], 2, "--device 'gpu': unknown device"),
        (["predict", "{video}", "-m", "{model}", "--frames", "x"], 2, "--frames"),
        (
            ["predict", "{video}", "-m", "{model}", "--backend", "onnx", "--compile"],
            2,
            "--compile applies to --backend torch only",
        ),
        (["export", "{tmp}/nope"], 1, "nope: model path does not exist"),
        (["export", "{model}", "--opset", "17"], 2, "--opset 17 is not supported"),
        (["export", "{model}", "--opset", "999"], 2, "--opset 999 is not supported"),
        (["export", "{model}", "{model}"], 2, "cannot export models of types single_instance"),
        (["export", "{model}", "--batch", "2", "--dynamic-batch"], 2, "exclude each other"),
        (["export", "{model}", "--input-size", "big"], 2, "--input-size 'big'"),
        (["export", "{model}", "--runtime", "tflite"], 2, "--format: 'tflite' is not one of"),
        # Lists take commas; a space-separated list is a usage error, not a missing model.
        (["bench", "{model}", "--batch-sizes", "1", "4"], 2, "a list takes commas"),
        (["bench", "{model}", "--backend", "torch", "onnx"], 2, "--backend torch onnx"),
        (["bench", "{model}", "--backend", "torch,caffe"], 2, "unknown backend 'caffe'"),
        # sleap-nn's flags: a refused value, or a combination infer (or sleap-nn) refuses.
        (
            ["predict", "-i", "{video}", "--model_paths", "{model}", "--tracker", "deepsort"],
            2,
            "--tracker deepsort associates by appearance, but no detection carries a re-ID vector",
        ),
        (
            ["predict", "{video}", "-m", "{model}", "--mask_backend", "sam"],
            2,
            "--mask-backend masks the poses of the input .slp: drop -m/--model",
        ),
        (["export", "{model}", "-o", "{video}"], 1, "exists and is not an export directory"),
    ],
)
def test_bad_input_is_one_clear_line(
    tmp_path: Path, args: list[str], code: int, needle: str
) -> None:
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=3)
    fmt = {"video": str(video), "tmp": str(tmp_path), "model": str(SYNTHETIC_MODEL)}
    res = infer(*[a.format(**fmt) for a in args])
    assert res.returncode == code, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and needle in lines[0], res.stderr
    assert "Traceback" not in res.stderr


def test_bench_writes_table_and_json(tmp_path: Path) -> None:
    video = tmp_path / "scene.mp4"
    scene.write_video(video, n_frames=4, seed=2)
    report = tmp_path / "bench.json"
    res = infer(
        "bench",
        str(SYNTHETIC_MODEL),
        "--input",
        str(video),
        "--backend",
        "trt",
        "--batch-sizes",
        "1,2",
        "--iters",
        "2",
        "--json",
        str(report),
    )
    assert res.returncode == 0, res.stderr
    data = json.loads(report.read_text())
    rows = {(r["backend"], r["batch"]): r for r in data["rows"]}
    assert set(rows) == {("torch", 1), ("torch", 2), ("trt", 1), ("trt", 2)}
    assert rows[("torch", 2)]["status"] == "ok" and rows[("torch", 2)]["fps"] > 0
    assert rows[("trt", 1)]["status"] == "unavailable"  # no TensorRT/CUDA in CI
    assert "tensorrt" in rows[("trt", 1)]["reason"].lower()
    assert data["system"]["cpu_budget"] >= 1 and "torch" in data["system"]["versions"]
    assert "Piped FPS" in res.stdout and "unavailable" in res.stdout
    # Share of this machine's measured peak: the network's work, the rate, the peak.
    assert data["peak"]["gflops"]["cpu:fp32"] > 0 and data["peak"]["threads"] >= 1
    ran = rows[("torch", 2)]
    assert ran["precision"] == "fp32" and ran["gflop_per_frame"] > 0
    assert ran["peak_gflops"] == data["peak"]["gflops"]["cpu:fp32"]
    assert 0 < ran["peak_fraction"] <= ran["network_peak_fraction"]
    assert rows[("trt", 1)]["peak_fraction"] is None
    assert "%peak" in res.stdout and "cpu:fp32" in res.stdout


@pytest.mark.skipif(torch.version.cuda is not None, reason="this torch build has CUDA")
def test_cuda_on_a_cpu_only_torch_says_so(tmp_path: Path) -> None:
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=2)
    for args in (
        ["predict", str(video), "-m", str(SYNTHETIC_MODEL), "--device", "cuda"],
        ["bench", str(SYNTHETIC_MODEL), "--device", "cuda", "--iters", "1"],
    ):
        res = infer(*args)
        assert res.returncode == 1, res.stderr
        lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
        assert lines == [
            f"error: --device cuda: CUDA is not available: this torch build ({torch.__version__}) "
            "has no CUDA support; install a CUDA build of torch "
            "(https://pytorch.org/get-started/locally/) or use --device cpu"
        ], res.stderr


def test_bench_exits_1_when_a_row_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sleap_infer.bench import suite
    from sleap_infer.cli import main

    real = suite.measure_layer

    def measure(layer, frames, *args, **kwargs):  # batch 2 runs out of memory, say
        if len(frames) == 2:
            raise RuntimeError("out of memory")
        return real(layer, frames, *args, **kwargs)

    monkeypatch.setattr(suite, "measure_layer", measure)
    report = tmp_path / "bench.json"
    args = ["bench", str(SYNTHETIC_MODEL), "--device", "cpu", "--size", "32x32", "--iters", "1"]
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--batch-sizes", "1,2", "--backend", "torch", "--json", str(report)])
    assert exit_info.value.code == 1, capsys.readouterr().err
    rows = {r["batch"]: r for r in json.loads(report.read_text())["rows"]}
    assert rows[1]["status"] == "ok" and rows[2]["status"] == "failed"
    assert "out of memory" in rows[2]["reason"]


def test_bench_rejects_input_and_size_together(tmp_path: Path) -> None:
    res = infer("bench", str(SYNTHETIC_MODEL), "--input", "x.mp4", "--size", "64x64")
    assert res.returncode == 2
    assert "--input and --size" in res.stderr


def _instances(path: Path) -> tuple[list[int], np.ndarray, np.ndarray]:
    return predicted_poses(path)  # empty frames padded with NaN


def _same_instances(a: Path, b: Path, atol: float = 0.05) -> None:
    frames_a, points_a, scores_a = _instances(a)
    frames_b, points_b, scores_b = _instances(b)
    assert frames_a == frames_b
    assert points_a.shape == points_b.shape
    assert np.array_equal(np.isnan(points_a), np.isnan(points_b))
    np.testing.assert_allclose(points_a, points_b, atol=atol)
    np.testing.assert_allclose(scores_a, scores_b, atol=1e-4)


def test_export_command_writes_onnx_and_metadata(tmp_path: Path) -> None:
    out = tmp_path / "exp"
    res = infer("export", str(SYNTHETIC_MODEL), "-o", str(out), "--batch", "2")
    assert res.returncode == 0, res.stderr
    assert (out / "model.onnx").is_file() and (out / "export_metadata.json").is_file()
    assert "single_instance exported" in res.stderr and "model.onnx:" in res.stderr
    meta = json.loads((out / "export_metadata.json").read_text())
    assert meta["input"]["shape"][0] == 2 and meta["settings"]["batch_size"] == 2


def test_predict_onnx_writes_the_same_instances_as_torch(tmp_path: Path) -> None:
    video = tmp_path / "synthetic.mp4"
    scene.write_video(video, n_frames=12, seed=3)
    # --progress none, not -q: -q would hide the export notice (it prints only errors).
    common = ["-m", str(SYNTHETIC_MODEL), "--device", "cpu", "-b", "4", "--progress", "none"]
    res = infer("predict", str(video), *common, "-o", str(tmp_path / "torch.slp"))
    assert res.returncode == 0, res.stderr
    res = infer(
        "predict", str(video), *common, "--backend", "onnx", "-o", str(tmp_path / "onnx.slp")
    )
    assert res.returncode == 0, res.stderr
    assert "export: Exporting synthetic_single_instance to onnx" in res.stderr
    _same_instances(tmp_path / "torch.slp", tmp_path / "onnx.slp")
    prov = sio.load_slp(str(tmp_path / "onnx.slp")).provenance
    assert prov["backend"] == "onnx" and prov["export"]["runtime"] == "onnx"
    # Second run: the cached export is reused, nothing is exported again.
    res = infer("predict", str(video), *common, "--backend", "onnx", "-o", str(tmp_path / "2.slp"))
    assert res.returncode == 0, res.stderr
    assert "Exporting" not in res.stderr


def test_predict_onnx_centroids_match_torch(shared: Path, tmp_path: Path) -> None:
    video = shared / "videos" / "centered_pair_small.mp4"
    common = ["-m", str(fixture_model(shared, "centroid")), "--device", "cpu", "--frames", "0-7"]
    res = infer("predict", str(video), *common, "-q", "-o", str(tmp_path / "torch.slp"))
    assert res.returncode == 0, res.stderr
    res = infer(
        "predict", str(video), *common, "-q", "--backend", "onnx", "-o", str(tmp_path / "onnx.slp")
    )
    assert res.returncode == 0, res.stderr
    _same_instances(tmp_path / "torch.slp", tmp_path / "onnx.slp")
    assert _instances(tmp_path / "onnx.slp")[1].shape[1] >= 1


def _has_tensorrt() -> bool:
    try:
        import tensorrt  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(_has_tensorrt(), reason="tensorrt is installed here")
def test_trt_without_tensorrt_names_the_extra(tmp_path: Path) -> None:
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=2)
    for args in (
        ["predict", str(video), "-m", str(SYNTHETIC_MODEL), "--backend", "trt"],
        ["export", str(SYNTHETIC_MODEL), "--runtime", "trt", "-o", str(tmp_path / "e")],
    ):
        res = infer(*args)
        assert res.returncode == 1, res.stderr
        lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
        assert len(lines) == 1 and "sleap-infer[tensorrt]" in res.stderr, res.stderr
    assert not (tmp_path / "e").exists()


def test_version_as_sleap_nn_spells_it_and_ours() -> None:
    """``-v`` is sleap-nn's spelling of the version flag; ``--version`` stays."""
    from sleap_infer import __version__

    for flag in ("-v", "--version"):
        res = infer(flag)
        assert res.returncode == 0, res.stderr
        assert res.stdout.strip() == f"sleap_infer {__version__}"


def test_shell_completion_is_offered_and_completes() -> None:
    """``--install-completion`` / ``--show-completion`` exist, and the completion script's
    callback completes command and option names through the real entry point."""
    import os

    assert "--install-completion" in infer("--help").stdout
    shown = subprocess.run(
        [sys.executable, "-m", "sleap_infer", "--show-completion", "bash"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SHELL": "/bin/bash"},
    )
    assert shown.returncode == 0, shown.stderr
    assert "_INFER_COMPLETE=complete_bash" in shown.stdout
    for words, cword, want in (
        ("infer pre", "1", "predict"),
        ("infer track --trac", "2", "--tracker"),
    ):
        env = {
            **os.environ,
            "_INFER_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": cword,
        }
        done = subprocess.run(
            [sys.executable, "-m", "sleap_infer"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert want in done.stdout.split(), done.stdout


def test_track_help_does_not_say_it_implies_tracking() -> None:
    """infer track always tracks: predict's "Implies --tracking." is dropped from its help."""
    res = infer("track", "--help")
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    assert "--tracker NAME" in text and "classic:" in text
    assert "Implies --tracking" not in text
    assert "Implies --tracking" in " ".join(infer("predict", "--help").stdout.split())
