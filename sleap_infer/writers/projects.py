"""Files made from a SLEAP project's per-video predictions once all of them exist.

A project input is predicted one video per task (each with its own journal,
so an interrupted night resumes video by video); two files are assembled
from those outputs afterwards, each written atomically:

- the *combined* predictions of a multi-video project: one ``.slp`` holding
  every video, as sleap-nn writes when no ``--video_index`` is given;
- the *merged copy* (``--merge-into-project``): the input project with the new
  predictions merged in by sleap-io's ``Labels.merge(frame="replace_predictions")``,
  which is what SLEAP's GUI does after inference: user instances stay exactly
  as they were, a predicted frame's old predictions are replaced, frames that
  were not predicted keep theirs. The project file itself is never written.

Quirk: every file here refers to the project's videos as sleap-io resolves
them (a video that moved is found next to the ``.slp``) and is saved with
``restore_original_videos=False``, as sleap-nn does by default. Frames
embedded in a ``.pkg.slp`` therefore stay read from that package; letting
sleap-io "restore" them would point at the package's source video, which
usually exists only on the labelling machine.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import sleap_io as sio

from sleap_infer.core.errors import OutputError
from sleap_infer.sources.slp import read_slp, read_slp_videos
from sleap_infer.writers.outputs import atomic_write

PREDICTIONS_SUFFIX = ".predictions.slp"
MERGED_SUFFIX = ".merged.slp"


def count_videos(project: Path) -> int:
    """How many videos a project holds: its video list only, no frames, no media opened."""
    return len(read_slp_videos(project, open_backend=False))


def part_path(combined: Path, video_index: int) -> Path:
    """Where video ``video_index`` of a multi-video project is predicted to, named as a
    ``--video-index`` run names it: ``a.slp.predictions.slp`` -> ``a.slp.video1.predictions.slp``
    (``-o out.slp`` -> ``out.video1.slp``)."""
    name = combined.name
    at = name.rfind(".predictions.")
    if at < 0:
        at = len(name) - len(combined.suffix)
    return combined.with_name(f"{name[:at]}.video{video_index}{name[at:]}")


def merged_path(predictions: Path) -> Path:
    """The merged copy, next to the predictions:
    ``a.slp.predictions.slp`` -> ``a.slp.merged.slp`` (``-o out.slp`` -> ``out.merged.slp``)."""
    name = predictions.name
    for suffix in (PREDICTIONS_SUFFIX, ".slp"):
        if name.endswith(suffix):
            return predictions.with_name(name[: -len(suffix)] + MERGED_SUFFIX)
    return predictions.with_name(name + MERGED_SUFFIX)


@contextlib.contextmanager
def _project_videos(project: Path) -> Iterator[list[sio.Video]]:
    """The project's videos as sleap-io opens them; file handles closed afterwards."""
    videos = read_slp_videos(project)
    try:
        yield videos
    finally:
        for video in videos:
            with contextlib.suppress(Exception):
                video.close()


def _load_part(path: Path) -> sio.Labels:
    return read_slp(path, "prediction file", OutputError, open_videos=False)


def _on_video(part: sio.Labels, video: sio.Video) -> sio.Labels:
    """``part`` (one video's predictions) re-pointed at the project's ``video`` object."""
    if part.videos:
        part.replace_videos(old_videos=list(part.videos[:1]), new_videos=[video])
    else:
        part.videos.append(video)
    return part


def _same_nodes(labels: sio.Labels, skeleton: sio.Skeleton) -> sio.Skeleton | None:
    """``labels``' skeleton with ``skeleton``'s node names (edges may differ), if any."""
    return next((s for s in labels.skeletons if s.node_names == skeleton.node_names), None)


def _tracked(lf: sio.LabeledFrame) -> Iterator[object]:
    """Everything in a frame that may carry a track (instances, masks, boxes, ROIs)."""
    yield from lf.instances
    for name in ("masks", "bboxes", "rois", "centroids"):
        yield from getattr(lf, name, None) or ()


def _adopt(into: sio.Labels, part: sio.Labels) -> None:
    """Move ``part``'s frames into ``into``: one skeleton per node list, one track per name
    (a class name is the same animal in every video; a tracker's names restart per video)."""
    for skeleton in list(part.skeletons):
        same = _same_nodes(into, skeleton)
        if same is None:
            into.skeletons.append(skeleton)
        elif same is not skeleton:
            part.replace_skeleton(same, skeleton)
    tracks = {t.name: t for t in into.tracks}
    for lf in part.labeled_frames:
        for item in _tracked(lf):
            track = getattr(item, "track", None)
            if track is None:
                continue
            if track.name not in tracks:
                tracks[track.name] = track
                into.tracks.append(track)
            item.track = tracks[track.name]  # type: ignore[attr-defined]
        into.labeled_frames.append(lf)
    for video in part.videos:
        if all(video is not v for v in into.videos):
            into.videos.append(video)


@dataclass
class MergeCounts:
    """What a merge wrote: the predicted frames and instances it brought in."""

    frames: int = 0
    instances: int = 0


def _save(labels: sio.Labels, out: Path) -> None:
    def write(tmp: Path) -> None:
        sio.save_slp(labels, str(tmp), restore_original_videos=False, verbose=False)

    atomic_write(out, write)


def combine_predictions(project: Path, parts: Mapping[int, Path], out: Path) -> int:
    """Write one ``.slp`` with the predictions of every video in ``parts`` (video index ->
    its output), videos in project order; returns the number of labeled frames.

    Provenance is the first video's (the model, options and versions are the same for
    all) plus the per-video files it was combined from.
    """
    with _project_videos(project) as videos:
        combined = sio.Labels()
        provenance: dict[str, object] = {}
        for index in sorted(parts):
            part = _load_part(parts[index])
            provenance = provenance or dict(part.provenance)
            _adopt(combined, _on_video(part, videos[index]))
        combined.videos = [videos[i] for i in sorted(parts)]  # project order, nothing else
        provenance.pop("filename", None)
        provenance["combined_from"] = [str(parts[i]) for i in sorted(parts)]
        combined.provenance = provenance
        _save(combined, out)
        return len(combined.labeled_frames)


def _align_skeleton(project: sio.Labels, part: sio.Labels) -> None:
    """Predictions on the project's skeleton when the node names agree (edges may differ:
    the training config may have dropped or added some); else the model's is added."""
    for skeleton in list(part.skeletons):
        same = _same_nodes(project, skeleton)
        if same is not None and same is not skeleton:
            part.replace_skeleton(same, skeleton)


def merge_into_project(project: Path, parts: Mapping[int, Path], out: Path) -> MergeCounts:
    """Write a copy of ``project`` with ``parts``' predictions merged in (SLEAP's rule:
    user instances kept, a predicted frame's old predictions replaced)."""
    labels = read_slp(project)
    try:
        user_before = _count_user(labels)
        counts = MergeCounts()
        for index in sorted(parts):
            part = _on_video(_load_part(parts[index]), labels.videos[index])
            _align_skeleton(labels, part)
            counts.frames += len(part.labeled_frames)
            counts.instances += sum(len(lf.predicted_instances) for lf in part.labeled_frames)
            result = labels.merge(part, frame="replace_predictions", track="name")
            if not result.successful:
                why = "; ".join(str(e) for e in result.errors[:3]) or "sleap-io refused"
                raise OutputError(f"{out}: cannot merge {parts[index]} into {project} ({why})")
        if _count_user(labels) != user_before:  # the promise this file makes, checked
            raise OutputError(f"{out}: merging would change the project's user instances")
        labels.provenance = {**labels.provenance, "sleap_infer_merged_from": str(project)}
        _save(labels, out)
        return counts
    finally:
        for video in labels.videos:
            with contextlib.suppress(Exception):
                video.close()


def _count_user(labels: sio.Labels) -> int:
    return sum(len(lf.user_instances) for lf in labels.labeled_frames)
