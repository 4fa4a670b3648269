"""Write the drawn frames: an H.264 video through PyAV, or one frame as a PNG.

Both outputs appear by rename only (a hidden temporary sibling, fsync, then
``os.replace``), so an interrupted or failed render never leaves a truncated
video where a previous good one was. Unlike prediction outputs they are
encoded in this process, not a forked writer: there is no HDF5 to crash it,
and the progress callback has to run where the progress bar is.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TypeVar

import av
import numpy as np

from sleap_infer.core.errors import OutputError, UsageError, VideoError
from sleap_infer.journal import fsync_path
from sleap_infer.render.scene import MAX_SCALE, Drawn, Scene
from sleap_infer.sources.frames import check_frames
from sleap_infer.sources.video import FrameError
from sleap_infer.writers.isolate import reason

VIDEO_SUFFIXES = (".mp4", ".mkv", ".mov")
DEFAULT_CRF = 25
MAX_CRF = 51  # libx264's worst quality for 8-bit video
T = TypeVar("T")


@dataclass
class RenderStats:
    """What a render wrote, for the command's summary line."""

    output: Path
    source: Path  # the file the frames were read from
    frames: int = 0  # frames written
    annotated: int = 0  # of which had anything drawn (an instance, mask or box)
    instances: int = 0
    height: int = 0
    width: int = 0
    fps: float = 0.0
    seconds: float = 0.0
    bad_frames: list[FrameError] = field(default_factory=list)  # skipped: could not be decoded
    warnings: list[str] = field(default_factory=list)

    def count(self, drawn: Drawn) -> None:
        self.frames += 1
        self.annotated += (drawn.instances + drawn.shapes) > 0
        self.instances += drawn.instances


def check_options(crf: int, fps: float | None, scale: float) -> None:
    """Reject bad settings before a large labels file is loaded."""
    if not 0 <= crf <= MAX_CRF:
        raise UsageError(f"--crf {crf}: must be 0 (lossless) to {MAX_CRF}")
    if fps is not None and not fps > 0:
        raise UsageError(f"--fps {fps}: must be above 0")
    if not 0 < scale <= MAX_SCALE:
        raise UsageError(f"--scale {scale}: must be above 0 and at most {MAX_SCALE:g}")


def _check_output(output: Path, predictions: Path, suffixes: tuple[str, ...]) -> None:
    if output.suffix.lower() not in suffixes:
        raise UsageError(f"{output}: cannot write '{output.suffix}' (use {', '.join(suffixes)})")
    if output.is_dir():
        raise UsageError(f"{output}: is a folder")
    if output.resolve() == Path(predictions).resolve():
        raise UsageError(f"{output}: the output would replace the predictions; pick another -o")


def _replace_atomically(output: Path, write: Callable[[Path], T]) -> T:
    """``write(tmp)``, then rename onto ``output``; on any failure no file is left behind."""
    tmp = output.with_name(f".{output.stem}.{os.getpid()}.tmp{output.suffix}")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        result = write(tmp)
        fsync_path(tmp)
        os.replace(tmp, output)
    except (OSError, av.error.FFmpegError) as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise OutputError(f"{output}: cannot write ({reason(exc)})") from exc
    except BaseException:  # a VideoError or Ctrl-C mid-render: no stray temporary file either
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
    return result


def _even(image: np.ndarray) -> np.ndarray:
    """Pad odd sizes by one black row/column: H.264 in yuv420p needs even sizes."""
    pad_h, pad_w = image.shape[0] % 2, image.shape[1] % 2
    if not (pad_h or pad_w):
        return image
    return np.pad(image, ((0, pad_h), (0, pad_w), (0, 0)))


def _encode(
    tmp: Path,
    frames: Iterator[Drawn],
    stats: RenderStats,
    crf: int,
    on_frame: Callable[[], None] | None,
) -> None:
    height, width = stats.height, stats.width
    with av.open(str(tmp), mode="w") as container:
        stream = container.add_stream("libx264", rate=Fraction(stats.fps).limit_denominator(1001))
        stream.height, stream.width = height + height % 2, width + width % 2
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": str(crf), "preset": "fast"}
        for drawn in frames:
            frame = av.VideoFrame.from_ndarray(_even(drawn.image), format="rgb24")
            container.mux(stream.encode(frame))
            stats.count(drawn)
            if on_frame is not None:
                on_frame()
        if not stats.frames:
            raise VideoError(f"{stats.source}: none of the selected frames could be decoded")
        container.mux(stream.encode())
    stats.height, stats.width = stream.height, stream.width


def render_video(
    predictions: Path,
    output: Path,
    frames: str | None = None,
    crf: int = DEFAULT_CRF,
    fps: float | None = None,
    scale: float = 1.0,
    on_frame: Callable[[], None] | None = None,
    *,
    video: Path | None = None,
    video_index: int = 0,
    on_start: Callable[[int], None] | None = None,
) -> RenderStats:
    """Draw the predictions of video ``video_index`` over its frames into an H.264 video.

    ``frames`` is a ``--frames`` selection (default: the whole video); ``fps``
    defaults to the video's own rate. ``video`` reads the frames from another
    copy of the video than the one the file names. ``on_start(n)`` gets the
    number of frames about to be drawn, ``on_frame()`` is called after each.
    Frames that cannot be decoded are skipped and listed in ``bad_frames``.
    """
    t0 = time.perf_counter()
    output = Path(output)
    check_options(crf, fps, scale)
    check_frames(frames)
    _check_output(output, predictions, VIDEO_SUFFIXES)
    scene = Scene(Path(predictions), video, video_index, scale)
    if output.resolve() == scene.source.resolve():
        raise UsageError(f"{output}: the output would replace the video it draws on")
    indices, total = scene.select(frames)
    stats = RenderStats(output=output, source=scene.source, warnings=scene.warnings)
    stats.height, stats.width = scene.size
    stats.fps = float(fps) if fps is not None else scene.reader.info.fps
    if on_start is not None:
        on_start(total)
    rendered = scene.render(indices, stats.bad_frames.append)
    _replace_atomically(output, lambda tmp: _encode(tmp, rendered, stats, crf, on_frame))
    stats.seconds = time.perf_counter() - t0
    return stats


def render_frame(
    predictions: Path,
    frame_idx: int,
    output_png: Path,
    *,
    scale: float = 1.0,
    video: Path | None = None,
    video_index: int = 0,
) -> RenderStats:
    """One frame with its predictions drawn, as a PNG (the same drawing as in the video)."""
    t0 = time.perf_counter()
    output_png = Path(output_png)
    check_options(DEFAULT_CRF, None, scale)
    _check_output(output_png, predictions, (".png",))
    scene = Scene(Path(predictions), video, video_index, scale)
    scene.check_frame(frame_idx)
    stats = RenderStats(output=output_png, source=scene.source, warnings=scene.warnings)
    stats.height, stats.width = scene.size
    stats.fps = scene.reader.info.fps
    rendered = next(scene.render([frame_idx], stats.bad_frames.append), None)
    if rendered is None:
        why = stats.bad_frames[0].reason if stats.bad_frames else "no such frame"
        raise VideoError(f"{scene.source}: frame {frame_idx} cannot be read ({why})")
    _replace_atomically(output_png, lambda tmp: tmp.write_bytes(png_bytes(rendered.image)))
    stats.count(rendered)
    stats.seconds = time.perf_counter() - t0
    return stats


def png_bytes(image: np.ndarray) -> bytes:
    """An RGB image as a PNG file's bytes, through FFmpeg's PNG encoder."""
    codec = av.CodecContext.create("png", "w")
    codec.height, codec.width = image.shape[:2]
    codec.pix_fmt = "rgb24"
    codec.time_base = Fraction(1, 1)
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
    frame.pts = 0
    packets = [*codec.encode(frame), *codec.encode(None)]
    return b"".join(bytes(p) for p in packets)
