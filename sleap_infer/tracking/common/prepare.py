"""sleap-nn 0.3.5's whole-video MOT pre-pass (``BaseMOTTracker.prepare``).

sleap-nn measures the whole video before its MOT tracker sees the first frame:
the processing stride and time base, the animals' body size (the pseudo box of
one-node poses and the ``centroid`` similarity's unit) and the 95th-percentile
detection score, by which every score is divided (then clipped to [0, 1]) so
the preset's thresholds mean the same on every model; the appearance trackers
also get their association gates (:mod:`~.prepare_appearance`). ``infer track``
re-tracks a file that is all there, so it measures first; ``infer predict -t``
tracks online (nothing of the video known ahead) and, at the video's end,
again over its journal after this pre-pass (``pipeline/prepared.py``), as
sleap-nn's predictor does. The geometry comes from
:func:`~sleap_infer.tracking.common.calibration.calibrate_geometry`, the same
port the identity linker uses; the calibration is a pure function of the
detections, so a resumed run recomputes it rather than saving it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, cast

import numpy as np

from sleap_infer.tracking.base import MASKS, Detections, pose_scores
from sleap_infer.tracking.common import boxes as mb
from sleap_infer.tracking.common.appearance import unit_rows
from sleap_infer.tracking.common.appearance_memory import frame_vectors
from sleap_infer.tracking.common.calibration import calibrate_geometry, frame_steps
from sleap_infer.tracking.common.prepare_appearance import (
    AppearanceCalibration,
    calibrate_appearance,
)

SCORE_NORMALIZER_FLOOR = 1e-6  # sleap-nn's floor on the q95 divisor


@dataclass(frozen=True)
class MotCalibration:
    """What the MOT trackers read of sleap-nn's ``VideoCalibration``."""

    score_normalizer: float  # divide scores by it, then clip to [0, 1]; 1.0: unchanged
    body_size: float
    time_base: str  # "frames" or "steps"
    frame_step: int  # the stride, in frames ("steps": 1)
    appearance: AppearanceCalibration | None = None  # association gates (None: not measured)
    vectors_seen: bool = False  # some detection of the video carries a re-ID vector

    def record(self) -> dict:
        """The provenance entry of a run that used it."""
        return {
            "score_normalizer": self.score_normalizer,
            "body_size": self.body_size,
            "time_base": self.time_base,
            "frame_step": self.frame_step,
            "appearance": None if self.appearance is None else vars(self.appearance),
        }


def detection_scores(det: Detections) -> np.ndarray:
    """Scores as the MOT trackers read them (sleap-nn's ``score_mode="auto"``): a predicted
    pose's mean visible point score (its instance score where that says nothing), a mask's
    or user pose's own score; missing (NaN) counts as 1, clipped to [0, 1]. A top-down
    instance score is the centroid's confidence, which can sit far from the poses' point
    scores, so reading it would move every score threshold and the per-video normalizer."""
    scores = np.asarray(det.scores, np.float64).reshape(-1)
    if det.masks is None and det.point_scores is not None and len(scores):
        return pose_scores(det.points, det.point_scores, scores)
    return np.clip(np.where(np.isfinite(scores), scores, 1.0), 0.0, 1.0)


def normalized(scores: np.ndarray, normalizer: float | None) -> np.ndarray:
    """sleap-nn's ``normalize_scores``: ``scores / normalizer`` clipped to [0, 1]."""
    if normalizer is None or not np.isfinite(normalizer) or normalizer <= 0:
        return scores
    return np.clip(np.asarray(scores, np.float64) / float(normalizer), 0.0, 1.0)


def calibrate_mot(
    frames: Iterable[Detections],
    carrier: str,
    body_size: float | None = None,
    appearance: tuple[float, int] | None = None,
) -> MotCalibration | None:
    """The pre-pass over one video's frames, in the order they will be tracked (None:
    no frames). ``appearance``: the tracker's memory ``(ema_alpha, gallery_size)``, to
    measure the association gates too (appearance trackers)."""
    frame_idx, pos, boxes, sized, scores = [], [], [], [], []
    vec_rows: list[np.ndarray | None] = []
    has_rows: list[np.ndarray] = []
    dim: int | None = None
    for f, det in enumerate(frames):
        raw, count = mb.raw_boxes(det, carrier)
        valid = np.isfinite(raw).all(axis=1)
        frame_idx.append(int(det.frame_idx))
        pos.append(np.full(int(valid.sum()), f, np.int64))
        boxes.append(raw[valid])
        sized.append(np.ones(int(valid.sum()), bool) if carrier == MASKS else count[valid] >= 2)
        scores.append(detection_scores(det)[valid])
        if appearance is not None:
            emb, has = frame_vectors(det.embeddings, len(valid), None)
            if emb is not None and (dim is None or emb.shape[1] == dim):
                dim = emb.shape[1]
                vec_rows.append(emb[valid])
                has_rows.append(has[valid])
            else:  # no vector here (or of another length): none
                vec_rows.append(None)
                has_rows.append(np.zeros(int(valid.sum()), bool))
    if not frame_idx:
        return None  # sleap-nn's prepare([]): nothing to measure
    box = np.concatenate(boxes) if boxes else np.zeros((0, 4))
    wh = box[:, 2:] - box[:, :2]
    centre = 0.5 * (box[:, :2] + box[:, 2:])
    half = 0.5 * np.maximum(wh, 1.0)  # sleap-nn floors a raw box at 1 px per axis
    floored = np.concatenate([centre - half, centre + half], axis=1)
    geo = calibrate_geometry(
        np.asarray(frame_idx, np.int64),
        np.concatenate(pos),
        centre,
        floored,
        np.concatenate(sized),
        body_size,
    )
    score = np.concatenate(scores)
    normalizer = 1.0
    if score.size:
        q95 = float(np.quantile(score, (0.05, 0.25, 0.5, 0.75, 0.95))[-1])
        normalizer = max(q95, SCORE_NORMALIZER_FLOOR) if np.isfinite(q95) else 1.0
    step = max(1, int(geo.frame_step)) if geo.time_base == "frames" else 1
    app = None
    seen = False
    if appearance is not None and dim is not None:
        has = np.concatenate(has_rows)
        seen = bool(has.any())
        parts = [
            np.zeros((len(h), dim), np.float32) if v is None else v
            for v, h in zip(vec_rows, has_rows, strict=True)
        ]
        vec = np.concatenate(parts).astype(np.float32)
        vec, has = unit_rows(vec, has)
        step_idx = frame_steps(np.asarray(frame_idx, np.int64), geo.time_base, geo.frame_step)
        det_pos = np.concatenate(pos)
        app = calibrate_appearance(
            vec,
            has,
            geo.anchor_of,
            geo.n_anchors,
            step_idx[det_pos],
            int(step_idx[-1]),
            appearance[0],
            appearance[1],
        )
    return MotCalibration(normalizer, geo.body_size, geo.time_base, step, app, seen)


class _MemoryKnobs(Protocol):
    """What :func:`prepare_args` reads of an appearance tracker (one that keeps memories)."""

    ema_alpha: float
    gallery_size: int


def prepare_args(tracker: object) -> tuple[float | None, tuple[float, int] | None]:
    """``(body_size, appearance)`` of :func:`calibrate_mot` for ``tracker``: its
    ``--mot_param body_size`` and, for an appearance tracker, its memory's
    ``(ema_alpha, gallery_size)`` (sleap-nn's gallery trials use the memory's length)."""
    params = getattr(tracker, "params", None)
    body = getattr(params, "extra", {}).get("body_size")
    if not hasattr(tracker, "memories"):
        return body, None
    knobs = cast(_MemoryKnobs, tracker)
    return body, (float(knobs.ema_alpha), int(knobs.gallery_size))


def mot_inside(tracker: object) -> Any | None:
    """The MOT tracker inside ``tracker`` (the clean-up wrappers unwrapped): the one that
    takes a pre-pass; None for the others (classic, infer_bytetrack)."""
    inner: Any = tracker
    while not hasattr(inner, "prepare") and hasattr(inner, "inner"):
        inner = inner.inner
    return inner if hasattr(inner, "prepare") else None


def prepare_tracker(
    tracker: object, frames: Iterable[Detections], carrier: str
) -> MotCalibration | None:
    """sleap-nn's ``prepare()``: the MOT tracker inside ``tracker`` measures one video's
    ``frames`` (in tracking order, read once) and takes the calibration. None: no MOT
    tracker (``frames`` left unread), or no frame."""
    inner = mot_inside(tracker)
    if inner is None:
        return None
    calibration = calibrate_mot(frames, carrier, *prepare_args(inner))
    inner.prepare(calibration)
    return calibration
