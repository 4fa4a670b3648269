"""Instance matching within a frame: OKS, and sleap-nn's greedy VOC-style assignment.

OKS is the COCO-eval form: ``exp(-d^2 / ((2 sigma)^2 * 2 (area + eps)))``
averaged over the ground truth's visible nodes, ``area`` being the bounding
box of those nodes (or a fixed ``oks_scale``). A missing predicted node
scores 0; a missing ground-truth node is left out of the mean.

A ground truth whose visible nodes have a zero-area box (one visible node,
or nodes on one axis) would turn OKS into an exact-equality test, so, as
sleap-nn 0.3.5 does, such instances are scored by mean pixel distance
instead: ``max(0, 1 - mean_dist / 50)`` over the nodes visible on both
sides, which lives on the same 0..1 scale and so thresholds alike.

Matching is greedy, in descending prediction score: each prediction takes the
still-unmatched ground truth with the highest OKS above ``threshold`` (ties to
the earlier instance), as in PASCAL VOC. Predictions left over are not false
positives here: sleap-nn's metrics count only matched pairs and unmatched
ground truth.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEGENERATE_AREA = 1e-9  # below this a ground truth's box area is "zero" (see module doc)
DEGENERATE_PIXELS = 50.0  # mean distance at which the fallback score reaches 0


@dataclass(frozen=True)
class Match:
    """A matched (ground truth, prediction) pair and its match score."""

    gt: np.ndarray  # (nodes, 2), NaN where not visible
    pred: np.ndarray
    oks: float
    score: float  # the prediction's instance score, for ranking in VOC metrics
    video: str
    frame_idx: int


def box_area(points: np.ndarray) -> np.ndarray:
    """Area of the box around each instance's visible nodes; NaN with none visible.

    ``points`` is ``(n, nodes, 2)``.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN instances -> NaN area
        lo = np.nanmin(points, axis=-2)
        hi = np.nanmax(points, axis=-2)
    return np.prod(hi - lo, axis=-1)


def oks(
    gt: np.ndarray,
    pred: np.ndarray,
    stddev: float | Sequence[float] | np.ndarray = 0.025,
    scale: float | None = None,
) -> np.ndarray:
    """OKS of every ground truth ``(n_gt, nodes, 2)`` against every prediction
    ``(n_pr, nodes, 2)`` -> ``(n_gt, n_pr)``; NaN for a ground truth with no visible node.

    ``stddev`` is one sigma for all nodes or one per node.
    """
    n_gt, n_nodes = gt.shape[:2]
    area = box_area(gt) if scale is None else np.full(n_gt, float(scale))
    sigma = np.broadcast_to(np.asarray(stddev, dtype=np.float64), (n_nodes,))
    # The operation order of sleap-nn's normalisation, so results agree to the last bit.
    norm = ((2 * sigma) ** 2)[None, None, :] * (2 * (area + np.spacing(1)))[:, None, None]
    sq_dist = ((gt[:, None] - pred[None, :]) ** 2).sum(axis=-1)  # (n_gt, n_pr, nodes)
    sq_dist[:, np.isnan(pred).any(axis=-1)] = np.inf
    ks = np.exp(-(sq_dist / norm))
    gt_missing = np.isnan(gt).any(axis=-1)
    ks = np.where(gt_missing[:, None, :], 0.0, ks)
    n_visible = (~gt_missing).sum(axis=-1, keepdims=True).astype(np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ks.sum(axis=-1) / n_visible


def distance_score(gt: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """The zero-area fallback score of each ground truth ``(n_gt, nodes, 2)`` vs one
    prediction ``(nodes, 2)`` -> ``(n_gt,)``; 0 when no node is visible on both sides."""
    scores = np.zeros(len(gt))
    pred_visible = ~np.isnan(pred).any(axis=-1)
    for i, g in enumerate(gt):
        both = pred_visible & ~np.isnan(g).any(axis=-1)
        if both.any():
            mean = float(np.mean(np.linalg.norm(g[both] - pred[both], axis=-1)))
            scores[i] = max(0.0, 1.0 - mean / DEGENERATE_PIXELS)
    return scores


def match_frame(
    gt: list[np.ndarray],
    pred: list[np.ndarray],
    pred_scores: list[float],
    video: str,
    frame_idx: int,
    stddev: float | Sequence[float] | np.ndarray = 0.025,
    scale: float | None = None,
    threshold: float = 0.0,
) -> tuple[list[Match], int]:
    """Greedy matches of one frame, and how many ground-truth instances stayed unmatched."""
    available = list(range(len(gt)))
    matches: list[Match] = []
    order = np.argsort(-np.asarray(pred_scores, dtype=np.float64), kind="mergesort")
    for j in order:
        if not available:
            break
        candidates = np.stack([gt[i] for i in available])
        scores = oks(candidates, pred[j][None], stddev, scale)[:, 0]
        flat = box_area(candidates) < DEGENERATE_AREA
        if flat.any():
            scores[flat] = distance_score(candidates[flat], pred[j])
        scores[scores <= threshold] = np.nan
        if np.isnan(scores).all():
            continue
        k = int(np.nanargmax(scores))  # the first of equal bests, as a stable sort picks
        best = available.pop(k)
        matches.append(Match(gt[best], pred[j], float(scores[k]), pred_scores[j], video, frame_idx))
    return matches, len(available)
