"""``infer`` end to end, run as a user would (a subprocess), plus its error lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

import scene
from conftest import SYNTHETIC_MODEL, fixture_model


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
        "--skip-existing",
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
    assert prov["backend"] == "torch" and prov["device"] == "cpu"
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
            "unknown backend 'caffe'",
        ),
        (["predict", "{video}", "-m", "{model}", "--device", "cuda:3"], 1, "cuda:3"),
        (["predict", "{video}", "-m", "{model}", "--frames", "x"], 2, "--frames"),
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


def test_unimplemented_commands_exit_2() -> None:
    for cmd in ("export", "bench"):
        res = infer(cmd, str(SYNTHETIC_MODEL))
        assert res.returncode == 2
        assert "not yet implemented" in res.stderr
