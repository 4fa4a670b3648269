"""Which ground-truth frame each predicted frame is scored against.

Frames pair up as in sleap-nn 0.3.5's ``eval``: videos are matched by
sleap-io's ``Labels.match`` (its AUTO cascade: same file, then path, then
path leaves, then poses), never by position in the file, because a
prediction made from a ``.pkg.slp`` points at the package or at the original
video, not at the ground truth's copy of it. Within a matched video pair a
ground-truth frame is scored when the prediction has exactly one labeled
frame at the same frame index; a duplicated frame is skipped (as sleap-nn
does), since which copy to trust is not knowable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sleap_io as sio


@dataclass(frozen=True)
class FramePair:
    """One scored frame: ground-truth and predicted instances as point arrays.

    ``pred_scores`` is aligned with ``pred``; only predicted instances are on
    the prediction side (a user instance there has no score to rank it by).
    """

    video: str
    frame_idx: int
    gt: list[np.ndarray]
    pred: list[np.ndarray]
    pred_scores: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Pairing:
    """The frames to score, and how many videos could be matched (for the report)."""

    frames: list[FramePair]
    videos_matched: int
    videos_total: int


def video_key(video: sio.Video | None) -> str:
    """A name for ``video`` in the per-pair report, as sleap-nn writes it.

    An embedded video reports the file it was cut from (``source_filename``),
    so distances from a ``.pkg.slp`` still name the real recording.
    """
    if video is None:
        return "unknown"
    backend = getattr(video, "backend", None)
    path = None
    if backend is not None:
        path = getattr(backend, "source_filename", None)
        if path is None:
            path = getattr(backend, "filename", None)
    if path is None:
        path = getattr(video, "filename", None)
        if isinstance(path, list) and path:
            path = path[0]
    return f"video_{id(video)}" if path is None else str(path)


def _points(instance: sio.Instance) -> np.ndarray:
    return np.asarray(instance.numpy(), dtype=np.float64)


def pair_frames(
    ground_truth: sio.Labels,
    predictions: sio.Labels,
    user_labels_only: bool = True,
    pred_order: np.ndarray | None = None,
) -> Pairing:
    """Pair frames by matched video + frame index (see the module docstring).

    ``user_labels_only`` keeps only user-labeled instances as ground truth and
    drops frames that have none: predictions stored in a labels file are not
    truth and would reward the model for agreeing with itself. ``pred_order``
    puts each predicted instance's nodes in ground-truth order (nodes match by name).
    """
    match = ground_truth.match(predictions)
    frames: list[FramePair] = []
    for video_pr, video_gt in match.video_map.items():
        if video_gt is None:
            continue
        key = video_key(video_gt)
        for lf_gt in ground_truth.find(video_gt):
            gt_instances = lf_gt.user_instances if user_labels_only else lf_gt.instances
            if user_labels_only and not gt_instances:
                continue
            found = predictions.find(video_pr, frame_idx=lf_gt.frame_idx)
            if len(found) != 1:
                continue
            predicted = [i for i in found[0].instances if isinstance(i, sio.PredictedInstance)]
            frames.append(
                FramePair(
                    video=key,
                    frame_idx=int(lf_gt.frame_idx),
                    gt=[_points(i) for i in gt_instances],
                    pred=[
                        _points(i) if pred_order is None else _points(i)[pred_order]
                        for i in predicted
                    ],
                    pred_scores=[float(i.score) for i in predicted],
                )
            )
    return Pairing(frames, int(match.n_videos_matched), len(match.video_map))
