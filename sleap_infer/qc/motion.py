"""Shared measures for the event finders: robust spread, centroids, runs, body size.

Every threshold in qc is a multiple of a track's own robust spread (median absolute
deviation), not a fixed number of pixels: a mouse filmed at 2 px per cm and a fly at
40 px per mm move by different amounts, and a jittery model's clean output should not
read as a string of jumps. A floor tied to the animals' size keeps a perfectly still
track (spread near 0) from flagging sub-pixel noise.
"""

from __future__ import annotations

import warnings

import numpy as np

from .load import UNTRACKED_PREFIX
from .records import VideoData

MAD_TO_SIGMA = 1.4826


def robust_sigma(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    """1.4826 x the median absolute deviation (the standard deviation for Gaussian data),
    ignoring NaN; NaN where nothing is finite."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        med = np.nanmedian(x, axis=axis, keepdims=True)
        return MAD_TO_SIGMA * np.nanmedian(np.abs(x - med), axis=axis)


def nanmedian(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    """``np.nanmedian`` without the all-NaN warning (an absent track is normal here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(x, axis=axis)


def nanmin(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmin(x, axis=axis)


def nanmean(x: np.ndarray, axis: int | None = None) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis)


def centroids(data: VideoData) -> np.ndarray:
    """(F, K, 2) mean of each instance's visible points, NaN where absent."""
    return nanmean(data.points, axis=2)


def label(data: VideoData, column: int) -> str:
    """How events name a column: its track, or ``#k`` in an untracked file."""
    name = data.track_names[column] if column < len(data.track_names) else ""
    return name or f"#{column}"


def motion_columns(data: VideoData) -> list[int]:
    """Columns whose rows follow one animal: tracks, or the lone column of a
    single-instance file. Per-frame instance order (untracked) says nothing of motion."""
    if data.tracked:
        return [k for k, n in enumerate(data.track_names) if not n.startswith(UNTRACKED_PREFIX)]
    return [0] if data.n_columns == 1 else []


def consecutive(frames: np.ndarray) -> np.ndarray:
    """(F,) bool: row f is the frame right after row f-1 (row 0: False)."""
    out = np.zeros(len(frames), dtype=bool)
    out[1:] = np.diff(frames) == 1
    return out


def body_size(data: VideoData) -> float:
    """The typical instance size: median bounding-box diagonal (px); 0 when unknown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        span = np.nanmax(data.points, axis=2) - np.nanmin(data.points, axis=2)
    diag = np.hypot(span[..., 0], span[..., 1])
    value = nanmedian(diag[data.present]) if data.present.any() else np.nan
    return float(value) if np.isfinite(value) else 0.0


def runs(mask: np.ndarray, max_gap: int = 0) -> list[tuple[int, int]]:
    """Inclusive (start, end) index pairs of True runs in ``mask``, gaps of up to
    ``max_gap`` False entries bridged."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) > max_gap + 1)
    starts = np.concatenate([[idx[0]], idx[breaks + 1]])
    ends = np.concatenate([idx[breaks], [idx[-1]]])
    return [(int(s), int(e)) for s, e in zip(starts, ends, strict=True)]


def sureness(ratio: np.ndarray | float) -> np.ndarray | float:
    """A score 0..1 from how far past its threshold a measure is (``ratio`` >= 1):
    0 at the threshold, 0.5 at twice it, towards 1 beyond."""
    return np.clip(1.0 - 1.0 / np.maximum(ratio, 1e-9), 0.0, 1.0)
