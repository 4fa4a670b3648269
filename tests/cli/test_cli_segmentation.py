"""``infer predict`` with segmentation models, run as a user would (a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from conftest import write_video
from model_factory import config_dict, write_model_dir


def infer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sleap_infer", *args], capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def seg_inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("seg")
    model = write_model_dir(tmp / "model", config_dict("bottomup_segmentation"), seed=3)
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 255, (6, 48, 64, 3), dtype=np.uint8)
    return model, write_video(tmp / "clip.mp4", frames)


def test_masks_are_written_and_counted(seg_inputs: tuple[Path, Path], tmp_path: Path) -> None:
    model, video = seg_inputs
    out, summary = tmp_path / "out.slp", tmp_path / "summary.json"
    # Random weights: every pixel is foreground and every center candidate counts.
    res = infer(
        "predict", str(video), "-m", str(model), "-o", str(out), "--summary-json", str(summary),
        "--fg-threshold", "0", "--peak-threshold", "-1000", "--progress", "plain",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    labels = sio.load_slp(str(out))
    masks = [m for lf in labels.labeled_frames for m in lf.masks]
    assert masks and all(isinstance(m, sio.PredictedSegmentationMask) for m in masks)
    assert not any(lf.instances for lf in labels.labeled_frames)
    # A 48x64 frame padded to 48x64 (max stride 8), head stride 2: 24x32 masks at scale 0.5.
    assert {(m.height, m.width, m.scale) for m in masks} == {(24, 32, (0.5, 0.5))}
    record = json.loads(summary.read_text())["videos"][0]
    assert (record["masks"], record["instances"]) == (len(masks), 0)
    assert record["frames_with_instances"] == sum(bool(lf.masks) for lf in labels.labeled_frames)
    mean = np.mean([m.score for m in masks])
    assert record["mean_score"] == pytest.approx(mean, rel=1e-5)
    assert f"{len(masks)} masks" in res.stderr  # the per-video line counts masks


@pytest.mark.parametrize("fmt", ["csv", "dlc-csv", "via-csv"])
def test_formats_without_masks_are_refused_before_predicting(
    seg_inputs: tuple[Path, Path], tmp_path: Path, fmt: str
) -> None:
    model, video = seg_inputs
    out = tmp_path / "out.csv"
    res = infer("predict", str(video), "-m", str(model), "-o", str(out), "--format", fmt)
    assert res.returncode == 2
    lines = [line for line in res.stderr.splitlines() if "error" in line]
    assert len(lines) == 1 and f"--format {fmt} cannot hold segmentation masks" in lines[0]
    assert list(tmp_path.iterdir()) == []  # no output, no journal


def test_polygons_only(seg_inputs: tuple[Path, Path], tmp_path: Path) -> None:
    model, video = seg_inputs
    out = tmp_path / "out.slp"
    res = infer(
        "predict", str(video), "-m", str(model), "-o", str(out), "--mask-output", "polygon",
        "--fg-threshold", "0", "--peak-threshold", "-1000",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    labels = sio.load_slp(str(out))
    rois = [r for lf in labels.labeled_frames for r in lf.rois]
    assert rois and not any(lf.masks for lf in labels.labeled_frames)
    assert all(isinstance(r, sio.PredictedROI) and r.geometry.area > 0 for r in rois)
