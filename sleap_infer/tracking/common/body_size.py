"""The running body size of sleap-nn's MOT trackers when no detection has an extent.

Boxes are floored at a quarter of the body size and a one-node skeleton's
centroid similarity has a scale of half of it, so the body size decides
matches. With extents (masks, poses with two visible nodes) it is their median
diagonal (:mod:`~sleap_infer.tracking.mot.core`). Without any, sleap-nn 0.3.5
(``calibration.resolve_body_size`` / ``pair_geometry``) falls back, in order, to:

1. motion: eight times the 99th percentile of the per-step length of
   *unambiguous* frame-to-frame links (mutual nearest neighbours, closer than
   half the typical spacing, runner-ups at least twice as far, neither a
   duplicate detection), at least 16 px and at most the spacing;
2. spacing: the median distance from a detection to its nearest other animal
   in the same frame (duplicates, boxes overlapping more than half the smaller
   one, are not other animals);
3. 50 px.

All of it from the frames seen so far, so it runs online as sleap-nn's tracker
does without its whole-video pre-pass.
"""

from __future__ import annotations

import numpy as np

DEFAULT_BODY_SIZE = 50.0
MOTION_BODY_FACTOR = 8.0
MIN_MOTION_BODY = 16.0
ANCHOR_MAX_NN_FRACTION = 0.5  # a link is shorter than this of the median spacing
ANCHOR_RATIO = 2.0  # ... and its runner-ups at least this many times longer
DUPLICATE_IOMIN = 0.5  # two boxes overlapping more than this of the smaller: one animal


def resolve_body_size(measured: float, step_p99: float, spacing: float) -> float:
    """The fallback chain above (``NaN``: that evidence is missing)."""

    def ok(v: float) -> bool:
        return bool(np.isfinite(v)) and v > 0

    if ok(measured):
        return float(measured)
    if np.isfinite(step_p99) and step_p99 >= 0:
        body = max(MOTION_BODY_FACTOR * float(step_p99), MIN_MOTION_BODY)
        return float(min(body, spacing)) if ok(spacing) else float(body)
    if ok(spacing):
        return float(spacing)
    return DEFAULT_BODY_SIZE


def geometry(points: np.ndarray | None, raw: np.ndarray, valid: np.ndarray):
    """``(centroids, extents)`` of the valid detections: raw-box centres, node extents >= 1 px."""
    cen = 0.5 * (raw[valid, :2] + raw[valid, 2:])
    ext = raw[valid].copy()
    if points is not None and len(points):
        pts = points[valid]
        vis = np.isfinite(pts).all(axis=-1)
        has = vis.any(axis=1)
        lo = np.where(vis[..., None], pts, np.inf).min(axis=1)[has]
        hi = np.where(vis[..., None], pts, -np.inf).max(axis=1)[has]
        half = 0.5 * np.maximum(hi - lo, 1.0)
        c = 0.5 * (lo + hi)
        ext[has] = np.concatenate([c - half, c + half], axis=1)
    return cen, ext


def _same_frame(cen: np.ndarray, ext: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each detection's nearest other animal (inf: alone) and whether it is a duplicate."""
    k = len(cen)
    if k < 2:
        return np.full(k, np.inf), np.zeros(k, bool)
    eye = np.eye(k, dtype=bool)
    lo = np.maximum(ext[:, None, :2], ext[None, :, :2])
    hi = np.minimum(ext[:, None, 2:], ext[None, :, 2:])
    inter = np.clip(hi - lo, 0.0, None).prod(axis=-1)
    area = np.clip(ext[:, 2:] - ext[:, :2], 0.0, None).prod(axis=-1)
    small = np.minimum(area[:, None], area[None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        iomin = np.where(small > 0, inter / small, 0.0)
    dup = (iomin > DUPLICATE_IOMIN) & ~eye
    dist = np.linalg.norm(cen[:, None] - cen[None], axis=-1)
    dist = np.where(np.isfinite(dist) & ~eye & ~dup, dist, np.inf)
    return dist.min(axis=1), np.any(dup, axis=1)


def _second(dist: np.ndarray, axis: int) -> np.ndarray:
    if dist.shape[axis] < 2:
        return np.full(dist.shape[1 - axis], np.inf)
    return np.take(np.partition(dist, 1, axis=axis), 1, axis=axis)


def pair_geometry(prev, cur, max_dist: float | None) -> tuple[np.ndarray, np.ndarray]:
    """``(spacings, link lengths)``: ``cur``'s finite spacings, its unambiguous links from ``prev``.

    ``prev``/``cur``: ``(centroids, extents)`` from :func:`geometry`; ``prev``
    None: no links.
    """
    nn_cur, dup_cur = _same_frame(*cur)
    spacings = nn_cur[np.isfinite(nn_cur)]
    if prev is None:
        return spacings, np.zeros(0)
    nn_prev, dup_prev = _same_frame(*prev)
    if max_dist is None:
        both = np.concatenate([nn_prev, nn_cur])
        finite = both[np.isfinite(both)]
        max_dist = ANCHOR_MAX_NN_FRACTION * float(np.median(finite)) if finite.size else np.inf
    ca, cb = prev[0], cur[0]
    if len(ca) == 0 or len(cb) == 0:
        return spacings, np.zeros(0)
    dist = np.linalg.norm(ca[:, None] - cb[None], axis=-1)
    dist = np.where(np.isfinite(dist), dist, np.inf)
    best_col, best_row = dist.argmin(axis=1), dist.argmin(axis=0)
    d1 = dist[np.arange(len(ca)), best_col]
    row_second = _second(dist, 1)
    col_second = _second(dist, 0)[best_col]
    ok = np.isfinite(d1) & (best_row[best_col] == np.arange(len(ca))) & (d1 < max_dist)
    ok &= (row_second >= ANCHOR_RATIO * d1) & (row_second > d1)
    ok &= (col_second >= ANCHOR_RATIO * d1) & (col_second > d1)
    ok &= ~dup_prev & ~dup_cur[best_col]
    links = np.linalg.norm(cb[best_col[ok]] - ca[ok], axis=1)
    return spacings, links


BODY_SIZE_HISTORY = 2048  # evidence values remembered for the running body size


class RunningBodySize:
    """The body-size evidence of the frames seen so far, kept to be saved bit for bit.

    Shared by every tracker that gives a degenerate detection (one visible node)
    a pseudo box: the SORT family (:mod:`~sleap_infer.tracking.mot.core`) and
    ByteTrack. ``diagonals`` are the extents' diagonals; until one is seen the
    spacings and unambiguous link lengths of consecutive frames stand in.
    """

    def __init__(self) -> None:
        self.diagonals = np.zeros(0)
        self.spacings = np.zeros(0)  # same-frame nearest-animal distances (no extent yet)
        self.step_lengths = np.zeros(0)  # per-step lengths of unambiguous links (ditto)
        self.prev_geometry: tuple[np.ndarray, np.ndarray] | None = None  # previous frame's

    def size(self) -> float:
        """The median diagonal, else :func:`resolve_body_size`'s fallbacks."""
        if self.diagonals.size:
            return float(np.median(self.diagonals))
        p99 = float(np.percentile(self.step_lengths, 99)) if self.step_lengths.size else np.nan
        spacing = float(np.median(self.spacings)) if self.spacings.size else np.nan
        return resolve_body_size(np.nan, p99, spacing)

    def observe(
        self,
        diagonals: np.ndarray,
        geometry_of: tuple[np.ndarray | None, np.ndarray, np.ndarray],
        steps: int,
        linkable: bool,
        fixed: bool = False,
    ) -> None:
        """Remember a frame's evidence.

        ``geometry_of``: :func:`geometry`'s ``(points, raw boxes, valid)``;
        ``steps``: clock steps since the previous frame; ``linkable``: the
        previous frame may link to this one; ``fixed``: the body size is given
        (no spacing or motion needed).
        """
        if diagonals.size:
            self.diagonals = np.concatenate([self.diagonals, diagonals])[-BODY_SIZE_HISTORY:]
        if self.diagonals.size or fixed:
            self.prev_geometry = None
            return
        prev = self.prev_geometry if linkable else None
        max_dist = 0.5 * float(np.median(self.spacings)) if self.spacings.size else None
        cur = geometry(*geometry_of)
        spacings, links = pair_geometry(prev, cur, max_dist)
        self.spacings = np.concatenate([self.spacings, spacings])[-BODY_SIZE_HISTORY:]
        if steps > 0 and links.size:
            moved = np.concatenate([self.step_lengths, links / steps])
            self.step_lengths = moved[-BODY_SIZE_HISTORY:]
        self.prev_geometry = cur

    def arrays(self) -> dict[str, np.ndarray]:
        """The saved arrays (``prev_*`` only while a previous frame's geometry is kept)."""
        out = {
            "diagonals": self.diagonals.copy(),
            "spacings": self.spacings.copy(),
            "step_lengths": self.step_lengths.copy(),
        }
        if self.prev_geometry is not None:
            out["prev_centroids"] = self.prev_geometry[0].copy()
            out["prev_extents"] = self.prev_geometry[1].copy()
        return out

    def load(self, arrays: dict[str, np.ndarray], has_prev_geometry: bool) -> None:
        self.diagonals = np.array(arrays["diagonals"], np.float64).reshape(-1)
        self.spacings = np.array(arrays["spacings"], np.float64).reshape(-1)
        self.step_lengths = np.array(arrays["step_lengths"], np.float64).reshape(-1)
        self.prev_geometry = None
        if has_prev_geometry:
            self.prev_geometry = (
                np.array(arrays["prev_centroids"], np.float64).reshape(-1, 2),
                np.array(arrays["prev_extents"], np.float64).reshape(-1, 4),
            )
