"""The appearance half of sleap-nn 0.3.5's MOT pre-pass: its association gates.

Along the geometry's anchor chains (stretches where one animal is followed
unambiguously), each trial compares a chain's vector at a split point (the
*query*) with the chain's own memory one step earlier -- its running EMA and
its gallery -- and with the memories of the other chains alive then (certainly
other animals). Over the trials: ``assoc_rank1``, how often the true EMA cosine
beats every competitor's (appearance may decide association when at least
0.95); ``m_assoc``, the 10th percentile of the true-minus-best-rival margin
(at least 0.02); the gates, the 95th percentiles of the competitors' EMA and
gallery-max cosines (what ``--appearance-threshold auto`` resolves to); and
the true and rival EMA cosines' medians (Deep OC-SORT's standardised term).
Trials are sleap-nn's (same split points, stride and seeded subsampling), so
the numbers are its to the bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sleap_infer.tracking.common.appearance import trial_positions

QUERY_LEN = 10
MIN_TRIALS = 100
MIN_ASSOC_RANK1 = 0.95
MIN_ASSOC_MARGIN = 0.02


@dataclass(frozen=True)
class AppearanceCalibration:
    """What the appearance trackers read of sleap-nn's ``VideoCalibration``."""

    for_association: bool
    ema_cos_gate: float
    gallery_cos_gate: float
    m_assoc: float
    mu_pos: float
    mu_neg: float
    assoc_rank1: float
    n_trials: int


def _ema(vectors: np.ndarray, offsets: np.ndarray, lengths: np.ndarray, alpha: float):
    """Each anchor's running EMA, as the trackers' memory keeps it (float32)."""
    ema = np.empty_like(vectors)
    by_len = np.argsort(-lengths, kind="stable")
    sorted_len = lengths[by_len]
    a32 = np.float32(alpha)
    for k in range(int(sorted_len[0]) if len(sorted_len) else 0):
        active = by_len[: int(np.searchsorted(-sorted_len, -k, side="left"))]
        pos = offsets[active] + k
        if k == 0:
            ema[pos] = vectors[pos]
            continue
        mixed = a32 * ema[pos - 1] + (1 - a32) * vectors[pos]
        norms = np.linalg.norm(mixed, axis=1, keepdims=True)
        keep = norms[:, 0] > 1e-12
        ema[pos] = np.where(keep[:, None], mixed / np.maximum(norms, 1e-12), ema[pos - 1])
    return ema


def calibrate_appearance(
    vectors: np.ndarray,
    has: np.ndarray,
    anchor_of: np.ndarray,
    n_anchors: int,
    steps_of: np.ndarray,
    last_step: int,
    ema_alpha: float,
    gallery_size: int,
    seed: int = 0,
) -> AppearanceCalibration | None:
    """sleap-nn's ``_appearance`` association part over the valid detections (unit float32
    ``vectors``, their anchors and steps); None: no vectors or too few trials."""
    sel = np.flatnonzero((anchor_of >= 0) & has)
    if sel.size == 0:
        return None
    anchor, steps = anchor_of[sel], steps_of[sel]
    order = np.lexsort((steps, anchor))
    sel, anchor, steps = sel[order], anchor[order], steps[order]
    vec = vectors[sel]
    lengths = np.bincount(anchor, minlength=n_anchors).astype(np.int64)
    offsets = (np.cumsum(lengths) - lengths).astype(np.int64)
    key_scale = int(last_step) + 2
    key = anchor.astype(np.int64) * key_scale + steps
    ema = _ema(vec, offsets, lengths, ema_alpha)
    first_step = np.full(n_anchors, np.iinfo(np.int64).max)
    last = np.full(n_anchors, np.iinfo(np.int64).min)
    live = lengths > 0
    first_step[live] = steps[offsets[live]]
    last[live] = steps[offsets[live] + lengths[live] - 1]
    gap = 1

    def subsampler() -> np.random.Generator:
        return np.random.default_rng((int(seed) & 0xFFFFFFFF, 1))

    anchors_a, positions_a = trial_positions(offsets, lengths, steps, live, gap, subsampler)
    g_off = np.arange(gallery_size, dtype=np.int64)
    true_ema, comp_ema, comp_gal = [], [], []
    for a, pos in zip(anchors_a.tolist(), positions_a.tolist(), strict=True):
        w1 = int(steps[pos]) - gap
        lo_a = int(offsets[a])
        end_a = int(np.searchsorted(key, a * key_scale + w1, side="right")) - 1
        w0 = int(steps[max(lo_a, end_a - gallery_size + 1)])
        maybe = np.flatnonzero((first_step <= w1) & (last >= w0))
        maybe = maybe[maybe != a]
        if maybe.size == 0:
            continue
        ends = np.searchsorted(key, maybe * key_scale + w1, side="right") - 1
        ok = (ends >= offsets[maybe]) & (steps[np.maximum(ends, 0)] >= w0)
        if not ok.any():
            continue
        comp, comp_end = maybe[ok], ends[ok]
        ends_all = np.concatenate([[end_a], comp_end])
        starts = np.maximum(np.concatenate([[lo_a], offsets[comp]]), ends_all - gallery_size + 1)
        n_gal = ends_all - starts + 1
        in_gal = g_off[None, :] < n_gal[:, None]
        gal = vec[np.where(in_gal, starts[:, None] + g_off[None, :], 0)]
        queries = vec[pos : min(pos + QUERY_LEN, lo_a + int(lengths[a]))]
        cos = np.einsum("qd,cgd->cqg", queries, gal).astype(np.float64)
        cos = np.where(in_gal[:, None, :], cos, -np.inf)
        s_gal = cos[:, 0, :].max(axis=1)
        s_ema = ema[ends_all].astype(np.float64) @ queries[0].astype(np.float64)
        true_ema.append(s_ema[0])
        comp_ema.append(s_ema[1:])
        comp_gal.append(s_gal[1:])
    if len(true_ema) < MIN_TRIALS:
        return None
    true = np.asarray(true_ema, np.float64)
    comp_max = np.array([c.max() for c in comp_ema])
    pooled = np.concatenate(comp_ema)
    rank1 = float(np.mean(true > comp_max))
    return AppearanceCalibration(
        for_association=rank1 >= MIN_ASSOC_RANK1,
        ema_cos_gate=float(np.quantile(pooled, 0.95)),
        gallery_cos_gate=float(np.quantile(np.concatenate(comp_gal), 0.95)),
        m_assoc=max(MIN_ASSOC_MARGIN, float(np.quantile(true - comp_max, 0.1))),
        mu_pos=float(np.median(true)),
        mu_neg=float(np.median(pooled)),
        assoc_rank1=rank1,
        n_trials=len(true),
    )
