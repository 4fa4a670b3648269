"""Predictions in memory: one numpy row per frame, and the way to a ``sio.Labels``.

What :meth:`Pipeline.predict` returns. The arrays are the runner's batches
stacked (instances padded with NaN to the most any frame has), so nothing is
rounded or re-derived: :meth:`Prediction.to_labels` builds its labels from the
same batches the file writers are fed, and gives the points ``infer predict``
writes for the same frames, bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sleap_io as sio

from sleap_infer.core.boxes import BoxSet
from sleap_infer.core.masks import MaskSet
from sleap_infer.core.options import POLYGON_EPSILON
from sleap_infer.core.polygons import packaged
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.products import Counts, Product
from sleap_infer.journal import vector_slots
from sleap_infer.writers.labels import LabelsBuilder


@dataclass
class Prediction:
    """Everything a pipeline predicted for a set of frames."""

    frame_indices: np.ndarray  # (F,) int64: which frame each row is (the source's numbering)
    points: np.ndarray  # (F, I, N, 2) float32 (x, y) in frame pixels; NaN = not found / no one
    point_scores: np.ndarray  # (F, I, N) float32
    instance_scores: np.ndarray  # (F, I) float32, NaN where a row has fewer instances
    valid: np.ndarray  # (F, I) bool: which slots hold an instance
    tracks: np.ndarray  # (F, I) int32: track (or identity class) index, -1 = none
    track_scores: np.ndarray  # (F, I) float32: tracking or identity score, NaN = none
    track_names: tuple[str, ...]  # what ``tracks`` indexes: a tracker's tracks or the classes
    node_names: tuple[str, ...]
    products: frozenset[Product]
    masks: MaskSet | None = None  # segmentation: ``masks.frame`` is the row in these arrays
    boxes: BoxSet | None = None  # box detectors: ``boxes.frame`` is the row
    embeddings: np.ndarray | None = None  # (F, I, D) float32 re-ID vectors, NaN = none
    video: sio.Video | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    skeleton: sio.Skeleton | None = None
    box_categories: tuple[str, ...] = ()
    mask_output: str = "mask"
    polygon_epsilon: float = POLYGON_EPSILON
    empty_frames: bool = True  # to_labels keeps frames where nothing was found (no_empty_frames)
    batches: list[BatchPredictions] = field(default_factory=list, repr=False)

    def __len__(self) -> int:
        return int(self.frame_indices.size)

    @property
    def counts(self) -> Counts:
        """How much was found, counted as the run summary counts it."""
        found = self.valid.any(axis=1)
        masks = 0 if self.masks is None else len(self.masks)
        boxes = 0 if self.boxes is None else len(self.boxes)
        if masks:
            found[self.masks.frame] = True  # type: ignore[union-attr]
        if boxes:
            found[self.boxes.frame] = True  # type: ignore[union-attr]
        tracked = self.tracks[self.valid]
        return Counts(
            frames=len(self),
            instances=int(self.valid.sum()),
            masks=masks,
            boxes=boxes,
            embeddings=int(vector_slots(self.embeddings, self.valid).sum()),
            tracks=len(np.unique(tracked[tracked >= 0])),
            frames_with_instances=int(found.sum()),
            mean_score=_mean(self.instance_scores[self.valid]),
        )

    def to_labels(self) -> sio.Labels:
        """A ``sio.Labels`` holding these predictions (save it with ``labels.save(path)``):
        a ``LabeledFrame`` per predicted frame, those where nothing was found too, as
        ``infer predict`` writes them (unless the pipeline was loaded with
        ``no_empty_frames=True``)."""
        assert self.skeleton is not None and self.video is not None
        builder = LabelsBuilder(
            self.video,
            self.skeleton,
            self.track_names,
            mask_output=self.mask_output,
            polygon_epsilon=self.polygon_epsilon,
            box_categories=self.box_categories,
            empty_frames=self.empty_frames,
        )
        for batch in self.batches:
            builder.add(batch)
        return builder.labels(self.provenance)

    def __repr__(self) -> str:
        c = self.counts
        found = f"{c.of(c.headline)} {c.headline.value}"
        return f"Prediction({len(self)} frames, {found}, nodes {list(self.node_names)})"


def _mean(values: np.ndarray) -> float | None:
    values = values[np.isfinite(values)]
    return float(values.mean()) if values.size else None


def stack(batches: Sequence[BatchPredictions], n_nodes: int) -> dict[str, Any]:
    """The batches' arrays as one row per frame (instances padded to the widest batch)."""
    width = max((b.points.shape[1] for b in batches), default=0)
    rows = sum(b.batch_size for b in batches)

    def column(name: str, fill: float, dtype: Any, tail: tuple[int, ...]) -> np.ndarray:
        out = np.full((rows, width, *tail), fill, dtype)
        at = 0
        for b in batches:
            value = getattr(b, name)
            n = b.batch_size
            if value is not None:
                out[at : at + n, : value.shape[1]] = value
            at += n
        return out

    dims = {b.embeddings.shape[-1] for b in batches if b.embeddings is not None}
    return {
        "frame_indices": np.concatenate(
            [np.asarray(b.frame_indices, np.int64) for b in batches] or [np.zeros(0, np.int64)]
        ),
        "points": column("points", np.nan, np.float32, (n_nodes, 2)),
        "point_scores": column("point_scores", np.nan, np.float32, (n_nodes,)),
        "instance_scores": column("instance_scores", np.nan, np.float32, ()),
        "valid": column("valid", False, bool, ()),
        "tracks": column("class_ids", -1, np.int32, ()),
        "track_scores": column("class_scores", np.nan, np.float32, ()),
        "embeddings": column("embeddings", np.nan, np.float32, (dims.pop(),)) if dims else None,
        "masks": _masks(batches),
        "boxes": _boxes(batches),
    }


def _shifts(batches: Sequence[BatchPredictions]) -> list[int]:
    return np.cumsum([0, *(b.batch_size for b in batches[:-1])]).tolist()


def _masks(batches: Sequence[BatchPredictions]) -> MaskSet | None:
    shifts = _shifts(batches)
    parts = [(packaged(b.masks), s) for b, s in zip(batches, shifts) if b.masks is not None]
    if not parts:
        return None
    return MaskSet.concat([m for m, _ in parts], [s for _, s in parts])


def _boxes(batches: Sequence[BatchPredictions]) -> BoxSet | None:
    parts = [(b.boxes, s) for b, s in zip(batches, _shifts(batches)) if b.boxes is not None]
    if not parts:
        return None
    arrays = {
        name: np.concatenate([getattr(box, name) for box, _ in parts]) for name in BoxSet.ARRAYS
    }
    arrays["frame"] = np.concatenate(
        [box.frame.astype(np.int32) + shift for box, shift in parts]
    ).astype(np.int32)
    return BoxSet.from_arrays(arrays)
