"""Identity swaps: two tracks exchanging animals at one frame.

At a swap both tracks leave their paths at the same frame, and each lands where the
other was heading. Each track's position is predicted from its last step (constant
velocity; no velocity across a step that was itself a discontinuity), a track is
discontinuous where it misses its prediction by more than its usual miss (median +
``K_SIGMA`` robust sigmas, at least ``SIZE_FLOOR`` of the animals' size), and a pair
discontinuous at one frame is a swap when exchanging their predictions explains the
positions at least twice as well (crossed cost < half the straight cost). With re-ID
vectors in the file, appearance votes too: each track's new vector resembling the
other's old one.
"""

from __future__ import annotations

import numpy as np

from .motion import (
    body_size,
    centroids,
    consecutive,
    label,
    motion_columns,
    nanmedian,
    robust_sigma,
)
from .records import Event, VideoData

K_SIGMA = 6.0
SIZE_FLOOR = 0.2
MIN_PX = 2.0
CROSS_RATIO = 0.5


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if not (np.isfinite(na) and np.isfinite(nb)) or na == 0 or nb == 0:
        return float("nan")
    return float(np.dot(a, b) / (na * nb))


def find_swaps(data: VideoData) -> list[Event]:
    cols = motion_columns(data)
    if len(cols) < 2 or len(data.frames) < 3:
        return []
    c = centroids(data)[:, cols]  # (F, K, 2)
    cons = consecutive(data.frames)
    floor = max(SIZE_FLOOR * body_size(data), MIN_PX)
    step = np.full(c.shape[:2], np.nan)
    step[1:] = np.linalg.norm(c[1:] - c[:-1], axis=-1)
    step[~cons] = np.nan
    thr_step = np.maximum(nanmedian(step, 0) + K_SIGMA * robust_sigma(step, 0), floor)
    # velocity of the previous step, zero where that step was itself a discontinuity
    vel = np.zeros_like(c)
    vel[2:] = c[1:-1] - c[:-2]
    prev_ok = np.zeros(c.shape[:2], dtype=bool)
    prev_ok[2:] = cons[1:-1, None] & (step[1:-1] <= thr_step)
    vel[~prev_ok] = 0.0
    vel = np.nan_to_num(vel)
    pred = np.full_like(c, np.nan)
    pred[1:] = c[:-1] + vel[1:]
    miss = np.linalg.norm(c - pred, axis=-1)  # (F, K)
    miss[~cons] = np.nan
    thr = np.maximum(nanmedian(miss, 0) + K_SIGMA * robust_sigma(miss, 0), floor)
    thr = np.where(np.isfinite(thr), thr, np.inf)
    broken = miss > thr  # (F, K)
    events: list[Event] = []
    last: dict[tuple[int, int], int] = {}
    for f in np.flatnonzero(broken.sum(axis=1) >= 2):
        ks = [int(k) for k in np.flatnonzero(broken[f])]
        best: list[tuple[float, int, int, float]] = []
        for i, a in enumerate(ks):
            for b in ks[i + 1 :]:
                straight = miss[f, a] + miss[f, b]
                crossed = np.linalg.norm(c[f, a] - pred[f, b]) + np.linalg.norm(
                    c[f, b] - pred[f, a]
                )
                if crossed < CROSS_RATIO * straight:
                    best.append((float(crossed / straight), a, b, float(straight)))
        used: set[int] = set()
        for ratio, a, b, _ in sorted(best):
            if a in used or b in used or last.get((a, b), -10) >= f - 3:
                continue
            used.update((a, b))
            last[(a, b)] = int(f)
            score = float(np.clip(1.0 - ratio / CROSS_RATIO, 0.0, 1.0) * 0.5 + 0.5)
            dist = float(np.linalg.norm(c[f - 1, a] - c[f - 1, b]))
            detail = f"both tracks jump {dist:.0f} px onto each other's paths"
            if data.embeddings is not None:
                emb = data.embeddings[:, cols]
                same = _cos(emb[f, a], emb[f - 1, a]) + _cos(emb[f, b], emb[f - 1, b])
                cross = _cos(emb[f, a], emb[f - 1, b]) + _cos(emb[f, b], emb[f - 1, a])
                if np.isfinite(same) and np.isfinite(cross):
                    agrees = cross > same
                    score = 0.5 * score + (0.5 if agrees else 0.0)
                    detail += "; appearance " + ("agrees" if agrees else "disagrees")
            frame = int(data.frames[f])
            events.append(
                Event(
                    kind="identity_swap",
                    frame_start=frame,
                    frame_end=frame,
                    tracks=[label(data, cols[a]), label(data, cols[b])],
                    score=score,
                    detail=detail,
                )
            )
    return events
