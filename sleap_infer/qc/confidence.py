"""Low-confidence stretches: runs of frames where a track's point scores drop.

A track's per-frame score is the mean of its point scores, a missing point counting 0
(the model could not place it). It is smoothed with a 5-frame running median (one bad
frame is a jump's business, not a stretch), and a stretch is at least ``MIN_FRAMES``
rows both ``K_SIGMA`` robust sigmas below the track's median and below ``RATIO`` of it:
the first keeps a steady track's small dips quiet, the second a noisy track's.
Untracked files (columns are not animals) are judged on the frame's mean over its
instances.
"""

from __future__ import annotations

import numpy as np

from .motion import label, motion_columns, nanmean, nanmedian, robust_sigma, runs
from .records import Event, VideoData

K_SIGMA = 4.0
RATIO = 0.6
MIN_FRAMES = 5
WINDOW = 5


def _smooth(x: np.ndarray) -> np.ndarray:
    """Running median over ``WINDOW`` rows, NaN-aware, same length."""
    pad = WINDOW // 2
    padded = np.concatenate([np.full(pad, np.nan), x, np.full(pad, np.nan)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, WINDOW)
    return nanmedian(windows, axis=1)


def _stretches(data: VideoData, series: np.ndarray, tracks: list[str]) -> list[Event]:
    base = float(nanmedian(series)) if np.isfinite(series).any() else np.nan
    if not np.isfinite(base) or base <= 0:
        return []
    sigma = float(robust_sigma(series))
    limit = min(base - K_SIGMA * sigma, RATIO * base)
    smooth = _smooth(series)
    low = np.isfinite(series) & (smooth < limit)
    out = []
    for s, e in runs(low, max_gap=2):
        if e - s + 1 < MIN_FRAMES:
            continue
        mean = float(nanmean(series[s : e + 1]))
        out.append(
            Event(
                kind="low_confidence",
                frame_start=int(data.frames[s]),
                frame_end=int(data.frames[e]),
                tracks=tracks,
                score=float(np.clip(1.0 - mean / base, 0.0, 1.0)),
                detail=f"point scores {mean:.2f} against {base:.2f} typical "
                f"over {e - s + 1} frames",
            )
        )
    return out


def frame_scores(data: VideoData) -> np.ndarray:
    """(F, K) mean point score of each present instance (missing points 0), NaN where absent."""
    if data.point_scores.shape[2] == 0:
        return np.full(data.present.shape, np.nan)
    mean = data.point_scores.mean(axis=2)
    return np.where(data.present, mean, np.nan)


def find_low_confidence(data: VideoData) -> list[Event]:
    scores = frame_scores(data)
    cols = motion_columns(data)
    if cols:
        events = []
        for k in cols:
            events += _stretches(data, scores[:, k], [label(data, k)])
        return sorted(events, key=lambda e: e.frame_start)
    if not data.present.any():
        return []
    return _stretches(data, nanmean(scores, axis=1), [])
