"""Births and deaths mid-arena, over the track limit, body lengths, bad frames."""

from __future__ import annotations

import numpy as np
from qc_scenes import smooth_scene

from sleap_infer.qc.extras import (
    find_bad_frames,
    find_births_deaths,
    find_implausible_lengths,
    find_too_many,
)
from sleap_infer.qc.jumps import find_jumps


def test_track_born_and_lost_mid_arena() -> None:
    data = smooth_scene(300, 2)
    data.present[:80, 1] = False
    data.points[:80, 1] = np.nan
    data.present[250:, 0] = False
    data.points[250:, 0] = np.nan
    kinds = {(e.kind, e.frame_start, e.tracks[0]) for e in find_births_deaths(data)}
    assert kinds == {("track_born", 80, "track_1"), ("track_died", 249, "track_0")}


def test_births_at_the_edge_or_start_are_normal() -> None:
    data = smooth_scene(300, 2)
    data.frame_size = (330, 1000)  # track_1 starts at x 298: within a body of the edge
    data.present[:80, 1] = False
    data.points[:80, 1] = np.nan
    assert find_births_deaths(data) == []
    assert find_births_deaths(smooth_scene(300, 2)) == []  # whole-video tracks


def test_too_many_instances_needs_the_recorded_limit() -> None:
    data = smooth_scene(100, 3)
    assert find_too_many(data) == []
    data.max_tracks = 2
    data.present[:, 2] = False
    data.present[40:45, 2] = True
    (event,) = find_too_many(data)
    assert (event.frame_start, event.frame_end) == (40, 44) and "3 instances" in event.detail


def test_implausible_length_and_not_twice_for_a_jump() -> None:
    data = smooth_scene()
    data.points[60, 0, 0] = data.points[60, 0, 1] + [90.0, 0.0]  # head 4.5x too far
    events = find_implausible_lengths(data)
    assert [(e.frame_start, e.nodes) for e in events] == [(60, ["head", "mid"])]
    assert "longer" in events[0].detail
    assert find_implausible_lengths(data, skip=find_jumps(data)) == []


def test_bad_frames_are_runs() -> None:
    data = smooth_scene(100, 1)
    data.bad_frames = [5, 6, 7, 20]
    events = find_bad_frames(data)
    assert [(e.frame_start, e.frame_end) for e in events] == [(5, 7), (20, 20)]
