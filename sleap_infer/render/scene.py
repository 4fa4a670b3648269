"""A prediction file, the video its frames come from, and the frames picked to render.

Frames are read with sleap_infer's own readers, not sleap-io's video objects:
the ``.slp``'s video is opened by
:class:`~sleap_infer.sources.labels_video.LabelsVideoReader`, which finds a video
that moved next to the ``.slp`` and reads frames embedded in a ``.pkg.slp``,
and streams a media file fast. A prediction file made on a copy of the video
elsewhere (another machine, a renamed package) names a path that does not
exist here; ``video`` points at the frames instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import av
import numpy as np
import sleap_io as sio

from sleap_infer.core.errors import UsageError, VideoError
from sleap_infer.render.overlay import FrameOverlay, Style
from sleap_infer.sources.frames import parse_frames, select_frames
from sleap_infer.sources.inputs import is_labels_path
from sleap_infer.sources.labels_video import LabelsVideoReader
from sleap_infer.sources.open import open_video
from sleap_infer.sources.slp import FILE, read_slp
from sleap_infer.sources.video import SWSCALE_THREADS, ErrorCallback, VideoReader, runs

MAX_SCALE = 8.0
MIN_SIDE = 2 * int(np.ceil(Style.for_size(1, 1).node)) + 1
"""The smallest picture side render draws on, in pixels: one node, the smallest mark it
draws, is a dot this wide (its radius is :class:`Style`'s ``node``), so on a smaller
picture a single node would cover it and nothing could be told apart."""


class Drawn(NamedTuple):
    """One rendered frame."""

    index: int
    image: np.ndarray  # (H, W, 3) uint8 at the output size
    instances: int
    shapes: int  # masks and boxes


def load_predictions(path: Path) -> sio.Labels:
    """The whole labels file (sleap-io has no streaming reader), any failure one line."""
    if not path.is_file():
        raise UsageError(f"{path}: no such file" + (" (a folder)" if path.is_dir() else ""))
    if not is_labels_path(path):
        raise UsageError(f"{path}: not a .slp prediction file")
    return read_slp(path, FILE, open_videos=False)


def scaled_size(
    height: int, width: int, scale: float, where: Path | str = "video"
) -> tuple[int, int]:
    """Output ``(height, width)`` for ``scale``; rejects a picture under :data:`MIN_SIDE`
    pixels a side, saying why and, where one would do, the ``--scale`` that draws it."""
    if not (0 < scale <= MAX_SCALE):
        raise UsageError(f"--scale {scale}: must be above 0 and at most {MAX_SCALE:g}")
    size = (max(1, round(height * scale)), max(1, round(width * scale)))
    if min(size) >= MIN_SIDE:
        return size
    drawn = "" if scale == 1 else f" at --scale {scale:g} ({size[0]}x{size[1]})"
    needed = np.ceil(MIN_SIDE / min(height, width) * 100) / 100
    hint = f"; --scale {needed:g} draws them" if needed <= MAX_SCALE else ""
    raise UsageError(
        f"{where}: {height}x{width} frames{drawn} are too small to draw on: render needs "
        f"at least {MIN_SIDE} pixels a side, the width of one node's dot{hint}"
    )


class Scene:
    """Everything needed to draw any frame of one video of a prediction file.

    ``warnings`` collects what the user should hear about but that does not
    stop the render (a clamped ``--frames``, a video of another size).
    """

    def __init__(
        self,
        predictions: Path,
        video: Path | None = None,
        video_index: int = 0,
        scale: float = 1.0,
    ) -> None:
        self.predictions = Path(predictions)
        self.labels = load_predictions(self.predictions)
        self.warnings: list[str] = []
        n_videos = len(self.labels.videos)
        if not 0 <= video_index < max(n_videos, 1):
            raise UsageError(
                f"{self.predictions}: no video {video_index}: it has {n_videos} "
                f"(indices 0-{n_videos - 1})"
            )
        self.reader = self._open(video, video_index)
        self.source = self._source_path(video)
        info = self.reader.info
        self.by_frame: dict[int, list[sio.LabeledFrame]] = defaultdict(list)
        if n_videos:
            self._index_frames(self.labels.videos[video_index], info.height, info.width)
        self.size = scaled_size(info.height, info.width, scale, self.source)
        self.overlay = FrameOverlay(self.labels.tracks, (info.height, info.width), self.size)

    def _open(self, video: Path | None, video_index: int) -> VideoReader | LabelsVideoReader:
        # Drawing shows what is there: a frame FFmpeg flags corrupt is drawn, not skipped.
        if video is not None:
            return open_video(video, keep_corrupt=True)
        if not self.labels.videos:
            raise VideoError(f"{self.predictions}: names no video to draw on; pass --video")
        try:
            return LabelsVideoReader(self.predictions, video_index, keep_corrupt=True)
        except VideoError as exc:
            raise VideoError(f"{exc} (pass --video to read the frames from elsewhere)") from exc

    def _source_path(self, video: Path | None) -> Path:
        """The file frames are read from, for messages: the media file behind a project."""
        if video is not None:
            return Path(video)
        filename = getattr(getattr(self.reader, "video", None), "filename", None)
        return Path(filename) if isinstance(filename, str) else self.predictions

    def _index_frames(self, video: sio.Video, height: int, width: int) -> None:
        """Group the video's labeled frames by index, and warn when the sizes disagree."""
        for lf in self.labels.labeled_frames:
            if lf.video is video:
                self.by_frame[int(lf.frame_idx)].append(lf)
        try:
            shape = video.shape
        except Exception:  # metadata-only video objects may not know their shape
            shape = None
        if shape is not None and tuple(shape[1:3]) != (height, width):
            self.warnings.append(
                f"{self.source}: frames are {height}x{width} but the predictions were made "
                f"on {shape[1]}x{shape[2]} frames; drawing them unscaled"
            )

    @property
    def stored(self) -> list[int] | None:
        """The frame indices a package holds (sparse), or None for a media file."""
        return getattr(self.reader, "frame_indices", None)

    def select(self, spec: str | None) -> tuple[list[int] | None, int]:
        """``--frames`` applied to the source: the indices (None: all) and how many."""
        stored = self.stored
        n_frames = self.reader.info.n_frames
        if stored is None:
            indices, clamped = select_frames(spec, n_frames, self.source)
            if clamped:  # the message is worded for predicting
                self.warnings.append(clamped.replace("; predicting the ", "; drawing the "))
            return indices, n_frames if indices is None else len(indices)
        if spec is None:
            return stored, len(stored)
        held = set(stored)
        wanted = parse_frames(spec, stored[-1] + 1) or []
        picked = [i for i in wanted if i in held]
        if not picked:
            raise VideoError(
                f"{self.source}: --frames {spec} selects none of the {_frames(len(stored))} "
                f"it holds ({_describe(stored)})"
            )
        if len(picked) < len(wanted):
            self.warnings.append(
                f"{self.source}: --frames {spec}: {_frames(len(wanted) - len(picked))} of the "
                f"selection not stored there; drawing the {len(picked)} that are"
            )
        return picked, len(picked)

    def check_frame(self, index: int) -> None:
        """One line for a frame the source does not have."""
        if index < 0:
            raise UsageError(f"--frame {index}: frame indices start at 0")
        stored = self.stored
        if stored is not None:
            if index not in set(stored):
                raise VideoError(
                    f"{self.source}: frame {index} is not stored there (it holds "
                    f"{_frames(len(stored))}: {_describe(stored)})"
                )
            return
        n = self.reader.info.n_frames
        if index >= n:
            raise VideoError(
                f"{self.source}: frame {index} is out of range (the video has {n} frames, "
                f"0-{n - 1})"
            )

    def render(
        self, indices: list[int] | None, on_error: ErrorCallback | None = None
    ) -> Iterator[Drawn]:
        """Each frame that decodes, with its predictions drawn at the output size."""
        for index, frame in self.reader.iter_frames(indices, 3, on_error):
            image = self._resized(frame)
            instances, shapes = self.overlay.draw(image, self.by_frame.get(index, ()))
            yield Drawn(index, image, instances, shapes)

    def _resized(self, frame: np.ndarray) -> np.ndarray:
        """A writable copy at the output size (swscale's bilinear filter when resizing)."""
        height, width = self.size
        if frame.shape[:2] == (height, width):
            return np.array(frame, dtype=np.uint8, copy=True)
        av_frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")
        resized = av_frame.reformat(
            width=width, height=height, format="rgb24", threads=SWSCALE_THREADS
        )
        return resized.to_ndarray()


def _frames(n: int) -> str:
    return f"{n} frame{'s' if n != 1 else ''}"


def _describe(indices: list[int]) -> str:
    """``0-9,20`` for sorted indices, cut short when long."""
    parts = [str(a) if n == 1 else f"{a}-{a + n - 1}" for a, n in runs(indices)]
    return ",".join(parts[:6]) + (",..." if len(parts) > 6 else "")
