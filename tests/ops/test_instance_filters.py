"""sleap-nn's post-inference instance filters, on values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sleap_infer.core.errors import UsageError
from sleap_infer.core.filters import InstanceFilters
from sleap_infer.ops.instance_filters import (
    bbox_iou,
    filter_centroid_distance,
    filter_instances,
    filter_node_count,
    filter_overlapping,
    filter_scores,
    mean_node_scores,
    oks,
)

NAN = np.nan


def batch(
    instances: list[list[tuple[float, float]]], scores: list[float]
) -> tuple[np.ndarray, ...]:
    """One frame: points (1, I, N, 2), point scores of 1, instance scores, all valid."""
    points = np.array([instances], np.float32)
    point_scores = np.where(np.isnan(points[..., 0]), np.float32(0), np.float32(1))
    return points, point_scores, np.array([scores], np.float32), np.ones((1, len(scores)), bool)


# A spans the box [0, 10] x [0, 10] (area 100), B the box [0, 10] x [0, 8] inside it: IoU 0.8.
BOX_A = [(0.0, 0.0), (10.0, 10.0), (5.0, 5.0), (2.0, 3.0), (7.0, 1.0)]
BOX_B = [(0.0, 0.0), (10.0, 8.0), (5.0, 5.0), (2.0, 3.0), (7.0, 1.0)]


def test_iou_of_nested_boxes() -> None:
    points, *_ = batch([BOX_A, BOX_B], [0.9, 0.5])
    assert bbox_iou(points)[0, 0, 1] == pytest.approx(0.8)
    assert bbox_iou(points)[0, 1, 0] == pytest.approx(0.8)


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [(0.5, [True, False]), (0.9, [True, True]), (0.8, [True, True])],  # drop only *above*
)
def test_iou_drops_the_lower_score(threshold: float, expected: list[bool]) -> None:
    points, _, scores, valid = batch([BOX_A, BOX_B], [0.9, 0.5])
    keep = filter_overlapping(points, scores, valid, method="iou", threshold=threshold)
    assert keep[0].tolist() == expected


def test_iou_keeps_the_higher_score_whatever_its_slot() -> None:
    points, _, scores, valid = batch([BOX_A, BOX_B], [0.5, 0.9])
    keep = filter_overlapping(points, scores, valid, method="iou", threshold=0.5)
    assert keep[0].tolist() == [False, True]


# OKS against (0,0),(10,13) with the candidate's box area as scale:
#   candidate (0,0),(10,10): area 100, d^2 = 9 -> (1 + exp(-9 / 2)) / 2    = 0.5056
#   candidate (0,0),(10,13): area 130        -> (1 + exp(-9 / 2.6)) / 2 = 0.5157
OKS_SQUARE = [(0.0, 0.0), (10.0, 10.0)]
OKS_TALL = [(0.0, 0.0), (10.0, 13.0)]


def test_oks_is_scaled_by_the_candidate() -> None:
    points, *_ = batch([OKS_SQUARE, OKS_TALL], [0.5, 0.9])
    sim = oks(points)[0]
    assert sim[0, 1] == pytest.approx((1 + math.exp(-4.5)) / 2, rel=1e-6)
    assert sim[1, 0] == pytest.approx((1 + math.exp(-9 / 2.6)) / 2, rel=1e-6)
    assert sim[0, 0] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("scores", "threshold", "expected"),
    [
        ([0.5, 0.9], 0.5, [False, True]),  # square is the candidate: 0.5056 > 0.5
        ([0.5, 0.9], 0.6, [True, True]),
        ([0.5, 0.9], 0.51, [True, True]),  # 0.5056 <= 0.51
        ([0.9, 0.5], 0.51, [True, False]),  # tall is the candidate: 0.5157 > 0.51
    ],
)
def test_oks_suppression(scores: list[float], threshold: float, expected: list[bool]) -> None:
    points, _, inst, valid = batch([OKS_SQUARE, OKS_TALL], scores)
    keep = filter_overlapping(points, inst, valid, method="oks", threshold=threshold)
    assert keep[0].tolist() == expected


def test_oks_is_zero_for_a_candidate_with_one_visible_node() -> None:
    points, *_ = batch([[(0.0, 0.0), (NAN, NAN)], [(0.0, 0.0), (10.0, 10.0)]], [0.5, 0.9])
    assert oks(points)[0, 0, 1] == 0.0
    assert oks(points)[0, 1, 0] == pytest.approx(1.0)  # only the shared node counts


def test_single_node_oks_falls_back_to_iou() -> None:
    points, _, scores, valid = batch([[(1.0, 1.0)], [(1.0, 1.0)]], [0.9, 0.5])
    # A one-point box has no area: IoU 0, nothing is suppressed.
    keep = filter_overlapping(points, scores, valid, method="oks", threshold=0.0)
    assert keep.all()


def test_suppression_is_chained_through_kept_instances_only() -> None:
    # C overlaps B only; B is suppressed by A, so C survives (greedy NMS, not clustering).
    a = [(0.0, 0.0), (10.0, 10.0)]
    b = [(5.0, 0.0), (15.0, 10.0)]
    c = [(10.0, 0.0), (20.0, 10.0)]
    points, _, scores, valid = batch([a, b, c], [0.9, 0.8, 0.7])
    keep = filter_overlapping(points, scores, valid, method="iou", threshold=0.3)
    assert keep[0].tolist() == [True, False, True]


TWO_OF_FIVE = [(1.0, 1.0), (2.0, 2.0), (NAN, NAN), (NAN, NAN), (NAN, NAN)]
THREE_OF_FIVE = [(1.0, 1.0), (2.0, 2.0), (3.0, 3.0), (NAN, NAN), (NAN, NAN)]


@pytest.mark.parametrize(
    ("count", "fraction", "expected"),
    [
        (3, 0.0, [False, True]),
        (0, 0.5, [False, True]),  # 0.4 < 0.5 <= 0.6
        (0, 0.4, [True, True]),  # the fraction bound is inclusive
        (2, 0.0, [True, True]),
        (3, 0.7, [False, False]),
    ],
)
def test_visible_node_count(count: int, fraction: float, expected: list[bool]) -> None:
    points, _, _, valid = batch([TWO_OF_FIVE, THREE_OF_FIVE], [1.0, 1.0])
    keep = filter_node_count(
        points, valid, min_visible_nodes=count, min_visible_node_fraction=fraction
    )
    assert keep[0].tolist() == expected


def test_half_a_coordinate_is_not_visible() -> None:
    points, _, _, valid = batch([[(1.0, NAN), (2.0, 2.0)]], [1.0])
    assert not filter_node_count(points, valid, min_visible_nodes=2).any()


def test_mean_node_score_counts_zero_scored_missing_nodes() -> None:
    scores = np.array([[[1.0, 0.5, 0.0, NAN, NAN], [NAN] * 5]], np.float32)
    assert mean_node_scores(scores)[0].tolist() == [0.5, 0.0]
    inst = np.ones((1, 2), np.float32)
    valid = np.ones((1, 2), bool)
    assert filter_scores(scores, inst, valid, min_mean_node_score=0.5)[0].tolist() == [
        True,
        False,
    ]
    assert not filter_scores(scores, inst, valid, min_mean_node_score=0.51).any()


def test_instance_score() -> None:
    inst = np.array([[0.3, 0.4, NAN]], np.float32)
    point_scores = np.ones((1, 3, 2), np.float32)
    valid = np.ones((1, 3), bool)
    keep = filter_scores(point_scores, inst, valid, min_instance_score=0.4)
    assert keep[0].tolist() == [False, True, False]


def test_order_node_count_before_overlap() -> None:
    # A outscores and overlaps B, but has only 2 of 5 nodes: dropped first, so B survives.
    a = [(0.0, 0.0), (10.0, 10.0), (NAN, NAN), (NAN, NAN), (NAN, NAN)]
    points, point_scores, scores, valid = batch([a, BOX_A], [0.9, 0.5])
    keep = filter_instances(
        points,
        point_scores,
        scores,
        valid,
        overlap_method="iou",
        overlap_threshold=0.5,
        min_visible_nodes=3,
    )
    assert keep[0].tolist() == [False, True]
    # The other way round both would go.
    first = filter_overlapping(points, scores, valid, method="iou", threshold=0.5)
    assert not filter_node_count(points, first, min_visible_nodes=3).any()


def test_order_scores_before_overlap() -> None:
    points, point_scores, scores, valid = batch([BOX_A, BOX_B], [0.3, 0.9])
    point_scores[0, 1] = 0.1  # B outscores A but its nodes are weak
    keep = filter_instances(
        points,
        point_scores,
        scores,
        valid,
        overlap_method="iou",
        overlap_threshold=0.5,
        min_mean_node_score=0.2,
    )
    assert keep[0].tolist() == [True, False]


def test_never_revalidates_and_keeps_shape() -> None:
    points, point_scores, scores, valid = batch([BOX_A, BOX_B, BOX_A], [0.9, 0.5, 0.1])
    valid[0, 0] = False
    keep = filter_instances(
        points, point_scores, scores, valid, overlap_method="iou", overlap_threshold=0.5
    )
    assert keep.shape == valid.shape
    assert keep[0].tolist() == [False, True, False]  # B is now the best; the padded A is off
    assert valid[0].tolist() == [False, True, True]  # input untouched


def test_no_knobs_is_the_identity() -> None:
    points, point_scores, scores, valid = batch([BOX_A, BOX_B], [0.9, 0.5])
    keep = filter_instances(points, point_scores, scores, valid)
    assert keep.tolist() == valid.tolist() and keep is not valid


def test_batches_are_filtered_per_frame() -> None:
    points, point_scores, scores, valid = batch([BOX_A, BOX_B], [0.9, 0.5])
    stacked = [np.concatenate([x, x]) for x in (points, point_scores, scores, valid)]
    stacked[2][1] = [0.5, 0.9]
    keep = filter_instances(*stacked, overlap_method="oks", overlap_threshold=0.5)
    assert keep.tolist() == [[True, False], [False, True]]


def test_defaults_are_sleap_nns_and_off() -> None:
    filters = InstanceFilters()
    assert not filters.active
    assert filters.overlapping_method == "iou" and filters.overlapping_threshold == 0.8
    assert not InstanceFilters(min_visible_nodes=0, min_instance_score=0.0).active
    assert InstanceFilters(overlapping=True).active
    assert InstanceFilters(min_visible_node_fraction=0.5).active
    assert filters.op_kwargs()["overlap_method"] is None
    assert (
        InstanceFilters(overlapping=True, overlapping_method="oks").op_kwargs()["overlap_method"]
        == "oks"
    )
    assert filters.to_json()["overlapping_threshold"] == 0.8


def test_op_kwargs_drive_filter_instances() -> None:
    points, point_scores, scores, valid = batch([BOX_A, BOX_B], [0.9, 0.5])
    filters = InstanceFilters(overlapping=True, overlapping_threshold=0.5)
    keep = filter_instances(points, point_scores, scores, valid, **filters.op_kwargs())
    assert keep[0].tolist() == [True, False]


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"overlapping_method": "nms"}, "--filter-overlapping-method"),
        ({"overlapping_threshold": 1.5}, "--filter-overlapping-threshold"),
        ({"min_visible_nodes": -1}, "--filter-min-visible-nodes"),
        ({"min_visible_node_fraction": 2.0}, "--filter-min-visible-node-fraction"),
        ({"min_mean_node_score": -0.1}, "--filter-min-mean-node-score"),
        ({"min_instance_score": float("nan")}, "--filter-min-instance-score"),
        ({"min_centroid_distance": -1.0}, "--filter-min-centroid-distance"),
    ],
)
def test_bad_values_are_usage_errors(kwargs: dict[str, object], flag: str) -> None:
    with pytest.raises(UsageError) as err:
        InstanceFilters(**kwargs)  # type: ignore[arg-type]
    assert str(err.value).startswith(flag) and "\n" not in str(err.value)


def _sleap_nn_centroid_distance(centroids: np.ndarray, scores: np.ndarray, d: float) -> np.ndarray:
    """sleap-nn 0.3.5's ``FilterPipeline._filter_centroid_distance``, its torch code as is
    (NaN centroids are the empty slots); returns the drop mask."""
    import torch

    cen, sc = torch.from_numpy(centroids), torch.from_numpy(scores)
    batch_size, width, _ = cen.shape
    thresh_sq = float(d) ** 2
    drop = torch.zeros(batch_size, width, dtype=torch.bool)
    for b in range(batch_size):
        valid_b = ~torch.isnan(cen[b]).any(dim=-1)
        if valid_b.sum() <= 1:
            continue
        sb = torch.where(torch.isnan(sc[b]), torch.full_like(sc[b], float("-inf")), sc[b])
        kept: list[int] = []
        for idx in sb.argsort(descending=True, stable=True).tolist():
            if not valid_b[idx]:
                continue
            if any(((cen[b, idx] - cen[b, k]) ** 2).sum().item() < thresh_sq for k in kept):
                drop[b, idx] = True
            else:
                kept.append(idx)
    return drop.numpy()


def test_centroid_distance_drops_what_sleap_nn_drops() -> None:
    rng = np.random.default_rng(0)
    centroids = rng.uniform(0, 60, (40, 6, 2)).astype(np.float32)
    centroids[rng.random((40, 6)) < 0.2] = np.nan  # empty slots
    scores = rng.random((40, 6)).astype(np.float32)
    scores[rng.random((40, 6)) < 0.1] = np.nan
    valid = ~np.isnan(centroids).any(axis=-1)
    for d in (0.0001, 5.0, 12.5, 30.0):
        keep = filter_centroid_distance(centroids, scores, valid, d)
        assert (keep == (valid & ~_sleap_nn_centroid_distance(centroids, scores, d))).all()
    # on the radius: kept (strictly closer is dropped); the higher score stays
    pair = np.array([[[0.0, 0.0], [3.0, 4.0]]], np.float32)
    both = np.ones((1, 2), bool)
    assert filter_centroid_distance(pair, np.array([[0.5, 0.9]], np.float32), both, 5.0).all()
    keep = filter_centroid_distance(pair, np.array([[0.5, 0.9]], np.float32), both, 5.01)
    assert keep.tolist() == [[False, True]]


def test_centroid_distance_runs_last_and_only_with_centroids() -> None:
    points, point_scores, scores, valid = batch([BOX_A, BOX_B], [0.9, 0.5])
    filters = InstanceFilters(min_centroid_distance=2.0)
    assert filters.active
    centroids = np.array([[[5.0, 5.0], [5.0, 6.0]]], np.float32)
    keep = filter_instances(points, point_scores, scores, valid, **filters.op_kwargs())
    assert keep.all()  # a bottom-up or single-instance run has no centroids: nothing to do
    kwargs = filters.op_kwargs()
    keep = filter_instances(points, point_scores, scores, valid, centroids=centroids, **kwargs)
    assert keep[0].tolist() == [True, False]
    # an instance another filter dropped no longer suppresses its neighbour (it runs last)
    sparse = [(NAN, NAN), *BOX_A[1:]]  # 4 visible nodes of 5
    points, point_scores, scores, valid = batch([sparse, BOX_B], [0.9, 0.5])
    kwargs = InstanceFilters(min_centroid_distance=2.0, min_visible_nodes=5).op_kwargs()
    keep = filter_instances(points, point_scores, scores, valid, centroids=centroids, **kwargs)
    assert keep[0].tolist() == [False, True]
