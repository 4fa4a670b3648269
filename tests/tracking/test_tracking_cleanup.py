"""Pre-cull, post-clean and single-break joining around a tracker, online and resumable."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sleap_infer.core.errors import ResumeError, UsageError
from sleap_infer.tracking import MASKS, POSES, Detections, make_tracker
from sleap_infer.tracking.base import TrackerState
from sleap_infer.tracking.cleanup import BreakJoiner, CleanedTracker, cull, nms_keep, with_cleanup
from sleap_infer.tracking.options import TrackingOptions

N_NODES = 3
SHAPE = np.array([[0.0, 0.0], [6.0, 1.0], [3.0, 7.0]])


def poses(frame: int, centers: list[tuple[float, float]], scores: list[float]) -> Detections:
    points = np.array([SHAPE + np.array(c) for c in centers]).reshape(len(centers), N_NODES, 2)
    return Detections(frame, points, np.asarray(scores, dtype=np.float64))


def cleaned(**kw: object) -> CleanedTracker:
    options = TrackingOptions(**kw)  # type: ignore[arg-type]
    t = with_cleanup(make_tracker(options, POSES, N_NODES), options, POSES, N_NODES, False)
    assert isinstance(t, CleanedTracker)
    return t


# ---------------------------------------------------------------- culls


def test_cull_keeps_the_best_scores_and_nms_removes_overlaps_first() -> None:
    pts = np.array([SHAPE + c for c in ([0, 0], [50, 0], [100, 0], [0.5, 0])])
    scores = np.array([0.9, 0.2, 0.5, 0.8])
    assert cull(pts, scores, 2, 0.0) == [1, 2]  # lowest two scores
    # Row 3 sits on row 0 (overlap > 0.5): NMS removes it before the score step.
    assert cull(pts, scores, 2, 0.5) == [1, 3]
    assert cull(pts, scores, 4, 0.5) == []


def test_nms_puts_removed_boxes_back_as_sleap_nns_slice_does() -> None:
    boxes = np.array([[0, 0, 10, 10], [1, 1, 10, 10], [2, 2, 10, 10], [3, 3, 10, 10]], float)
    scores = np.array([0.9, 0.8, 0.7, 0.6])
    # one pick, three removed; sleap-nn adds back removed[:min(3, 1 - 3)] = removed[:-2]
    assert nms_keep(boxes, scores, 0.3, 3) == [0, 1]
    assert nms_keep(boxes[:2], scores[:2], 0.3, 3) == [0, 1]  # fewer than the target


# ---------------------------------------------------------------- break joining


def _reference_connect(frames: list[list[int]]) -> list[list[int]]:
    """sleap-nn's ``connect_single_breaks`` over a whole video (its list-of-frames form:
    mutable instances, first frame seeding the last good set), for comparison."""

    class Inst:
        def __init__(self, track: int) -> None:
            self.track = track

    lfs = [[Inst(t) for t in frame] for frame in frames]
    if not lfs:
        return []
    fix: dict[int, int] = {}
    last_good = {i.track for i in lfs[0]}
    for lf in lfs:
        frame_tracks = {i.track for i in lf}
        if frame_tracks.intersection(set(fix.keys())):
            for inst in lf:
                if inst.track in fix and fix[inst.track] not in frame_tracks:
                    inst.track = fix[inst.track]
                    frame_tracks = {i.track for i in lf}
        extra, missing = frame_tracks - last_good, last_good - frame_tracks
        if len(extra) == 1 and len(missing) == 1:
            for inst in lf:
                if inst.track in extra:
                    new = missing.pop()
                    fix[inst.track] = new
                    inst.track = new
                    break
        elif len(frame_tracks) >= len(last_good):
            last_good = frame_tracks
    return [[i.track for i in lf] for lf in lfs]


def test_a_single_break_is_joined_and_stays_joined() -> None:
    joiner = BreakJoiner()
    out = [joiner.step(f) for f in ([0, 1], [0, 1], [0, 2], [2, 0], [0, 2, 3])]
    assert out == [[0, 1], [0, 1], [0, 1], [1, 0], [0, 1, 3]]


@pytest.mark.parametrize("seed", range(40))
def test_online_joining_with_a_saved_state_each_frame_equals_the_whole_video_pass(
    seed: int,
) -> None:
    """The online form, its state saved and restored after every frame, gives what
    sleap-nn's whole-video pass gives, on random track churn (empty frames included)."""
    rng = np.random.default_rng(seed)
    frames = []
    for _ in range(int(rng.integers(1, 60))):
        n = int(rng.integers(0, 5))
        frames.append([int(t) for t in rng.choice(8, size=n, replace=False)])
    joiner, online = BreakJoiner(), []
    for f in frames:
        online.append(joiner.step(f))
        wire = {
            k: np.asarray(json.loads(json.dumps(v.tolist()))) for k, v in joiner.arrays().items()
        }
        joiner = BreakJoiner()
        joiner.load({k: v.astype(np.int64) for k, v in wire.items()})
    assert online == _reference_connect(frames)


# ---------------------------------------------------------------- around the tracker


def _video(seed: int, frames: int = 40) -> list[Detections]:
    """Three animals walking, a spurious fourth detection now and then, random order."""
    rng = np.random.default_rng(seed)
    out = []
    for f in range(frames):
        centers = [(10.0 + 2 * f, 10.0), (60.0, 10.0 + 2 * f), (120.0 - 2 * f, 80.0)]
        scores = [0.9, 0.8, 0.85]
        if rng.random() < 0.3:
            centers.append((float(rng.uniform(0, 150)), float(rng.uniform(0, 150))))
            scores.append(float(rng.uniform(0.1, 0.95)))
        order = rng.permutation(len(centers))
        out.append(poses(f, [centers[i] for i in order], [scores[i] for i in order]))
    return out


OPTION_SETS = [
    dict(tracking_target_instance_count=3, tracking_pre_cull_to_target=1),
    dict(
        tracking_target_instance_count=3,
        tracking_pre_cull_to_target=1,
        tracking_pre_cull_iou_threshold=0.5,
    ),
    dict(tracking_clean_instance_count=3, tracking_clean_iou_threshold=0.5),
    dict(tracking_target_instance_count=3, post_connect_single_breaks=True, max_tracks=3),
    dict(tracking_target_instance_count=3, post_connect_single_breaks=True, tracker="bytetrack"),
]


@pytest.mark.parametrize("kw", OPTION_SETS, ids=lambda kw: "+".join(sorted(kw)))
def test_a_state_saved_mid_video_resumes_to_the_same_tracks(kw: dict[str, object]) -> None:
    video = _video(1)
    straight = cleaned(**kw)
    expected = [straight.step(d) for d in video]
    for cut in (1, 17, 33):
        first = cleaned(**kw)
        got = [first.step(d) for d in video[:cut]]
        state = first.state()
        wire = TrackerState(json.loads(json.dumps(state.meta)), dict(state.arrays))
        resumed = cleaned(**kw)
        resumed.load_state(wire)
        got += [resumed.step(d) for d in video[cut:]]
        for a, b in zip(expected, got):
            np.testing.assert_array_equal(a.track_ids, b.track_ids)
            np.testing.assert_array_equal(a.scores, b.scores)


def test_pre_cull_leaves_the_extra_detection_untracked_and_unseen() -> None:
    t = cleaned(tracking_target_instance_count=3, tracking_pre_cull_to_target=1)
    for d in _video(2):
        out = t.step(d)
        if len(d) == 4:
            assert out.track_ids[int(np.argmin(d.scores))] == -1
        assert (out.track_ids >= 0).sum() <= 3
    assert t.n_tracks == 3  # the spurious detections never started a track


def test_a_state_from_other_cleanup_settings_is_refused() -> None:
    a = cleaned(tracking_clean_instance_count=3)
    a.step(_video(0)[0])
    b = cleaned(tracking_clean_instance_count=2)
    with pytest.raises(ResumeError, match="cleanup"):
        b.load_state(a.state())


def test_refusals_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="--tracking-target-instance-count"):
        TrackingOptions(post_connect_single_breaks=True)
    with pytest.raises(UsageError, match="--tracking-target-instance-count"):
        TrackingOptions(tracking_pre_cull_to_target=1)
    options = TrackingOptions(tracking_clean_instance_count=2)
    with pytest.raises(UsageError, match="not masks"):
        with_cleanup(make_tracker(options, MASKS, 0), options, MASKS, 0, False)
    plain = TrackingOptions()
    tracker = make_tracker(plain, POSES, N_NODES)
    assert with_cleanup(tracker, plain, POSES, N_NODES, False) is tracker


def test_max_instances_gives_the_target_count_and_track_cap_as_sleap_nns_cli_does() -> None:
    from sleap_infer.pipeline.spec import bind

    spec = bind(["m"], tracking=True, max_instances=3, post_connect_single_breaks=True)
    assert spec.tracking is not None
    assert spec.tracking.tracking_target_instance_count == 3 and spec.tracking.max_tracks == 3
    spec = bind(["m"], tracking=True, max_instances=3, tracking_pre_cull_to_target=1)
    assert spec.tracking is not None
    assert spec.tracking.tracking_target_instance_count == 3 and spec.tracking.max_tracks is None
    # a MOT tracker: sleap-nn takes its count only from --max_tracks (it would link)
    kw = dict(tracking=True, max_instances=3, post_connect_single_breaks=True)
    spec = bind(["m"], tracker="sort", **kw)
    assert spec.tracking is not None and spec.tracking.max_tracks is None
    assert not spec.tracking.links
    spec = bind(["m"], tracking=True, max_instances=3)  # nothing asks for a count
    assert spec.tracking is not None and spec.tracking.tracking_target_instance_count is None
    with pytest.raises(UsageError, match="only matter with --tracking"):
        bind(["m"], tracking_clean_instance_count=2)


def test_pre_cull_hands_a_mot_tracker_the_kept_poses_point_scores() -> None:
    """Issue 43: the culled frame must keep its point scores row for row (the MOT trackers
    score a pose by them); they were left whole and crashed OC-SORT's scoring."""
    t = cleaned(tracker="ocsort", tracking_target_instance_count=2, tracking_pre_cull_to_target=1)
    for f in range(6):
        det = poses(f, [(10 + f, 10), (60 + f, 10), (110 + f, 10)], [0.9, 0.1, 0.8])
        det.point_scores = np.array([[0.9] * N_NODES, [0.05] * N_NODES, [0.8] * N_NODES])
        ids = t.step(det).track_ids
    assert ids[1] == -1 and ids[0] >= 0 and ids[2] >= 0  # the culled one stays untracked
