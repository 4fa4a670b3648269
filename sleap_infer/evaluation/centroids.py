"""Centroid matching: sleap-nn 0.3.5's ``eval --match_method centroid``.

A centroid model (or any model whose predictions are one point per animal)
has no skeleton to compare, so OKS means nothing: sleap-nn collapses each
prediction to one point, derives one centroid per ground-truth instance the
way the model was trained to (``--centroid-method``, ``--anchor-part`` and its
``--centroid-fallback``), and pairs them by pixel distance (Hungarian, pairs
farther apart than the threshold do not match). What it reports is detection
(precision / recall / F1 over matched, unmatched-ground-truth and
unmatched-prediction counts) and the distance of each matched pair. The
reductions below are numpy copies of sleap-nn's ``generate_centroids``
(float64, per instance, so no result depends on what shares a batch), because
the metric is only fair when the ground-truth centroid is the same point the
model learnt to predict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import sleap_io as sio
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from sleap_infer.core.errors import UsageError
from sleap_infer.evaluation.pairing import video_key

CENTROID_METHODS = ("center_of_mass", "bbox_center", "geometric_median", "anchor")
REDUCE_METHODS = ("center_of_mass", "bbox_center", "geometric_median")
DEFAULT_DISTANCE = 50.0  # px: sleap-nn's threshold when --match-threshold is left at 0


def center_of_mass(points: np.ndarray) -> np.ndarray:
    """NaN-ignoring mean, counted per axis as sleap-nn does (a half-NaN point
    still counts on its finite axis); NaN when no coordinate is finite."""
    finite = ~np.isnan(points)
    counts = np.maximum(finite.sum(axis=0), 1)
    means = np.where(finite, points, 0.0).sum(axis=0) / counts
    return means if finite.any() else np.full(2, np.nan)


def bbox_center(points: np.ndarray) -> np.ndarray:
    """Midpoint of the visible points' box (NaN when none is visible)."""
    low = np.where(np.isnan(points), np.inf, points).min(axis=0)
    high = np.where(np.isnan(points), -np.inf, points).max(axis=0)
    with np.errstate(invalid="ignore"):
        return (high + low) * 0.5


def geometric_median(
    points: np.ndarray, max_iter: int = 100, tol: float = 1e-6, eps: float = 1e-12
) -> np.ndarray:
    """Weiszfeld's geometric median of the points with both coordinates finite,
    started at their mean; sleap-nn's iteration, constants and stopping rule."""
    visible = ~np.isnan(points).any(axis=1)
    if not visible.any():
        return np.full(2, np.nan)
    pts = points[visible]
    estimate = pts.mean(axis=0)
    for _ in range(max_iter):
        dist = np.linalg.norm(pts - estimate, axis=1)
        usable = dist > eps
        weights = np.where(usable, 1.0 / np.maximum(dist, eps), 0.0)
        total = weights.sum()
        new = (weights[:, None] * pts).sum(axis=0) / max(total, eps) if total > 0 else estimate
        shift = float(np.linalg.norm(new - estimate))
        estimate = new
        if shift < tol:
            break
    return estimate


_REDUCE = {
    "center_of_mass": center_of_mass,
    "bbox_center": bbox_center,
    "geometric_median": geometric_median,
}


def gt_centroid(
    points: np.ndarray, anchor: int | None, method: str | None, fallback: str | None
) -> np.ndarray:
    """One ground-truth centroid, as sleap-nn's ``generate_centroids`` derives it:
    no method means the anchor node when one is given, else the mean; an anchor
    that is not visible falls back (by default to the mean)."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if method is None:
        method = "anchor" if anchor is not None else "center_of_mass"
    if method != "anchor":
        return _REDUCE[method](points)
    if anchor is None:
        raise UsageError("--centroid-method anchor: give --anchor-part, the node to anchor on")
    if np.isnan(points[anchor]).any():
        return _REDUCE[fallback or "center_of_mass"](points)
    return points[anchor].copy()


def pred_centroid(points: np.ndarray) -> np.ndarray:
    """A prediction's one point: its first visible node (node 0 when none is),
    which for a one-node centroid skeleton is the centroid itself."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    visible = ~np.isnan(points).any(axis=1)
    return points[int(np.argmax(visible))] if visible.any() else points[0]


def resolve_anchor(node_names: list[str], anchor_part: str | None) -> tuple[int | None, str]:
    """The anchor's index in the ground-truth skeleton, and a note when the name is
    not there (sleap-nn warns and uses the mean of visible nodes; so do we)."""
    if anchor_part is None:
        return None, ""
    if anchor_part in node_names:
        return node_names.index(anchor_part), ""
    return None, (
        f"--anchor-part {anchor_part!r}: not a ground-truth node ({', '.join(node_names)}); "
        "centroids are the mean of visible nodes, as in sleap-nn"
    )


@dataclass(frozen=True)
class CentroidFrame:
    """One scored frame: every ground-truth and predicted instance's points."""

    video: str
    frame_idx: int
    gt: list[np.ndarray]
    gt_from_centroids: bool
    pred: list[np.ndarray]


def _user_centroid_points(frame: sio.LabeledFrame) -> list[np.ndarray]:
    return [
        np.array([[float(c.x), float(c.y)]])
        for c in (getattr(frame, "centroids", None) or [])
        if not c.is_predicted
    ]


def pair_centroid_frames(
    ground_truth: sio.Labels, predictions: sio.Labels, user_labels_only: bool
) -> list[CentroidFrame]:
    """sleap-nn's centroid-mode frame pairs: as for OKS (matched video, one predicted
    frame at the index), but a ground-truth frame with only user ``Centroid``
    annotations is kept and its centroids are the truth, and every instance of the
    predicted frame counts (sleap-nn does not look at their type here)."""
    match = ground_truth.match(predictions)
    frames: list[CentroidFrame] = []
    for video_pr, video_gt in match.video_map.items():
        if video_gt is None:
            continue
        key = video_key(video_gt)
        for lf_gt in ground_truth.find(video_gt):
            instances = list(lf_gt.user_instances if user_labels_only else lf_gt.instances)
            annotated = _user_centroid_points(lf_gt)
            if user_labels_only and not instances and not annotated:
                continue
            found = predictions.find(video_pr, frame_idx=lf_gt.frame_idx)
            if len(found) != 1:
                continue
            from_centroids = not instances and bool(annotated)
            gt = annotated if from_centroids else [np.asarray(i.numpy()) for i in instances]
            frames.append(
                CentroidFrame(
                    video=key,
                    frame_idx=int(lf_gt.frame_idx),
                    gt=gt,
                    gt_from_centroids=from_centroids,
                    pred=[np.asarray(i.numpy()) for i in found[0].instances],
                )
            )
    return frames


def _percentiles(dists: np.ndarray) -> dict[str, float]:
    out = {f"p{p}": float("nan") for p in (50, 75, 90, 95, 99)}
    finite = dists[~np.isnan(dists)]
    if finite.size:
        for p in (50, 75, 90, 95, 99):
            out[f"p{p}"] = float(np.percentile(finite, p))
    return out


def centroid_metrics(
    frames: list[CentroidFrame],
    *,
    anchor: int | None,
    method: str | None,
    fallback: str | None,
    max_distance: float,
) -> dict[str, Any]:
    """sleap-nn's centroid-mode result: ``detection_metrics`` and ``distance_metrics``.

    Per frame, centroids that are NaN (a fully occluded instance) do not take part
    in the matching: such a ground truth is a miss, such a prediction is dropped
    (it is no detection). Matching is Hungarian on pixel distance, and a pair
    farther apart than ``max_distance`` is split into a miss and a false positive.
    """
    pairs: list[tuple[str, int, float]] = []
    n_fn = n_fp = 0
    for frame in frames:
        use_anchor = None if frame.gt_from_centroids else anchor
        use_method = None if frame.gt_from_centroids else method
        use_fallback = None if frame.gt_from_centroids else fallback
        gt = np.array(
            [gt_centroid(p, use_anchor, use_method, use_fallback) for p in frame.gt]
        ).reshape(-1, 2)
        pred = np.array([pred_centroid(p) for p in frame.pred]).reshape(-1, 2)
        gt_ok = ~np.isnan(gt).any(axis=1)
        pred_ok = ~np.isnan(pred).any(axis=1)
        g, p = gt[gt_ok], pred[pred_ok]
        n_fn += int((~gt_ok).sum())
        if len(g) == 0 or len(p) == 0:
            n_fn += len(g)
            n_fp += len(p)
            continue
        cost = cdist(p, g)  # sleap-nn's, to the last bit (the gate compares these)
        rows, cols = linear_sum_assignment(cost)
        matched = 0
        for r, c in zip(rows, cols, strict=True):
            if cost[r, c] <= max_distance:
                # the reported distance is sleap-nn's np.linalg.norm of the pair
                dist = float(np.linalg.norm(p[r] - g[c]))
                pairs.append((frame.video, frame.frame_idx, dist))
                matched += 1
        n_fn += len(g) - matched
        n_fp += len(p) - matched
    dists = np.array([d for _, _, d in pairs], dtype=np.float64)
    n_tp = len(pairs)
    precision = n_tp / (n_tp + n_fp) if n_tp + n_fp else 0.0
    recall = n_tp / (n_tp + n_fn) if n_tp + n_fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    finite = dists[~np.isnan(dists)]
    average = float(finite.mean()) if finite.size else float("nan")
    spread = _percentiles(dists)
    detection = {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "n_tp": n_tp,
        "n_fp": n_fp,
        "n_fn": n_fn,
        "avg": average,
        **spread,
    }
    distance = {
        "frame_idxs": [f for _, f, _ in pairs],
        "video_paths": [v for v, _, _ in pairs],
        "dists": dists,
        "avg": average,
        **spread,
    }
    return {"detection_metrics": detection, "distance_metrics": distance}
