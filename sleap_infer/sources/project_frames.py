"""Which frames of a SLEAP project (``.slp`` / ``.pkg.slp``) to predict.

The flags mean what sleap-nn 0.3.5's ``--video_index`` / ``--only_*`` /
``--exclude_user_labeled`` mean when a project is predicted one video at a
time, so a run here predicts the same frames as there:

- "labeled" is a frame with at least one *user* instance; a frame holding only
  predictions is not labeled (it is what ``--only-predicted-frames`` picks);
- ``--only-suggested-frames`` takes the chosen video's suggestions that are not
  labeled yet (suggestions of other videos never count);
- ``--exclude-user-labeled`` on a video with its own file means every frame of
  that video but the labeled ones; on a video embedded in a ``.pkg.slp`` there
  are no frames beyond the stored ones, so sleap-nn filters the video's labeled
  frames instead (those left hold predictions only, or nothing);
- the flags are not combined: when several are given the first of labeled,
  suggested, exclude-user-labeled, predicted wins, as in sleap-nn, except that
  labeled with exclude-user-labeled is refused (sleap-nn raises on it too).

The project is read with ``open_videos=False``: choosing frames needs the
annotations only, never the media (which may be missing or slow to open).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import sleap_io as sio

from sleap_infer.core.errors import UsageError, VideoError
from sleap_infer.sources.slp import read_slp


@dataclass(frozen=True)
class ProjectSelection:
    """The project flags of one run; validated on creation so the CLI fails before loading."""

    video_index: int | None = None
    only_labeled: bool = False
    only_suggested: bool = False
    exclude_user_labeled: bool = False
    only_predicted: bool = False

    def __post_init__(self) -> None:
        if self.video_index is not None and self.video_index < 0:
            raise UsageError(f"--video-index must be 0 or more, not {self.video_index}")
        if self.only_labeled and self.exclude_user_labeled:
            raise UsageError(
                "--only-labeled-frames and --exclude-user-labeled are mutually exclusive"
            )

    @property
    def filtered(self) -> bool:
        """Whether a flag narrows the frames (``--video-index`` alone only picks the video)."""
        flags = (self.only_labeled, self.only_suggested, self.exclude_user_labeled)
        return any(flags) or self.only_predicted

    @property
    def active(self) -> bool:
        """Whether anything differs from today's default (every frame of video 0)."""
        return self.video_index is not None or self.filtered


def _is_embedded(video: sio.Video) -> bool:
    """sleap-nn's test (source provenance, or the embedded flag), on unopened metadata."""
    if video.source_video is not None:
        return True
    meta = video.backend_metadata or {}
    return bool(meta.get("has_embedded_images")) or meta.get("filename") == "."


def _known_length(video: sio.Video, n_frames: int | None) -> int | None:
    """The caller's count (the opened reader's), else the one the project recorded."""
    if n_frames is not None:
        return n_frames
    shape = (video.backend_metadata or {}).get("shape")
    return int(shape[0]) if shape else None


def _load(path: Path) -> sio.Labels:
    """The project without its media, any failure as one line."""
    return read_slp(path, open_videos=False)


def _filter(
    labels: sio.Labels, video: sio.Video, selection: ProjectSelection, everything: list[int] | None
) -> list[int]:
    """The first flag in sleap-nn's priority order picks; ``everything`` is None when embedded."""
    frames = labels.find(video=video)
    user = {lf.frame_idx for lf in frames if lf.has_user_instances}
    if selection.only_labeled:
        return sorted(user)
    if selection.only_suggested:
        suggested = {s.frame_idx for s in labels.suggestions if s.video is video}
        return sorted(suggested - user)
    if selection.exclude_user_labeled:
        pool = everything if everything is not None else {lf.frame_idx for lf in frames}
        return sorted(set(pool) - user)
    return sorted({lf.frame_idx for lf in frames if lf.has_predicted_instances})


def select_project_frames(
    path: Path, selection: ProjectSelection, n_frames: int | None = None
) -> tuple[int, list[int] | None]:
    """``(video index, sorted frame indices)`` to predict; None means every frame, as today.

    ``n_frames`` is the chosen video's frame count (``reader.info.n_frames``), so that
    ``--exclude-user-labeled`` can list a media video's frames without opening it here;
    it also drops annotations past the video's end. Without it the count the
    project recorded is used; a media video with neither cannot be excluded from.
    """
    labels = _load(path)
    index = selection.video_index or 0
    if index >= len(labels.videos):
        count = len(labels.videos)
        have = f"{count} video{'s' if count != 1 else ''}"
        span = f" (indices 0-{count - 1})" if count else ""
        raise UsageError(f"{path}: --video-index {index} is out of range: it has {have}{span}")
    if not selection.filtered:
        return index, None
    video = labels.videos[index]
    length = None if _is_embedded(video) else _known_length(video, n_frames)
    if length is None and selection.exclude_user_labeled and not _is_embedded(video):
        raise VideoError(
            f"{path}: video {index} ({video.filename}): frame count unknown, "
            "cannot list its frames for --exclude-user-labeled"
        )
    everything = list(range(length)) if length is not None else None
    chosen = _filter(labels, video, selection, everything)
    return index, chosen if length is None else [i for i in chosen if 0 <= i < length]
