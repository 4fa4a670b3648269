"""Post-inference instance filters on padded batch arrays, with sleap-nn 0.3.5's semantics.

Every function returns a new ``valid`` mask ``(B, I)``: a filtered instance is
switched off, nothing is reordered or rewritten. :func:`filter_instances`
applies them in sleap-nn's fixed order (node count, scores, overlap), so the
overlap suppression only sees the instances the cheap filters kept: a
high-scoring instance dropped for having too few nodes no longer suppresses
its lower-scoring neighbour.

Arithmetic is float32 where sleap-nn's is (torch float32 tensors compared with
a Python threshold), so instances sitting on a threshold go the same way.

* A node is *visible* when neither coordinate is NaN.
* The mean node score is the mean over the non-NaN point scores, so a node that
  was not found but carries a zero score (top-down) still counts; all-NaN is 0.
* A NaN instance score fails ``min_instance_score``.
* Overlap: greedy suppression per frame in descending instance score; a
  candidate is dropped when its similarity to any instance already kept is
  *above* the threshold. IoU is of the boxes spanning each instance's visible
  nodes. OKS is ``mean(exp(-d^2 / (2 * area * 0.1^2)))`` over nodes visible in
  both, with ``area`` the box area of the *candidate* (so OKS is asymmetric), and
  0 when the candidate has fewer than 2 visible nodes or a flat box. With a
  single-node skeleton OKS is meaningless and IoU is used instead (as sleap-nn).
* Centroid distance (last, as sleap-nn's ``--filter_min_centroid_distance``): per
  frame in descending instance score (the centroid's confidence; NaN last), an
  instance whose centroid lies closer than the radius to a kept one's is dropped.
  Only runs whose model finds centroids (centroid, top-down) have them.
"""

from __future__ import annotations

import numpy as np

OKS_KAPPA = 0.1


def visible_nodes(points: np.ndarray) -> np.ndarray:
    """``(B, I, N)`` True where both coordinates of a node are present."""
    return ~np.isnan(points).any(axis=-1)


def filter_node_count(
    points: np.ndarray,
    valid: np.ndarray,
    *,
    min_visible_nodes: int = 0,
    min_visible_node_fraction: float = 0.0,
) -> np.ndarray:
    """Drop instances with fewer visible nodes than a count or a fraction of the skeleton."""
    keep = valid.copy()
    n_visible = visible_nodes(points).sum(axis=-1)
    if min_visible_nodes > 0:
        keep &= n_visible >= min_visible_nodes
    if min_visible_node_fraction > 0.0:
        n_nodes = max(points.shape[-2], 1)
        fraction = n_visible.astype(np.float32) / np.float32(n_nodes)
        keep &= fraction >= np.float32(min_visible_node_fraction)
    return keep


def mean_node_scores(point_scores: np.ndarray) -> np.ndarray:
    """``(B, I)`` mean of the non-NaN point scores, 0 where there are none."""
    present = ~np.isnan(point_scores)
    total = np.where(present, point_scores, 0).sum(axis=-1, dtype=np.float32)
    count = present.sum(axis=-1)
    mean = total / np.maximum(count, 1).astype(np.float32)
    return np.where(count > 0, mean, np.float32(0)).astype(np.float32)


def filter_scores(
    point_scores: np.ndarray,
    instance_scores: np.ndarray,
    valid: np.ndarray,
    *,
    min_mean_node_score: float = 0.0,
    min_instance_score: float = 0.0,
) -> np.ndarray:
    """Drop instances whose instance score or mean node score is below its threshold."""
    keep = valid.copy()
    if min_instance_score > 0.0:
        # NaN compares False: an instance without a score fails a positive gate.
        keep &= instance_scores.astype(np.float32) >= np.float32(min_instance_score)
    if min_mean_node_score > 0.0:
        keep &= mean_node_scores(point_scores) >= np.float32(min_mean_node_score)
    return keep


def _boxes(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per instance: ``(..., 2)`` min and max corner over visible nodes, and whether any."""
    vis = visible_nodes(points)[..., None]
    pts = points.astype(np.float32)
    lo = np.where(vis, pts, np.float32(np.inf)).min(axis=-2)
    hi = np.where(vis, pts, np.float32(-np.inf)).max(axis=-2)
    return lo, hi, vis[..., 0].any(axis=-1)


def bbox_iou(points: np.ndarray) -> np.ndarray:
    """``(B, I, I)`` IoU of the boxes spanning each pair of instances' visible nodes."""
    lo, hi, has = _boxes(points)
    with np.errstate(invalid="ignore"):
        size = np.where(has[..., None], hi - lo, np.float32(0))
        area = size[..., 0] * size[..., 1]  # float32, as sleap-nn's tensors
        inter_lo = np.maximum(lo[:, :, None], lo[:, None, :])
        inter_hi = np.minimum(hi[:, :, None], hi[:, None, :])
        inter_wh = np.clip(inter_hi - inter_lo, np.float32(0), None)
    pair = has[:, :, None] & has[:, None, :]
    inter = np.where(pair, inter_wh[..., 0] * inter_wh[..., 1], np.float32(0))
    # sleap-nn takes the float32 areas out as Python floats before the union.
    union = area[:, :, None].astype(np.float64) + area[:, None, :] - inter.astype(np.float64)
    iou = np.divide(inter, union, out=np.zeros(union.shape), where=union > 0)
    return np.where(pair, iou, 0.0)


def oks(points: np.ndarray) -> np.ndarray:
    """``(B, I, I)`` OKS of candidate ``i`` against instance ``j``, scaled by ``i``'s box area."""
    vis = visible_nodes(points)
    lo, hi, _ = _boxes(points)
    with np.errstate(invalid="ignore"):
        size = hi - lo
        area = size[..., 0] * size[..., 1]  # (B, I) float32
    scale_ok = (vis.sum(axis=-1) >= 2) & (area > 0)
    pts = points.astype(np.float32)
    diff = pts[:, :, None] - pts[:, None, :]  # (B, I, I, N, 2)
    d2 = (diff * diff).sum(axis=-1)
    both = vis[:, :, None, :] & vis[:, None, :, :]
    denom = np.float32(2) * np.where(scale_ok, area, np.float32(1)) * np.float32(OKS_KAPPA**2)
    with np.errstate(invalid="ignore", over="ignore"):
        per_node = np.exp(-d2 / denom[:, :, None, None], dtype=np.float32)
    count = both.sum(axis=-1)
    total = np.where(both, per_node, np.float32(0)).sum(axis=-1, dtype=np.float32)
    mean = total / np.maximum(count, 1).astype(np.float32)
    ok = scale_ok[:, :, None] & (count > 0)
    return np.where(ok, mean, np.float32(0)).astype(np.float64)


def filter_overlapping(
    points: np.ndarray,
    instance_scores: np.ndarray,
    valid: np.ndarray,
    *,
    method: str = "iou",
    threshold: float = 0.8,
) -> np.ndarray:
    """Greedy suppression: best score first; drop what overlaps a kept one above ``threshold``."""
    if method not in ("iou", "oks"):
        raise ValueError(f"unknown overlap method {method!r}")
    if method == "oks" and points.shape[-2] < 2:
        method = "iou"
    sim = oks(points) if method == "oks" else bbox_iou(points)
    # torch's descending sort puts NaN scores first; ties keep slot order.
    scores = np.where(np.isnan(instance_scores), np.inf, instance_scores.astype(np.float64))
    order = np.argsort(-scores, axis=-1, kind="stable")
    keep = valid.copy()
    for b in np.flatnonzero(valid.sum(axis=-1) > 1):
        kept: list[int] = []
        for i in order[b]:
            if not valid[b, i]:
                continue
            if kept and (sim[b, i, kept] > threshold).any():
                keep[b, i] = False
            else:
                kept.append(int(i))
    return keep


def filter_centroid_distance(
    centroids: np.ndarray, scores: np.ndarray, valid: np.ndarray, min_distance: float
) -> np.ndarray:
    """Drop instances whose ``(B, I, 2)`` centroid is within ``min_distance`` pixels of a
    higher-scored kept one (greedy, per frame; sleap-nn's float32 squared distances)."""
    keep = valid.copy()
    present = keep & ~np.isnan(centroids).any(axis=-1)
    limit = float(min_distance) ** 2
    ranked = np.where(np.isnan(scores), -np.inf, scores)
    for b in np.flatnonzero(present.sum(axis=-1) > 1):
        kept: list[int] = []
        for i in np.argsort(-ranked[b], kind="stable"):
            if not present[b, i]:
                continue
            d2 = ((centroids[b, kept] - centroids[b, i]) ** 2).sum(axis=-1, dtype=np.float32)
            if (d2.astype(np.float64) < limit).any():
                keep[b, i] = False
            else:
                kept.append(int(i))
    return keep


def filter_instances(
    points: np.ndarray,
    point_scores: np.ndarray,
    instance_scores: np.ndarray,
    valid: np.ndarray,
    *,
    overlap_method: str | None = None,
    overlap_threshold: float = 0.8,
    min_visible_nodes: int = 0,
    min_visible_node_fraction: float = 0.0,
    min_mean_node_score: float = 0.0,
    min_instance_score: float = 0.0,
    centroids: np.ndarray | None = None,
    min_centroid_distance: float = 0.0,
) -> np.ndarray:
    """All filters in sleap-nn's order; ``overlap_method=None`` turns overlap suppression off;
    ``min_centroid_distance`` needs the model's ``centroids`` (else it does nothing)."""
    keep = valid.astype(bool, copy=True)
    if min_visible_nodes > 0 or min_visible_node_fraction > 0.0:
        keep = filter_node_count(
            points,
            keep,
            min_visible_nodes=min_visible_nodes,
            min_visible_node_fraction=min_visible_node_fraction,
        )
    if min_mean_node_score > 0.0 or min_instance_score > 0.0:
        keep = filter_scores(
            point_scores,
            instance_scores,
            keep,
            min_mean_node_score=min_mean_node_score,
            min_instance_score=min_instance_score,
        )
    if overlap_method is not None:
        keep = filter_overlapping(
            points, instance_scores, keep, method=overlap_method, threshold=overlap_threshold
        )
    if min_centroid_distance > 0.0 and centroids is not None:
        keep = filter_centroid_distance(
            centroids.astype(np.float32), instance_scores, keep, min_centroid_distance
        )
    return keep
