"""Identity swaps: two tracks exchanging animals at one frame."""

from __future__ import annotations

import numpy as np
from qc_scenes import smooth_scene

from sleap_infer.qc.swaps import find_swaps


def _swap(data, frame: int, a: int, b: int) -> None:  # type: ignore[no-untyped-def]
    for arr in (data.points, data.point_scores):
        arr[frame:, [a, b]] = arr[frame:, [b, a]]


def test_clean_scene_has_no_swaps() -> None:
    assert find_swaps(smooth_scene(600, 4)) == []


def test_swap_is_found_with_both_tracks() -> None:
    data = smooth_scene(300, 3)
    _swap(data, 140, 0, 2)
    (event,) = find_swaps(data)
    assert event.kind == "identity_swap" and event.frame_start == 140
    assert sorted(event.tracks) == ["track_0", "track_2"]
    assert 0.5 <= event.score <= 1


def test_a_jump_of_one_track_is_not_a_swap() -> None:
    data = smooth_scene(300, 2)
    data.points[100, 0] += [50.0, 0.0]
    assert find_swaps(data) == []


def test_appearance_votes_when_vectors_are_stored() -> None:
    data = smooth_scene(300, 2)
    vectors = np.zeros((300, 2, 4))
    vectors[:, 0, 0] = 1.0  # animal 0 looks like e0, animal 1 like e1
    vectors[:, 1, 1] = 1.0
    data.embeddings = vectors.copy()
    _swap(data, 150, 0, 1)
    data.embeddings[150:, [0, 1]] = vectors[150:, [1, 0]]  # the vectors follow the animals
    (agrees,) = find_swaps(data)
    assert "appearance agrees" in agrees.detail
    data.embeddings = vectors  # the vectors stay with the tracks: appearance disagrees
    (disagrees,) = find_swaps(data)
    assert "appearance disagrees" in disagrees.detail and disagrees.score < agrees.score
