"""HOTA (Luiten et al. 2021, "HOTA: A Higher Order Metric for Evaluating Multi-Object Tracking").

py-motmetrics has MOTA and IDF1 but not HOTA, and TrackEval (the reference
implementation) reads MOTChallenge box files. Our ground truth and tracks are
poses, so this module scores them directly, following TrackEval's
``metrics/hota.py`` step by step: the same global alignment score that breaks
ties in the per-frame Hungarian matching, the same 19 localisation thresholds
``alpha = 0.05, 0.10, ..., 0.95``, and the same averages. Only the similarity
differs: boxes use IoU; here it is the centroid distance mapped into [0, 1],
``sim = max(0, 1 - d / max_dist)`` (:func:`centroid_similarity`).

For each alpha, a frame's matches are the Hungarian pairs with ``sim >= alpha``:

* DetA = TP / (TP + FN + FP): did a track cover each animal (detection);
* AssA = mean over TPs of TPA / (TPA + FNA + FPA), where for the TP's pair of
  true id ``g`` and track id ``k``, TPA counts frames ``g`` was matched to ``k``,
  and FNA / FPA the rest of ``g``'s / ``k``'s frames (association);
* HOTA = sqrt(DetA * AssA).

The reported HOTA, DetA, AssA and LocA are the means over the alphas (each
alpha's HOTA computed first, then averaged, as TrackEval does).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from scipy.optimize import linear_sum_assignment

ALPHAS = np.arange(0.05, 0.99, 0.05)  # TrackEval's 19 thresholds
EPS = np.finfo(float).eps

Frame = tuple[np.ndarray, np.ndarray, np.ndarray]  # (gt ids (G,), track ids (T,), sim (G, T))


def centroid_similarity(gt: np.ndarray, tracked: np.ndarray, max_dist: float) -> np.ndarray:
    """``(G, T)`` ``max(0, 1 - d / max_dist)`` between ``(G, 2)`` and ``(T, 2)`` centroids."""
    if len(gt) == 0 or len(tracked) == 0:
        return np.zeros((len(gt), len(tracked)))
    d = np.linalg.norm(gt[:, None, :] - tracked[None, :, :], axis=-1)
    return np.clip(1.0 - d / max_dist, 0.0, 1.0)


def _dense(ids: list[np.ndarray]) -> tuple[list[np.ndarray], int]:
    """Ids renumbered 0..n-1 (TrackEval's ``_check_unique_ids`` + relabelling)."""
    unique = np.unique(np.concatenate([np.asarray(i, np.int64) for i in ids] or [[]]))
    lookup = {int(v): k for k, v in enumerate(unique)}
    return [np.array([lookup[int(v)] for v in i], np.int64) for i in ids], len(unique)


def hota(frames: Iterable[Frame]) -> dict[str, float]:
    """HOTA, DetA, AssA and LocA (means over the alphas) of one sequence."""
    frames = list(frames)
    gt_ids, n_gt = _dense([f[0] for f in frames])
    tr_ids, n_tr = _dense([f[1] for f in frames])
    sims = [
        np.asarray(f[2], np.float64).reshape(len(g), len(t))
        for f, g, t in zip(frames, gt_ids, tr_ids)
    ]

    # Global alignment score: how strongly each (true id, track id) pair co-occurs.
    potential = np.zeros((n_gt, n_tr))
    gt_count, tr_count = np.zeros(n_gt), np.zeros(n_tr)
    for g, t, sim in zip(gt_ids, tr_ids, sims):
        denom = sim.sum(0)[None, :] + sim.sum(1)[:, None] - sim
        sim_iou = np.zeros_like(sim)
        mask = denom > EPS
        sim_iou[mask] = sim[mask] / denom[mask]
        potential[g[:, None], t[None, :]] += sim_iou
        gt_count[g] += 1
        tr_count[t] += 1
    alignment = potential / np.maximum(gt_count[:, None] + tr_count[None, :] - potential, EPS)

    n_alpha = len(ALPHAS)
    tp, fn, fp, loc = (np.zeros(n_alpha) for _ in range(4))
    matches = np.zeros((n_alpha, n_gt, n_tr))
    for g, t, sim in zip(gt_ids, tr_ids, sims):
        if len(g) == 0 or len(t) == 0:
            fn += len(g)
            fp += len(t)
            continue
        rows, cols = linear_sum_assignment(-(alignment[g[:, None], t[None, :]] * sim))
        for a, alpha in enumerate(ALPHAS):
            ok = sim[rows, cols] >= alpha - EPS
            r, c = rows[ok], cols[ok]
            tp[a] += len(r)
            fn[a] += len(g) - len(r)
            fp[a] += len(t) - len(r)
            loc[a] += sim[r, c].sum()
            matches[a, g[r], t[c]] += 1

    ass = np.zeros(n_alpha)
    for a in range(n_alpha):
        union = np.maximum(1, gt_count[:, None] + tr_count[None, :] - matches[a])
        ass[a] = (matches[a] * (matches[a] / union)).sum() / max(1.0, tp[a])
    det = tp / np.maximum(1.0, tp + fn + fp)
    loc_a = np.maximum(1e-10, loc) / np.maximum(1e-10, tp)
    return {
        "hota": float(np.mean(np.sqrt(det * ass))),
        "deta": float(np.mean(det)),
        "assa": float(np.mean(ass)),
        "loca": float(np.mean(loc_a)),
    }
