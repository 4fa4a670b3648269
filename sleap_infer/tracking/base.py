"""What a tracker sees per frame, what it answers, and how its state is saved.

Trackers run online: the predictor hands them one frame at a time, in frame
order, inside the streaming pipeline. Everything a tracker remembers between
frames (candidate windows, Kalman states, the previous image for optical flow,
the next track id) must round-trip through :meth:`Tracker.state` /
:meth:`Tracker.load_state` *exactly*: the journal stores the state after every
batch, and ``--resume`` after a kill must give the same tracks, bit for bit, as
a run that was never interrupted. So states are plain JSON plus numpy arrays,
never pickles, and float state is saved at the precision it is computed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

POSES = "poses"  # the tracked things are keypoint instances
MASKS = "masks"  # ... segmentation masks (mask-only models)


@dataclass
class MaskBitmap:
    """One mask as sleap-io holds it: a bitmap plus how it maps to frame pixels.

    Frame pixel ``(x, y)`` = ``offset + bitmap_pixel / scale`` (sleap-io's
    ``scale``/``offset`` convention).
    """

    bitmap: np.ndarray  # (h, w) bool
    scale: tuple[float, float] = (1.0, 1.0)  # (sx, sy)
    offset: tuple[float, float] = (0.0, 0.0)  # (ox, oy)


@dataclass
class Detections:
    """One frame's detections, in the order the output lists them."""

    frame_idx: int
    points: np.ndarray  # (I, N, 2) float64 frame pixels, NaN = node missing; masks: (I, 0, 2)
    scores: np.ndarray  # (I,) float64 instance (or mask) scores
    masks: list[MaskBitmap] | None = None  # mask carrier: one per detection
    embeddings: np.ndarray | None = None  # (I, D) float64, a NaN row = no vector
    image: np.ndarray | None = None  # (H, W, C) uint8, only when the tracker needs pixels
    # (I, N) float64 predicted poses' point scores; None: user poses or masks. The MOT
    # trackers score a predicted pose by its mean visible point score (sleap-nn's
    # score_mode "auto"), not by its instance score.
    point_scores: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.scores.shape[0])


LateLabel = tuple[int, int, int, float]  # (frame index, detection index, track id, score)


@dataclass
class Assignment:
    """The tracker's answer for one frame, aligned with the frame's detections.

    ``late``: labels for detections of frames answered before, untracked then (a
    MOT track confirmed now labels its tentative frames, as sleap-nn does; see
    :mod:`sleap_infer.core.late_tracks`).
    """

    track_ids: np.ndarray  # (I,) int64, -1 = no track (never dropped: kept untracked)
    scores: np.ndarray  # (I,) float32 tracking score, NaN where untracked
    late: list[LateLabel] = field(default_factory=list)


@dataclass
class TrackerState:
    """A tracker's memory between frames: JSON-able ``meta`` plus named arrays."""

    meta: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


class Tracker(Protocol):
    """Assigns track ids frame by frame; ids count up from 0, named ``track_<id>``."""

    @property
    def needs_images(self) -> bool: ...  # optical flow: hand it ``Detections.image``

    def step(self, detections: Detections) -> Assignment: ...

    @property
    def n_tracks(self) -> int:
        """How many track ids were ever handed out (the output's track list)."""
        ...

    def state(self) -> TrackerState: ...

    def load_state(self, state: TrackerState) -> None: ...


def track_name(track_id: int) -> str:
    """sleap-nn's name for a track id."""
    return f"track_{track_id}"


def pose_scores(
    points: np.ndarray, point_scores: np.ndarray | None, instance_scores: np.ndarray
) -> np.ndarray:
    """sleap-nn's ``score_mode="auto"`` for predicted poses: the mean point score over
    the visible nodes, or the instance score when those are all missing or all 0 (1.0
    where that is not finite); then clipped to ``[0, 1]``. ``point_scores`` None: user
    poses, 1.0."""
    n = len(points)
    if point_scores is None:
        return np.ones(n)
    visible = np.isfinite(points).all(axis=-1)
    ps = np.asarray(point_scores, dtype=np.float64)
    has = visible & np.isfinite(ps)
    ps = np.where(has, ps, 0.0)
    count = has.sum(axis=1)
    mean = ps.sum(axis=1) / np.maximum(count, 1)
    informative = (count > 0) & (np.abs(ps).sum(axis=1) > 0)
    inst = np.asarray(instance_scores, dtype=np.float64)
    inst = np.where(np.isfinite(inst), inst, 1.0)
    out = np.where(informative, mean, inst)
    return np.clip(np.where(np.isfinite(out), out, 1.0), 0.0, 1.0)
