"""Re-track a prediction file without a model (``infer track``; sleap-nn's retrack-only mode).

The detections are already in the ``.slp`` (ours or sleap-nn's); only the
identities are made again, with the same trackers the predictor runs online,
one fresh tracker per video, frames in frame order. What is tracked follows
sleap-nn: the masks when the file holds masks and no predicted pose, else the
poses (a frame's user instances when it has any, else its predicted ones).
Re-ID vectors (``identity_embedding``) in the file are read by the trackers
that associate by appearance, by ``--features embeddings`` and by the
appearance blend (on the carrier holding more of them), and by identity
linking; as in sleap-nn's retrack mode, their presence alone does not switch
the classic tracker to appearance (``infer predict`` with a re-ID model does,
as sleap-nn's predictor does). Each pose linked to exactly one tracked mask
inherits that mask's track.

Unlike sleap-nn, every track a tracker made before is cleared first (all
predicted detections, and the detections tracked now), so the output never
mixes two runs' identities, and a detection that gets no track stays in the
file, untracked. Track names are ``track_<n>``, continuing across videos.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import sleap_io as sio

from sleap_infer.core.errors import UsageError, VideoError
from sleap_infer.pipeline.labels_job import (
    check_destination,
    has_vectors,
    load_labels,
    require_slp,
    save_labels,
)
from sleap_infer.pipeline.linked import high_threshold, normalized, track_buffer
from sleap_infer.sources.slp import FILE
from sleap_infer.tracking import (
    MASKS,
    POSES,
    Detections,
    MaskBitmap,
    make_tracker,
    registry,
    track_name,
)
from sleap_infer.tracking.cleanup import with_cleanup
from sleap_infer.tracking.common.boxes import raw_boxes
from sleap_infer.tracking.common.prepare import MotCalibration, mot_inside, prepare_tracker
from sleap_infer.tracking.linking.inputs import LinkInput
from sleap_infer.tracking.linking.link import link_tracks
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.tracking.resolve import resolve_options


@dataclass
class RetrackStats:
    """What a re-track did: frames and detections tracked, tracks made, time taken."""

    frames: int = 0
    instances: int = 0  # tracked detections: poses, or masks when ``carrier`` is masks
    tracks: int = 0
    seconds: float = 0.0
    carrier: str = POSES
    options: TrackingOptions = field(default_factory=TrackingOptions)  # as resolved
    calibrations: list[dict] = field(default_factory=list)  # the MOT pre-pass, per video


def _usable(detection: Any) -> bool:
    """sleap-nn's test for a re-ID vector worth reading: present, finite, not all zero."""
    emb = getattr(detection, "identity_embedding", None)
    if emb is None:
        return False
    vec = np.asarray(emb.vector, dtype=np.float64)
    return bool(vec.size and np.isfinite(vec).all() and np.any(vec))


def _carrier(labels: sio.Labels, options: TrackingOptions) -> tuple[str, bool]:
    """The carrier to track, and whether appearance (re-ID) tracking applies."""
    frames = labels.labeled_frames
    blend = options.appearance_weight > 0
    by_vectors = options.tracker == "classic" and not blend
    if registry.entry(options.tracker).appearance or (
        options.features == "embeddings" and by_vectors
    ):
        poses = sum(_usable(i) for lf in frames for i in lf.instances)
        masks = sum(_usable(m) for lf in frames for m in lf.masks)
        if poses or masks:
            return (MASKS if masks > poses else POSES), True
    has_masks = any(lf.masks for lf in frames)
    has_predicted = any(lf.has_predicted_instances for lf in frames)
    carrier = MASKS if has_masks and (not has_predicted or options.features == "masks") else POSES
    if not blend:
        return carrier, False
    # The blend reads the tracked detections' own vectors (sleap-nn refuses the rest).
    on_masks = any(_usable(m) for lf in frames for m in lf.masks)
    on_poses = any(_usable(i) for lf in frames for i in lf.instances)
    tracked, other = (on_masks, on_poses) if carrier == MASKS else (on_poses, on_masks)
    if other and not tracked:
        where = POSES if carrier == MASKS else MASKS
        raise UsageError(
            f"--appearance-weight: the re-ID vectors are on the {where} but tracking"
            f" follows the {carrier}; the blend would read none"
        )
    return carrier, tracked


def by_vectors(options: TrackingOptions) -> TrackingOptions:
    """The options a re-ID model's own run tracks with: sleap-nn's predictor sets
    ``--features embeddings`` for the classic tracker when the user set neither it nor
    an appearance blend (its retrack mode, ``infer track``, does not)."""
    if options.tracker == "classic" and options.features is None and not options.appearance_weight:
        return replace(options, features="embeddings")
    return options


def _targets(lf: sio.LabeledFrame, carrier: str) -> list[Any]:
    if carrier == MASKS:
        return list(lf.masks)
    return list(lf.user_instances) if lf.has_user_instances else list(lf.predicted_instances)


def _vectors(targets: list[Any]) -> np.ndarray:
    rows = [getattr(t, "identity_embedding", None) for t in targets]
    dims = {int(np.asarray(r.vector).size) for r in rows if r is not None}
    if len(dims) > 1:
        raise UsageError(f"re-ID vectors of different lengths {sorted(dims)} in one frame")
    out = np.full((len(targets), dims.pop() if dims else 0), np.nan)
    for i, r in enumerate(rows):
        if r is not None:
            out[i] = np.asarray(r.vector, dtype=np.float64)
    return out


def _detections(
    lf: sio.LabeledFrame, targets: list[Any], carrier: str, vectors: bool, image: bool
) -> Detections:
    n = len(targets)
    point_scores = None  # predicted poses only (the MOT trackers' detection scores)
    if carrier == MASKS:
        points = np.zeros((n, 0, 2))
        masks = [MaskBitmap(m.data, tuple(m.scale), tuple(m.offset)) for m in targets]
    else:
        shapes = {len(t.skeleton.nodes) for t in targets}
        if len(shapes) > 1:
            raise UsageError(f"frame {lf.frame_idx}: instances of different skeletons")
        points = np.stack([t.numpy() for t in targets]) if n else np.zeros((0, 0, 2))
        masks = None
        if n and all(isinstance(t, sio.PredictedInstance) for t in targets):
            point_scores = np.stack([np.asarray(t.numpy(scores=True))[:, 2] for t in targets])
    pixels = None
    if image:
        try:
            pixels = np.asarray(lf.image)
        except Exception as exc:  # any backend failure: one line naming the frame
            raise VideoError(f"frame {lf.frame_idx}: image not readable ({exc})") from exc
    return Detections(
        frame_idx=int(lf.frame_idx),
        points=np.asarray(points, dtype=np.float64),
        scores=np.array([float(getattr(t, "score", 1.0) or 0.0) for t in targets]),
        masks=masks,
        embeddings=_vectors(targets) if vectors else None,
        image=pixels,
        point_scores=None if point_scores is None else np.asarray(point_scores, np.float64),
    )


def _clear(lf: sio.LabeledFrame, targets: list[Any]) -> None:
    """Forget earlier trackers' tracks: predicted detections and those tracked now."""
    for det in (*lf.instances, *lf.masks):
        if isinstance(det, sio.PredictedInstance | sio.PredictedSegmentationMask):
            det.track, det.tracking_score = None, None
    for det in targets:
        det.track, det.tracking_score = None, None


def _inherit(lf: sio.LabeledFrame) -> None:
    """A pose linked to exactly one tracked mask takes that mask's track."""
    linked: dict[int, list[Any]] = {}
    for m in lf.masks:
        if getattr(m, "instance", None) is not None:
            linked.setdefault(id(m.instance), []).append(m)
    for inst in lf.instances:
        masks = linked.get(id(inst), [])
        if len(masks) == 1 and masks[0].track is not None:
            inst.track, inst.tracking_score = masks[0].track, masks[0].tracking_score


def _by_video(labels: sio.Labels) -> list[list[sio.LabeledFrame]]:
    rank = {id(v): i for i, v in enumerate(labels.videos)}
    for lf in labels.labeled_frames:
        rank.setdefault(id(lf.video), len(rank))
    ordered = sorted(labels.labeled_frames, key=lambda lf: (rank[id(lf.video)], lf.frame_idx))
    labels.labeled_frames = ordered
    groups: list[list[sio.LabeledFrame]] = []
    for lf in ordered:
        if groups and groups[-1][0].video is lf.video:
            groups[-1].append(lf)
        else:
            groups.append([lf])
    return groups


def _add_to_linking(
    linking: LinkInput, lf: sio.LabeledFrame, targets: list[Any], det: Detections, ids: Any
) -> None:
    """One frame's poses (or masks) as identity linking reads them (sleap-nn: user poses
    and masks without a score score 1)."""
    vectors = _vectors(targets) if any(_usable(t) for t in targets) else None
    if det.masks is not None:
        own = [getattr(t, "score", None) for t in targets]
        scores = np.array([np.nan if s is None else float(s) for s in own], np.float64)
        linking.add_masks(int(lf.frame_idx), raw_boxes(det, MASKS)[0], scores, ids, vectors)
        return
    predicted = bool(targets) and isinstance(targets[0], sio.PredictedInstance)
    point_scores = None
    if predicted:
        point_scores = np.stack([np.asarray(t.numpy(scores=True))[:, 2] for t in targets])
    own = [getattr(t, "score", None) for t in targets]
    scores = np.array([1.0 if s is None else float(s) for s in own])
    linking.add_frame(int(lf.frame_idx), det.points, point_scores, scores, ids, vectors)


def _prepare(
    tracker: Any,
    frames: list[sio.LabeledFrame],
    carrier: str,
    vectors: bool,
    stats: RetrackStats,
) -> MotCalibration | None:
    """sleap-nn's ``prepare()``: a MOT tracker first measures the whole video (the file is
    all there). None: not a MOT tracker."""
    dets = (_detections(lf, _targets(lf, carrier), carrier, vectors, False) for lf in frames)
    cal = prepare_tracker(tracker, dets, carrier)
    if cal is not None:
        stats.calibrations.append(cal.record())
    return cal


def _n_nodes(labels: sio.Labels) -> int:
    return len(labels.skeletons[0].nodes) if len(labels.skeletons) == 1 else 0


Tracked = tuple[sio.LabeledFrame, list[Any], Detections | None, np.ndarray]


Progress = Callable[[int, int], None]  # (frames done, frames in all), as sleap-nn's callback


def retrack_labels(
    labels: sio.Labels, options: TrackingOptions, progress: Progress | None = None
) -> RetrackStats:
    """Track ``labels`` again, in place; returns what was done and the resolved options.
    ``progress`` hears of each frame tracked (``infer track --progress json``)."""
    t0 = time.perf_counter()
    carrier, vectors = _carrier(labels, options)
    n_nodes = _n_nodes(labels)
    stats = RetrackStats(carrier=carrier)
    stats.options = resolve_options(options, carrier, n_nodes, vectors)
    tracks: list[sio.Track] = []
    videos = list(_by_video(labels))
    n_total, n_done = sum(len(f) for f in videos), 0

    def tick() -> None:
        nonlocal n_done
        n_done += 1
        if progress is not None:
            progress(n_done, n_total)

    for frames in videos:
        tracker = make_tracker(options, carrier, n_nodes, vectors)
        tracker = with_cleanup(tracker, options, carrier, n_nodes, vectors)
        _prepare(tracker, frames, carrier, vectors, stats)
        offset = len(tracks)
        done = _track_video(tracker, frames, carrier, vectors, tracks, stats, options.links, tick)
        if options.links:
            _link(done, options, stats, tracks, offset)
        if carrier == MASKS:
            for lf in frames:
                _inherit(lf)
    if options.links:  # sleap-nn lists only the identities linking kept
        held = {id(d.track) for lf in labels.labeled_frames for d in (*lf.instances, *lf.masks)}
        tracks = [t for t in tracks if id(t) in held]
    labels.tracks = list(tracks)
    labels.update()
    labels.reindex()
    stats.tracks = len(tracks)
    stats.seconds = time.perf_counter() - t0
    return stats


def _track_video(
    tracker: Any,
    frames: list[sio.LabeledFrame],
    carrier: str,
    vectors: bool,
    tracks: list[sio.Track],
    stats: RetrackStats,
    links: bool,
    tick: Callable[[], None] = lambda: None,
) -> list[Tracked]:
    """Step ``tracker`` through one video's frames, setting every target's track (late
    labels included); each frame's targets and ids, plus its detections when ``links``.
    ``tick`` is called once per frame (sleap-nn's retrack progress counts every frame)."""
    offset = len(tracks)
    done: list[Tracked] = []
    at: dict[int, int] = {}  # frame index -> its entry in ``done``
    # sleap-nn steps a MOT tracker on every frame (its tracks age), the classic one only
    # on frames with masks; its identity linking reads every frame either way
    skip_empty = carrier == MASKS and mot_inside(tracker) is None
    for lf in frames:
        targets = _targets(lf, carrier)
        _clear(lf, targets)
        if skip_empty and not targets:
            if links:
                empty = _detections(lf, targets, carrier, vectors, False)
                done.append((lf, targets, empty, np.zeros(0, np.int64)))
            tick()
            continue
        det = _detections(lf, targets, carrier, vectors, tracker.needs_images)
        answer = tracker.step(det)
        while len(tracks) < offset + tracker.n_tracks:
            tracks.append(sio.Track(name=track_name(len(tracks))))
        ids = np.array(answer.track_ids, np.int64)
        for target, tid, score in zip(targets, ids, answer.scores):
            if tid >= 0:
                target.track, target.tracking_score = tracks[offset + tid], float(score)
        at[int(lf.frame_idx)] = len(done)
        done.append((lf, targets, replace(det, image=None) if links else None, ids))
        for frame_idx, j, tid, score in answer.late:  # a confirmed track's earlier frames
            if frame_idx not in at:
                continue
            _, earlier, _, earlier_ids = done[at[frame_idx]]
            if 0 <= j < len(earlier) and earlier_ids[j] < 0:
                earlier_ids[j] = tid
                earlier[j].track, earlier[j].tracking_score = tracks[offset + tid], score
        stats.frames += 1
        stats.instances += len(targets)
        tick()
    return done


def _link(
    done: list[Tracked],
    options: TrackingOptions,
    stats: RetrackStats,
    tracks: list[sio.Track],
    offset: int,
) -> None:
    """sleap-nn's identity linking over one video's tracked frames (ids with late labels)."""
    linking = LinkInput()
    tracked: list[Any] = []
    for lf, targets, det, ids in done:
        assert det is not None
        _add_to_linking(linking, lf, targets, det, ids)
        tracked.extend(targets)
    new, _ = link_tracks(
        linking,
        options.max_tracks,
        track_buffer(options),
        None,
        high_threshold(stats.options),
        normalized(options),
    )
    for target, tid in zip(tracked, new.tolist(), strict=True):
        if tid < 0 and target.track is not None:
            target.track, target.tracking_score = None, None
        elif tid >= 0:
            target.track = tracks[offset + tid]
    # the next video's names continue after this one's highest kept id (sleap-nn's offset)
    del tracks[offset + int(new.max(initial=-1)) + 1 :]


def retrack_file(
    src: Path, dst: Path, options: TrackingOptions, progress: Progress | None = None
) -> RetrackStats:
    """Re-track ``src`` into ``dst`` (written atomically); ``seconds`` covers load to save."""
    t0 = time.perf_counter()
    src, dst = Path(src), Path(dst)
    if not src.is_file():
        raise UsageError(f"{src}: no such file")
    require_slp(src, "not a .slp prediction file (re-tracking needs detections)")
    labels = load_labels(src, FILE)
    check_destination(src, dst, labels)
    keep_vectors = has_vectors(labels)
    stats = retrack_labels(labels, options, progress)
    tracking = stats.options.to_json()
    if stats.calibrations:  # the MOT pre-pass ran (sleap-nn's prepare()), per video
        tracking = {**tracking, "prepare": stats.calibrations}
    labels.provenance = {**dict(labels.provenance or {}), "tracking": tracking}
    save_labels(labels, dst, keep_vectors)
    stats.seconds = time.perf_counter() - t0
    return stats
