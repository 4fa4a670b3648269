"""The geometry half of sleap-nn 0.3.5's per-video calibration, for identity linking.

sleap-nn's ``calibrate`` measures a whole video before its identity linker
runs: the processing stride and time base (how many *steps* a gap is), the
animals' body size (the spatial gate's and the duplicate test's unit) and how
far an animal moves per step (``step_p95``, the gate's growth). Those come from
the detections alone, so they are computed here from the compact per-detection
arrays of :mod:`sleap_infer.tracking.linking.link`, with sleap-nn's rules and
constants. Its appearance half (re-ID threshold trials) is not ported: linking
refuses runs with re-ID vectors (see :func:`linking.refuse_vectors`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sleap_infer.tracking.common.body_size import DEFAULT_BODY_SIZE, resolve_body_size
from sleap_infer.tracking.common.frame_blocks import frame_blocks, frame_layout, next_frame_blocks

MIN_ANCHOR_LEN = 10  # detections in a chain before its motion counts
ANCHOR_MAX_NN_FRACTION = 0.5  # chain links shorter than this of the median spacing
ANCHOR_RATIO = 2.0  # the runner-up must be at least this much farther, both ways
DUPLICATE_IOMIN = 0.5  # strictly above: one animal detected twice (not a neighbour)


@dataclass(frozen=True)
class Geometry:
    """What the linker reads from sleap-nn's ``VideoCalibration``."""

    frame_step: int
    regular: bool
    time_base: str  # "frames" or "steps"
    body_size: float
    step_p95: float  # NaN: no chain long enough to measure motion (no spatial gate)
    anchor_of: np.ndarray  # (M,) each valid detection's anchor chain (>= 10 long), -1: none
    n_anchors: int


def frame_stride(frame_idx: np.ndarray) -> tuple[int, bool]:
    """Most common positive frame delta (ties: the smallest), and whether at least half
    of the deltas are it; ``(1, True)`` without any."""
    deltas = np.diff(np.asarray(frame_idx, dtype=np.int64))
    values, counts = np.unique(deltas[deltas > 0], return_counts=True)
    if values.size == 0:
        return 1, True
    best = int(values[np.argmax(counts)])  # argmax: first of the ties = smallest delta
    return best, bool(counts.max() >= 0.5 * counts.sum())


def frame_steps(frame_idx: np.ndarray, time_base: str, frame_step: int) -> np.ndarray:
    """Step position of each processed frame: ``"steps"`` counts processed frames;
    ``"frames"`` counts ``max(1, rint(delta / frame_step))`` between neighbours, so a
    strided video looks dense and a real gap still counts."""
    idx = np.asarray(frame_idx, dtype=np.float64)
    if idx.size == 0:
        return np.zeros(0, np.int64)
    if time_base == "steps":
        return np.arange(idx.size, dtype=np.int64)
    inc = np.maximum(1.0, np.rint(np.diff(idx) / max(1, int(frame_step)))).astype(np.int64)
    return np.concatenate([[0], np.cumsum(inc)]).astype(np.int64)


def pair_iomin(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise intersection over the smaller box area (0 where an area is 0); boxes
    ``(..., n, 4)`` and ``(..., m, 4)`` give ``(..., n, m)``."""
    lo = np.maximum(a[..., :, None, :2], b[..., None, :, :2])
    hi = np.minimum(a[..., :, None, 2:], b[..., None, :, 2:])
    inter = np.clip(hi - lo, 0.0, None).prod(axis=-1)
    area_a = np.clip(a[..., 2:] - a[..., :2], 0.0, None).prod(axis=-1)
    area_b = np.clip(b[..., 2:] - b[..., :2], 0.0, None).prod(axis=-1)
    small = np.minimum(area_a[..., :, None], area_b[..., None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(small > 0, inter / small, 0.0)


def _second_smallest(dist: np.ndarray, axis: int) -> np.ndarray:
    if dist.shape[axis] < 2:
        return np.full(np.delete(dist.shape, axis), np.inf)
    return np.take(np.partition(dist, 1, axis=axis), 1, axis=axis)


def pair_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Centroid distances ``(..., n, m)`` of ``(..., n, 2)`` and ``(..., m, 2)``."""
    return np.linalg.norm(a[..., :, None, :] - b[..., None, :, :], axis=-1)


def _same_frame(
    offsets: np.ndarray, counts: np.ndarray, centroids: np.ndarray, boxes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per detection: nearest same-frame non-duplicate centroid distance, duplicate flag
    (frames of equal size at once: :mod:`~sleap_infer.tracking.common.frame_blocks`)."""
    nn = np.full(len(centroids), np.inf)
    dup = np.zeros(len(centroids), bool)
    for rows in frame_blocks(offsets, counts, min_count=2):
        eye = np.eye(rows.shape[1], dtype=bool)
        box = boxes[rows]
        pair = (pair_iomin(box, box) > DUPLICATE_IOMIN) & ~eye
        dup[rows] = pair.any(axis=-1)
        c = centroids[rows]
        dist = pair_distances(c, c)
        nn[rows] = np.where(np.isfinite(dist) & ~eye & ~pair, dist, np.inf).min(axis=-1)
    return nn, dup


def _links(
    offsets: np.ndarray,
    counts: np.ndarray,
    centroids: np.ndarray,
    dup: np.ndarray,
    max_dist: float,
) -> np.ndarray:
    """Each detection's unambiguous successor in the next processed frame (-1: none):
    mutual nearest neighbours, closer than ``max_dist``, runner-ups at least twice
    (and strictly) farther both ways, neither a duplicate."""
    nxt = np.full(len(centroids), -1, np.int64)
    for a, b in next_frame_blocks(offsets, counts):
        dist = pair_distances(centroids[a], centroids[b])
        dist = np.where(np.isfinite(dist), dist, np.inf)
        best_col = dist.argmin(axis=2)  # (F, ka)
        best_row = dist.argmin(axis=1)  # (F, kb)
        d1 = np.take_along_axis(dist, best_col[..., None], axis=2)[..., 0]
        row_second = _second_smallest(dist, axis=2)
        col_second = np.take_along_axis(_second_smallest(dist, axis=1), best_col, axis=1)
        mutual = np.take_along_axis(best_row, best_col, axis=1) == np.arange(a.shape[1])
        ok = np.isfinite(d1) & mutual & (d1 < max_dist)
        ok &= (row_second >= ANCHOR_RATIO * d1) & (row_second > d1)
        ok &= (col_second >= ANCHOR_RATIO * d1) & (col_second > d1)
        successor = np.take_along_axis(b, best_col, axis=1)
        ok &= ~dup[a] & ~dup[successor]
        nxt[a[ok]] = successor[ok]
    return nxt


def _chain_roots(nxt: np.ndarray) -> np.ndarray:
    """First detection of the chain (of ``nxt`` links) each detection belongs to."""
    root = np.arange(len(nxt), dtype=np.int64)
    linked = nxt >= 0
    root[nxt[linked]] = np.flatnonzero(linked)  # predecessor, then pointer doubling
    while True:
        up = root[root]
        if np.array_equal(up, root):
            return root
        root = up


def calibrate_geometry(
    frame_idx: np.ndarray,
    frame_pos: np.ndarray,
    centroids: np.ndarray,
    boxes: np.ndarray,
    sized: np.ndarray,
    body_size: float | None = None,
) -> Geometry:
    """sleap-nn's ``calibrate`` geometry over a video's *valid* detections.

    ``frame_idx``: every processed frame, in order; ``frame_pos``: each detection's
    position in it (non-decreasing); ``boxes``: the raw boxes (visible-node extents,
    floored at 1 px per axis); ``sized``: poses with at least two visible nodes.
    """
    frame_step, regular = frame_stride(frame_idx)
    time_base = "frames" if regular else "steps"
    step_idx = frame_steps(frame_idx, time_base, frame_step)
    offsets, counts = frame_layout(frame_pos, len(frame_idx))
    nn, dup = _same_frame(offsets, counts, centroids, boxes)
    finite_nn = nn[np.isfinite(nn)]
    spacing = float(np.median(finite_nn)) if finite_nn.size else float("nan")
    diag = np.hypot(*(boxes[:, 2:] - boxes[:, :2]).T)
    diag = diag[sized & np.isfinite(diag) & (diag > 0)]
    measured = float(np.median(diag)) if diag.size else float("nan")
    max_link = ANCHOR_MAX_NN_FRACTION * spacing if np.isfinite(spacing) else np.inf
    nxt = _links(offsets, counts, centroids, dup, max_link)
    roots = _chain_roots(nxt)
    kept = np.bincount(roots, minlength=len(nxt))[roots] >= MIN_ANCHOR_LEN
    anchor_roots = np.unique(roots[kept])
    anchor_of = np.full(len(nxt), -1, np.int64)
    anchor_of[kept] = np.searchsorted(anchor_roots, roots[kept])
    p95 = p99 = float("nan")
    src = np.flatnonzero((nxt >= 0) & kept)
    if src.size:
        disp = np.linalg.norm(centroids[nxt[src]] - centroids[src], axis=1)
        disp = disp / np.diff(step_idx)[frame_pos[src]]
        p95, p99 = (float(v) for v in np.percentile(disp, [95, 99]))
    if body_size is not None and np.isfinite(body_size) and body_size > 0:
        body = float(body_size)
    else:
        body = resolve_body_size(measured, p99, spacing)
    if not (np.isfinite(body) and body > 0):
        body = DEFAULT_BODY_SIZE
    return Geometry(frame_step, regular, time_base, body, p95, anchor_of, len(anchor_roots))
