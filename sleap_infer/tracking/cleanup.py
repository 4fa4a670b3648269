"""sleap-nn's steps around a tracker: pre-cull, post-clean and single-break joining, online.

sleap-nn runs them over the whole video's frames: ``cull_frame_instances``
before each frame is tracked (``--tracking-pre-cull-to-target``), and after
the video ``cull_instances`` (``--tracking-clean-instance-count``) then
``connect_single_breaks`` (after a clean, or with
``--post-connect-single-breaks``). None of them looks ahead: a cull is one
frame's own decision, and break joining walks the frames once, oldest first,
remembering only the last "good" frame's track set and the renames it made.
So here they run frame by frame right behind the tracker, and their memory
(``O(tracks)`` ids, never detections) is saved with the tracker's state: a
video's end needs no second pass, and a run killed anywhere resumes to the
same output.

What takes part, as in sleap-nn's output: detections the tracker gave a
track, plus untracked ones where sleap-nn keeps them (classic local queues);
a culled detection takes no further part. Differences, on purpose: a culled
or cleaned detection stays in the output, untracked (sleap-nn drops it); the
pre-cull keeps the ``count`` best, as the post-clean does (sleap-nn's
``cull_frame_instances`` keeps the *lowest*-scoring ones, a slip in its score
step); "same pose" removal is by detection, not by equal coordinates; a MOT
track's tentative frames stay untracked (sleap-nn labels them once the track
confirms, before it cleans: here those frames were culled, cleaned and joined
already, so a late label would undo those decisions).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sleap_infer.core.errors import ResumeError, UsageError
from sleap_infer.tracking.base import MASKS, Assignment, Detections, Tracker, TrackerState
from sleap_infer.tracking.classic.features import bbox
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.tracking.resolve import resolve_options

PREFIX = "cleanup_"  # state arrays of this module, beside the tracker's own
UNTRACKED = -1


def nms_keep(boxes: np.ndarray, scores: np.ndarray, threshold: float, target: int) -> list[int]:
    """sleap-nn's ``nms_fast``: indices kept, picked best score first, then some put back.

    Overlap is the intersection over the *other* box's area (``+ 1`` pixel
    extents); boxes overlapping a pick by more than ``threshold`` are removed.
    Below ``target`` picks, removed boxes come back best first, as many as
    sleap-nn's ``min(removed, picks - target)`` slice gives.
    """
    if len(boxes) == 0:
        return []
    if target and len(boxes) < target:
        return list(range(len(boxes)))
    x1, y1, x2, y2 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    with np.errstate(all="ignore"):
        area = (x2 - x1 + 1) * (y2 - y1 + 1)
        idxs = np.argsort(scores)
        picked: list[int] = []
        removed: list[int] = []
        while len(idxs) > 0:
            pick = idxs[-1]
            picked.append(int(pick))
            rest = idxs[:-1]
            w = np.maximum(0, np.minimum(x2[pick], x2[rest]) - np.maximum(x1[pick], x1[rest]) + 1)
            h = np.maximum(0, np.minimum(y2[pick], y2[rest]) - np.maximum(y1[pick], y1[rest]) + 1)
            overlap = (w * h) / area[rest]
            over = np.where(overlap > threshold)[0]
            removed.extend(int(i) for i in idxs[over])
            idxs = np.delete(idxs, over)[:-1]
    if target and removed and len(picked) < target:
        removed.sort(key=lambda i: -scores[i])
        picked.extend(removed[: min(len(removed), len(picked) - target)])
    return picked


def cull(points: np.ndarray, scores: np.ndarray, count: int, iou_threshold: float) -> list[int]:
    """Rows of one frame's ``(I, N, 2)`` poses to drop so at most ``count`` remain
    (sleap-nn's ``cull_instances`` on one frame: NMS first when a threshold is
    given, then the lowest scores)."""
    rows = list(range(len(scores)))
    if len(rows) <= count:
        return []
    dropped: list[int] = []
    keep = rows
    if iou_threshold:
        boxes = np.array([bbox(p) for p in points]).reshape(len(rows), 4)
        picks = set(nms_keep(boxes, scores, iou_threshold, count))
        keep = [r for r in rows if r in picks]
        dropped = [r for r in rows if r not in picks]
    if len(keep) > count:
        by_score = sorted(keep, key=lambda r: scores[r])  # stable, as sleap-nn's sorted()
        dropped += by_score[:-count]
    return sorted(dropped)


class BreakJoiner:
    """sleap-nn's ``connect_single_breaks``, one frame at a time.

    A frame with exactly one track the last good frame lacked and one track it
    had: the new track is renamed to the lost one, and so is every later
    detection of it (where the lost one is not in that frame already). Other
    frames become the last good frame when they hold at least as many tracks.
    """

    def __init__(self) -> None:
        self.last_good: set[int] = set()
        self.renames: dict[int, int] = {}  # insertion order kept for the saved state

    def step(self, tracks: list[int]) -> list[int]:
        tracks = list(tracks)
        present = set(tracks)
        if present & self.renames.keys():
            for i, t in enumerate(tracks):
                if t in self.renames and self.renames[t] not in present:
                    tracks[i] = self.renames[t]
                    present = set(tracks)
        extra, missing = present - self.last_good, self.last_good - present
        if len(extra) == 1 and len(missing) == 1:
            for i, t in enumerate(tracks):
                if t in extra:
                    new = missing.pop()
                    self.renames[t] = new
                    tracks[i] = new
                    break
        elif len(present) >= len(self.last_good):
            self.last_good = present
        return tracks

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            PREFIX + "last_good": np.array(sorted(self.last_good), dtype=np.int64),
            PREFIX + "rename_from": np.array(list(self.renames), dtype=np.int64),
            PREFIX + "rename_to": np.array(list(self.renames.values()), dtype=np.int64),
        }

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        self.last_good = {int(t) for t in arrays[PREFIX + "last_good"]}
        pairs = zip(arrays[PREFIX + "rename_from"].tolist(), arrays[PREFIX + "rename_to"].tolist())
        self.renames = {int(a): int(b) for a, b in pairs}


def _subset(det: Detections, rows: list[int]) -> Detections:
    pick = np.asarray(rows, dtype=np.int64)
    return replace(
        det,
        points=det.points[pick],
        scores=det.scores[pick],
        embeddings=None if det.embeddings is None else det.embeddings[pick],
        point_scores=None if det.point_scores is None else det.point_scores[pick],
    )


class CleanedTracker:
    """A tracker with sleap-nn's pre-cull, post-clean and break joining around it."""

    def __init__(self, inner: Tracker, options: TrackingOptions, untracked_take_part: bool):
        self.inner = inner
        self.options = options
        self.untracked_take_part = untracked_take_part  # sleap-nn keeps them (local queues)
        self.joins = options.post_connect_single_breaks or options.tracking_clean_instance_count > 0
        self.joiner = BreakJoiner()

    @property
    def needs_images(self) -> bool:
        return bool(self.inner.needs_images)

    @property
    def n_tracks(self) -> int:
        return self.inner.n_tracks

    def step(self, detections: Detections) -> Assignment:
        o = self.options
        n = len(detections)
        rows = list(range(n))
        if o.tracking_pre_cull_to_target and o.tracking_target_instance_count:
            dropped = set(
                cull(
                    detections.points,
                    detections.scores,
                    o.tracking_target_instance_count,
                    o.tracking_pre_cull_iou_threshold,
                )
            )
            rows = [r for r in rows if r not in dropped]
        ids = np.full(n, UNTRACKED, np.int64)
        scores = np.full(n, np.nan, np.float32)
        inner = self.inner.step(_subset(detections, rows) if len(rows) < n else detections)
        ids[rows], scores[rows] = inner.track_ids, inner.scores
        part = [r for r in rows if ids[r] != UNTRACKED or self.untracked_take_part]
        if o.tracking_clean_instance_count > 0:
            gone = cull(
                detections.points[part],
                detections.scores[part],
                o.tracking_clean_instance_count,
                o.tracking_clean_iou_threshold,
            )
            for k in gone:
                ids[part[k]], scores[part[k]] = UNTRACKED, np.nan
            part = [r for k, r in enumerate(part) if k not in set(gone)]
        if self.joins:
            ids[part] = self.joiner.step([int(t) for t in ids[part]])
            # an untracked detection renamed onto a track keeps no score (sleap-nn: None)
        return Assignment(track_ids=ids, scores=scores)

    def state(self) -> TrackerState:
        inner = self.inner.state()
        arrays = dict(inner.arrays)
        if any(k.startswith(PREFIX) for k in arrays):
            raise ValueError("tracker state names clash with the cleanup's")
        arrays.update(self.joiner.arrays())
        return TrackerState(meta={**inner.meta, "cleanup": _meta(self.options)}, arrays=arrays)

    def load_state(self, state: TrackerState) -> None:
        saved = state.meta.get("cleanup")
        if saved != _meta(self.options):
            raise ResumeError(
                f"tracker state was saved with cleanup {saved}, this run uses {_meta(self.options)}"
            )
        mine = {k: v for k, v in state.arrays.items() if k.startswith(PREFIX)}
        rest = {k: v for k, v in state.arrays.items() if not k.startswith(PREFIX)}
        meta = {k: v for k, v in state.meta.items() if k != "cleanup"}
        self.inner.load_state(TrackerState(meta=meta, arrays=rest))
        self.joiner.load(mine)


def _meta(o: TrackingOptions) -> dict[str, object]:
    return {
        "target": o.tracking_target_instance_count,
        "pre_cull": o.tracking_pre_cull_to_target,
        "pre_cull_iou": o.tracking_pre_cull_iou_threshold,
        "clean": o.tracking_clean_instance_count,
        "clean_iou": o.tracking_clean_iou_threshold,
        "connect": o.post_connect_single_breaks,
    }


def with_cleanup(
    tracker: Tracker, options: TrackingOptions, carrier: str, n_nodes: int, has_embeddings: bool
) -> Tracker:
    """``tracker`` itself, or wrapped when any step is asked for (poses only, as sleap-nn)."""
    if not options.has_cleanup:
        return tracker
    if carrier == MASKS:
        raise UsageError(
            "--tracking-pre-cull-to-target, --tracking-clean-instance-count and"
            " --post-connect-single-breaks work on poses, not masks"
        )
    resolved = resolve_options(options, carrier, n_nodes, has_embeddings)
    keeps = resolved.tracker == "classic" and resolved.candidates == "local_queues"
    return CleanedTracker(tracker, options, untracked_take_part=keeps)
