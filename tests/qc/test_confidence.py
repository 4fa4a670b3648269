"""Low-confidence stretches of a track's point scores."""

from __future__ import annotations

import numpy as np
from qc_scenes import smooth_scene

from sleap_infer.qc.confidence import find_low_confidence


def test_clean_scores_have_no_stretch() -> None:
    assert find_low_confidence(smooth_scene(600, 3)) == []


def test_stretch_is_found_with_its_bounds() -> None:
    data = smooth_scene()
    data.point_scores[100:130, 1] *= 0.35
    (event,) = find_low_confidence(data)
    assert event.tracks == ["track_1"]
    assert abs(event.frame_start - 100) <= 3 and abs(event.frame_end - 129) <= 3
    assert event.score > 0.5 and "typical over" in event.detail


def test_one_bad_frame_is_not_a_stretch() -> None:
    data = smooth_scene()
    data.point_scores[50:52, 0] = 0.0
    assert find_low_confidence(data) == []


def test_missing_points_count_as_zero() -> None:
    data = smooth_scene()
    data.points[200:220, 0, :2] = np.nan
    data.point_scores[200:220, 0, :2] = 0.0
    (event,) = find_low_confidence(data)
    assert event.tracks == ["track_0"]
