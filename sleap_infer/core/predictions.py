"""The one result type every layer returns and every writer consumes.

Padded numpy arrays, not per-frame Python objects: a batch of ``B`` frames
with at most ``I`` instances of ``N`` nodes. Coordinates are in original
frame pixels. Unused instance slots have ``valid == False``. Segmentation
models predict masks instead (``masks``, ragged, run-length encoded: see
:mod:`sleap_infer.core.masks`) and leave the instance arrays empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sleap_infer.core.boxes import BoxSet
from sleap_infer.core.late_tracks import LateTracks
from sleap_infer.core.masks import MaskSet


@dataclass
class BatchPredictions:
    """Predictions for one batch of frames."""

    points: np.ndarray  # (B, I, N, 2) float32, (x, y); NaN = node not found
    point_scores: np.ndarray  # (B, I, N) float32
    instance_scores: np.ndarray  # (B, I) float32
    valid: np.ndarray  # (B, I) bool
    # Identity: a multi-class model's class, or (tracked runs) the tracker's track id; the
    # output names it with the class names or the track names respectively.
    class_ids: np.ndarray | None = None  # (B, I) int32 identity, -1 = none
    class_scores: np.ndarray | None = None  # (B, I) float32 identity confidence / tracking score
    frame_indices: np.ndarray | None = None  # (B,) int64, filled in by the runner
    extras: dict[str, np.ndarray] = field(default_factory=dict)  # debug (e.g. confmaps)
    masks: MaskSet | None = None  # segmentation models: the predicted masks
    boxes: BoxSet | None = None  # box detectors: the predicted boxes
    embeddings: np.ndarray | None = None  # (B, I, D) float32 re-ID vectors, NaN where none
    # Tracked runs: labels this batch's tracking gave to detections of earlier batches.
    late_tracks: LateTracks | None = None

    @property
    def n_masks(self) -> int:
        return 0 if self.masks is None else len(self.masks)

    @property
    def n_boxes(self) -> int:
        return 0 if self.boxes is None else len(self.boxes)

    @property
    def batch_size(self) -> int:
        return int(self.points.shape[0])

    @property
    def n_instances(self) -> int:
        """Total valid instances in the batch."""
        return int(self.valid.sum())

    @classmethod
    def empty(cls, batch_size: int, n_nodes: int) -> BatchPredictions:
        return cls(
            points=np.full((batch_size, 0, n_nodes, 2), np.nan, np.float32),
            point_scores=np.zeros((batch_size, 0, n_nodes), np.float32),
            instance_scores=np.zeros((batch_size, 0), np.float32),
            valid=np.zeros((batch_size, 0), bool),
        )

    def take(self, n: int) -> BatchPredictions:
        """The first ``n`` frames (drops the zero frames that padded a short last batch)."""
        if n == self.batch_size:
            return self

        def cut(a: np.ndarray | None) -> np.ndarray | None:
            return None if a is None else a[:n]

        return BatchPredictions(
            points=self.points[:n],
            point_scores=self.point_scores[:n],
            instance_scores=self.instance_scores[:n],
            valid=self.valid[:n],
            class_ids=cut(self.class_ids),
            class_scores=cut(self.class_scores),
            frame_indices=cut(self.frame_indices),
            extras={k: v[:n] for k, v in self.extras.items()},
            masks=None if self.masks is None else self.masks.select(self.masks.frame < n),
            boxes=None if self.boxes is None else self.boxes.select(self.boxes.frame < n),
            embeddings=cut(self.embeddings),
        )

    def frame(self, i: int) -> list[dict[str, np.ndarray | float | int]]:
        """The valid instances of frame ``i`` as plain dicts (for writers and tests)."""
        out: list[dict[str, np.ndarray | float | int]] = []
        for j in np.flatnonzero(self.valid[i]):
            item: dict[str, np.ndarray | float | int] = {
                "points": self.points[i, j],
                "point_scores": self.point_scores[i, j],
                "score": float(self.instance_scores[i, j]),
            }
            if self.class_ids is not None:
                item["class_id"] = int(self.class_ids[i, j])
                if self.class_scores is not None:
                    item["class_score"] = float(self.class_scores[i, j])
            out.append(item)
        return out
