"""Predicted bounding boxes of a batch, as plain ragged arrays.

Box detectors (``bbox_centernet``, ``bbox_ssd``) predict a varying number of
boxes per frame, so boxes are kept flat with the batch row of each, like
:class:`~sleap_infer.core.masks.MaskSet`: the journal appends the arrays and
the writers turn them into sleap-io's ``PredictedBoundingBox`` rows without a
Python object per box. Corners are in original frame pixels, ``x1 <= x2``,
``y1 <= y2`` (sleap-io's convention: pixel centres at integers).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class BoxSet:
    """The boxes of one batch: box ``k`` belongs to batch row ``frame[k]``, in score order."""

    frame: np.ndarray  # (M,) int32 batch row
    xyxy: np.ndarray  # (M, 4) float64 corners x1, y1, x2, y2 in original frame pixels
    score: np.ndarray  # (M,) float32
    category: np.ndarray  # (M,) int32 index into the model's categories; -1 = none

    ARRAYS = ("frame", "xyxy", "score", "category")

    def __len__(self) -> int:
        return int(self.frame.shape[0])

    @classmethod
    def empty(cls) -> BoxSet:
        return cls(
            frame=np.zeros(0, np.int32),
            xyxy=np.zeros((0, 4), np.float64),
            score=np.zeros(0, np.float32),
            category=np.zeros(0, np.int32),
        )

    @classmethod
    def build(
        cls,
        frames: Sequence[int] | np.ndarray,
        xyxy: Sequence[Sequence[float]] | np.ndarray,
        scores: Sequence[float] | np.ndarray,
        categories: Sequence[int] | np.ndarray | None = None,
    ) -> BoxSet:
        n = len(frames)
        return cls(
            frame=np.asarray(frames, np.int32).reshape(n),
            xyxy=np.asarray(xyxy, np.float64).reshape(n, 4),
            score=np.asarray(scores, np.float32).reshape(n),
            category=(
                np.full(n, -1, np.int32)
                if categories is None
                else np.asarray(categories, np.int32).reshape(n)
            ),
        )

    def select(self, keep: np.ndarray) -> BoxSet:
        keep = np.asarray(keep, bool)
        return BoxSet(self.frame[keep], self.xyxy[keep], self.score[keep], self.category[keep])

    def in_frame(self, b: int) -> list[int]:
        """Indices of the boxes of batch row ``b``."""
        return np.flatnonzero(self.frame == b).tolist()

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in self.ARRAYS}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> BoxSet:
        return cls(**{name: arrays[name] for name in cls.ARRAYS})
