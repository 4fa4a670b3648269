"""One-frame jumps: whole instance and single node, against the track's own motion."""

from __future__ import annotations

from qc_scenes import smooth_scene

from sleap_infer.qc.jumps import find_jumps


def test_clean_scene_has_no_jumps() -> None:
    assert find_jumps(smooth_scene(600, 3)) == []


def test_whole_instance_jump_is_found_at_its_frame() -> None:
    data = smooth_scene()
    data.points[120, 1] += [35.0, -20.0]
    (event,) = find_jumps(data)
    assert (event.kind, event.frame_start, event.tracks, event.nodes) == (
        "jump",
        120,
        ["track_1"],
        [],
    )
    assert 0 < event.score <= 1 and "px" in event.detail


def test_single_node_jump_names_its_node() -> None:
    data = smooth_scene()
    data.points[77, 0, 0] += [0.0, 40.0]
    (event,) = find_jumps(data)
    assert (event.frame_start, event.tracks, event.nodes) == (77, ["track_0"], ["head"])


def test_a_step_that_stays_is_not_a_jump() -> None:
    """A track that moves and stays there (a swap's half) never came back."""
    data = smooth_scene()
    data.points[150:, 0] += [45.0, 0.0]
    assert find_jumps(data) == []


def test_gaps_in_frames_are_not_motion() -> None:
    data = smooth_scene()
    data.frames[100:] += 50  # frames 100.. are far later: no residual across the gap
    data.points[100:, 0] += [60.0, 0.0]
    assert find_jumps(data) == []
