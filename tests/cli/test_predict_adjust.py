"""Post-filters, training-config overrides and image globs, end to end through ``infer``."""

from __future__ import annotations

from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest
import sleap_io as sio

from cli_runs import error_lines, run_cli
from conftest import SYNTHETIC_MODEL, fixture_model


def instance_scores(path: Path) -> dict[int, list[float]]:
    return {lf.frame_idx: [float(i.score) for i in lf.instances] for lf in sio.load_slp(str(path))}


def test_instance_score_filter_keeps_exactly_the_strong_instances(
    shared: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    video = shared / "videos" / "centered_pair_small.mp4"
    model = fixture_model(shared, "bottomup")
    args = ["predict", video, "-m", model, "--device", "cpu", "-q", "--frames", "0-39"]
    code, err = run_cli(capsys, *args, "-o", tmp_path / "all.slp")
    assert code == 0, err
    everything = instance_scores(tmp_path / "all.slp")
    threshold = float(np.median([s for f in everything.values() for s in f]))
    code, err = run_cli(
        capsys, *args, "-o", tmp_path / "kept.slp", "--filter-min-instance-score", str(threshold)
    )
    assert code == 0, err
    kept = instance_scores(tmp_path / "kept.slp")
    expected = {f: [s for s in v if s >= threshold] for f, v in everything.items()}
    assert kept == expected  # every predicted frame, those the filter left empty too
    assert any(not v for v in kept.values()) and len(kept) == 40
    assert sum(map(len, kept.values())) < sum(map(len, everything.values()))
    prov = sio.load_slp(str(tmp_path / "kept.slp")).provenance
    assert prov["filters"]["min_instance_score"] == threshold


def test_input_scale_override_changes_the_run_and_is_recorded(
    shared: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    video = shared / "videos" / "centered_pair_small.mp4"
    model = fixture_model(shared, "bottomup")
    args = ["predict", video, "-m", model, "--device", "cpu", "-q", "--frames", "0-9"]
    code, err = run_cli(capsys, *args, "-o", tmp_path / "half.slp", "--input-scale", "0.5")
    assert code == 0, err
    code, err = run_cli(capsys, *args, "-o", tmp_path / "trained.slp")
    assert code == 0, err
    assert instance_scores(tmp_path / "half.slp") != instance_scores(tmp_path / "trained.slp")
    prov = sio.load_slp(str(tmp_path / "half.slp")).provenance
    assert prov["config_overrides"] == {"input_scale": 0.5}
    code, err = run_cli(capsys, *args, "-o", tmp_path / "x.slp", "--input-scale", "0.5",
                        "--backend", "onnx")  # fmt: skip
    assert code == 2 and "--input-scale" in error_lines(err)[0] and "torch" in error_lines(err)[0]
    assert "infer export MODEL --input-scale, then run -m the export folder" in error_lines(err)[0]
    centroid = fixture_model(shared, "centroid")
    code, err = run_cli(capsys, "predict", video, "-m", centroid, "--anchor-part", "tail_tip")
    assert code == 2 and "tail_tip" in error_lines(err)[0]  # not a node of the skeleton


def test_an_image_glob_is_one_sequence_named_after_its_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    frames = tmp_path / "frames"
    frames.mkdir()
    for i in range(6):
        for cam in ("cam1", "cam2"):
            iio.imwrite(frames / f"{cam}_{i}.png", np.full((64, 96), 20 * i, np.uint8))
    code, err = run_cli(capsys, "predict", str(frames / "cam1_*.png"), "-m", SYNTHETIC_MODEL,
                        "--device", "cpu", "-q")  # fmt: skip
    assert code == 0, err
    out = tmp_path / "frames.predictions.slp"
    labels = sio.load_slp(str(out))
    assert [Path(f).name for f in labels.video.filename] == [f"cam1_{i}.png" for i in range(6)]
    assert labels.video.shape[0] == 6


def test_project_flags_pick_the_labeled_frames_of_the_chosen_video(
    shared: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    project = shared / "videos" / "small_robot_minimal.slp"
    labeled = sorted(
        lf.frame_idx for lf in sio.load_slp(str(project), open_videos=False) if lf.user_instances
    )
    model = fixture_model(shared, "single_instance")
    out = tmp_path / "out"
    args = ["predict", project, "-m", model, "--device", "cpu", "-q", "-o", out]
    code, err = run_cli(capsys, *args, "--only-labeled-frames", "--video-index", "0")
    assert code == 0, err
    written = out / "small_robot_minimal.slp.video0.predictions.slp"
    labels = sio.load_slp(str(written))
    assert [lf.frame_idx for lf in labels] == labeled == [0, 79]
    assert labels.provenance["frames_processed"] == 2
    code, err = run_cli(capsys, *args, "--video-index", "3")
    assert code != 0 and "no video 3: the project has 1" in error_lines(err)[0]
    code, err = run_cli(capsys, *args, "--only-labeled-frames", "--exclude-user-labeled")
    assert code == 2 and "mutually exclusive" in error_lines(err)[0]
