"""Track ids a tracker gives to detections of frames it has already answered.

sleap-nn's MOT trackers keep a new track tentative for its first frames and,
once it confirms, label those frames' detections too ("retroactive labels":
up to ``min_hits`` frames back). A streaming run has usually journaled those
frames by then, so the labels cannot go into the frames' own batch. They go
into the batch being tracked when the track confirms, as a few rows of
``(frame, detection, track, score)``, and every reader of the predictions
(the journal's :meth:`~sleap_infer.journal.Journal.batches`, the in-memory
result) lays them over the frames they name. Nothing is rewritten in place,
so a run killed at any point resumes to the same labels: the rows live in the
same journal record as the tracker state that produced them.

A detection is named by its frame index and its position among that frame's
detections as the tracker saw them: the frame's valid poses in slot order, or
its masks in output order (:func:`~sleap_infer.core.polygons.packaged`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # predictions.py holds a LateTracks: a runtime import would loop
    from sleap_infer.core.predictions import BatchPredictions


@dataclass
class LateTracks:
    """Rows of late labels; a row whose detection is already tracked is ignored."""

    frame_indices: np.ndarray  # (K,) int64
    detections: np.ndarray  # (K,) int64: position among the frame's detections
    track_ids: np.ndarray  # (K,) int32
    scores: np.ndarray  # (K,) float32 tracking score

    ARRAYS = ("frame_indices", "detections", "track_ids", "scores")
    DTYPES = (np.int64, np.int64, np.int32, np.float32)

    def __len__(self) -> int:
        return int(self.frame_indices.shape[0])

    @classmethod
    def of(cls, rows: Iterable[tuple[int, int, int, float]]) -> LateTracks:
        """From ``(frame, detection, track, score)`` tuples."""
        rows = list(rows)
        cols = list(zip(*rows)) if rows else [[], [], [], []]
        return cls(*(np.asarray(c, dtype=t) for c, t in zip(cols, cls.DTYPES)))

    @classmethod
    def concat(cls, parts: Iterable[LateTracks]) -> LateTracks:
        parts = list(parts)
        if not parts:
            return cls.of([])
        return cls(*(np.concatenate([getattr(p, n) for p in parts]) for n in cls.ARRAYS))

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in self.ARRAYS}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], prefix: str = "") -> LateTracks | None:
        """The rows a journal record holds, copied: a view would keep the whole record's
        buffer (the batch's predictions) alive while the journal is read."""
        if prefix + cls.ARRAYS[0] not in arrays:
            return None
        return cls(*(np.array(arrays[prefix + n], t) for n, t in zip(cls.ARRAYS, cls.DTYPES)))

    def by_frame(self) -> dict[int, list[tuple[int, int, float]]]:
        """``{frame: [(detection, track, score), ...]}`` in row order."""
        out: dict[int, list[tuple[int, int, float]]] = {}
        rows = zip(
            self.frame_indices.tolist(),
            self.detections.tolist(),
            self.track_ids.tolist(),
            self.scores.tolist(),
        )
        for frame, det, track, score in rows:
            out.setdefault(int(frame), []).append((int(det), int(track), float(score)))
        return out


def lay_over(preds: BatchPredictions, late: dict[int, list[tuple[int, int, float]]]) -> bool:
    """Give ``preds``' frames their late labels, in place; whether any frame had some.

    Poses take them in ``class_ids``/``class_scores``, masks in ``masks.track``/
    ``tracking_score``. A detection that already has a track keeps it.
    """
    frames = preds.frame_indices
    if not late or frames is None:
        return False
    hit = [(b, late[f]) for b, f in enumerate(np.asarray(frames).tolist()) if f in late]
    if not hit:
        return False
    masks = preds.masks
    if masks is not None and masks.track is not None and masks.tracking_score is not None:
        masks.track, masks.tracking_score = _writable(masks.track), _writable(masks.tracking_score)
        for b, rows in hit:
            ks = masks.in_frame(b)
            for det, track, score in rows:
                if 0 <= det < len(ks) and masks.track[ks[det]] < 0:
                    masks.track[ks[det]], masks.tracking_score[ks[det]] = track, score
        return True
    if preds.class_ids is None:
        return False
    ids = preds.class_ids = _writable(preds.class_ids)
    scores = None
    if preds.class_scores is not None:
        scores = preds.class_scores = _writable(preds.class_scores)
    valid = np.asarray(preds.valid, bool)
    for b, rows in hit:
        slots = np.flatnonzero(valid[b])
        for det, track, score in rows:
            if 0 <= det < len(slots) and ids[b, slots[det]] < 0:
                ids[b, slots[det]] = track
                if scores is not None:
                    scores[b, slots[det]] = score
    return True


def _writable(values: np.ndarray) -> np.ndarray:
    """``values``, or a copy where it is a read-only view (a journal record's buffer)."""
    return values if values.flags.writeable else values.copy()
