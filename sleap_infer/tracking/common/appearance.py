"""The appearance half of sleap-nn 0.3.5's per-video calibration, for identity linking.

Whether re-ID vectors may decide a link, and with what threshold and margin,
is measured on the video itself: along the geometry's anchor chains (stretches
where one animal is followed unambiguously), the chain's vectors after a split
point (the *query*) are compared with its own vectors ``track_buffer`` steps
earlier (the *gallery*) and with the galleries of the other chains alive then
(certainly other animals). The linking statistic is the mean over query vectors
of the mean top-5 gallery cosine. Per query length ``n = 1..10`` the threshold
is the 99th percentile of the competitors' statistic and the margin the
smallest of (0, .01, .02, .05, .1, .2) whose accepted decisions are 99 %
right. Appearance is used for linking only when that margin exists and at
least 20 % of the trials are decided. Trials are subsampled to 2000 with
sleap-nn's seeds, so the thresholds are sleap-nn's to the bit.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

LINK_QUERY_LEN = 10
LINK_GALLERY_LEN = 30
LINK_TOPK = 5
LINK_MARGIN_GRID = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2)
LINK_PRECISION = 0.99
MIN_LINK_RECALL = 0.2
MIN_TRIALS = 100
MAX_TRIALS = 2000
MAX_TRIAL_STRIDE = 10
GALLERY_SIZE = 30  # the g = 1 trials' gallery (MOTParams.gallery_size)


def trial_positions(
    offsets: np.ndarray,
    lengths: np.ndarray,
    steps: np.ndarray,
    live: np.ndarray,
    gap: int,
    make_rng: Callable[[], np.random.Generator],
) -> tuple[np.ndarray, np.ndarray]:
    """sleap-nn's trial split points, shared by linking's and the MOT pre-pass's
    calibrations: per live anchor chain (rows ``offsets[a]`` on, ``lengths[a]`` long,
    sorted by step), every ``stride``-th row at least ``gap`` steps after its first, the
    stride set so about :data:`MAX_TRIALS` remain (at most :data:`MAX_TRIAL_STRIDE`), then
    a seeded subsample of :data:`MAX_TRIALS` if still more. Returns ``(anchors, rows)``;
    ``make_rng`` is called only when subsampling (the callers' generators differ)."""
    spans = []
    for a in np.flatnonzero(live).tolist():
        lo, n = int(offsets[a]), int(lengths[a])
        first = int(np.searchsorted(steps[lo : lo + n], steps[lo] + gap, side="left"))
        spans.append((a, lo, first, n))
    total = sum(max(0, n - f) for _, _, f, n in spans)
    stride = int(min(max(total // MAX_TRIALS, 1), MAX_TRIAL_STRIDE))
    chunks_a = [np.full(len(range(f, n, stride)), a, np.int64) for a, _, f, n in spans]
    chunks_p = [lo + np.arange(f, n, stride, dtype=np.int64) for _, lo, f, n in spans]
    anchors = np.concatenate(chunks_a) if chunks_a else np.zeros(0, np.int64)
    positions = np.concatenate(chunks_p) if chunks_p else np.zeros(0, np.int64)
    if len(anchors) > MAX_TRIALS:
        pick = np.sort(make_rng().choice(len(anchors), size=MAX_TRIALS, replace=False))
        anchors, positions = anchors[pick], positions[pick]
    return anchors, positions


def s_link(queries: np.ndarray, gallery: np.ndarray, k: int = LINK_TOPK) -> float:
    """Mean over queries of the mean top-``k`` gallery cosine (NaN: a side is empty)."""
    if len(queries) == 0 or len(gallery) == 0:
        return float("nan")
    cos = np.asarray(queries, np.float64) @ np.asarray(gallery, np.float64).T
    kk = min(k, cos.shape[1])
    return float((-np.partition(-cos, kk - 1, axis=1)[:, :kk]).mean())


def unit_rows(vectors: np.ndarray, has: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sleap-nn's defensive float32 renormalisation (non-finite / zero rows: none)."""
    vec = np.array(vectors, np.float32, copy=True)
    finite = np.isfinite(vec).all(axis=1)
    vec[~finite] = 0.0
    norms = np.linalg.norm(vec, axis=1)
    has = has & finite & (norms > 1e-12)
    vec[has] /= norms[has, None]
    vec[~has] = 0.0
    return vec, has


class _Anchors:
    """Vector-bearing anchor detections grouped by anchor, time-ordered."""

    def __init__(self, vectors, has, anchor_of, n_anchors, steps_of, key_scale) -> None:
        self.key_scale = int(key_scale)
        sel = np.flatnonzero((anchor_of >= 0) & has)
        anchor = anchor_of[sel]
        steps = steps_of[sel]
        order = np.lexsort((steps, anchor))
        sel, anchor, self.steps = sel[order], anchor[order], steps[order]
        self.vectors = vectors[sel]
        self.lengths = np.bincount(anchor, minlength=n_anchors).astype(np.int64)
        self.offsets = (np.cumsum(self.lengths) - self.lengths).astype(np.int64)
        self.size = int(sel.size)
        self.anchor = anchor


def _trials(av: _Anchors, gap: int, gallery: int, rng: np.random.Generator, stats: bool):
    """sleap-nn's ``_run_trials``: the trial count and, with ``stats``, each trial's
    per-length linking statistic of the true anchor and of its competitors."""
    n_anchors = len(av.lengths)
    first = np.full(n_anchors, np.iinfo(np.int64).max)
    last = np.full(n_anchors, np.iinfo(np.int64).min)
    has = av.lengths > 0
    first[has] = av.steps[av.offsets[has]]
    last[has] = av.steps[av.offsets[has] + av.lengths[has] - 1]
    anchors, positions = trial_positions(av.offsets, av.lengths, av.steps, has, gap, lambda: rng)
    key_scale = av.key_scale
    key = av.anchor.astype(np.int64) * key_scale + av.steps
    g_off = np.arange(gallery, dtype=np.int64)
    count = 0
    true_n: list[np.ndarray] = []
    comp_n: list[np.ndarray] = []
    for a, pos in zip(anchors.tolist(), positions.tolist(), strict=True):
        w1 = int(av.steps[pos]) - gap
        lo_a = int(av.offsets[a])
        end_a = int(np.searchsorted(key, a * key_scale + w1, side="right")) - 1
        w0 = int(av.steps[max(lo_a, end_a - gallery + 1)])
        maybe = np.flatnonzero((first <= w1) & (last >= w0))
        maybe = maybe[maybe != a]
        if maybe.size == 0:
            continue
        ends = np.searchsorted(key, maybe * key_scale + w1, side="right") - 1
        ok = (ends >= av.offsets[maybe]) & (av.steps[np.maximum(ends, 0)] >= w0)
        if not ok.any():
            continue
        count += 1
        if not stats:
            continue
        comp, comp_end = maybe[ok], ends[ok]
        ends_all = np.concatenate([[end_a], comp_end])
        starts = np.maximum(np.concatenate([[lo_a], av.offsets[comp]]), ends_all - gallery + 1)
        n_gal = ends_all - starts + 1
        in_gal = g_off[None, :] < n_gal[:, None]
        gal = av.vectors[np.where(in_gal, starts[:, None] + g_off[None, :], 0)]
        queries = av.vectors[pos : min(pos + LINK_QUERY_LEN, lo_a + int(av.lengths[a]))]
        cos = np.einsum("qd,cgd->cqg", queries, gal).astype(np.float64)
        cos = np.where(in_gal[:, None, :], cos, -np.inf)
        top = -np.sort(-cos, axis=2)
        k_eff = np.minimum(LINK_TOPK, n_gal)
        top_sum = np.take_along_axis(
            np.cumsum(top, axis=2),
            np.broadcast_to((k_eff - 1)[:, None, None], (len(k_eff), top.shape[1], 1)),
            axis=2,
        )[..., 0]
        per_q = top_sum / k_eff[:, None]
        s_n = np.cumsum(per_q, axis=1) / np.arange(1, per_q.shape[1] + 1)
        if s_n.shape[1] < LINK_QUERY_LEN:
            pad = np.repeat(s_n[:, -1:], LINK_QUERY_LEN - s_n.shape[1], axis=1)
            s_n = np.concatenate([s_n, pad], axis=1)
        true_n.append(s_n[0])
        comp_n.append(s_n[1:])
    return count, np.asarray(true_n, np.float64).reshape(-1, LINK_QUERY_LEN), comp_n


def _rule_at(true: np.ndarray, comp: list[np.ndarray]) -> tuple[float, float | None, float | None]:
    """``best >= thresh and best - second >= margin``: ``(thresh, margin, recall)``."""
    thresh = float(np.quantile(np.concatenate(comp), 0.99))
    best_comp = np.array([c.max() for c in comp])
    second_comp = np.array([np.sort(c)[-2] if len(c) > 1 else -np.inf for c in comp])
    correct = true > best_comp
    best = np.maximum(true, best_comp)
    second = np.where(correct, best_comp, np.maximum(np.minimum(true, best_comp), second_comp))
    for m in LINK_MARGIN_GRID:
        accept = (best >= thresh) & (best - second >= m)
        n_accept = int(np.count_nonzero(accept))
        if n_accept == 0:
            continue
        n_correct = int(np.count_nonzero(accept & correct))
        if n_correct / n_accept >= LINK_PRECISION:
            return thresh, float(m), n_correct / len(true)
    return thresh, None, None


def link_rules(
    vectors: np.ndarray,
    has: np.ndarray,
    anchor_of: np.ndarray,
    n_anchors: int,
    steps_of: np.ndarray,
    track_buffer: int,
    last_step: int,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Per query length ``1..10``: ``(thresholds, margins)`` (NaN: undecidable), or
    None when the video's appearance is not calibrated for linking.

    ``vectors``/``has``/``anchor_of``/``steps_of``: the valid detections' (renormalised
    by :func:`unit_rows`), anchors and step positions; ``last_step``: the video's last
    processed frame's step.
    """
    if not has.any():
        return None
    av = _Anchors(vectors, has, anchor_of, n_anchors, steps_of, last_step + 2)
    if av.size == 0:
        return None
    seed = int(seed) & 0xFFFFFFFF
    n_short, true_n, comp_n = _trials(av, 1, GALLERY_SIZE, np.random.default_rng((seed, 1)), False)
    if n_short < MIN_TRIALS:
        return None
    gap = max(1, int(track_buffer))
    n_long, true_n, comp_n = _trials(
        av, gap, LINK_GALLERY_LEN, np.random.default_rng((seed, gap)), True
    )
    if n_long < MIN_TRIALS:
        return None
    true_full = true_n[:, -1]
    _, margin, recall = _rule_at(true_full, [c[:, -1] for c in comp_n])
    if margin is None or recall is None or recall < MIN_LINK_RECALL:  # both None, or neither
        return None
    thresh = np.full(LINK_QUERY_LEN, np.nan)
    margins = np.full(LINK_QUERY_LEN, np.nan)
    for n in range(LINK_QUERY_LEN):
        t, m, _ = _rule_at(true_n[:, n], [c[:, n] for c in comp_n])
        thresh[n] = t
        margins[n] = np.nan if m is None else m
    bad = ~(np.isfinite(thresh) & np.isfinite(margins))
    thresh[bad] = np.nan
    margins[bad] = np.nan
    return thresh, margins
