"""Stream frames from a video file with PyAV, never loading the whole video.

Frames are decoded packet by packet so one corrupt packet costs one frame,
not the run: the frames it would have produced are reported through
``on_error`` (with their indices, recovered from timestamps) and skipped.
Gray-content videos are returned with one channel equal to the red channel of
the RGB decode, which is exactly what sleap-io returns, so pixels match what
sleap-nn's predictor sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from sleap_infer.errors import VideoError

# Requested frames further ahead than this are reached by seeking instead of decoding.
SEEK_GAP_FRAMES = 256


@dataclass(frozen=True)
class VideoInfo:
    """Container metadata plus what the first frame tells."""

    path: Path
    n_frames: int  # from metadata (estimated from duration when the container lacks it)
    fps: float
    height: int
    width: int
    grayscale: bool  # R == G == B on the first frame
    codec: str


@dataclass(frozen=True)
class FrameError:
    """A frame that could not be decoded."""

    index: int | None
    reason: str


ErrorCallback = Callable[[FrameError], None]


def _open(path: Path) -> av.container.InputContainer:
    try:
        container = av.open(str(path), mode="r")
    except FileNotFoundError as exc:
        raise VideoError(f"{path}: video not found") from exc
    except PermissionError as exc:
        raise VideoError(f"{path}: permission denied") from exc
    except (av.error.FFmpegError, OSError, UnicodeDecodeError) as exc:
        raise VideoError(f"{path}: not a readable video ({_reason(exc)})") from exc
    if not container.streams.video:
        container.close()
        raise VideoError(f"{path}: contains no video stream")
    return container


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return str(text).splitlines()[0]


class VideoReader:
    """A video file: metadata at construction, frames on demand via :meth:`iter_frames`.

    Each :meth:`iter_frames` call opens its own container, so a reader can be
    iterated from a decode thread while the main thread only reads ``info``.
    """

    def __init__(self, path: str | Path, threads: int = 0) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise VideoError(f"{self.path}: is a directory, not a video")
        if not self.path.exists():
            raise VideoError(f"{self.path}: video not found")
        self.threads = threads
        container = _open(self.path)
        try:
            stream = container.streams.video[0]
            rate = stream.average_rate or stream.guessed_rate or Fraction(30)
            self._rate = Fraction(rate)
            self._time_base = stream.time_base or Fraction(1, 90000)
            self._start = stream.start_time
            first = None
            try:
                for frame in container.decode(stream):
                    first = frame
                    break
            except av.error.FFmpegError as exc:
                raise VideoError(
                    f"{self.path}: cannot decode first frame ({_reason(exc)})"
                ) from exc
            if first is None:
                raise VideoError(f"{self.path}: video has no decodable frames")
            if self._start is None:
                self._start = first.pts
            rgb = first.to_ndarray(format="rgb24")
            n_frames = int(stream.frames or 0)
            if n_frames <= 0:
                duration = stream.duration or 0
                if duration:
                    n_frames = round(float(duration * self._time_base) * float(self._rate))
                elif container.duration:
                    n_frames = round(container.duration / av.time_base * float(self._rate))
            self.info = VideoInfo(
                path=self.path,
                n_frames=max(n_frames, 1),
                fps=float(self._rate),
                height=int(rgb.shape[0]),
                width=int(rgb.shape[1]),
                grayscale=bool(
                    np.array_equal(rgb[..., 0], rgb[..., 1])
                    and np.array_equal(rgb[..., 0], rgb[..., 2])
                ),
                codec=stream.codec_context.name,
            )
        finally:
            container.close()

    def channels_for(self, model_channels: int) -> int:
        """Channels to emit: 1 only when the model wants gray and the content is gray."""
        return 1 if model_channels == 1 and self.info.grayscale else 3

    def _index_of(self, frame: av.VideoFrame, fallback: int) -> int:
        if frame.pts is None or self._start is None:
            return fallback
        seconds = float((frame.pts - self._start) * self._time_base)
        return round(seconds * float(self._rate))

    def _seek_target(self, index: int) -> int:
        return int(self._start or 0) + int(Fraction(index) / self._rate / self._time_base)

    def iter_frames(
        self,
        indices: Sequence[int] | None = None,
        channels: int = 3,
        on_error: ErrorCallback | None = None,
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(frame_index, HxWxC uint8)`` for the requested (sorted) indices or all frames.

        Frames that fail to decode are reported to ``on_error`` and skipped.
        """
        wanted = None if indices is None else sorted(set(indices))
        wanted_set = None if wanted is None else set(wanted)
        pos = 0  # next position in ``wanted``
        container = _open(self.path)
        try:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            stream.thread_count = self.threads
            last = -1
            seek_to: int | None = None
            if wanted and wanted[0] > SEEK_GAP_FRAMES:
                seek_to = wanted[0]
            while True:
                if seek_to is not None:
                    container.seek(self._seek_target(seek_to), stream=stream, backward=True)
                    last = -1
                    seek_to = None
                restart = False
                for packet in container.demux(stream):
                    try:
                        decoded = packet.decode()
                    except av.error.FFmpegError as exc:
                        if on_error is not None:
                            on_error(FrameError(last + 1, f"decode error: {_reason(exc)}"))
                        continue
                    for frame in decoded:
                        index = self._index_of(frame, last + 1)
                        if index <= last:
                            index = last + 1
                        if on_error is not None and last >= 0:
                            for lost in range(last + 1, index):
                                if wanted_set is None or lost in wanted_set:
                                    on_error(FrameError(lost, "frame missing from stream"))
                        last = index
                        if wanted is not None:
                            while pos < len(wanted) and wanted[pos] < index:
                                pos += 1
                            if pos >= len(wanted):
                                return
                            if wanted[pos] != index:
                                if wanted[pos] - index > SEEK_GAP_FRAMES:
                                    seek_to = wanted[pos]
                                    restart = True
                                    break
                                continue
                            pos += 1
                        rgb = frame.to_ndarray(format="rgb24")
                        yield index, (np.ascontiguousarray(rgb[..., :1]) if channels == 1 else rgb)
                    if restart:
                        break
                if not restart:
                    return
        except av.error.FFmpegError as exc:
            raise VideoError(f"{self.path}: decoding failed ({_reason(exc)})") from exc
        finally:
            container.close()
