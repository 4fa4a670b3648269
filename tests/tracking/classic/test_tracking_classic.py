"""The classic tracker: sleap-nn's assignment rules, and states that resume bit for bit."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from sleap_infer.core.errors import ResumeError, UsageError
from sleap_infer.tracking import MASKS, POSES, Detections, MaskBitmap, make_tracker
from sleap_infer.tracking.base import Assignment, TrackerState
from sleap_infer.tracking.classic.features import mask_crop
from sleap_infer.tracking.classic.matching import drop_infeasible, greedy, hungarian
from sleap_infer.tracking.classic.scoring import mask_iou, oks_matrix, reduce, reduce_columns
from sleap_infer.tracking.classic.tracker import ClassicTracker
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.tracking.resolve import resolve_options

N_NODES = 4
SHAPE = np.array([[0.0, 0.0], [6.0, 1.0], [3.0, 7.0], [-4.0, 4.0]])


def tracker(carrier: str = POSES, n_nodes: int = N_NODES, **kw: object) -> ClassicTracker:
    t = make_tracker(TrackingOptions(**kw), carrier, n_nodes, "embeddings" in kw.values())
    assert isinstance(t, ClassicTracker)
    return t


def poses(frame: int, centers: list[tuple[float, float]], **kw: object) -> Detections:
    points = np.array([SHAPE + np.array(c) for c in centers]).reshape(len(centers), N_NODES, 2)
    return Detections(frame, points, np.ones(len(centers)), **kw)  # type: ignore[arg-type]


def dots(frame: int, xs: list[float]) -> Detections:
    """One-node poses at ``(x, 0)``."""
    return Detections(frame, np.array([[[x, 0.0]] for x in xs]).reshape(-1, 1, 2), np.ones(len(xs)))


# ---------------------------------------------------------------- assignment rules


def test_ids_follow_two_animals_that_swap_places() -> None:
    t = tracker()
    rng = np.random.default_rng(0)
    ids_a, ids_b = set(), set()
    for f in range(30):
        a, b = (10 + 3 * f, 40.0), (100 - 3 * f, 46.0)  # cross at frame 15
        flip = f > 0 and bool(rng.integers(2))  # the detector lists them in any order
        out = t.step(poses(f, [b, a] if flip else [a, b]))
        ida, idb = (out.track_ids[1], out.track_ids[0]) if flip else tuple(out.track_ids)
        ids_a.add(int(ida))
        ids_b.add(int(idb))
    assert ids_a == {0} and ids_b == {1}
    assert t.n_tracks == 2


def test_greedy_and_hungarian_disagree_on_a_crafted_cost() -> None:
    cost = np.array([[5.5, 4.5], [20.0, 10.0]])
    assert hungarian(cost) == [(0, 0), (1, 1)]  # total 15.5
    assert greedy(cost) == [(0, 1), (1, 0)]  # cheapest edge first: 4.5 + 20
    # The same numbers as centroid distances: tracks at x=0 and x=10, detections at 5.5, 20.
    for matching, expected in (("hungarian", [0, 1]), ("greedy", [1, 0])):
        t = tracker(n_nodes=1, matching=matching)
        t.step(dots(0, [0.0, 10.0]))
        out = t.step(dots(1, [5.5, 20.0]))
        assert out.track_ids.tolist() == expected


def test_greedy_takes_ties_in_argsort_order() -> None:
    cost = np.array([[1.0, 1.0], [1.0, 1.0]])
    first = np.unravel_index(np.argsort(cost, axis=None), cost.shape)
    assert greedy(cost)[0] == (int(first[0][0]), int(first[1][0]))


def test_hungarian_fills_infinite_costs_like_sleap_nn() -> None:
    cost = np.array([[np.inf, -0.9], [-0.8, np.inf], [np.inf, np.inf]])
    assert hungarian(cost) == [(0, 1), (1, 0)]
    assert hungarian(np.full((2, 2), np.inf)) == [(0, 0), (1, 1)]  # all infeasible: 1e6 fill


def test_infeasible_pairs_are_dropped_only_where_a_track_can_start() -> None:
    cost = np.array([[np.inf, -0.5], [-0.9, np.inf]])
    pairs = [(0, 0), (1, 1)]
    assert drop_infeasible(pairs, cost, [True, True], None) == []
    assert drop_infeasible(pairs, cost, [False, True], None) == [(0, 0)]
    assert drop_infeasible(pairs, cost, [True, True], 1) == [(1, 1)]
    # An unpaired row claims the one free id first: both infeasible pairs are kept.
    cost3 = np.vstack([cost, [[np.inf, np.inf]]])
    assert drop_infeasible(pairs, cost3, [True, True, True], 1) == pairs


def test_a_detection_without_a_vector_starts_a_track_instead_of_stealing_one() -> None:
    t = tracker(features="embeddings")
    e = np.eye(3)
    t.step(poses(0, [(10, 10), (50, 10)], embeddings=e[:2]))
    out = t.step(poses(1, [(10, 10), (50, 10)], embeddings=np.array([e[1], [np.nan] * 3])))
    assert out.track_ids.tolist() == [1, 2]
    assert out.scores[0] == pytest.approx(1.0) and out.scores[1] == 1.0  # a new track: 1.0


def test_at_the_track_cap_an_infeasible_pair_is_kept_with_minus_inf() -> None:
    t = tracker(features="embeddings", max_tracks=1)
    t.step(poses(0, [(10, 10)], embeddings=np.eye(2)[:1]))
    out = t.step(poses(1, [(10, 10)], embeddings=np.full((1, 2), np.nan)))
    assert out.track_ids.tolist() == [0] and out.scores[0] == -np.inf


def test_max_tracks_caps_ids_and_leaves_the_rest_untracked() -> None:
    t = tracker(max_tracks=2)
    assert t.options.candidates == "local_queues"
    for f in range(5):
        out = t.step(poses(f, [(10, 10), (60, 10), (110, 10), (160, 10)]))
        assert len(out.track_ids) == 4  # nothing dropped
        assert set(out.track_ids.tolist()) == {0, 1, -1}
        assert np.isnan(out.scores[out.track_ids < 0]).all()
    assert t.n_tracks == 2


def test_a_sparse_pose_stays_untracked_not_dropped() -> None:
    for candidates, later in (("fixed_window", [0, -1]), ("local_queues", [0, 1])):
        t = tracker(min_new_track_points=2, candidates=candidates)
        sparse = poses(0, [(10, 10), (60, 10)])
        sparse.points[1, 1:] = np.nan  # one visible node: not enough for a track of its own
        out = t.step(sparse)
        assert out.track_ids.tolist() == [0, -1] and np.isnan(out.scores[1])
        # sleap-nn's fixed window scores its untracked poses as one more track ("None"):
        # the full pose that follows the sparse one matches it and stays untracked too.
        out = t.step(poses(1, [(11, 10), (60, 10)]))
        assert out.track_ids.tolist() == later


@pytest.mark.parametrize(
    ("reduction", "quantile", "expected"),
    [("mean", 1.0, -9.0), ("max", 1.0, -8.0), ("robust_quantile", 0.25, -9.5)],
)
def test_a_track_score_reduces_its_candidates(
    reduction: str, quantile: float, expected: float
) -> None:
    t = tracker(n_nodes=1, reduction=reduction, robust_quantile=quantile)
    for f, x in enumerate([0.0, 1.0, 2.0]):
        t.step(dots(f, [x]))
    out = t.step(dots(3, [10.0]))  # distances 10, 9, 8 to the window's three candidates
    assert out.track_ids.tolist() == [0] and out.scores[0] == pytest.approx(expected)


@pytest.mark.parametrize("reduction", ["mean", "max", "robust_quantile"])
def test_tracks_reduced_together_give_the_bits_of_one_row_at_a_time(reduction: str) -> None:
    """The batched reduction must not move a single bit: ties decide matches."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        lengths = rng.integers(0, 30, rng.integers(1, 9)).tolist()
        pairs = rng.normal(size=(int(rng.integers(1, 12)), sum(lengths)))
        pairs *= 10 ** rng.uniform(-3, 3)
        pairs[rng.random(pairs.shape) < 0.2] = np.nan
        rows = np.full((pairs.shape[0], len(lengths)), np.nan)
        start = 0
        for t, k in enumerate(lengths):
            for q in range(pairs.shape[0]):
                if k:
                    rows[q, t] = reduce(pairs[q, start : start + k], reduction, 0.9)
            start += k
        batched = reduce_columns(pairs, lengths, reduction, 0.9)
        np.testing.assert_array_equal(batched.view(np.int64), rows.view(np.int64))


def test_min_match_points_ignores_thin_candidates() -> None:
    t = tracker(min_match_points=3)
    thin = poses(0, [(10, 10)])
    thin.points[0, :2] = np.nan  # 2 visible nodes: starts a track, but is no candidate
    t.step(thin)
    out = t.step(poses(1, [(10, 10)]))
    assert out.track_ids.tolist() == [1]  # nothing to match: a new track


def test_oks_matches_the_coco_formula() -> None:
    gt = SHAPE[None] + 50.0
    pr = gt + np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0], [np.nan, np.nan]])
    area = np.prod(np.ptp(gt[0], axis=0))
    d2 = np.array([1.0, 4.0, 0.0])
    expected = np.exp(-d2 / ((2 * 0.025) ** 2 * 2 * (area + np.spacing(1)))).sum() / 4
    assert oks_matrix(gt, pr, 0.025)[0, 0] == pytest.approx(expected)


def test_empty_mask_frames_are_skipped() -> None:
    t = tracker(MASKS)
    bitmap = np.zeros((8, 8), bool)
    bitmap[2:5, 2:5] = True
    t.step(Detections(0, np.zeros((1, 0, 2)), np.ones(1), masks=[MaskBitmap(bitmap)]))
    before = t.state()
    out = t.step(Detections(1, np.zeros((0, 0, 2)), np.zeros(0), masks=[]))
    assert len(out.track_ids) == 0
    _assert_same_state(before, t.state())


def test_mask_crop_decodes_scale_and_offset_onto_the_image_grid() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        bitmap = rng.random((12, 10)) < 0.3
        scale = (0.5, 0.25)
        offset = (float(rng.integers(-6, 6)), float(rng.integers(-6, 6)))
        grid = np.repeat(np.repeat(bitmap, 4, axis=0), 2, axis=1)  # nearest upsampling
        ox, oy = int(offset[0]), int(offset[1])
        dense = np.zeros((max(0, oy) + grid.shape[0], max(0, ox) + grid.shape[1]), bool)
        src = grid[max(0, -oy) :, max(0, -ox) :]
        dense[max(0, oy) : max(0, oy) + src.shape[0], max(0, ox) : max(0, ox) + src.shape[1]] = src
        crop = mask_crop(MaskBitmap(bitmap, scale, offset))
        assert crop.area == int(dense[crop.y0 :, crop.x0 :].sum()) == int(dense.sum())
        full = np.zeros_like(dense)
        full[crop.y0 : crop.y0 + crop.crop.shape[0], crop.x0 : crop.x0 + crop.crop.shape[1]] = (
            crop.crop
        )
        assert np.array_equal(full, dense)
    a = mask_crop(MaskBitmap(np.ones((4, 4), bool)))
    b = mask_crop(MaskBitmap(np.ones((4, 4), bool), offset=(2.0, 0.0)))
    assert mask_iou(a, b) == pytest.approx(8 / 24)
    empty = mask_crop(MaskBitmap(np.zeros((4, 4), bool)))
    assert mask_iou(empty, empty) == 1.0


# ---------------------------------------------------------------- resolving options


def test_automatic_choices_follow_sleap_nn() -> None:
    auto = TrackingOptions()
    r = resolve_options(auto, POSES, 4)
    assert (r.features, r.scoring, r.candidates, r.window_size) == (
        "keypoints",
        "oks",
        "fixed_window",
        5,
    )
    r = resolve_options(auto, POSES, 1)
    assert (r.features, r.scoring) == ("centroids", "euclidean_dist")
    r = resolve_options(auto, MASKS, 0)
    assert (r.features, r.scoring, r.candidates, r.window_size) == (
        "masks",
        "mask_iou",
        "local_queues",
        25,
    )
    r = resolve_options(auto, MASKS, 0, has_embeddings=True)
    assert (r.features, r.scoring, r.candidates, r.window_size) == (
        "embeddings",
        "cosine_sim",
        "local_queues",
        5,
    )
    r = resolve_options(TrackingOptions(features="embeddings", scoring="oks"), POSES, 4, True)
    assert r.scoring == "cosine_sim"
    r = resolve_options(TrackingOptions(max_tracks=3, candidates="fixed_window"), POSES, 4)
    assert r.candidates == "local_queues"
    r = resolve_options(TrackingOptions(features="bboxes"), POSES, 4)
    assert r.scoring == "iou"
    r = resolve_options(TrackingOptions(tracker="bytetrack", use_flow=True), MASKS, 0)
    assert r.features == "masks" and r.window_size == 25


@pytest.mark.parametrize(
    ("options", "carrier", "vectors"),
    [
        (TrackingOptions(features="masks"), POSES, False),
        (TrackingOptions(features="embeddings"), POSES, False),
        (TrackingOptions(features="keypoints", scoring="mask_iou"), POSES, False),
        (TrackingOptions(features="centroids", scoring="oks"), POSES, False),
        (TrackingOptions(features="keypoints"), MASKS, False),
        (TrackingOptions(use_flow=True), MASKS, False),
        (TrackingOptions(features="embeddings", use_flow=True), POSES, True),
        (TrackingOptions(features="embeddings", scoring="iou"), POSES, True),
    ],
)
def test_impossible_combinations_are_one_line_usage_errors(
    options: TrackingOptions, carrier: str, vectors: bool
) -> None:
    with pytest.raises(UsageError) as err:
        resolve_options(options, carrier, 4, vectors)
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- states


def _assert_same_state(a: TrackerState, b: TrackerState) -> None:
    assert a.meta == b.meta
    assert a.arrays.keys() == b.arrays.keys()
    for name in a.arrays:
        assert a.arrays[name].dtype == b.arrays[name].dtype, name
        assert np.array_equal(a.arrays[name], b.arrays[name], equal_nan=True), name


def _scene(carrier: str, n_frames: int = 40, seed: int = 0) -> list[Detections]:
    """Three animals wandering, with misses, stray detections, hidden nodes, re-ID vectors."""
    rng = np.random.default_rng(seed)
    pos = rng.uniform(30, 90, (3, 2))
    identity = rng.normal(0, 1, (3, 6))
    out = []
    for f in range(n_frames):
        pos += rng.normal(0, 3, pos.shape)
        shown = [a for a in range(3) if rng.random() > 0.1]
        pts = np.array([SHAPE + pos[a] + rng.normal(0, 1, SHAPE.shape) for a in shown])
        pts = pts.reshape(len(shown), N_NODES, 2)
        pts[rng.random(pts.shape[:2]) < 0.15] = np.nan
        vec = np.array([identity[a] + rng.normal(0, 0.3, 6) for a in shown]).reshape(-1, 6)
        if len(shown) and rng.random() < 0.2:
            vec[0] = np.nan
        masks = []
        for p in pts:
            bitmap = np.zeros((64, 64), bool)
            for x, y in p[~np.isnan(p).any(axis=1)] / 2:
                bitmap[max(0, int(y) - 3) : int(y) + 3, max(0, int(x) - 3) : int(x) + 3] = True
            masks.append(MaskBitmap(bitmap, (0.5, 0.5)))
        if carrier == MASKS:
            pts = np.zeros((len(shown), 0, 2))
        out.append(Detections(f, pts, np.ones(len(shown)), masks=masks, embeddings=vec))
    return out


def _run(options: TrackingOptions, carrier: str, scene: list[Detections], cut: int | None):
    vectors = options.features == "embeddings" or options.appearance_weight > 0
    t = make_tracker(options, carrier, N_NODES, vectors)
    answers: list[Assignment] = []
    for f, det in enumerate(scene):
        answers.append(t.step(det))
        if f == cut:
            state = t.state()
            wire = TrackerState(json.loads(json.dumps(state.meta)), {**state.arrays})
            t = make_tracker(options, carrier, N_NODES, vectors)
            t.load_state(wire)
            _assert_same_state(state, t.state())
    return answers, t


COMBINATIONS = [
    (POSES, TrackingOptions()),
    (POSES, TrackingOptions(features="centroids", scoring="euclidean_dist")),
    (POSES, TrackingOptions(features="bboxes", scoring="iou", matching="greedy")),
    (
        POSES,
        TrackingOptions(features="keypoints", reduction="robust_quantile", robust_quantile=0.6),
    ),
    (POSES, TrackingOptions(candidates="local_queues", max_tracks=2, min_new_track_points=2)),
    (POSES, TrackingOptions(features="embeddings")),
    (POSES, TrackingOptions(features="embeddings", candidates="fixed_window", reduction="max")),
    (MASKS, TrackingOptions()),
    (MASKS, TrackingOptions(candidates="fixed_window", window_size=3)),
    (MASKS, TrackingOptions(features="embeddings")),
    (POSES, TrackingOptions(appearance_weight=0.4)),
    (POSES, TrackingOptions(appearance_weight=0.3, candidates="local_queues")),
    (
        POSES,
        TrackingOptions(
            features="centroids", scoring="euclidean_dist", appearance_weight=0.5, euclidean_scale=4
        ),
    ),
    (MASKS, TrackingOptions(appearance_weight=0.5)),
]


@pytest.mark.parametrize(("carrier", "options"), COMBINATIONS)
def test_a_state_saved_mid_video_resumes_bit_for_bit(
    carrier: str, options: TrackingOptions
) -> None:
    scene = _scene(carrier)
    whole, t_whole = _run(options, carrier, scene, None)
    for cut in (0, 7, 23):
        resumed, t_resumed = _run(options, carrier, scene, cut)
        for a, b in zip(whole, resumed):
            assert a.track_ids.tolist() == b.track_ids.tolist()
            assert np.array_equal(a.scores, b.scores, equal_nan=True)
        _assert_same_state(t_whole.state(), t_resumed.state())
    assert t_whole.n_tracks >= 2


def test_state_keeps_dtypes_and_stays_bounded() -> None:
    options = TrackingOptions(features="centroids", scoring="euclidean_dist")
    _, t_short = _run(options, POSES, _scene(POSES, 20), None)
    _, t_long = _run(options, POSES, _scene(POSES, 200), None)
    a, b = t_short.state().arrays, t_long.state().arrays
    assert b["points"].dtype == np.float64 and b["score"].dtype == np.float64
    assert b["frame"].shape[0] <= 5 * 4 and a["slot_frame"].shape == b["slot_frame"].shape
    masks = make_tracker(TrackingOptions(), MASKS, 0)
    for det in _scene(MASKS, 10):
        masks.step(det)
    arrays = masks.state().arrays
    assert arrays["crop_bits"].dtype == np.uint8
    assert arrays["crop_bits"].nbytes < 64 * 64 * len(arrays["frame"]) / 8


def test_a_state_from_other_settings_is_refused() -> None:
    t = tracker()
    t.step(poses(0, [(10, 10)]))
    other = tracker(candidates="local_queues")
    with pytest.raises(ResumeError, match="tracker state"):
        other.load_state(t.state())


# ---------------------------------------------------------------- optical flow


def _blob_frame(centers: list[tuple[float, float]]) -> np.ndarray:
    yy, xx = np.mgrid[0:96, 0:160]
    img = np.zeros((96, 160))
    for cx, cy in centers:
        for dx, dy in SHAPE:
            img += 220 * np.exp(-((xx - cx - dx) ** 2 + (yy - cy - dy) ** 2) / 12.0)
    return np.clip(img, 0, 255).astype(np.uint8)[..., None]


def test_flow_shifts_candidates_and_resumes_with_its_images() -> None:
    pytest.importorskip("cv2")
    options = TrackingOptions(use_flow=True)
    scene = []
    for f in range(12):
        centers = [(20 + 6 * f, 30.0), (130 - 6 * f, 60.0)]
        scene.append(poses(f, centers, image=_blob_frame(centers)))
    t = make_tracker(options, POSES, N_NODES)
    assert t.needs_images
    whole, _ = _run(options, POSES, scene, None)
    resumed, t2 = _run(options, POSES, scene, 5)
    assert [a.track_ids.tolist() for a in whole] == [[0, 1]] * 12
    for a, b in zip(whole, resumed):
        assert np.array_equal(a.scores, b.scores, equal_nan=True)
    assert t2.state().arrays["images"].dtype == np.uint8


def test_flow_without_opencv_fails_before_the_first_frame() -> None:
    if importlib.util.find_spec("cv2") is not None:
        pytest.skip("OpenCV is installed")
    with pytest.raises(UsageError, match="opencv-python-headless"):
        tracker(use_flow=True)
