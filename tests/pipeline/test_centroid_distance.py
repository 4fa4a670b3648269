"""sleap-nn's ``--filter_min_centroid_distance`` on a real top-down run: per frame, the
instance whose centroid is near a higher-scored one's is dropped; the rest is unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cli_runs import run_cli
from conftest import fixture_model, predicted_poses


def test_top_down_instances_closer_than_the_radius_are_dropped(
    capsys: pytest.CaptureFixture[str], shared: Path, tmp_path: Path
) -> None:
    video = shared / "videos" / "centered_pair_small.mp4"
    models = [
        "-m",
        fixture_model(shared, "centroid"),
        "-m",
        fixture_model(shared, "centered_instance"),
    ]
    args = ["predict", video, *models, "--frames", "0-9"]
    assert run_cli(capsys, *args, "-o", tmp_path / "all.slp")[0] == 0
    for radius, name in ((1000, "far.slp"), (0.5, "near.slp")):
        flags = ["--filter_min_centroid_distance", str(radius)]
        assert run_cli(capsys, *args, *flags, "-o", tmp_path / name)[0] == 0
    frames, points, scores = predicted_poses(tmp_path / "all.slp")
    assert (np.isfinite(scores).sum(axis=1) == 2).all()  # two flies in every frame
    far = predicted_poses(tmp_path / "far.slp")
    assert far[0] == frames and np.isfinite(far[2]).sum(axis=1).tolist() == [1] * len(frames)
    best = np.nanargmax(scores, axis=1)  # the higher-scored centroid of each frame stays
    np.testing.assert_array_equal(far[1][:, 0], points[np.arange(len(frames)), best])
    near = predicted_poses(tmp_path / "near.slp")  # the flies are further apart than that
    np.testing.assert_array_equal(near[1], points)
