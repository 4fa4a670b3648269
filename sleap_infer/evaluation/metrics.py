"""The metric blocks of sleap-nn 0.3.5's ``eval``, computed from matched pairs.

Key names, shapes and empty-input values follow sleap-nn so a dict from
here can stand in for its metrics file. Two of its conventions are worth
knowing when reading the numbers:

* VOC precision counts only *matched* pairs (a pair whose match score is
  under the threshold is a false positive); predictions that matched no
  ground truth are not counted, so extra detections do not lower mAP.
* PCK and distances are per node over matched pairs; a node missing on
  either side has a NaN distance, which PCK counts as a miss and the
  percentiles leave out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sleap_infer.evaluation.matching import Match

MATCH_THRESHOLDS = np.linspace(0.5, 0.95, 10)  # COCO's 0.50:0.05:0.95
RECALL_THRESHOLDS = np.linspace(0, 1, 101)  # COCO's 101-point interpolation
PCK_THRESHOLDS = np.linspace(1, 10, 10)  # pixels
PERCENTILES = (50, 75, 90, 95, 99)


def node_distances(matches: Sequence[Match]) -> np.ndarray:
    """``(pairs, nodes)`` Euclidean error per node; NaN where either side lacks the node."""
    if not matches:
        return np.array([])
    return np.array([np.linalg.norm(m.pred - m.gt, axis=-1) for m in matches])


def pck_metrics(dists: np.ndarray, thresholds: np.ndarray = PCK_THRESHOLDS) -> dict[str, Any]:
    """Fraction of nodes within each pixel threshold; ``mPCK`` averages nodes and thresholds."""
    finite = np.where(np.isnan(dists), np.inf, dists)
    hits = finite[..., None] < thresholds.reshape(1, 1, -1)
    result: dict[str, Any] = {"thresholds": thresholds, "pcks": hits}
    if dists.size == 0:
        return result | {
            "mPCK_parts": np.array([]),
            "mPCK": np.nan,
            "PCK@5": np.nan,
            "PCK@10": np.nan,
        }
    parts = hits.mean(axis=0).mean(axis=-1)  # per node
    at_5 = int(np.argmin(np.abs(thresholds - 5)))
    at_10 = int(np.argmin(np.abs(thresholds - 10)))
    return result | {
        "mPCK_parts": parts,
        "mPCK": float(parts.mean()),
        "PCK@5": float(hits[:, :, at_5].mean()),
        "PCK@10": float(hits[:, :, at_10].mean()),
    }


def _empty_voc(name: str) -> dict[str, Any]:
    keys = ("match_score_thresholds", "recall_thresholds", "match_scores", "precisions")
    keys += ("recalls", "AP", "AR", "mAP", "mAR")
    return {f"{name}.{k}": 0 for k in keys}


def voc_metrics(
    match_scores: np.ndarray, detection_scores: np.ndarray, n_gt: int, name: str
) -> dict[str, Any]:
    """COCO-style AP (101-point) and max recall per match threshold, and their means.

    ``match_scores`` (OKS, or a pair's mean PCK) and ``detection_scores`` are
    per matched pair; ``n_gt`` counts all ground truth (matched or not).
    """
    if match_scores.size == 0:
        return _empty_voc(name)
    order = np.argsort(-detection_scores, kind="mergesort")
    ranked = match_scores[order]
    precisions, recalls = [], []
    for threshold in MATCH_THRESHOLDS:
        tp = np.cumsum(ranked >= threshold)
        fp = np.cumsum(ranked < threshold)
        recall = tp / n_gt
        precision = tp / (fp + tp + np.spacing(1))
        # The precision envelope: best precision at this recall or any higher one.
        precision = np.maximum.accumulate(precision[::-1])[::-1]
        at = np.searchsorted(recall, RECALL_THRESHOLDS, side="left")
        sampled = np.zeros(at.shape)
        valid = at < len(precision)
        sampled[valid] = precision[at[valid]]
        precisions.append(sampled)
        recalls.append(recall[-1])
    precisions_a, recalls_a = np.array(precisions), np.array(recalls)
    return {
        f"{name}.match_score_thresholds": MATCH_THRESHOLDS,
        f"{name}.recall_thresholds": RECALL_THRESHOLDS,
        f"{name}.match_scores": ranked,
        f"{name}.precisions": precisions_a,
        f"{name}.recalls": recalls_a,
        f"{name}.AP": precisions_a.mean(axis=1),
        f"{name}.AR": recalls_a,
        f"{name}.mAP": precisions_a.mean(),
        f"{name}.mAR": recalls_a.mean(),
    }


def distance_metrics(matches: Sequence[Match], dists: np.ndarray) -> dict[str, Any]:
    """Mean and percentiles of the per-node errors (NaNs left out), plus where each pair is."""
    known = dists[~np.isnan(dists)]
    result: dict[str, Any] = {
        "frame_idxs": [m.frame_idx for m in matches],
        "video_paths": [m.video for m in matches],
        "dists": dists,
        # nanmean, not known.mean(): the same summation order as sleap-nn, to the last bit.
        "avg": float(np.nanmean(dists)) if known.size else np.nan,
    }
    for p in PERCENTILES:
        result[f"p{p}"] = np.percentile(known, p) if known.size else np.nan
    return result


def visibility_metrics(matches: Sequence[Match]) -> dict[str, Any]:
    """Did the model find the nodes the labeler could see, and only those? Over matched pairs."""
    tp = fp = tn = fn = 0
    for m in matches:
        gt_seen = ~np.isnan(m.gt).any(axis=-1)
        pr_seen = ~np.isnan(m.pred).any(axis=-1)
        tp += int((gt_seen & pr_seen).sum())
        fp += int((~gt_seen & pr_seen).sum())
        tn += int((~gt_seen & ~pr_seen).sum())
        fn += int((gt_seen & ~pr_seen).sum())
    # numpy scalars, as sleap-nn's (its counts are numpy sums): the same types in the .npz.
    return {
        "tp": np.int64(tp),
        "fp": np.int64(fp),
        "tn": np.int64(tn),
        "fn": np.int64(fn),
        "precision": np.float64(tp / (tp + fp) if tp + fp else np.nan),
        "recall": np.float64(tp / (tp + fn) if tp + fn else np.nan),
    }


def all_metrics(matches: Sequence[Match], n_unmatched_gt: int) -> dict[str, Any]:
    """Every block sleap-nn's pose ``eval`` reports, under its names."""
    dists = node_distances(matches)
    pck = pck_metrics(dists)
    n_gt = len(matches) + n_unmatched_gt
    detection = np.array([m.score for m in matches])
    oks_scores = np.array([m.oks for m in matches])
    pair_pck = pck["pcks"].mean(axis=-1).mean(axis=-1) if matches else np.array([])
    voc = voc_metrics(oks_scores, detection, n_gt, "oks_voc")
    voc |= voc_metrics(pair_pck, detection, n_gt, "pck_voc")
    return {
        "voc_metrics": voc,
        "mOKS": {"mOKS": float(oks_scores.mean()) if matches else np.nan},
        "distance_metrics": distance_metrics(matches, dists),
        "pck_metrics": pck,
        "visibility_metrics": visibility_metrics(matches),
    }
