"""Which column ("track") of a per-track format each predicted instance goes to.

Analysis HDF5 and NWB store one trajectory per track, but most models do not
know who is who. Only identity models (multi-class) and tracked runs
(``--tracking``) give real tracks: their classes, or the tracker's tracks.
For every other model a frame's instances are placed in *slots* by
descending instance score, and the slots are named ``untracked_<k>`` with a
description saying that slot ``k`` is a rank within each frame, never an
animal: inventing ``track_0``/``track_1`` from instance order would look like
an identity to every tool that reads the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sleap_io as sio

from sleap_infer.core.nwb_metadata import NwbMetadata
from sleap_infer.core.options import POLYGON_EPSILON
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import Journal

UNTRACKED = "untracked_"
RANKS = (
    "no identities (no tracking was run): slot k holds the k-th highest-scoring instance "
    "of each frame, so one slot may hold different animals in different frames"
)


@dataclass(frozen=True)
class SlpSaving:
    """How the ``.slp`` is saved, as sleap-nn's flags say (``sio.save_slp``'s arguments):
    ``embed`` the predicted frames' images into it (``--embed``), reference the video a
    ``.pkg.slp`` input was made from (``--restore_source_videos``), keep an embedding
    model's re-ID vectors (``--save_embeddings slp``, the default here), write a lone
    centroid model's centroids as ``sio.PredictedCentroid`` (``centroids``: ``centroid``
    instead of the instances, ``both``; ``centroid_source`` their ``source`` tag)."""

    embed: bool = False
    restore_source_videos: bool = False
    vectors: bool = True
    centroids: str = ""
    centroid_source: str = ""


@dataclass(frozen=True)
class Source:
    """Everything an output format is built from: the finished journal and what it is of."""

    journal: Journal
    video: sio.Video
    skeleton: sio.Skeleton
    class_names: tuple[str, ...]
    provenance: dict[str, Any]
    mask_output: str = "mask"  # masks, polygons or both (only .slp holds them)
    polygon_epsilon: float = POLYGON_EPSILON
    box_categories: tuple[str, ...] = ()  # a box detector's class names (slp and csv hold boxes)
    poses: bool = True  # the models predict keypoint instances (a lone box detector does not)
    nwb: NwbMetadata = field(default_factory=NwbMetadata)  # session and subject (NWB only)
    empty_frames: bool = True  # predicted frames where nothing was found are written too
    # ... and in CSV (a row holding only frame_idx) only when asked: sleap-io's CSV writer
    # leaves them out by default (--csv-empty-frames).
    csv_empty_frames: bool = False
    # The run's .slp predictions (absolute), beside this output: analysis HDF5's labels_path.
    labels_path: str = ""
    saving: SlpSaving = field(default_factory=SlpSaving)  # .slp only

    @property
    def node_names(self) -> list[str]:
        return [node.name for node in self.skeleton.nodes]

    @property
    def video_frames(self) -> int:
        """The video's length: recorded when we made the video object; a project's own
        video (a ``.pkg.slp``'s frames) records none, so its backend says."""
        shape = self.video.backend_metadata.get("shape") or self.video.shape
        return int(shape[0]) if shape else 0

    @property
    def fps(self) -> float:
        return float(self.video.backend_metadata.get("fps") or 30.0)


@dataclass(frozen=True)
class TrackAxis:
    """The slots of a per-track format, and what they mean (written into the file)."""

    names: list[str]
    identities: bool
    left_out: int  # instances with no identity in an identity model's output
    last_frame: int  # -1 when nothing was predicted

    @property
    def meaning(self) -> str:
        if not self.identities:
            return RANKS
        return (
            "identities: slot k holds the instance assigned identity track_names[k] (a "
            "multi-class model's class, or a tracker's track); "
            f"{self.left_out} instances without one are left out"
        )


def assign_slots(preds: BatchPredictions, n_classes: int) -> np.ndarray:
    """``(B, I)`` slot of each instance, -1 where it has none (invalid, or no class)."""
    valid = np.asarray(preds.valid, bool)
    if n_classes:
        return _class_slots(preds, valid, n_classes)
    scores = np.asarray(preds.instance_scores, np.float64)
    key = np.where(np.isnan(scores), np.inf, -scores)  # high scores first, NaN last
    order = np.lexsort((key, ~valid), axis=-1)  # valid before invalid, then by score
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(valid.shape[1])[None, :], axis=1)
    return np.where(valid, rank, -1)


def _class_slots(preds: BatchPredictions, valid: np.ndarray, n_classes: int) -> np.ndarray:
    """The class id as slot; a class met twice in a frame keeps its first instance only."""
    if preds.class_ids is None:
        return np.full(valid.shape, -1)
    ids = np.asarray(preds.class_ids, np.int64)
    slots = np.where(valid & (ids >= 0) & (ids < n_classes), ids, -1)
    for i in range(1, slots.shape[1]):
        seen = (slots[:, :i] == slots[:, i : i + 1]).any(axis=1)
        slots[seen & (slots[:, i] >= 0), i] = -1
    return slots


def slotted_batches(source: Source) -> Iterator[tuple[BatchPredictions, np.ndarray]]:
    """The journal's batches with their slots, one at a time (bounded memory)."""
    n_classes = len(source.class_names)
    for preds in source.journal.batches():
        yield preds, assign_slots(preds, n_classes)


def track_axis(source: Source) -> TrackAxis:
    """One pass over the journal: how many slots are used, and how many instances fit none."""
    n_slots = len(source.class_names)
    left_out = 0
    last = -1
    for preds, slots in slotted_batches(source):
        placed = slots >= 0
        left_out += int(np.asarray(preds.valid, bool).sum() - placed.sum())
        if placed.any():
            last = max(last, int(np.asarray(preds.frame_indices)[placed.any(axis=1)].max()))
            if not source.class_names:
                n_slots = max(n_slots, int(slots.max()) + 1)
    if source.class_names:
        names = list(source.class_names)
    else:
        names = [f"{UNTRACKED}{k}" for k in range(n_slots)]
    return TrackAxis(names, bool(source.class_names), left_out, last)
