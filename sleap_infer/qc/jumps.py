"""One-frame outliers: a whole instance, or one of its nodes, off its path for a frame.

A point at frame f is compared with the midpoint of frames f-1 and f+1 (the track's
own motion): a residual far beyond the track's usual residual (median + ``K_SIGMA``
robust sigmas, at least ``SIZE_FLOOR`` of the animals' size) while f-1 and f+1 lie
close together (residual > ``GAP_FACTOR`` x their distance) is a jump that came
back. The second condition keeps identity swaps (which never come back: f-1 and f+1
are different animals) and fast turns out of this list. A whole
instance is judged on the median node (all nodes moved); a single node on its position
relative to the instance's centroid (the rest of the body stayed).
"""

from __future__ import annotations

import numpy as np

from .motion import (
    body_size,
    label,
    motion_columns,
    nanmean,
    nanmedian,
    nanmin,
    robust_sigma,
    sureness,
)
from .records import Event, VideoData

K_SIGMA = 8.0
SIZE_FLOOR = 0.35  # of the median instance size
GAP_FACTOR = 2.0  # the residual must exceed twice the f-1 to f+1 distance
MIN_PX = 2.0


def _threshold(res: np.ndarray, floor: float) -> np.ndarray:
    """Per column (last axes kept): median + K_SIGMA robust sigmas, at least ``floor``."""
    thr = nanmedian(res, axis=0) + K_SIGMA * robust_sigma(res, axis=0)
    return np.where(np.isfinite(thr), np.maximum(thr, floor), np.inf)


def _residuals(p: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(residual at f vs the f-1/f+1 midpoint, distance f-1 to f+1), NaN where rows f-1,
    f, f+1 are not consecutive frames."""
    mid = (p[:-2] + p[2:]) / 2
    res = np.linalg.norm(p[1:-1] - mid, axis=-1)
    gap = np.linalg.norm(p[2:] - p[:-2], axis=-1)
    shape = (ok.shape[0],) + (1,) * (res.ndim - 1)
    okr = ok.reshape(shape)
    return np.where(okr, res, np.nan), np.where(okr, gap, np.nan)


def find_jumps(data: VideoData) -> list[Event]:
    cols = motion_columns(data)
    n_f = len(data.frames)
    if not cols or n_f < 3:
        return []
    pts = data.points[:, cols]  # (F, K, N, 2)
    step = np.diff(data.frames)
    ok = (step[:-1] == 1) & (step[1:] == 1)  # rows f-1, f, f+1 are consecutive frames
    floor = max(SIZE_FLOOR * body_size(data), MIN_PX)
    n_nodes = pts.shape[2]

    res, gap = _residuals(pts, ok)  # (F-2, K, N)
    whole = nanmin(res, axis=2) if n_nodes <= 3 else nanmedian(res, axis=2)
    whole_gap = nanmedian(gap, axis=2)
    thr_w = _threshold(whole, floor)  # (K,)
    hit_w = (whole > thr_w) & (whole > GAP_FACTOR * whole_gap)

    centre = nanmean(pts, axis=2)[:, :, None] if n_nodes > 1 else pts
    local = pts - centre
    res_l, gap_l = _residuals(local, ok)  # (F-2, K, N)
    thr_l = _threshold(res_l, floor)  # (K, N)
    hit_n = (res_l > thr_l) & (res_l > GAP_FACTOR * gap_l) & ~hit_w[..., None]
    if n_nodes < 2:
        hit_n[:] = False

    events: list[Event] = []
    for r, k in zip(*np.nonzero(hit_w), strict=True):
        frame = int(data.frames[r + 1])
        dist = float(whole[r, k])
        events.append(
            Event(
                kind="jump",
                frame_start=frame,
                frame_end=frame,
                tracks=[label(data, cols[k])],
                score=float(sureness(dist / thr_w[k])),
                detail=f"whole instance {dist:.0f} px off its path for one frame",
            )
        )
    rows, ks = np.nonzero(hit_n.any(axis=2))
    for r, k in zip(rows, ks, strict=True):
        nodes = np.flatnonzero(hit_n[r, k])
        # relative to the centroid every node of a 2-node body moves: name the one that
        # moved in the image (at least half the largest image-space residual)
        moved = res[r, k, nodes]
        if np.isfinite(moved).any():
            nodes = nodes[moved >= 0.5 * np.nanmax(moved)]
        ratio = float(np.max(res_l[r, k, nodes] / thr_l[k, nodes]))
        names = [data.node_names[n] for n in nodes]
        dist = float(np.max(res_l[r, k, nodes]))
        frame = int(data.frames[r + 1])
        events.append(
            Event(
                kind="jump",
                frame_start=frame,
                frame_end=frame,
                tracks=[label(data, cols[k])],
                score=float(sureness(ratio)),
                nodes=names,
                detail=f"{', '.join(names)} {dist:.0f} px off the body for one frame",
            )
        )
    events.sort(key=lambda e: (e.frame_start, e.tracks))
    return events
