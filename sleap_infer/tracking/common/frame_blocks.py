"""A video's frames stacked by detection count, so per-frame pair tests run as blocks.

Identity linking and its calibration test every pair of detections inside each
frame (overlaps, distances) and every pair across consecutive frames. Written
frame by frame, numpy spends its time on the calls, not the arithmetic: a 10 x
10 matrix a frame costs about 1 ms of call overhead at 10 animals, most of
linking's time on a long video. Frames with the same number of detections are
stacked into one ``(F, n)`` block of detection indices instead (chunks of at
most :data:`CHUNK` pair elements, so memory stays bounded on any video length),
and the same matrices are computed for the whole block at once.

Same bits as frame by frame: every element of a block's matrices comes from
exactly the operations the per-frame code applied to it (elementwise, or
reduced along the same short last axis), and the callers reassemble the pairs
in frame order; the tests compare both forms on random videos.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

CHUNK = 1 << 18  # pair elements (F * n * m) per block


def _chunks(frames: np.ndarray, pairs: int) -> Iterator[np.ndarray]:
    step = max(1, CHUNK // max(pairs, 1))
    for s in range(0, len(frames), step):
        yield frames[s : s + step]


def frame_layout(pos: np.ndarray, n_frames: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, counts)`` per frame of detections listed in frame order, ``pos`` each
    one's frame position (non-decreasing; at least ``n_frames`` frames)."""
    pos = np.asarray(pos, np.int64)
    counts = np.bincount(pos, minlength=max(n_frames, int(pos.max(initial=-1)) + 1))
    counts = counts.astype(np.int64)
    return np.cumsum(counts) - counts, counts


def frame_blocks(
    offsets: np.ndarray, counts: np.ndarray, min_count: int = 1
) -> Iterator[np.ndarray]:
    """``(F, n)`` detection indices, one row per frame holding ``n >= min_count``
    detections (frame ``f``'s are ``offsets[f] .. offsets[f] + counts[f] - 1``)."""
    offsets, counts = np.asarray(offsets, np.int64), np.asarray(counts, np.int64)
    for n in np.unique(counts[counts >= max(min_count, 1)]).tolist():
        for frames in _chunks(np.flatnonzero(counts == n), n * n):
            yield offsets[frames][:, None] + np.arange(n)


def next_frame_blocks(
    offsets: np.ndarray, counts: np.ndarray
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``((F, ka), (F, kb))``: detection indices of frames ``f`` and ``f + 1``, for every
    ``f`` where both hold detections, grouped by the two counts."""
    offsets, counts = np.asarray(offsets, np.int64), np.asarray(counts, np.int64)
    if len(counts) < 2:
        return
    a, b = counts[:-1], counts[1:]
    both = np.flatnonzero((a > 0) & (b > 0))
    keys = a[both] * (int(b.max(initial=0)) + 1) + b[both]
    for key in np.unique(keys).tolist():
        group = both[keys == key]
        ka, kb = int(counts[group[0]]), int(counts[group[0] + 1])
        for frames in _chunks(group, ka * kb):
            yield (
                offsets[frames][:, None] + np.arange(ka),
                offsets[frames + 1][:, None] + np.arange(kb),
            )


def upper_pairs(mask: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``(P, 2)`` detection indices ``(i, j)``, ``i < j`` in the same frame, where the
    block's ``(F, n, n)`` ``mask`` is set above the diagonal."""
    n = rows.shape[1]
    g, a, b = np.nonzero(mask & np.triu(np.ones((n, n), bool), k=1))
    return np.stack([rows[g, a], rows[g, b]], axis=1) if len(g) else np.zeros((0, 2), np.int64)


def in_frame_order(parts: list[np.ndarray]) -> np.ndarray:
    """The blocks' pairs as the frame-by-frame loop lists them: by first index, then
    second (a frame's indices are contiguous and rise with the frame)."""
    if not parts:
        return np.zeros((0, 2), np.int64)
    pairs = np.concatenate(parts).astype(np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
