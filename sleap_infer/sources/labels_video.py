"""Predict the frames of a video referenced by a SLEAP project (``.slp`` / ``.pkg.slp``).

sleap-nn accepts a project as input and reads its frames through sleap-io, so
this reader does too: the project's videos come from sleap-io's own reader
(``read_videos``, the video half of ``load_slp``: a big project's instances are
never loaded), which also finds a video that moved next to the ``.slp``. Two
ways to read frames follow:

- a plain media file (sleap-io's ``MediaVideo``) is streamed by
  :class:`~sleap_infer.sources.video.VideoReader`, whose pixels equal sleap-io's
  but which is far faster (sleap-io's default ffmpeg plugin seeks per frame)
  and reports decode errors per frame;
- anything else (frames embedded in a ``.pkg.slp``, image folders, HDF5
  arrays, cropped videos) is read frame by frame through sleap-io itself, so
  pixels are exactly ``video[k]``.

A package embeds only some frames of its source video (usually the labeled
ones): only those are iterated, under their source frame index, and
``n_frames`` counts them. The count is not one past the last index when the
embedded frames are sparse, so a ``--frames`` selection is clamped to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import sleap_io as sio

from sleap_infer.core.errors import VideoError
from sleap_infer.sources.slp import error_reason, read_slp_videos
from sleap_infer.sources.video import (
    ABSENT,
    DECODE_ERROR,
    DEFAULT_FPS,
    ErrorCallback,
    RunCollector,
    VideoInfo,
    VideoReader,
)

# Files sleap-io reads as HDF5 (a package, an array of frames): never handed to PyAV.
HDF5_SUFFIXES = frozenset({".slp", ".h5", ".hdf5"})


def _load_videos(path: Path) -> list[sio.Video]:
    """The project's videos, any failure (not HDF5, not SLEAP, damaged) as one line."""
    return read_slp_videos(path)


def _media_video() -> type:
    from sleap_io.io.video_reading import MediaVideo

    return MediaVideo


def _close(video: sio.Video) -> None:
    """Drop the file handle sleap-io caches (it reopens lazily; older versions lack close)."""
    close = getattr(video.backend, "close", None)
    if close is not None:
        close()


def _coerce(frame: np.ndarray, channels: int) -> np.ndarray:
    """Gray frames repeated for a colour model (as sleap-nn does); the first channel for gray."""
    if frame.shape[-1] == channels:
        return frame
    if channels == 1:
        return np.ascontiguousarray(frame[..., :1])
    return np.repeat(frame[..., :1], channels, axis=-1)


class LabelsVideoReader:
    """Video ``video_index`` of a SLEAP project, with :class:`VideoReader`'s interface.

    ``info.path`` is the project file (outputs are named after it). Like
    :class:`VideoReader`, nothing stays open between :meth:`iter_frames`
    calls; one reader must not be iterated from two threads at once (the
    sleap-io video object is shared).
    """

    def __init__(
        self, path: str | Path, video_index: int = 0, threads: int = 0, keep_corrupt: bool = False
    ) -> None:
        self.path = Path(path)
        self.keep_corrupt = keep_corrupt
        self.video_index = video_index
        if self.path.is_dir():
            raise VideoError(f"{self.path}: is a directory, not a SLEAP project")
        if not self.path.exists():
            raise VideoError(f"{self.path}: SLEAP project not found")
        videos = _load_videos(self.path)
        if not videos:
            raise VideoError(f"{self.path}: SLEAP project has no videos")
        if not 0 <= video_index < len(videos):
            raise VideoError(
                f"{self.path}: no video {video_index}: the project has {len(videos)} "
                f"(indices 0-{len(videos) - 1})"
            )
        self.video: sio.Video = videos[video_index]
        self._media: VideoReader | None = None
        self._available: list[int] = []
        if not self.video.exists():
            raise VideoError(f"{self._where()}: video not found, there or next to {self.path.name}")
        try:
            if type(self.video.backend) is _media_video() or self._is_unopened_media():
                self.info = self._open_media(threads)
            else:
                self.info = self._open_stored()
        finally:
            _close(self.video)

    def _where(self) -> str:
        return f"{self.path}: video {self.video_index} ({self.video.filename})"

    def _is_unopened_media(self) -> bool:
        """sleap-io gave up on an existing single file: VideoReader may read it, or say why."""
        name = self.video.filename
        if self.video.backend is not None or not isinstance(name, str):
            return False
        return Path(name).is_file() and Path(name).suffix.lower() not in HDF5_SUFFIXES

    def _open_media(self, threads: int) -> VideoInfo:
        try:
            self._media = VideoReader(self.video.filename, threads, self.keep_corrupt)
        except VideoError as exc:
            raise VideoError(f"{self.path}: video {self.video_index}: {exc}") from exc
        media = self._media.info
        grayscale = None if self.video.backend is None else self.video.backend.grayscale
        if grayscale is None:
            # sleap-io's own rule (first and last channel of frame 0 equal), so channel
            # counts match what sleap-io would return for this video.
            first = next(iter(self._media.iter_frames([0], 3)), None)
            rgb = first[1] if first is not None else None
            grayscale = rgb is not None and bool(np.array_equal(rgb[..., 0], rgb[..., -1]))
        return VideoInfo(
            path=self.path.absolute(),
            n_frames=media.n_frames,
            fps=media.fps,
            height=media.height,
            width=media.width,
            grayscale=bool(grayscale),
            codec=media.codec,
        )

    def _open_stored(self) -> VideoInfo:
        backend = self.video.backend
        if backend is None:
            raise VideoError(f"{self._where()}: sleap-io cannot open it")
        frame_map = getattr(backend, "frame_map", None)
        if frame_map:
            self._available = sorted(int(i) for i in frame_map)
        else:
            self._available = list(range(len(self.video)))
        if not self._available:
            raise VideoError(f"{self._where()}: holds no frames")
        try:
            first = self.video[self._available[0]]
        except Exception as exc:  # whatever the image decoder or h5py raise
            raise VideoError(
                f"{self._where()}: cannot read its first frame ({error_reason(exc)})"
            ) from exc
        return VideoInfo(
            path=self.path.absolute(),
            n_frames=len(self._available),
            fps=float(self.video.fps or DEFAULT_FPS),
            height=int(first.shape[0]),
            width=int(first.shape[1]),
            grayscale=first.shape[-1] == 1,  # sleap-io already reduced a gray video to 1
            codec=str(getattr(backend, "image_format", None) or type(backend).__name__),
        )

    @property
    def frame_indices(self) -> list[int] | None:
        """The frame indices that exist (sorted; a package's embedded ones), or None for
        a media file, whose frames are 0 to ``n_frames - 1`` as far as its metadata knows."""
        return None if self._media is not None else list(self._available)

    def channels_for(self, model_channels: int) -> int:
        return self.info.channels_for(model_channels)

    def iter_frames(
        self,
        indices: Sequence[int] | None = None,
        channels: int = 3,
        on_error: ErrorCallback | None = None,
        start: int = 0,
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(frame_index, HxWxC uint8)`` for the requested (sorted) indices or all frames.

        ``start`` skips the frames before it when ``indices`` is None. A frame
        that fails to read is reported to ``on_error`` and skipped; a requested
        frame the project does not hold (not embedded) is reported as ``absent``.
        """
        if self._media is not None:
            # A forced-gray video is the red channel to sleap-io even for a colour model.
            gray = self.info.grayscale
            for index, frame in self._media.iter_frames(
                indices, 1 if gray else channels, on_error, start
            ):
                yield index, _coerce(frame, channels)
            return
        yield from self._iter_stored(indices, channels, on_error, start)

    def _iter_stored(
        self,
        indices: Sequence[int] | None,
        channels: int,
        on_error: ErrorCallback | None,
        start: int,
    ) -> Iterator[tuple[int, np.ndarray]]:
        errors = RunCollector(on_error)
        if indices is None:
            wanted = [i for i in self._available if i >= start]
        else:
            wanted = sorted(set(indices))
        held = set(self._available)
        size = (self.info.height, self.info.width)
        try:
            for index in wanted:
                if index not in held:
                    errors.add(index, f"not stored in {self.path.name}", ABSENT)
                    continue
                try:
                    frame = self.video[index]
                except Exception as exc:  # imageio/h5py: one damaged image costs one frame
                    errors.add(index, f"decode error: {error_reason(exc)}", DECODE_ERROR)
                    continue
                if frame.shape[:2] != size:
                    got = f"{frame.shape[0]}x{frame.shape[1]}"
                    errors.add(index, f"frame is {got}, not {size[0]}x{size[1]}", DECODE_ERROR)
                    continue
                errors.flush()  # report in frame order, and never hold an error while suspended
                yield index, _coerce(frame, channels)
            errors.flush()
        finally:
            _close(self.video)
