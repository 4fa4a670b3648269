"""Predicted segmentation masks of a batch, run-length encoded, as plain arrays.

A mask is kept the way sleap-io stores it (``SegmentationMask.rle_counts``):
alternating run lengths over the row-major pixels, starting with a run of
zeros (a mask whose first pixel is set starts with a 0-length run). Encoding
once, in the layer, keeps every later step cheap and flat in memory: the
journal appends the counts, the ``.slp`` writer copies them into
``mask_rle`` unchanged, and nothing holds a frame-sized boolean array for
longer than one frame's decode. A 64x64 stride mask is a few dozen counts; a
full-resolution 1080p mask a few thousand, where the bitmap would be 2 MB.

Geometry follows sleap-io too: ``image = mask / scale + offset`` with
``scale = (sx, sy)`` and ``offset = (ox, oy)``.

A tracked run adds each mask's track id and tracking score (``track``,
``tracking_score``); untracked masks have neither array, so journals written
before tracking existed read back unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def encode_rle(mask: np.ndarray) -> np.ndarray:
    """Run lengths of a 2-D boolean mask in row-major order, starting with zeros (uint32)."""
    flat = np.asarray(mask, bool).ravel()
    if flat.size == 0:
        return np.zeros(0, np.uint32)
    change = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    bounds = np.concatenate(([0], change, [flat.size]))
    runs = np.diff(bounds).astype(np.uint32)
    if flat[0]:
        runs = np.concatenate((np.zeros(1, np.uint32), runs))
    return runs


def decode_rle(runs: np.ndarray, height: int, width: int) -> np.ndarray:
    """The ``(height, width)`` boolean mask ``runs`` encodes."""
    total = height * width
    if len(runs) == 0:
        return np.zeros((height, width), bool)
    values = (np.arange(len(runs)) % 2).astype(bool)
    flat = np.repeat(values, np.asarray(runs, np.intp))[:total]
    if flat.size < total:
        flat = np.concatenate((flat, np.zeros(total - flat.size, bool)))
    return flat.reshape(height, width)


def rle_area(runs: np.ndarray) -> int:
    """Set pixels: the sum of the odd (ones) runs."""
    return int(np.asarray(runs, np.int64)[1::2].sum())


@dataclass
class MaskSet:
    """The masks of one batch, ragged: mask ``k`` belongs to batch row ``frame[k]``.

    Masks are in output order within a frame (sleap-nn's order: center-peak
    order for bottom-up, centroid-slot order for top-down).
    """

    frame: np.ndarray  # (M,) int32 batch row
    score: np.ndarray  # (M,) float32
    size: np.ndarray  # (M, 2) int32 (height, width) of the mask grid
    # float64 as sleap-nn computes them (the .slp stores float32, but polygons are
    # traced with the exact ratio before that).
    scale: np.ndarray  # (M, 2) float64 (sx, sy)
    offset: np.ndarray  # (M, 2) float64 (ox, oy), image pixels
    rle: np.ndarray  # (K,) uint32 run lengths of all masks, concatenated
    rle_len: np.ndarray  # (M,) int64 runs per mask
    track: np.ndarray | None = None  # (M,) int32 track id, -1 = untracked (tracked runs only)
    tracking_score: np.ndarray | None = None  # (M,) float32, NaN where untracked

    ARRAYS = ("frame", "score", "size", "scale", "offset", "rle", "rle_len")
    TRACK_ARRAYS = ("track", "tracking_score")

    def __len__(self) -> int:
        return int(self.frame.shape[0])

    @classmethod
    def empty(cls) -> MaskSet:
        return cls(
            frame=np.zeros(0, np.int32),
            score=np.zeros(0, np.float32),
            size=np.zeros((0, 2), np.int32),
            scale=np.zeros((0, 2), np.float64),
            offset=np.zeros((0, 2), np.float64),
            rle=np.zeros(0, np.uint32),
            rle_len=np.zeros(0, np.int64),
        )

    @classmethod
    def build(
        cls,
        frames: Sequence[int],
        masks: Sequence[np.ndarray],
        scores: Sequence[float],
        scales: Sequence[tuple[float, float]],
        offsets: Sequence[tuple[float, float]],
    ) -> MaskSet:
        """Encode boolean masks (one per entry of ``frames``)."""
        if not masks:
            return cls.empty()
        runs = [encode_rle(m) for m in masks]
        return cls(
            frame=np.asarray(frames, np.int32),
            score=np.asarray(scores, np.float32),
            size=np.asarray([m.shape[:2] for m in masks], np.int32).reshape(-1, 2),
            scale=np.asarray(scales, np.float64).reshape(-1, 2),
            offset=np.asarray(offsets, np.float64).reshape(-1, 2),
            rle=np.concatenate(runs).astype(np.uint32),
            rle_len=np.asarray([len(r) for r in runs], np.int64),
        )

    @classmethod
    def concat(cls, parts: Sequence[MaskSet], frame_shift: Sequence[int] | None = None) -> MaskSet:
        """Masks of several batches as one; ``frame_shift[i]`` is added to part i's rows."""
        parts = list(parts)
        if not parts:
            return cls.empty()
        shifts = frame_shift or [0] * len(parts)
        tracked = all(p.track is not None for p in parts)
        return cls(
            frame=np.concatenate([p.frame + s for p, s in zip(parts, shifts)]).astype(np.int32),
            score=np.concatenate([p.score for p in parts]),
            size=np.concatenate([p.size for p in parts]),
            scale=np.concatenate([p.scale for p in parts]),
            offset=np.concatenate([p.offset for p in parts]),
            rle=np.concatenate([p.rle for p in parts]),
            rle_len=np.concatenate([p.rle_len for p in parts]),
            track=np.concatenate([p.track for p in parts]) if tracked else None,  # type: ignore[misc]
            tracking_score=(
                np.concatenate([p.tracking_score for p in parts])  # type: ignore[misc]
                if tracked
                else None
            ),
        )

    @property
    def rle_start(self) -> np.ndarray:
        """(M,) where each mask's runs start in :attr:`rle`."""
        ends = np.cumsum(self.rle_len)
        return ends - self.rle_len

    def runs(self, k: int) -> np.ndarray:
        start = int(self.rle_start[k])
        return self.rle[start : start + int(self.rle_len[k])]

    def mask(self, k: int) -> np.ndarray:
        """Mask ``k`` decoded to its ``(height, width)`` boolean grid."""
        h, w = (int(v) for v in self.size[k])
        return decode_rle(self.runs(k), h, w)

    def areas(self) -> np.ndarray:
        """(M,) set pixels of each mask."""
        return np.asarray([rle_area(self.runs(k)) for k in range(len(self))], np.int64)

    def select(self, keep: np.ndarray) -> MaskSet:
        """The masks where ``keep`` (a boolean (M,) array) is true, in order."""
        keep = np.asarray(keep, bool)
        starts = self.rle_start
        pieces = [self.rle[starts[k] : starts[k] + self.rle_len[k]] for k in np.flatnonzero(keep)]
        return MaskSet(
            frame=self.frame[keep],
            score=self.score[keep],
            size=self.size[keep],
            scale=self.scale[keep],
            offset=self.offset[keep],
            rle=np.concatenate(pieces).astype(np.uint32) if pieces else np.zeros(0, np.uint32),
            rle_len=self.rle_len[keep],
            track=None if self.track is None else self.track[keep],
            tracking_score=None if self.tracking_score is None else self.tracking_score[keep],
        )

    def in_frame(self, b: int) -> list[int]:
        """Indices of the masks of batch row ``b``."""
        return np.flatnonzero(self.frame == b).tolist()

    def arrays(self) -> dict[str, np.ndarray]:
        names = self.ARRAYS + (self.TRACK_ARRAYS if self.track is not None else ())
        return {name: getattr(self, name) for name in names}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> MaskSet:
        present = [name for name in cls.TRACK_ARRAYS if name in arrays]
        return cls(**{name: arrays[name] for name in (*cls.ARRAYS, *present)})
