"""ByteTrack: ids through crossings and gaps, the two score stages, caps, masks, one-node poses,
exact resume."""

from __future__ import annotations

import numpy as np
import pytest
from journal_roundtrip import through_json

from sleap_infer.tracking.base import Detections, MaskBitmap, TrackerState
from sleap_infer.tracking.common import kalman
from sleap_infer.tracking.infer_bytetrack.tracker import (
    ByteTracker,
    iou_matrix,
    mask_boxes,
    padded,
    pose_boxes,
    shared_node_iou,
)
from sleap_infer.tracking.options import TrackingOptions


def tracker(carrier: str = "poses", **options: object) -> ByteTracker:
    return ByteTracker(TrackingOptions(tracker="infer_bytetrack", **options), carrier)


def body(cx: float, cy: float, length: float = 30.0, width: float = 10.0) -> np.ndarray:
    """A 3-node pose: two corners of a ``length`` x ``width`` box and its centre."""
    return np.array(
        [[cx - length / 2, cy - width / 2], [cx, cy], [cx + length / 2, cy + width / 2]]
    )


def frame(f: int, poses: list[np.ndarray], scores: list[float], nodes: int = 3) -> Detections:
    points = np.array(poses, dtype=np.float64).reshape(len(poses), nodes, 2)
    return Detections(frame_idx=f, points=points, scores=np.array(scores, dtype=np.float64))


def run(t: ByteTracker, frames: list[Detections]) -> list[np.ndarray]:
    return [t.step(d).track_ids for d in frames]


def test_crossing_bodies_keep_their_ids() -> None:
    """Two bodies pass over each other head-on; motion, not position, tells them apart."""
    t = tracker()
    ids = run(
        t,
        [frame(f, [body(20 + 4 * f, 100), body(220 - 4 * f, 104)], [0.9, 0.9]) for f in range(50)],
    )
    assert ids[0].tolist() == [-1, -1]  # unconfirmed until a second match
    assert all(i.tolist() == [0, 1] for i in ids[1:])  # crossed at f = 25 without a swap
    assert t.n_tracks == 2


def test_a_short_gap_gets_the_old_id_back_and_a_long_one_does_not() -> None:
    moving = [frame(f, [body(30 + 3 * f, 60)], [0.9]) for f in range(60)]
    short = moving[:20] + moving[40:]  # unseen for 19 frames, reappears where it went
    t = tracker(track_buffer=30)
    ids = run(t, short)
    assert ids[-1].tolist() == [0] and ids[20].tolist() == [0]
    assert t.n_tracks == 1

    t = tracker(track_buffer=10)
    ids = run(t, short)
    assert ids[20].tolist() == [-1]  # a new, unconfirmed track
    assert ids[21].tolist() == [1]
    assert t.n_tracks == 2


def test_low_scores_keep_a_track_but_never_start_one() -> None:
    t = tracker()
    for f in range(10):  # a body whose score drops into the low band at f = 5
        a = t.step(frame(f, [body(50 + 2 * f, 50), body(200, 200)], [0.9 if f < 5 else 0.3, 0.3]))
        assert a.track_ids[1] == -1  # a low-score body alone never gets a track
        if f >= 1:
            assert a.track_ids[0] == 0
            assert 0.5 <= a.scores[0] <= 1.0  # stage-2 matches need IoU 0.5
    assert t.n_tracks == 1

    t = tracker()  # a lost track does not take low-score detections (stage 2: tracked only)
    run(t, [frame(f, [body(50 + 2 * f, 50)], [0.9]) for f in range(5)])
    t.step(frame(5, [], []))
    assert t.step(frame(6, [body(62, 50)], [0.3])).track_ids.tolist() == [-1]
    assert t.step(frame(7, [body(64, 50)], [0.9])).track_ids.tolist() == [0]


def test_nothing_is_dropped() -> None:
    t = tracker()
    run(t, [frame(f, [body(40 + f, 40)], [0.9]) for f in range(3)])
    hidden = np.full((3, 2), np.nan)
    one_node = np.array([[100.0, 100.0], [np.nan, np.nan], [np.nan, np.nan]])
    poses = [hidden, body(43, 40), body(150, 150), body(200, 60), one_node]
    a = t.step(frame(3, poses, [0.9, 0.9, 0.9, 0.05, 0.9]))
    assert a.track_ids.dtype == np.int64 and a.scores.dtype == np.float32
    # no box, tracked, new (unconfirmed), below the low threshold, a new one-node body
    assert a.track_ids.tolist() == [-1, 0, -1, -1, -1]
    assert np.isnan(a.scores[[0, 2, 3, 4]]).all() and a.scores[1] > 0.5
    empty = t.step(frame(4, [], []))
    assert empty.track_ids.shape == (0,) and empty.scores.shape == (0,)


def test_max_tracks_is_no_cap_inside_the_tracker() -> None:
    """sleap-nn's MOT trackers keep max_tracks by closed-set linking at the video's end
    (pipeline.linked), never online: capped online, a third body stayed untracked."""
    spots = [(40, 40), (200, 40), (120, 200)]
    frames = [frame(f, [body(x + f, y) for x, y in spots], [0.9] * 3) for f in range(5)]
    capped, free = tracker(max_tracks=2), tracker()
    ids = run(capped, frames)
    assert [i.tolist() for i in ids] == [i.tolist() for i in run(free, frames)]
    assert ids[-1].tolist() == [0, 1, 2] and capped.n_tracks == 3


def one_node(f: int, centres: list[tuple[float, float]], scores: list[float]) -> Detections:
    """A frame of one-node poses (a centroid model's output)."""
    return frame(f, [np.array([c]) for c in centres], scores, nodes=1)


def test_one_node_animals_moving_apart_get_two_confirmed_ids() -> None:
    """Regression: a single point's box had no extent, so no IoU and every detection -1."""
    t = tracker()
    centres = [[(10 + 2 * f, 10), (100 - 2 * f, 80)] for f in range(20)]
    ids = run(t, [one_node(f, c, [0.9, 0.8]) for f, c in enumerate(centres)])
    assert ids[-1].tolist() == [0, 1] and t.n_tracks == 2
    # The body size settles on the motion evidence within a few frames; ids never change after.
    first = next(f for f, i in enumerate(ids) if (i >= 0).all())
    assert first <= 5 and all(i.tolist() == [0, 1] for i in ids[first:])


def test_crossing_one_node_animals_keep_their_ids() -> None:
    """Head-on crossing of two centroids: the Kalman motion carries each through."""
    t = tracker()
    centres = [[(20 + 4 * f, 100), (220 - 4 * f, 104)] for f in range(50)]
    ids = run(t, [one_node(f, c, [0.9, 0.9]) for f, c in enumerate(centres)])
    first = next(f for f, i in enumerate(ids) if (i >= 0).all())
    assert first <= 5 and all(i.tolist() == [0, 1] for i in ids[first:])  # crossed at f = 25
    assert t.n_tracks == 2


def test_a_pose_collapsed_to_one_visible_node_is_tracked() -> None:
    """Multi-node poses whose only visible node is one point take the body-size box too."""
    t = tracker()
    frames = []
    for f in range(12):
        poses = [body(40 + 3 * f, 50), body(200 - 3 * f, 150)]
        if f >= 6:  # the second animal is seen by one node only from here on
            poses[1][[0, 2]] = np.nan
        frames.append(frame(f, poses, [0.9, 0.9]))
    ids = run(t, frames)
    assert all(i.tolist() == [0, 1] for i in ids[1:]) and t.n_tracks == 2


def _scene(seed: int, n_frames: int, nodes: int = 3) -> list[Detections]:
    """Three bodies on noisy, crossing lines with dropouts, low scores and false positives.

    ``nodes=1``: each body's centre node only (a centroid model's output).
    """
    rng = np.random.default_rng(seed)
    start = rng.uniform(40, 200, (3, 2))
    velocity = rng.uniform(-2.5, 2.5, (3, 2))
    frames = []
    for f in range(n_frames):
        poses, scores = [], []
        for a in range(3):
            if rng.random() < 0.1:
                continue
            pose = body(*(start[a] + f * velocity[a])) + rng.normal(0, 1, (3, 2))
            pose[rng.random(3) < 0.15] = np.nan
            poses.append(pose if nodes == 3 else pose[1:2])
            scores.append(rng.uniform(0.2, 1.0))
        if rng.random() < 0.2:
            poses.append(body(*rng.uniform(20, 230, 2))[3 - nodes :])
            scores.append(rng.uniform(0.5, 0.8))
        frames.append(frame(f, poses, scores, nodes))
    return frames


@pytest.mark.parametrize("nodes", [3, 1])
@pytest.mark.parametrize("cut", [1, 17, 40])
def test_resume_from_state_is_bit_identical(cut: int, nodes: int) -> None:
    """One node: the running body size (and its previous frame's geometry) is in the state."""
    frames = _scene(seed=3, n_frames=60, nodes=nodes)
    whole = tracker(max_tracks=4)
    expected = [whole.step(d) for d in frames]
    first = tracker(max_tracks=4)
    got = [first.step(d) for d in frames[:cut]]
    state = first.state()
    assert state.arrays["mean"].dtype == np.float64 and state.arrays["cov"].dtype == np.float64
    resumed = tracker(max_tracks=4)
    resumed.load_state(through_json(state))
    got += [resumed.step(d) for d in frames[cut:]]
    for e, g in zip(expected, got):
        assert np.array_equal(e.track_ids, g.track_ids)
        assert e.scores.tobytes() == g.scores.tobytes()
    end, again = whole.state(), resumed.state()
    assert end.meta == again.meta and end.arrays.keys() == again.arrays.keys()
    for name, values in end.arrays.items():
        assert values.dtype == again.arrays[name].dtype
        assert values.tobytes() == again.arrays[name].tobytes(), name
    assert whole.n_tracks == resumed.n_tracks > 0


def test_pose_boxes_span_visible_nodes() -> None:
    points = np.array(
        [[[1.0, 2.0], [np.nan, np.nan], [5.0, -1.0]], [[np.nan, 3.0], [np.nan, np.nan], [4, 4]]]
    )
    boxes = pose_boxes(points)
    assert boxes[0].tolist() == [1.0, -1.0, 5.0, 2.0]
    assert boxes[1].tolist() == [4.0, 4.0, 4.0, 4.0]  # a node with one NaN coordinate is hidden
    assert np.isnan(pose_boxes(np.full((1, 3, 2), np.nan))).all()


def test_mask_boxes_map_bitmap_extent_to_frame_pixels() -> None:
    bitmap = np.zeros((8, 12), dtype=bool)
    bitmap[2:6, 3:10] = True  # rows 2..5, columns 3..9
    masks = [
        MaskBitmap(bitmap, scale=(0.5, 0.5), offset=(10.0, 20.0)),
        MaskBitmap(np.zeros((4, 4), dtype=bool)),
    ]
    boxes = mask_boxes(masks)
    assert boxes[0].tolist() == [16.0, 24.0, 30.0, 32.0]  # offset + [3, 10) / 0.5, [2, 6) / 0.5
    assert np.isnan(boxes[1]).all()


def test_masks_are_tracked_by_their_boxes() -> None:
    t = tracker("masks")

    def blob(x: int) -> MaskBitmap:
        bitmap = np.zeros((64, 128), dtype=bool)
        bitmap[20:40, x : x + 30] = True
        return MaskBitmap(bitmap, scale=(0.5, 0.5))  # frame pixels = 2 x bitmap pixels

    for f in range(8):
        masks = [blob(5 + 2 * f), blob(90 - 2 * f), MaskBitmap(np.zeros((64, 128), dtype=bool))]
        d = Detections(f, np.zeros((3, 0, 2)), np.array([0.9, 0.9, 0.9]), masks=masks)
        ids = t.step(d).track_ids
        assert ids.tolist() == ([-1, -1, -1] if f == 0 else [0, 1, -1])


def test_kalman_learns_constant_velocity() -> None:
    mean, cov = kalman.initiate(np.array([[10.0, 20.0, 30.0, 10.0]]))
    for step in range(1, 30):
        mean, cov = kalman.predict(mean, cov)
        mean, cov = kalman.update(mean, cov, np.array([[10.0 + 2 * step, 20.0 - step, 30.0, 10.0]]))
    predicted, _ = kalman.predict(mean, cov)
    assert np.allclose(predicted[0, :4], [10.0 + 60, 20.0 - 30, 30.0, 10.0], atol=0.05)
    assert np.allclose(cov, np.swapaxes(cov, 1, 2))
    assert (np.linalg.eigvalsh(cov) > 0).all()


def test_a_track_labels_its_first_detection_once_confirmed() -> None:
    """The first detection of a track is answered before the track exists; when the next
    frame confirms it, that detection gets the id as a late label (score 1.0)."""
    t = tracker()
    pose = np.array([[[10.0, 10.0], [30.0, 12.0], [20.0, 25.0]]])
    first = t.step(Detections(0, pose, np.array([0.9])))
    second = t.step(Detections(1, pose + 1.0, np.array([0.9])))
    assert first.track_ids.tolist() == [-1] and first.late == []
    assert second.track_ids.tolist() == [0] and second.late == [(0, 0, 0, 1.0)]


def test_a_state_of_an_earlier_format_or_name_is_refused() -> None:
    """Only the current state format, under the name infer_bytetrack, loads."""
    t = tracker()
    for d in _scene(seed=3, n_frames=10):
        t.step(d)
    state = t.state()
    for meta in (state.meta | {"format": 2}, state.meta | {"tracker": "bytetrack"}):
        with pytest.raises(ValueError, match="not an infer_bytetrack state"):
            tracker().load_state(TrackerState(meta=meta, arrays=state.arrays))


# ------------------------------------------- geometry, against the row-wise formulas


def _padded_rows(boxes: np.ndarray) -> np.ndarray:
    lo, hi = boxes[:, :2], boxes[:, 2:]
    pad = 0.1 * (hi - lo).max(axis=1, keepdims=True)
    lo, hi = lo - pad, hi + pad
    grow = 0.5 * np.maximum(0.25 * (hi - lo).max(axis=1, keepdims=True) - (hi - lo), 0)
    return np.concatenate([lo - grow, hi + grow], axis=1)


def _iou_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    lo = np.maximum(a[:, None, :2], b[None, :, :2])
    hi = np.minimum(a[:, None, 2:], b[None, :, 2:])
    with np.errstate(invalid="ignore", divide="ignore"):
        inter = np.clip(hi - lo, 0.0, None).prod(axis=-1)
        area_a = (a[:, 2:] - a[:, :2]).prod(axis=-1)
        area_b = (b[:, 2:] - b[:, :2]).prod(axis=-1)
        iou = inter / (area_a[:, None] + area_b[None, :] - inter)
    return np.nan_to_num(iou, nan=0.0, posinf=0.0, neginf=0.0)


def _shared_iou_pairs(track_poses: np.ndarray, points: np.ndarray) -> np.ndarray:
    out = np.zeros((len(track_poses), len(points)))
    for i, t in enumerate(track_poses):
        for j, p in enumerate(points):
            both = np.isfinite(t).all(-1) & np.isfinite(p).all(-1)
            if both.sum() < 2:
                continue
            a, b = (
                _padded_rows(np.concatenate([q[both].min(0), q[both].max(0)])[None]) for q in (t, p)
            )
            a, b = a[0], b[0]
            overlap = np.clip(np.minimum(a[2:], b[2:]) - np.maximum(a[:2], b[:2]), 0, None)
            inter = overlap.prod()
            union = (a[2:] - a[:2]).prod() + (b[2:] - b[:2]).prod() - inter
            with np.errstate(invalid="ignore", divide="ignore"):
                out[i, j] = np.nan_to_num(inter / union, nan=0.0, posinf=0.0)
    return out


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).view(np.int64)


def test_box_geometry_has_the_bits_of_the_row_wise_formulas() -> None:
    rng = np.random.default_rng(5)
    for nodes in (1, 2, 5, 9):
        centres = rng.uniform(0, 300, (12, 1, 2))
        a = centres + rng.normal(0, 12, (12, nodes, 2))
        b = centres[rng.permutation(12)[:9]] + rng.normal(0, 12, (9, nodes, 2))
        for pts in (a, b):
            pts[rng.random(pts.shape[:2]) < 0.3] = np.nan
        raw = pose_boxes(a)
        want_raw = np.full((len(a), 4), np.nan)
        for i, pose in enumerate(a):
            seen = np.isfinite(pose).all(-1)
            if seen.any():
                want_raw[i] = np.concatenate([pose[seen].min(0), pose[seen].max(0)])
        np.testing.assert_array_equal(_bits(raw), _bits(want_raw))
        np.testing.assert_array_equal(_bits(padded(raw)), _bits(_padded_rows(raw)))
        boxes_b = padded(pose_boxes(b))
        got = iou_matrix(padded(raw), boxes_b)
        np.testing.assert_array_equal(_bits(got), _bits(_iou_rows(padded(raw), boxes_b)))
        np.testing.assert_array_equal(_bits(shared_node_iou(a, b)), _bits(_shared_iou_pairs(a, b)))
