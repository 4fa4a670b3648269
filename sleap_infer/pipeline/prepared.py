"""sleap-nn's MOT trackers in ``infer predict -t``: tracked once more at the video's end,
after the whole-video pre-pass, as ``sleap-nn predict --tracking`` tracks.

sleap-nn's predictor tracks with a MOT tracker only once every frame is predicted,
after ``prepare()`` has measured the video: scores divided by their 95th percentile,
the body size, the time base and stride. Online nothing can look ahead, so on a model
whose scores sit below 1 the online tracks are not sleap-nn's (docs/tracking-mot.md:
bottom-up on the fixture video, 99 and 75 of 158 detections). Once the video is
predicted its journal holds every detection, so here, just before identity linking,
the same tracker runs again over the journal with the pre-pass (what ``infer track``
does on a file), and its tracks replace the online ones in every output.

The online tracks are still journaled batch by batch, so a killed run resumes where
it stopped; the re-track is a pure function of the finished journal and is kept only
as two numbers a detection (its track and score, in journal order), so a run killed
while it runs does it again on ``--resume`` to the same tracks. The pre-pass reads the
journal once as a stream (a few numbers a detection); the tracker a second time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sleap_infer.core.polygons import packaged
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.tracking.base import MASKS
from sleap_infer.tracking.common.prepare import prepare_tracker
from sleap_infer.tracking.online import OnlineTracker, batch_detections
from sleap_infer.tracking.options import TrackingOptions

Batches = Callable[[], Iterable[BatchPredictions]]


@dataclass
class Retracked:
    """One video's tracks after the pre-pass: one entry per detection, in journal order
    (each batch's valid poses in frame and slot order, or its masks in output order)."""

    ids: np.ndarray  # (D,) int32, -1: untracked
    scores: np.ndarray  # (D,) float32 tracking score, NaN where untracked
    n_tracks: int
    calibration: dict[str, Any] | None  # what the pre-pass measured (provenance)


def retrack_batches(
    batches: Batches, options: TrackingOptions, carrier: str, n_nodes: int, vectors: bool
) -> Retracked:
    """Track ``batches()`` (read twice) as sleap-nn's predictor does with a MOT tracker:
    the pre-pass over every frame, then the tracker frame by frame."""
    online = OnlineTracker.start(options, carrier, n_nodes, vectors)
    frames = (d for preds in batches() for d in batch_detections(preds, carrier))
    calibration = prepare_tracker(online.tracker, frames, carrier)
    ids: list[np.ndarray] = []
    scores: list[np.ndarray] = []
    where: dict[int, np.ndarray] = {}  # frame index -> its detections' positions
    late: list[tuple[np.ndarray, ...]] = []
    at = 0
    for preds in batches():
        preds.late_tracks = None  # the online tracker's, replaced below
        online.track(preds)
        frame_ids, frame_scores, positions = _answers(preds, carrier, at)
        ids.append(frame_ids)
        scores.append(frame_scores)
        at += len(frame_ids)
        assert preds.frame_indices is not None
        where.update(zip(preds.frame_indices.tolist(), positions, strict=True))
        if preds.late_tracks is not None:
            rows = preds.late_tracks
            late.append((rows.frame_indices, rows.detections, rows.track_ids, rows.scores))
    all_ids = np.concatenate(ids) if ids else np.zeros(0, np.int32)
    all_scores = np.concatenate(scores) if scores else np.zeros(0, np.float32)
    for frames_, dets, tids, tscores in late:  # labels for frames of earlier batches
        for f, j, tid, score in zip(frames_.tolist(), dets.tolist(), tids, tscores):
            k = where[f][j]
            if all_ids[k] < 0:  # as every reader lays them over: never over a track
                all_ids[k], all_scores[k] = tid, score
    record = None if calibration is None else calibration.record()
    return Retracked(all_ids, all_scores, int(online.tracker.n_tracks), record)


def _answers(
    preds: BatchPredictions, carrier: str, at: int
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """A tracked batch's ids and scores in journal order, and each frame's positions."""
    assert preds.frame_indices is not None
    if carrier == MASKS:
        masks = packaged(preds.masks)
        positions = [at + np.asarray(masks.in_frame(b)) for b in range(len(preds.frame_indices))]
        assert masks.track is not None and masks.tracking_score is not None
        return (
            np.asarray(masks.track, np.int32),
            np.asarray(masks.tracking_score, np.float32),
            positions,
        )
    valid = np.asarray(preds.valid, bool)
    counts = valid.sum(axis=1)
    starts = at + np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    positions = [s + np.arange(c) for s, c in zip(starts, counts, strict=True)]
    assert preds.class_ids is not None and preds.class_scores is not None
    return (
        np.asarray(preds.class_ids, np.int32)[valid],
        np.asarray(preds.class_scores, np.float32)[valid],
        positions,
    )


def with_tracks(
    batches: Iterable[BatchPredictions], retracked: Retracked, carrier: str
) -> Iterable[BatchPredictions]:
    """``batches`` with every detection's track and score from ``retracked``."""
    at = 0
    for preds in batches:
        preds.late_tracks = None
        if carrier == MASKS:
            masks = packaged(preds.masks)
            n = len(masks)
            masks.track = retracked.ids[at : at + n].copy()
            masks.tracking_score = retracked.scores[at : at + n].copy()
            preds.masks = masks
        else:
            valid = np.asarray(preds.valid, bool)
            n = int(valid.sum())
            ids = np.full(valid.shape, -1, np.int32)
            scores = np.full(valid.shape, np.nan, np.float32)
            ids[valid] = retracked.ids[at : at + n]
            scores[valid] = retracked.scores[at : at + n]
            preds.class_ids, preds.class_scores = ids, scores
        at += n
        yield preds
