"""Stream frames from a video file with PyAV, never loading the whole video.

Frames are decoded packet by packet so one corrupt packet costs one frame,
not the run: frames that never come out of the decoder are reported through
``on_error`` and skipped.

A frame's index is its position in presentation order, which is what sleap-io
(and so SLEAP and sleap-nn) means by it: they count decoded frames. It is *not*
derived from the timestamp and the frame rate, which misplaces every frame after
a pause or a dropped frame in variable-frame-rate video. The position comes from
a table of the stream's packet timestamps (one demux pass, no decoding), which
also makes seeking exact: a wanted index is looked up, not estimated. That includes
frames missing at the end of a truncated stream (fewer frames than the
container's metadata promises) and frames after a demuxer error, which end
the stream early instead of aborting it. Gray-content videos are returned
with one channel equal to the red channel of the RGB decode, which is exactly
what sleap-io returns, so pixels match what sleap-nn's predictor sees.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from sleap_infer.core.errors import VideoError
from sleap_infer.sources.slp import error_reason

# Requested frames further ahead than this are reached by seeking instead of decoding.
SEEK_GAP_FRAMES = 256
# sleap-io knows no rate for embedded frames or image folders; VideoReader assumes the same.
DEFAULT_FPS = 30.0
# The names sleap-io's Video opens (its ``Video.EXTS``, matched at the end of the lower-case
# name): an output referencing any other video (.webm, .m4v, .mpg, .wmv...) does not open
# its video in sleap-io or SLEAP, though the predictions in it are fine.
SLEAP_IO_VIDEO_EXTS = (
    *("mp4", "avi", "mov", "mj2", "mkv"),
    *("h5", "hdf5", "slp"),
    *("png", "jpg", "jpeg", "tif", "tiff", "bmp"),
    "seq",
)


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
    # Degrees (counterclockwise, a multiple of 90) the frames are turned by to honour the
    # container's display-matrix flag, as sleap-io (OpenCV) shows them; height and width
    # are those of the turned frames.
    rotation: int = 0
    # An image sequence's frames, in order (absolute): the output references these
    # instead of ``path``, which is then the folder they were found in.
    files: tuple[str, ...] = ()
    # One-line warnings about the input that do not stop a run (a container overcounting
    # its frames, a video sleap-io cannot open, images sleap-io leaves out of a folder).
    notes: tuple[str, ...] = ()
    # How an output's sio.Video reopens the input when it is not a plain video file
    # (an HDF5 dataset: type, dataset, input_format); merged into its backend metadata.
    backend: dict[str, str] = field(default_factory=dict)

    def channels_for(self, model_channels: int) -> int:
        """Channels to emit: 1 only when the model wants gray and the content is gray."""
        return 1 if model_channels == 1 and self.grayscale else 3


# FrameError.kind values.
DECODE_ERROR = "decode"  # the decoder rejected the frame's data
MISSING_AT_END = "end"  # the stream ended before this frame (truncated video)
ABSENT = "absent"  # the source holds no such frame (a .pkg.slp embeds only some)
CORRUPT = "corrupt"  # decoded from damaged data (kept with keep_corrupt_frames)
CORRUPT_REASON = "decoder flagged the frame corrupt"
TAINTED_REASON = "predicted from a corrupt frame (after it, before the next keyframe)"


@dataclass(frozen=True)
class FrameError:
    """``count`` consecutive frames from ``index`` that could not be decoded.

    Runs instead of single frames so that a truncated million-frame video is
    one record, not a million.
    """

    index: int
    reason: str
    kind: str = DECODE_ERROR
    count: int = 1

    @property
    def last(self) -> int:
        return self.index + self.count - 1

    def describe(self) -> str:
        where = f"frame {self.index}" if self.count == 1 else f"frames {self.index}-{self.last}"
        return f"{where}: {self.reason}"


def runs(indices: Iterable[int]) -> Iterator[tuple[int, int]]:
    """``(first, count)`` for each run of consecutive integers in sorted ``indices``."""
    first = prev = None
    for i in indices:
        if prev is not None and i == prev + 1:
            prev = i
            continue
        if first is not None:
            yield first, prev - first + 1
        first = prev = i
    if first is not None:
        yield first, prev - first + 1


ErrorCallback = Callable[[FrameError], None]


def _open(path: Path) -> av.container.InputContainer:
    try:
        # A URL input (sources/remote.py's UrlPath) gives PyAV a file-like over HTTP.
        source = path.av_source() if hasattr(path, "av_source") else str(path)
        container = av.open(source, mode="r")
    except FileNotFoundError as exc:
        raise VideoError(f"{path}: video not found") from exc
    except PermissionError as exc:
        raise VideoError(f"{path}: permission denied") from exc
    except (av.error.FFmpegError, OSError, UnicodeDecodeError) as exc:
        raise VideoError(f"{path}: not a readable video ({_diagnose(path, exc)})") from exc
    if not container.streams.video:
        container.close()
        raise VideoError(f"{path}: contains no video stream (zero frames or not a video)")
    return container


def _diagnose(path: Path, exc: BaseException) -> str:
    """A more useful reason than FFmpeg's "Invalid data" for the common broken files."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(12)
    except OSError:
        return error_reason(exc)
    if size == 0:
        return "empty file"
    if head[4:8] == b"ftyp" and not _has_mp4_box(path, b"moov"):
        return "no 'moov' index atom: the file is truncated or its recording was never finalised"
    return error_reason(exc)


def _has_mp4_box(path: Path, box: bytes) -> bool:
    """Whether a top-level ISO-BMFF box of this type exists (walks box headers only)."""
    size = path.stat().st_size
    offset = 0
    with path.open("rb") as fh:
        while offset + 8 <= size:
            fh.seek(offset)
            header = fh.read(16)
            length = int.from_bytes(header[:4], "big")
            if header[4:8] == box:
                return True
            if length == 1 and len(header) == 16:
                length = int.from_bytes(header[8:16], "big")
            elif length == 0:
                return False  # box runs to the end of the file
            if length < 8:
                return False
            offset += length
    return False


class FrameTable:
    """Presentation timestamps of a stream's frames, sorted: position = frame index.

    Built from the demuxer's packets without decoding. Packets FFmpeg marks
    discard (the lead-in kept by ``ffmpeg -ss ... -c copy`` behind an edit list,
    which the decoder drops) have no index, exactly as when counting decoded frames.
    """

    def __init__(self, pts: list[int]) -> None:
        self.pts = sorted(pts)

    @classmethod
    def scan(cls, path: Path) -> FrameTable | None:
        """The table, or None when timestamps cannot place frames (missing or repeated)."""
        container = _open(path)
        stamps: list[int] = []
        try:
            stream = container.streams.video[0]
            try:
                for packet in container.demux(stream):
                    if packet.size == 0 or packet.is_discard:
                        continue
                    if packet.pts is None:
                        return None
                    stamps.append(int(packet.pts))
            except av.error.FFmpegError:
                pass  # damage past here: the frames read so far keep their places
        finally:
            container.close()
        table = cls(stamps)
        if len(set(table.pts)) != len(table.pts):
            return None
        return table

    def __len__(self) -> int:
        return len(self.pts)

    def index_of(self, pts: int | None) -> int | None:
        if pts is None:
            return None
        k = bisect_left(self.pts, pts)
        return k if k < len(self.pts) and self.pts[k] == pts else None

    def pts_of(self, index: int) -> int | None:
        return self.pts[index] if 0 <= index < len(self.pts) else None


class VideoReader:
    """A video file: metadata at construction, frames on demand via :meth:`iter_frames`.

    Each :meth:`iter_frames` call opens its own container, so a reader can be
    iterated from a decode thread while the main thread only reads ``info``.

    Frames FFmpeg flags corrupt (it concealed damage in them) are bad frames,
    reported with kind :data:`CORRUPT`: points predicted on smeared pixels look
    plausible and are wrong. FFmpeg flags only the frames it concealed, not the
    ones predicted from them, which carry the damage on to the next keyframe
    (with one keyframe per video, to the end): those are bad frames of the same
    kind too. ``keep_corrupt`` yields them like any other frame.
    """

    def __init__(self, path: str | Path, threads: int = 0, keep_corrupt: bool = False) -> None:
        self.path = path if isinstance(path, Path) else Path(path)  # keeps a UrlPath
        self.keep_corrupt = keep_corrupt
        if self.path.is_dir():
            raise VideoError(f"{self.path}: is a directory, not a video")
        if not self.path.exists():
            raise VideoError(f"{self.path}: video not found")
        self.threads = threads
        self._table: FrameTable | None = None
        self._table_scanned = False
        self._table_lock = threading.Lock()
        container = _open(self.path)
        try:
            stream = container.streams.video[0]
            rate = stream.average_rate or stream.guessed_rate or Fraction(30)
            self._rate = Fraction(rate)
            self._time_base = stream.time_base or Fraction(1, 90000)
            first = None
            try:
                for frame in container.decode(stream):
                    first = frame
                    break
            except av.error.FFmpegError as exc:
                raise VideoError(
                    f"{self.path}: cannot decode first frame ({error_reason(exc)})"
                ) from exc
            if first is None:
                raise VideoError(f"{self.path}: video has no decodable frames")
            self._turns = _quarter_turns(first)
            rgb = _pixels(first, 3, self._turns)
            # Samples an edit list cuts off (``ffmpeg -ss ... -c copy``) are in the count
            # but never come out of the decoder.
            discarded = sum(1 for entry in stream.index_entries if entry.is_discard)
            n_frames = int(stream.frames or 0) - discarded
            indexed = len(stream.index_entries) - discarded
            notes = list(self._sleap_io_note())
            if 0 < indexed < n_frames and self._holds_only(indexed):
                notes.append(
                    f"{self.path}: its header says {n_frames} frames but the file holds "
                    f"{indexed}, all present (the header overcounts; nothing is cut off or "
                    f"damaged): predicting and recording {indexed} frames"
                )
                n_frames = indexed
            if n_frames <= 0:
                duration = stream.duration or 0
                if duration:
                    n_frames = round(float(duration * self._time_base) * float(self._rate))
                elif container.duration:
                    n_frames = round(container.duration / av.time_base * float(self._rate))
            self.info = VideoInfo(
                # Absolute (not resolved: a lab's symlinked data path is what it should see),
                # so the output's video reference works from any working directory.
                path=self.path.absolute(),
                n_frames=max(n_frames, 1),
                fps=float(self._rate),
                height=int(rgb.shape[0]),
                width=int(rgb.shape[1]),
                grayscale=bool(
                    np.array_equal(rgb[..., 0], rgb[..., 1])
                    and np.array_equal(rgb[..., 0], rgb[..., 2])
                ),
                codec=stream.codec_context.name,
                rotation=90 * self._turns,
                notes=tuple(notes),
            )
        finally:
            container.close()

    def _holds_only(self, indexed: int) -> bool:
        """Whether the stream holds exactly the ``indexed`` frames its container's index
        lists, while the header promises more.

        An AVI's header (``dwTotalFrames``) can overcount by a frame or more that was never
        written, while its ``idx1`` index and its data agree: a healthy file, not a
        truncated one (it used to fail the run as "truncated"). A truncated file's index
        disagrees with its data: an MP4 indexes frames whose bytes are gone, a cut AVI
        loses its index and FFmpeg lists only what it has read so far. One demux pass
        (no decoding) counts the packets; its table is the one frame placement uses anyway.
        """
        table = self.frame_table()
        return table is not None and len(table) == indexed

    def _sleap_io_note(self) -> tuple[str, ...]:
        """A warning when sleap-io cannot open this video by its name (.webm and others)."""
        if self.path.name.lower().endswith(SLEAP_IO_VIDEO_EXTS):
            return ()
        suffix = self.path.suffix or "(no suffix)"
        return (
            f"{self.path}: sleap-io (and so SLEAP) cannot open {suffix} videos, so an .slp "
            f"of it will not open its video there (the predictions are fine); convert it, "
            f"e.g. ffmpeg -i {self.path.name} {self.path.stem}.mp4, to view them in SLEAP",
        )

    def channels_for(self, model_channels: int) -> int:
        return self.info.channels_for(model_channels)

    def frame_table(self) -> FrameTable | None:
        """The stream's :class:`FrameTable`, scanned once on first use (thread-safe)."""
        with self._table_lock:
            if not self._table_scanned:
                self._table = FrameTable.scan(self.path)
                self._table_scanned = True
            return self._table

    def _index_of(self, frame: av.VideoFrame, fallback: int) -> int:
        """The frame's place in the table; without one (no usable timestamps), the count."""
        table = self.frame_table()
        found = None if table is None else table.index_of(frame.pts)
        return fallback if found is None else found

    def _seek_target(self, index: int) -> int | None:
        """The timestamp to seek to for frame ``index``; None when it cannot be placed."""
        table = self.frame_table()
        return None if table is None else table.pts_of(index)

    def iter_frames(
        self,
        indices: Sequence[int] | None = None,
        channels: int = 3,
        on_error: ErrorCallback | None = None,
        start: int = 0,
    ) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(frame_index, HxWxC uint8)`` for the requested (sorted) indices or all frames.

        ``start`` skips (by seeking) the frames before it when ``indices`` is None.
        Frames that never decode are reported to ``on_error`` and skipped; a
        demuxer error ends the stream early (the rest is reported missing)
        instead of raising, so what was decoded so far is never lost.
        """
        wanted = None if indices is None else sorted(set(indices))
        if wanted is not None and not wanted:
            return
        losses = _LossReporter(on_error, wanted, start)
        cursor = _DecodeCursor(wanted, start, losses, self._index_of, self._seek_target)
        container = _open(self.path)
        try:
            stream = container.streams.video[0]
            stream.thread_type = "AUTO"
            stream.thread_count = self.threads
            while cursor.seek_if_asked(container, stream):
                for index, frame, damage in cursor.demux_pass(container, stream):
                    if damage is not None and not self.keep_corrupt:
                        losses.corrupt(index, damage)
                    else:
                        yield index, _pixels(frame, channels, self._turns)
                if cursor.done:
                    return  # every wanted frame is out: nothing is missing, so no tail
                if cursor.seek_to is None:
                    break  # the stream ran out or the demuxer gave up
            cursor.report_tail(self.info.n_frames)
        finally:
            losses.flush()
            container.close()


SWSCALE_THREADS = 1
"""Threads for each frame's conversion to RGB. PyAV 17+ gives every frame a new swscale
context, and at its default (0: one thread per core) that context starts and joins a
pool of threads per frame, 2 thread creations a frame on 2 cores. Over 300 frames
(``benchmarks/rgb_convert.py``, PyAV 18.1, 2 vCPUs) the conversion added 0.10-0.15 s
to the decoding's 0.08 s of ``centered_pair_small.mp4`` at the default and 0.02 s on one
thread; on ``small_robot.mp4`` (560 x 320, played twice) 0.55-0.59 s against 0.10-0.15 s
(CPU 0.39 s against 0.26 s). The pixels are the same (tested). The decoder runs threads
of its own, and the network the other cores."""


def _pixels(frame: av.VideoFrame, channels: int, turns: int = 0) -> np.ndarray:
    """Convert only frames that are yielded: the RGB decode is the costly part."""
    rgb = frame.to_ndarray(format="rgb24", threads=SWSCALE_THREADS)
    if turns:
        rgb = np.rot90(rgb, turns)
    return np.ascontiguousarray(rgb[..., :1] if channels == 1 else rgb)


def _quarter_turns(frame: av.VideoFrame) -> int:
    """Counterclockwise quarter turns the display matrix asks for (phones record sideways
    and flag it). sleap-io's default OpenCV reader applies it, so SLEAP and sleap-nn see
    turned frames; predicting unturned ones would misplace every point."""
    try:
        degrees = frame.rotation
    except (AttributeError, ValueError):
        return 0
    return round((degrees or 0) / 90) % 4


class _Step(Enum):
    """What to do with a decoded frame once its index is known."""

    YIELD = "yield"  # a frame the caller asked for
    SKIP = "skip"  # not wanted, and the next wanted frame is near enough to decode up to
    SEEK = "seek"  # the next wanted frame is far ahead: seeking beats decoding up to it
    DONE = "done"  # every wanted frame has been placed


class _DecodeCursor:
    """Where one :meth:`VideoReader.iter_frames` call stands, kept across seeks.

    Seeking restarts the demuxer, so the state that must survive it (what is
    still wanted, what was decoded, the error not yet blamed on a frame) lives
    here rather than in loop variables of one long generator.
    """

    def __init__(
        self,
        wanted: list[int] | None,
        start: int,
        losses: _LossReporter,
        index_of: Callable[[av.VideoFrame, int], int],
        seek_target: Callable[[int], int | None],
    ) -> None:
        self.wanted = wanted
        self.start = start
        self.losses = losses
        self.index_of = index_of
        self.seek_target = seek_target
        self.pos = 0  # next position in ``wanted``
        first = start if wanted is None else wanted[0]
        self.seek_to: int | None = first if self._seekable(first, 0) else None
        # The target of the last seek. A seek lands on the keyframe before its target; when
        # the stream ends before the target (metadata promising more frames than exist), it
        # lands far short again, and seeking once more would loop forever: decode on instead.
        self.sought: int | None = None
        # A seek lands on the last keyframe *decoded* before the target's timestamp; with
        # reordered (B-) frames that keyframe can be *shown* after the target. Then the seek
        # is redone from ``back`` frames earlier (doubling), as OpenCV does.
        self.back = 0
        self.landing: int | None = None  # the target of a seek whose first frame is still due
        self.last = -1  # index of the last decoded frame; -1 = none since (re)start
        self.furthest = -1  # furthest frame decoded in this call, across seeks
        self.from_origin = True  # no seek yet: a gap before the first decoded frame is a loss
        self.pending: str | None = None  # latest decoder error not yet tied to lost frames
        self.ended_early: str | None = None
        self.done = False
        self.tainted = False  # a corrupt frame came out since the last clean keyframe

    def seek_if_asked(
        self, container: av.container.InputContainer, stream: av.video.stream.VideoStream
    ) -> bool:
        """Seek to ``seek_to`` if one is pending; False when the seek failed, ending the stream."""
        if self.seek_to is None:
            return True
        timestamp = self.seek_target(max(0, self.seek_to - self.back))
        if timestamp is None:  # checked before asking; kept so a seek can never guess
            self.seek_to = None
            return True
        try:
            container.seek(timestamp, stream=stream, backward=True)
        except av.error.FFmpegError as exc:
            self.ended_early = f"cannot seek to frame {self.seek_to} ({error_reason(exc)})"
            return False
        # Frames decoded before a seek say nothing about gaps after it.
        self.sought = self.landing = self.seek_to
        self.last, self.from_origin, self.seek_to = -1, False, None
        self.tainted = False  # decoding restarts at a keyframe
        return True

    def _seekable(self, target: int, here: int) -> bool:
        """Whether reaching ``target`` from ``here`` is worth a seek and can be done exactly."""
        return target - here > SEEK_GAP_FRAMES and self.seek_target(target) is not None

    def _overshot(self, index: int) -> bool:
        """After a seek, whether its first frame lies past the target (then seek again, earlier)."""
        target, self.landing = self.landing, None
        if target is None or index <= target or target - self.back <= 0:
            return False
        self.back = max(2 * self.back, 16)
        self.seek_to = target
        return True

    def demux_pass(
        self, container: av.container.InputContainer, stream: av.video.stream.VideoStream
    ) -> Iterator[tuple[int, av.VideoFrame, str | None]]:
        """Decode packet by packet from here until the stream ends, a seek is due or all is done.

        Yields each wanted frame with the reason it is damaged (None when it is not).

        A bad packet only costs its frames (remembered in ``pending``); a
        demuxer error ends the pass like the end of the stream does.
        """
        packets = container.demux(stream)
        while True:
            try:
                packet = next(packets)
            except StopIteration:
                return
            except av.error.FFmpegError as exc:
                self.ended_early = f"stream ended early ({error_reason(exc)})"
                return
            try:
                decoded = packet.decode()
            except av.error.FFmpegError as exc:
                self.pending = f"decode error: {error_reason(exc)}"
                continue
            for frame in decoded:
                index = self._record(frame)
                if self._overshot(index):
                    return
                damage = self._damage(frame)
                step = self._place(index)
                if step is _Step.YIELD:
                    yield index, frame, damage
                elif step is not _Step.SKIP:
                    return  # SEEK or DONE: the caller acts on ``seek_to`` / ``done``

    def _damage(self, frame: av.VideoFrame) -> str | None:
        """Why this frame's pixels are damaged, or None: flagged by FFmpeg, or shown after a
        flagged frame and before the next clean keyframe (it may be predicted from it)."""
        if frame.is_corrupt:
            self.tainted = True
            return CORRUPT_REASON
        if frame.key_frame:
            self.tainted = False
        return TAINTED_REASON if self.tainted else None

    def _record(self, frame: av.VideoFrame) -> int:
        """Index a decoded frame and report the frames the decoder skipped before it."""
        index = self.index_of(frame, self.last + 1)
        if index <= self.last:
            index = self.last + 1  # timestamps went backwards or repeat: trust the order
        if self.last >= 0 or self.from_origin:
            self.losses.gap(self.last + 1, index, self.pending or "frame missing from stream")
        self.pending = None
        self.last = index
        self.furthest = max(self.furthest, index)
        return index

    def _place(self, index: int) -> _Step:
        """Whether frame ``index`` is yielded, skipped, or shows a seek (or the end) is due."""
        if self.wanted is None:
            return _Step.SKIP if index < self.start else _Step.YIELD
        while self.pos < len(self.wanted) and self.wanted[self.pos] < index:
            self.pos += 1
        if self.pos >= len(self.wanted):
            self.done = True
            return _Step.DONE
        target = self.wanted[self.pos]
        if target == index:
            self.pos += 1
            return _Step.YIELD
        if target != self.sought and self._seekable(target, index):
            self.seek_to = target
            return _Step.SEEK
        return _Step.SKIP

    def report_tail(self, n_frames: int) -> None:
        """Report the frames the stream never reached, blaming the most specific cause known."""
        reason = self.ended_early or self.pending
        if reason is None:
            after = "before any frame" if self.furthest < 0 else f"after frame {self.furthest}"
            reason = f"stream ended {after}; metadata says {n_frames} frames"
        if self.wanted is not None:
            tail: Iterable[int] = self.wanted[self.pos :]
        else:
            tail = range(max(self.last + 1, self.start), n_frames)
        self.losses.tail(tail, reason)


class _LossReporter:
    """Turns decode gaps and a short stream into :class:`FrameError` runs for ``on_error``."""

    def __init__(
        self, on_error: ErrorCallback | None, wanted: list[int] | None, start: int
    ) -> None:
        self.on_error = on_error
        self.wanted = None if wanted is None else set(wanted)
        self.start = start
        self.corrupted = RunCollector(on_error)

    def corrupt(self, index: int, reason: str) -> None:
        """Frame ``index`` (a wanted one) decoded from damaged data."""
        self.corrupted.add(index, reason, CORRUPT)

    def flush(self) -> None:
        self.corrupted.flush()

    def _emit(self, indices: Iterable[int], reason: str, kind: str) -> None:
        self.flush()  # keep reports in frame order
        if self.on_error is None:
            return
        for first, count in runs(indices):
            self.on_error(FrameError(first, reason, kind, count))

    def gap(self, lo: int, hi: int, reason: str) -> None:
        """Frames ``lo..hi-1`` were skipped by the decoder."""
        if hi <= lo:
            return
        if self.wanted is None:
            lo = max(lo, self.start)
            self._emit(range(lo, hi), reason, DECODE_ERROR)
        else:
            self._emit((i for i in range(lo, hi) if i in self.wanted), reason, DECODE_ERROR)

    def tail(self, indices: Iterable[int], reason: str) -> None:
        """Frames the stream never reached."""
        self._emit(indices, reason, MISSING_AT_END)


class RunCollector:
    """Merges per-frame errors into runs of consecutive frames with the same cause."""

    def __init__(self, on_error: ErrorCallback | None) -> None:
        self.on_error = on_error
        self.run: FrameError | None = None

    def add(self, index: int, reason: str, kind: str) -> None:
        run = self.run
        if run is not None and (run.last + 1, run.reason, run.kind) == (index, reason, kind):
            self.run = FrameError(run.index, reason, kind, run.count + 1)
            return
        self.flush()
        self.run = FrameError(index, reason, kind)

    def flush(self) -> None:
        if self.run is not None and self.on_error is not None:
            self.on_error(self.run)
        self.run = None
