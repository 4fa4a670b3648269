"""Predictions in memory: one numpy row per frame, and the way to a ``sio.Labels``.

What :meth:`Pipeline.predict` returns. The arrays are the runner's batches
stacked (instances padded with NaN to the most any frame has), so nothing is
rounded or re-derived: :meth:`Prediction.to_labels` builds its labels from the
same batches the file writers are fed, and gives the points ``infer predict``
writes for the same frames, bit for bit.

One frame at a time is a :class:`FrameResult`: what ``Prediction[i]`` and
iteration give, and what :meth:`Pipeline.stream` yields without ever holding
the whole video. Both are cut from a batch row by the one function
:func:`frame_result`, so a streamed frame and the same frame of ``predict()``
are the same arrays. Tables for analysis: :meth:`Prediction.to_dataframe` (long
format, pandas) and :meth:`Prediction.to_movement` (a ``movement`` poses dataset).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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


@dataclass(frozen=True)
class FrameResult:
    """One frame's predictions: ``Prediction[i]``, and what ``Pipeline.stream`` yields.

    Only the ``I`` instances found in this frame (after the post-filters), in the
    layer's order: no padding rows, so ``len(frame)`` is how many were found.
    """

    frame_idx: int  # the source's frame number (sleap-io's numbering for videos)
    points: np.ndarray  # (I, N, 2) float32 (x, y) in frame pixels; NaN = node not found
    point_scores: np.ndarray  # (I, N) float32
    instance_scores: np.ndarray  # (I,) float32
    tracks: np.ndarray  # (I,) int32 track (or identity class) index, -1 = none
    track_scores: np.ndarray  # (I,) float32, NaN = none
    embeddings: np.ndarray | None = None  # (I, D) float32 re-ID vectors (embedding models)
    masks: MaskSet | None = None  # this frame's masks (segmentation; ``masks.frame`` all 0)
    boxes: BoxSet | None = None  # this frame's boxes (box detectors; ``boxes.frame`` all 0)

    def __len__(self) -> int:
        return int(self.points.shape[0])

    def __repr__(self) -> str:
        extra = "".join(
            f", {len(v)} {name}" for name, v in (("masks", self.masks), ("boxes", self.boxes))
            if v is not None
        )  # fmt: skip
        found = f"{len(self)} instance{'' if len(self) == 1 else 's'}"
        return f"FrameResult(frame {self.frame_idx}, {found}{extra})"


def frame_result(
    frame_idx: int,
    row: int,
    points: np.ndarray,
    point_scores: np.ndarray,
    instance_scores: np.ndarray,
    valid: np.ndarray,
    tracks: np.ndarray | None,
    track_scores: np.ndarray | None,
    embeddings: np.ndarray | None,
    masks: MaskSet | None,
    boxes: BoxSet | None,
) -> FrameResult:
    """Row ``row`` of batch-shaped arrays (``(B, I, ...)``; masks and boxes indexed by row)
    as one frame's result: the valid instance slots only, copied (a streamed frame must not
    keep its whole batch alive)."""
    keep = np.asarray(valid[row], bool)
    n = int(keep.sum())

    def cut(a: np.ndarray | None, fill: float, dtype: Any) -> np.ndarray:
        if a is None:
            return np.full(n, fill, dtype)
        return np.array(a[row][keep], dtype)

    vectors = None if embeddings is None else np.array(embeddings[row][keep], np.float32)
    frame_masks = None
    if masks is not None:
        frame_masks = masks.select(np.asarray(masks.frame) == row)
        frame_masks.frame[:] = 0
    frame_boxes = None
    if boxes is not None:
        frame_boxes = boxes.select(np.asarray(boxes.frame) == row)
        frame_boxes.frame[:] = 0
    return FrameResult(
        frame_idx=int(frame_idx),
        points=np.array(points[row][keep], np.float32),
        point_scores=np.array(point_scores[row][keep], np.float32),
        instance_scores=np.array(instance_scores[row][keep], np.float32),
        tracks=cut(tracks, -1, np.int32),
        track_scores=cut(track_scores, np.nan, np.float32),
        embeddings=vectors,
        masks=frame_masks,
        boxes=frame_boxes,
    )


def batch_frames(batch: BatchPredictions) -> Iterator[FrameResult]:
    """Each frame of a predicted batch, in order (the stream's unit)."""
    assert batch.frame_indices is not None
    masks = packaged(batch.masks) if batch.masks is not None else None
    for row, frame_idx in enumerate(np.asarray(batch.frame_indices).tolist()):
        yield frame_result(
            frame_idx, row, batch.points, batch.point_scores, batch.instance_scores,
            batch.valid, batch.class_ids, batch.class_scores, batch.embeddings, masks,
            batch.boxes,
        )  # fmt: skip


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

    def __getitem__(self, i: int) -> FrameResult:
        """Row ``i`` (not frame number ``i``: see ``frame_indices``) as one frame's result,
        the same as :meth:`Pipeline.stream` yields for it; negative rows count from the end."""
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
            raise TypeError(
                f"Prediction[{i!r}]: index rows with an int (0..{len(self) - 1}); "
                "pred.frame_indices says which frame each row is"
            )
        n = len(self)
        row = int(i) + n if i < 0 else int(i)
        if not 0 <= row < n:
            raise IndexError(f"Prediction[{i}]: {n} frames were predicted (rows 0..{n - 1})")
        return frame_result(
            self.frame_indices[row], row, self.points, self.point_scores,
            self.instance_scores, self.valid, self.tracks, self.track_scores,
            self.embeddings, self.masks, self.boxes,
        )  # fmt: skip

    def __iter__(self) -> Iterator[FrameResult]:
        """Each predicted frame in order, as ``self[i]``."""
        for row in range(len(self)):
            yield self[row]

    def to_dataframe(self) -> Any:
        """A long ``pandas.DataFrame``, one row per found point slot: columns ``frame``
        (the frame number), ``instance`` (its order among the frame's instances), ``track``
        (the track or identity name, None when untracked), ``node``, ``x``, ``y``,
        ``score`` (the point's). Nodes not found are rows with NaN ``x``/``y``, as in
        ``points``, so every instance has all its nodes."""
        import pandas as pd

        rows, slots = np.nonzero(self.valid)
        rank = (np.cumsum(self.valid, axis=1) - 1)[rows, slots]
        n_nodes = len(self.node_names)
        ids = self.tracks[rows, slots]
        names = np.array([*self.track_names, None], dtype=object)
        track = names[np.where((ids >= 0) & (ids < len(self.track_names)), ids, -1)]
        points = self.points[rows, slots].reshape(-1, 2)
        return pd.DataFrame(
            {
                "frame": np.repeat(self.frame_indices[rows], n_nodes),
                "instance": np.repeat(rank, n_nodes).astype(np.int64),
                "track": np.repeat(track, n_nodes),
                "node": np.tile(np.array(self.node_names, dtype=object), rows.size),
                "x": points[:, 0],
                "y": points[:, 1],
                "score": self.point_scores[rows, slots].reshape(-1),
            }
        )

    def to_movement(self, fps: float | None = None) -> Any:
        """A ``movement`` poses dataset (``position``: time x space x keypoints x
        individuals; ``confidence``), with ``time`` the frame numbers (or seconds, given
        ``fps``). Individuals are the tracks (or identity classes) when the run named any,
        else each frame's instances in order (``id_0``, ``id_1`` ...). Needs the optional
        ``movement`` package."""
        try:
            from movement.io import load_poses
        except ImportError:
            raise ImportError(
                "Prediction.to_movement() needs the movement package: pip install movement"
            ) from None
        position, confidence, individuals = self._by_individual()
        ds = load_poses.from_numpy(
            position_array=position,
            confidence_array=confidence,
            individual_names=individuals,
            keypoint_names=list(self.node_names),
            fps=fps,
            source_software="sleap_infer",
        )
        time = self.frame_indices.astype(np.float64)
        return ds.assign_coords(time=time / fps if fps else self.frame_indices)

    def _by_individual(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """``(F, 2, N, K)`` points and ``(F, N, K)`` scores with one column per individual:
        per track when any instance has one, else per instance slot in order."""
        tracked = self.valid & (self.tracks >= 0) & (self.tracks < len(self.track_names))
        if tracked.any():
            column = np.where(tracked, self.tracks, -1)
            individuals = list(self.track_names)
        else:
            column = np.where(self.valid, np.cumsum(self.valid, axis=1) - 1, -1)
            individuals = [f"id_{k}" for k in range(int(self.valid.sum(axis=1).max(initial=0)))]
        n_frames, n_nodes = len(self), len(self.node_names)
        k = max(len(individuals), 1)
        position = np.full((n_frames, 2, n_nodes, k), np.nan, np.float32)
        confidence = np.full((n_frames, n_nodes, k), np.nan, np.float32)
        rows, slots = np.nonzero(column >= 0)
        cols = column[rows, slots]
        position[rows, :, :, cols] = self.points[rows, slots].transpose(0, 2, 1)
        confidence[rows, :, cols] = self.point_scores[rows, slots]
        return position, confidence, individuals or ["id_0"]

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
