"""Tracking inside the prediction stream, batch by batch, in frame order.

sleap-nn tracks after the whole video is predicted, holding every frame's
instances in memory; here the writer thread hands each predicted batch to the
tracker before it goes into the journal, so memory is the tracker's window,
whatever the video's length. The tracks are written into the batch itself
(``class_ids``/``class_scores`` for poses: a track is an identity, so every
output format that holds a multi-class model's identities holds tracks the same
way; ``MaskSet.track`` for masks), and the tracker's state after the batch goes
into the same journal record (:mod:`sleap_infer.journal`), so a resumed run
continues with exactly the state an uninterrupted run would have had.

With optical flow the classic tracker remembers the (prepared) frames its
candidates came from: megabytes per snapshot, which journaled after every batch
would grow the journal by the video's size many times over. Snapshots leave
them out and keep their frame indices; a resumed run decodes those frames again
(decoding is deterministic) and prepares them as the tracker did.

Masks are tracked as the output holds them (:func:`~sleap_infer.core.polygons.packaged`:
empty masks dropped, frame order), since those are what sleap-nn's tracker sees.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sleap_infer.core.late_tracks import LateTracks, lay_over
from sleap_infer.core.masks import MaskSet
from sleap_infer.core.polygons import packaged
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import TrackerSnapshot
from sleap_infer.tracking import (
    MASKS,
    Detections,
    LateLabel,
    MaskBitmap,
    Tracker,
    TrackerState,
    make_tracker,
    track_name,
)
from sleap_infer.tracking.classic import flow
from sleap_infer.tracking.cleanup import with_cleanup
from sleap_infer.tracking.options import TrackingOptions

IMAGES = "images"  # BatchPredictions.extras key: the batch's frames, for optical flow
FLOW_IMAGES = "images"  # the classic tracker's state: its remembered frames, prepared
FLOW_FRAMES = "image_frame"  # ... and their frame indices
ReadFrames = Callable[[list[int]], list[np.ndarray]]  # frame indices -> frames, as predicted


@dataclass
class OnlineTracker:
    """One video's tracker, fed batch after batch."""

    tracker: Tracker
    carrier: str
    seconds: float = 0.0  # time spent tracking (not predicting)
    frames: int = 0

    @classmethod
    def start(
        cls,
        options: TrackingOptions,
        carrier: str,
        n_nodes: int,
        has_embeddings: bool,
        snapshot: TrackerSnapshot | None = None,
        read_frames: ReadFrames | None = None,
    ) -> OnlineTracker:
        """A fresh tracker, or (resuming) one restored from the journal's last snapshot;
        ``read_frames`` decodes the frames an optical-flow snapshot left out."""
        tracker = make_tracker(options, carrier, n_nodes, has_embeddings)
        tracker = with_cleanup(tracker, options, carrier, n_nodes, has_embeddings)
        if snapshot is not None:
            meta, arrays = snapshot
            arrays = dict(arrays)
            if FLOW_FRAMES in arrays and FLOW_IMAGES not in arrays:
                if read_frames is None:
                    raise ValueError("an optical-flow snapshot needs its frames decoded again")
                frames = read_frames([int(i) for i in arrays[FLOW_FRAMES]])
                prepared = [flow.prepare(f, options.of_img_scale) for f in frames]
                arrays[FLOW_IMAGES] = np.stack(prepared)
            tracker.load_state(TrackerState(meta=dict(meta["state"]), arrays=arrays))
        return cls(tracker, carrier)

    @property
    def needs_images(self) -> bool:
        return bool(self.tracker.needs_images)

    def track(self, preds: BatchPredictions) -> TrackerSnapshot:
        """Assign tracks to every frame of ``preds`` (in place); the state to journal."""
        t0 = time.perf_counter()
        late: list[LateLabel] = []
        if self.carrier == MASKS:
            self._track_masks(preds, late)
        else:
            self._track_poses(preds, late)
        self._late(preds, late)
        self.frames += preds.batch_size
        state = self.tracker.state()
        arrays = {k: v for k, v in state.arrays.items() if k != FLOW_IMAGES}
        snapshot: TrackerSnapshot = (
            {"n_tracks": int(self.tracker.n_tracks), "state": state.meta},
            arrays,
        )
        self.seconds += time.perf_counter() - t0
        return snapshot

    @staticmethod
    def _late(preds: BatchPredictions, late: list[LateLabel]) -> None:
        """Late labels for this batch's own frames go in now; the rest ride with the batch
        (``preds.late_tracks``) to the frames already journaled or kept."""
        if not late:
            return
        rows = LateTracks.of(late)
        lay_over(preds, rows.by_frame())
        assert preds.frame_indices is not None
        earlier = ~np.isin(rows.frame_indices, np.asarray(preds.frame_indices))
        if earlier.any():
            preds.late_tracks = LateTracks(*(a[earlier] for a in rows.arrays().values()))

    def _image(self, preds: BatchPredictions, b: int) -> np.ndarray | None:
        images = preds.extras.get(IMAGES)
        return None if images is None else images[b]

    def _track_poses(self, preds: BatchPredictions, late: list[LateLabel]) -> None:
        ids = np.full(preds.valid.shape, -1, np.int32)
        scores = np.full(preds.valid.shape, np.nan, np.float32)
        assert preds.frame_indices is not None
        for b in range(len(preds.frame_indices)):
            slots = np.flatnonzero(preds.valid[b])
            found = self.tracker.step(pose_detections(preds, b, slots, self._image(preds, b)))
            ids[b, slots] = found.track_ids
            scores[b, slots] = found.scores
            late.extend(found.late)
        preds.class_ids = ids
        preds.class_scores = scores

    def _track_masks(self, preds: BatchPredictions, late: list[LateLabel]) -> None:
        masks = packaged(preds.masks)
        track = np.full(len(masks), -1, np.int32)
        tracking_score = np.full(len(masks), np.nan, np.float32)
        assert preds.frame_indices is not None
        for b, frame_idx in enumerate(preds.frame_indices.tolist()):
            ks = masks.in_frame(b)
            found = self.tracker.step(
                mask_detections(masks, ks, int(frame_idx), self._image(preds, b))
            )
            track[ks] = found.track_ids
            tracking_score[ks] = found.scores
            late.extend(found.late)
        masks.track = track
        masks.tracking_score = tracking_score
        preds.masks = masks


def pose_detections(
    preds: BatchPredictions, b: int, slots: np.ndarray, image: np.ndarray | None = None
) -> Detections:
    """The poses ``slots`` of frame ``b`` of ``preds`` as the trackers read them."""
    assert preds.frame_indices is not None
    vectors = None
    if preds.embeddings is not None:
        vectors = np.asarray(preds.embeddings[b, slots], np.float64)
    return Detections(
        frame_idx=int(preds.frame_indices[b]),
        points=np.asarray(preds.points[b, slots], np.float64),
        scores=np.asarray(preds.instance_scores[b, slots], np.float64),
        point_scores=np.asarray(preds.point_scores[b, slots], np.float64),
        embeddings=vectors,
        image=image,
    )


def batch_detections(preds: BatchPredictions, carrier: str) -> Iterator[Detections]:
    """Every frame of ``preds`` as the trackers read it, in order: its valid poses, or
    (``carrier`` :data:`MASKS`) its masks."""
    assert preds.frame_indices is not None
    masks = packaged(preds.masks) if carrier == MASKS else None
    for b, frame_idx in enumerate(preds.frame_indices.tolist()):
        if masks is not None:
            yield mask_detections(masks, masks.in_frame(b), int(frame_idx))
        else:
            yield pose_detections(preds, b, np.flatnonzero(preds.valid[b]))


def mask_detections(
    masks: MaskSet, ks: Sequence[int] | np.ndarray, frame_idx: int, image: np.ndarray | None = None
) -> Detections:
    """Masks ``ks`` of ``masks`` (one frame's) as the trackers and identity linking read
    them: no points, the masks' own scores."""
    return Detections(
        frame_idx=frame_idx,
        points=np.zeros((len(ks), 0, 2)),
        scores=np.asarray(masks.score[ks], np.float64),
        masks=[_mask_bitmap(masks, k) for k in ks],
        image=image,
    )


def _mask_bitmap(masks: MaskSet, k: int) -> MaskBitmap:
    """Mask ``k`` of ``masks`` as the trackers read it."""
    sx, sy = (float(v) for v in masks.scale[k])
    ox, oy = (float(v) for v in masks.offset[k])
    return MaskBitmap(bitmap=masks.mask(k), scale=(sx, sy), offset=(ox, oy))


def track_names(n_tracks: int) -> tuple[str, ...]:
    """The output's track list: ids 0..n-1 under sleap-nn's names."""
    return tuple(track_name(i) for i in range(n_tracks))


def tracking_provenance(options: TrackingOptions, online: OnlineTracker | None) -> dict[str, Any]:
    """What the output records about its tracks: the resolved options and their cost."""
    out: dict[str, Any] = {"options": options.to_json()}
    if online is not None and online.frames:
        out["seconds_this_run"] = round(online.seconds, 4)
        out["ms_per_frame"] = round(1000 * online.seconds / online.frames, 4)
    return out
