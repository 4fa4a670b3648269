"""How alike a detection and a candidate are, and one number per track from several.

Same assignments as sleap-nn need the same scores down to the last bit
(Hungarian and greedy break ties by order), so every function here does
sleap-nn's float operations in its order, on its dtypes: OKS with the
COCO-style normalisation over the *detection's* box area, box IoU with
``+ 1`` pixel extents and Python ``max``/``min`` (so a NaN side counts as no
overlap), mask IoU over the overlap of two cropped masks, negative euclidean
distance and cosine similarity that turn degenerate input into NaN. OKS is
computed for all pairs of a frame at once; that gives the same bits as
sleap-nn's one call per pair (checked). A track's score is the ``nanmean``,
``nanmax`` or ``nanquantile`` of its candidates' scores, NaN when none is
left; NaN becomes an infinite cost, i.e. "cannot match".
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sleap_infer.tracking.classic.features import Feature, MaskCrop

EXP_ZERO_BELOW = -746.0  # exp(x) rounds to +0.0 for every double below this (min subnormal / 2)


def oks_matrix(gt: np.ndarray, pr: np.ndarray, stddev: float) -> np.ndarray:
    """``(G, M)`` object keypoint similarity of poses ``gt`` (G, N, 2) to ``pr`` (M, N, 2).

    Normalised by each ``gt`` pose's box area; a node missing in ``gt`` adds 0
    and is not counted, one missing in ``pr`` adds 0 but is counted.

    The same float operations as one pair at a time (the tests compare bits), laid
    out for speed, which at 30 animals was 44% of the classic tracker's time:
    node-major ``(N, G, M)`` planes, so numpy's loops run along ``M`` rather than
    over millions of length-2 and length-N rows; and ``exp`` only where it can be
    non-zero. Most pairs of a frame are different animals, whose exponent is far
    below -746; numpy's vector ``exp`` falls back to a slow path on underflow and
    took 4x longer on such values than on the few that matter, and the answer
    there is exactly +0.0 anyway. Nodes are summed as numpy sums a contiguous row:
    in order for fewer than 8 (a sum over the plane axis gives the same bits),
    pairwise from 8 (then on a ``(G, M, N)`` copy).
    """
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        area = np.prod(np.nanmax(gt, axis=-2) - np.nanmin(gt, axis=-2), axis=-1)
        n_gt, n_nodes, _ = gt.shape
        n_pr = pr.shape[0]
        spread = (2 * np.full(n_nodes, stddev)) ** 2
        scale = 2 * (area + np.spacing(1))
        # -(d / norm) == d / -norm bit for bit: IEEE division rounds symmetrically.
        neg_norm = -(np.reshape(spread, (n_nodes, 1, 1)) * np.reshape(scale, (1, n_gt, 1)))
        gx, gy = (np.ascontiguousarray(gt[..., i].T)[:, :, None] for i in (0, 1))
        px, py = (np.ascontiguousarray(pr[..., i].T)[:, None, :] for i in (0, 1))
        dx = gx - px
        distance = np.multiply(dx, dx, out=dx)  # (N, G, M)
        dy = gy - py
        distance += np.multiply(dy, dy, out=dy)
        np.copyto(distance, np.inf, where=np.isnan(px) | np.isnan(py))
        exponent = np.divide(distance, neg_norm, out=distance)
        ks = np.zeros_like(exponent)
        live = np.flatnonzero(~(exponent < EXP_ZERO_BELOW))  # NaN stays NaN
        ks.flat[live] = np.exp(exponent.flat[live])
        missing_gt = np.isnan(gx) | np.isnan(gy)  # (N, G, 1)
        np.copyto(ks, 0.0, where=missing_gt)
        visible = np.sum((~missing_gt[..., 0].T).astype("float32"), axis=-1, keepdims=True)
        if n_nodes < 8:
            total = np.sum(ks, axis=0) if n_nodes else np.zeros((n_gt, n_pr))
        else:
            total = np.sum(np.ascontiguousarray(ks.transpose(1, 2, 0)), axis=-1)
        return total / visible


def iou(a: np.ndarray, b: np.ndarray) -> float:
    """IoU of two ``[xmin, ymin, xmax, ymax]`` boxes whose extents include both ends."""
    (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = a, b
    with np.errstate(all="ignore"):
        inter_w = max(0, min(ax1, bx1) - max(ax0, bx0) + 1)
        inter_h = max(0, min(ay1, by1) - max(ay0, by0) + 1)
        inter = inter_w * inter_h
        union = (ax1 - ax0 + 1) * (ay1 - ay0 + 1) + (bx1 - bx0 + 1) * (by1 - by0 + 1) - inter
        return inter / union


def _overlap(a: MaskCrop, b: MaskCrop) -> int:
    if a.area == 0 or b.area == 0:
        return 0
    top, bottom = max(a.y0, b.y0), min(a.y0 + a.crop.shape[0], b.y0 + b.crop.shape[0])
    left, right = max(a.x0, b.x0), min(a.x0 + a.crop.shape[1], b.x0 + b.crop.shape[1])
    if bottom <= top or right <= left:
        return 0
    sub_a = a.crop[top - a.y0 : bottom - a.y0, left - a.x0 : right - a.x0]
    sub_b = b.crop[top - b.y0 : bottom - b.y0, left - b.x0 : right - b.x0]
    return int(np.count_nonzero(sub_a & sub_b))


def mask_iou(a: MaskCrop, b: MaskCrop) -> float:
    """Pixel IoU of two masks; two empty masks are identical (1.0)."""
    inter = _overlap(a, b)
    union = a.area + b.area - inter
    return 1.0 if union == 0 else float(inter / union)


def euclidean(a: Feature, b: Feature) -> float:
    """Negative distance (a similarity); NaN for a missing or mismatched side."""
    if a is None or b is None:
        return math.nan
    with np.errstate(all="ignore"):
        if (
            type(a) is np.ndarray
            and type(b) is np.ndarray
            and a.dtype == np.float64
            and b.dtype == np.float64
            and a.ndim == 1
            and a.shape == b.shape
            and a.size > 0
        ):
            d = a - b
            dist = math.sqrt(d.dot(d))
            return math.nan if not math.isfinite(dist) else -float(dist)
        u = np.asarray(a, dtype=np.float64).ravel()
        v = np.asarray(b, dtype=np.float64).ravel()
        if u.size == 0 or u.shape != v.shape:
            return math.nan
        dist = float(np.linalg.norm(u - v))
    return math.nan if not math.isfinite(dist) else -dist


def cosine(a: Feature, b: Feature) -> float:
    """Cosine similarity; NaN for a missing, empty, mismatched or zero-length side."""
    if a is None or b is None:
        return math.nan
    u = np.asarray(a, dtype=np.float64).ravel()
    v = np.asarray(b, dtype=np.float64).ravel()
    if u.size == 0 or u.shape != v.shape:
        return math.nan
    with np.errstate(all="ignore"):
        denom = float(np.linalg.norm(u) * np.linalg.norm(v))
        if not math.isfinite(denom) or denom == 0.0:
            return math.nan
        return float(np.dot(u, v) / denom)


# Each takes the two features of its kind (boxes, mask crops, poses or vectors).
PAIR_SCORES: dict[str, Callable[[Any, Any], float]] = {
    "iou": iou,
    "mask_iou": mask_iou,
    "euclidean_dist": euclidean,
    "cosine_sim": cosine,
}


def stack_poses(poses: Sequence[Feature]) -> np.ndarray:
    """``(len(poses), N, 2)`` float64: :func:`numpy.stack`'s answer and errors, at a
    third of its cost (one ``concatenate``; ``stack`` reshapes each pose first)."""
    arrays = [np.asarray(p, dtype=np.float64) for p in poses]
    shape = arrays[0].shape
    if any(a.shape != shape for a in arrays):
        return np.stack(arrays)  # raises numpy's own "must have the same shape"
    return np.concatenate(arrays).reshape((len(arrays), *shape))


def pair_matrix(
    scoring: str, queries: Sequence[Feature], gallery: Sequence[Feature], stddev: float
) -> np.ndarray:
    """``(Q, M)`` scores of every query against every gallery feature."""
    if not queries or not gallery:
        return np.zeros((len(queries), len(gallery)))
    if scoring == "oks":
        return oks_matrix(stack_poses(queries), stack_poses(gallery), stddev)
    fn = PAIR_SCORES[scoring]
    return np.array([[fn(q, g) for g in gallery] for q in queries], dtype=np.float64)


def nanmean_rows(values: np.ndarray) -> np.ndarray:
    """``np.nanmean(values, axis=-1)`` of a C-contiguous float64 array, bit for bit, faster.

    numpy's own does: copy with NaN -> 0, sum the contiguous last axis, divide by
    the count of non-NaN; so does this, skipping the copy and the count when there
    is no NaN (the usual case: with ``reduce_columns`` it was a third of the
    classic tracker's time at 30 animals). All-NaN rows give NaN, silently.
    """
    missing = np.isnan(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        if not missing.any():
            return np.sum(values, axis=-1) / values.shape[-1]
        filled = np.where(missing, 0.0, values)
        count = np.sum(~missing, axis=-1, dtype=np.intp)
        return np.sum(filled, axis=-1) / count


def reduce(values: np.ndarray, reduction: str, quantile: float, axis: int | None = None) -> object:
    """One score from several (NaNs ignored; all NaN gives NaN), along ``axis``."""
    if (
        reduction == "mean"
        and isinstance(values, np.ndarray)
        and values.dtype == np.float64
        and axis == values.ndim - 1
        and values.flags.c_contiguous
    ):
        return nanmean_rows(values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if reduction == "mean":
            return np.nanmean(values, axis=axis)
        if reduction == "max":
            return np.nanmax(values, axis=axis)
        return np.nanquantile(values, q=quantile, axis=axis)


def reduce_columns(
    pairs: np.ndarray, lengths: Sequence[int], reduction: str, quantile: float
) -> np.ndarray:
    """``(Q, T)``: each query's scores against a track's candidates, reduced to one.

    ``pairs`` is ``(Q, sum(lengths))``, track ``t``'s candidates in the ``t``-th run
    of ``lengths[t]`` columns; a track with none scores NaN. Tracks with as many
    candidates are reduced in one call on a C-contiguous ``(Q, tracks, k)`` copy:
    numpy sums a contiguous last axis pairwise, exactly as it sums one detection's
    1-D row, so the bits are those of reducing row by row (what sleap-nn does),
    at a few calls a frame instead of ``Q x T`` (at 30 animals the row-by-row loop
    was 90% of the tracker's time). A gathered array is *not* contiguous in ``k``
    unless copied, and then its sums differ in the last bit from ``k >= 8``.
    """
    counts = np.asarray(lengths, dtype=np.int64)
    out = np.full((pairs.shape[0], len(counts)), np.nan)
    if not pairs.shape[0]:
        return out
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    for k in np.unique(counts[counts > 0]):
        cols = np.flatnonzero(counts == k)
        index = starts[cols][:, None] + np.arange(k)[None, :]
        block = np.ascontiguousarray(pairs[:, index])  # (Q, len(cols), k), k innermost
        out[:, cols] = reduce(block, reduction, quantile, axis=2)
    return out


def appearance_matrix(
    queries: Sequence[np.ndarray | None],
    gallery: Sequence[Sequence[np.ndarray | None]],
    reduction: str,
    quantile: float,
) -> np.ndarray:
    """``(Q, T)`` cosine similarity of re-ID vectors to each track's (usable) vectors.

    sleap-nn's vectorised appearance path: one matrix product over the queries
    that have a vector and all candidate vectors of the first query's length,
    reduced per track over the finite similarities; NaN where nothing is left.
    """
    out = np.full((len(queries), len(gallery)), np.nan)
    rows: list[int] = []
    vecs: list[np.ndarray] = []
    for i, vec in enumerate(queries):
        if vec is not None and np.asarray(vec).size:
            rows.append(i)
            vecs.append(np.asarray(vec, dtype=np.float64).ravel())
    if not vecs or not gallery:
        return out
    dim = vecs[0].size
    keep = [i for i, v in enumerate(vecs) if v.size == dim]
    query_rows = np.asarray([rows[i] for i in keep])
    query = np.stack([vecs[i] for i in keep])
    cols: list[int] = []
    items: list[np.ndarray] = []
    for t, track in enumerate(gallery):
        for vec in track:
            if vec is None:
                continue
            v = np.asarray(vec, dtype=np.float64).ravel()
            if v.size == dim:
                items.append(v)
                cols.append(t)
    if not items:
        return out
    stacked = np.stack(items)
    col_of = np.asarray(cols)
    with np.errstate(invalid="ignore", divide="ignore"):
        norms = np.linalg.norm(query, axis=1)[:, None] * np.linalg.norm(stacked, axis=1)[None, :]
        sims = (query @ stacked.T) / norms
    sims[~np.isfinite(sims)] = np.nan
    for t in range(len(gallery)):
        block = sims[:, col_of == t]
        if block.shape[1] == 0:
            continue
        hit = np.flatnonzero(np.isfinite(block).any(axis=1))
        if hit.size:
            out[query_rows[hit], t] = reduce(block[hit], reduction, quantile, axis=1)
    return out


def blend_appearance(
    geometry: np.ndarray, appearance: np.ndarray, weight: float, scale: float | None
) -> np.ndarray:
    """``(1 - w) * geometry + w * appearance`` where both are finite; geometry elsewhere.

    sleap-nn's ``_blend_appearance``: a missing vector never poisons a pair (NaN
    would become an infinite cost and drop a good match), and a pair geometry
    rejected stays rejected. With ``scale`` the geometry is a negative pixel
    distance, first mapped to ``exp(-d / scale)`` in (0, 1] (ordering kept).
    """
    if scale is not None:
        with np.errstate(over="ignore"):
            geometry = np.exp(geometry / float(scale))
    both = np.isfinite(geometry) & np.isfinite(appearance)
    return np.where(both, (1.0 - weight) * geometry + weight * appearance, geometry)
