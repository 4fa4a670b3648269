"""Frames in memory through a pipeline into a :class:`~sleap_infer.pipeline.result.Prediction`.

No journal and no file: the batches are kept as they come out of the same
runner, post-filters and online tracker a file run uses, so the points are
the ones ``infer predict`` writes for the same frames. A path (video, image
folder, SLEAP project) is opened with the same readers as ``infer predict``;
arrays, lists and ``sio.Video`` objects through :mod:`sleap_infer.sources.arrays`.
A frame the decoder cannot read is left out of the result with a warning
(``Prediction.provenance["bad_frames"]``), as a file run records it.

:func:`stream_frames` is the same run handed on frame by frame (a generator over
the runner: memory stays flat on any video's length). Input that could mean
two things is refused in one line rather than guessed: a ``(3, H, W)`` array, a
float frame index, a boolean list that is not a mask of every frame.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import sleap_io as sio

from sleap_infer.core.errors import UsageError, VideoError
from sleap_infer.core.late_tracks import lay_over
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.products import Product
from sleap_infer.core.provenance import now_iso
from sleap_infer.pipeline.linked import link_batches, prepares, relabelled
from sleap_infer.pipeline.loaded import Loaded
from sleap_infer.pipeline.models import tracking_carrier
from sleap_infer.pipeline.progress import FrameProgress, wanted
from sleap_infer.pipeline.result import FrameResult, Prediction, batch_frames, stack
from sleap_infer.pipeline.video_job import (
    open_source,
    project_frames,
    project_selection,
    project_video,
    provenance,
    small_frame_warning,
    start_tracker,
)
from sleap_infer.runner.runner import RunStats
from sleap_infer.sources.arrays import (
    CHANNELS,
    ArrayFrames,
    SioVideoFrames,
    as_frames,
    is_sio_video,
    stack_frames,
)
from sleap_infer.sources.frames import select_frames
from sleap_infer.sources.video import FrameError, VideoInfo
from sleap_infer.tracking.base import MASKS
from sleap_infer.tracking.online import track_names, tracking_provenance
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.writers.labels import make_skeleton, make_video

IN_MEMORY = "<in-memory frames>"
QUEUE_BATCHES = 2  # batches a stream holds ahead of its reader


class FramesError(UsageError, ValueError):
    """Frames or a frame selection that could mean two things (also a ``ValueError``)."""


class FramesTypeError(UsageError, TypeError):
    """A source, frame selection or batch size of the wrong kind (also a ``TypeError``)."""


class MissingVideoError(VideoError, FileNotFoundError):
    """A ``sio.Video`` whose file is not there (also a ``FileNotFoundError``)."""


def _is_tensor(obj: object) -> bool:
    """A torch tensor (checked without importing torch)."""
    cls = type(obj)
    return cls.__module__.startswith("torch") and hasattr(obj, "detach")


def _to_numpy(obj: Any) -> Any:
    """A torch tensor (any device) as a numpy array, for the array rules; else ``obj``."""
    if _is_tensor(obj):
        return obj.detach().cpu().numpy()
    return obj


def _check_channels_first(array: np.ndarray) -> None:
    """``(3, H, W)`` is one channel-first colour frame as often as three grayscale ones:
    read as frames it predicted three gray images of one colour picture without a word."""
    if array.ndim == 3 and array.shape[0] == 3 and array.shape[-1] not in CHANNELS:
        _, h, w = array.shape
        raise FramesError(
            f"frames of shape {array.shape} are ambiguous: pass one colour frame as "
            f"(H, W, 3), e.g. np.moveaxis(a, 0, -1) -> ({h}, {w}, 3), or three grayscale "
            f"frames as (3, H, W, 1), e.g. a[..., np.newaxis] -> (3, {h}, {w}, 1)"
        )


class _Frames:
    """One source, opened: its frames (numbered), how many, and what the output refers to."""

    def __init__(self, pipeline: Loaded, source: Any, frames: Any) -> None:
        self.bad: list[FrameError] = []
        self.reader: Any = None
        self.video: sio.Video | None = None
        source = _to_numpy(source)
        if isinstance(source, (list, tuple)):
            source = [_to_numpy(f) for f in source]
        self.is_file = isinstance(source, (str, Path)) or is_sio_video(source)
        if isinstance(source, (str, Path)):
            self._open_path(pipeline, source, frames)
            return
        if is_sio_video(source):
            _check_sio_video(source)
            self.memory: Any = SioVideoFrames(source, str(source.filename))
            self.name = str(source.filename)
            self.video = source
            height, width = source.shape[1:3]
        elif isinstance(source, np.ndarray):
            _check_channels_first(source)
            self.memory = ArrayFrames(as_frames(source))
            self.name = IN_MEMORY
            height, width = self.memory.frames.shape[1:3]
        elif isinstance(source, (list, tuple)):
            self.memory = ArrayFrames(stack_frames(source))
            self.name = IN_MEMORY
            height, width = self.memory.frames.shape[1:3]
        else:
            raise FramesTypeError(
                f"cannot predict a {type(source).__name__}: give a uint8 array or torch "
                "tensor, a list of frames, a video / image folder / .slp path, or a sio.Video"
            )
        self.n_frames = self.memory.n_frames
        self.indices = _indices(frames, self.n_frames, self.name)
        self.size_warning = small_frame_warning(
            pipeline, cast(VideoInfo, SimpleNamespace(height=height, width=width)), self.name
        )

    def _open_path(self, pipeline: Loaded, source: str | Path, frames: Any) -> None:
        chosen = project_selection(pipeline, source)
        self.reader = open_source(
            source, chosen, pipeline.options.keep_corrupt_frames, pipeline.options
        )
        info: VideoInfo = self.reader.info
        self.name = str(info.path)
        self.n_frames = info.n_frames
        indices = _indices(frames, info.n_frames, source)
        self.indices = project_frames(source, self.reader, indices, chosen)
        self.video = project_video(self.reader) or make_video(info)
        self.size_warning = small_frame_warning(pipeline, info, source)

    @property
    def total(self) -> int:
        return self.n_frames if self.indices is None else len(self.indices)

    def frame_shape(self, pipeline: Loaded) -> tuple[int, int, int] | None:
        """``(H, W, C)`` of the frames the run hands the layer (None: not known before
        reading one, e.g. a ``sio.Video``), for ``--backend auto``'s first export."""
        if self.reader is not None:
            info = self.reader.info
            return info.height, info.width, self.channels(pipeline)
        if isinstance(self.memory, ArrayFrames):
            h, w, c = self.memory.frames.shape[1:4]
            return int(h), int(w), int(c)
        return None

    def stream(self, pipeline: Loaded) -> Iterator[tuple[int, np.ndarray]]:
        if self.reader is None:
            return self.memory.iter_frames(self.indices)
        return self.reader.iter_frames(self.indices, self.channels(pipeline), self.bad.append)

    def channels(self, pipeline: Loaded) -> int:
        if self.reader is None:
            return pipeline.layer.input_channels
        return self.reader.channels_for(pipeline.layer.input_channels)

    def sio_video(self) -> sio.Video:
        """What the labels refer to; frames in memory get a reference that opens nothing."""
        if self.video is not None:
            return self.video
        _, height, width, channels = self.memory.frames.shape
        meta = {"shape": [self.n_frames, height, width, channels], "grayscale": channels == 1}
        return sio.Video(filename=IN_MEMORY, backend_metadata=meta, open_backend=False)


def _check_sio_video(video: Any) -> None:
    """A ``sio.Video`` that cannot be read, in one line (sleap-io leaves ``backend`` None and
    its ``shape`` None for a missing file: ``TypeError: 'NoneType' ...`` further down)."""
    filename = video.filename
    if video.backend is not None or video.shape is not None:
        return
    if isinstance(filename, str) and not Path(filename).exists():
        raise MissingVideoError(f"{filename}: sio.Video's file does not exist")
    raise VideoError(f"{filename}: sio.Video cannot be read (no backend opened)")


def _indices(frames: Any, n_frames: int, where: object) -> list[int] | None:
    """``frames`` (a ranges string, a range, a list or array of int indices, or a boolean
    mask of all ``n_frames``) within ``0..n_frames-1``. Float indices are refused, not
    truncated; a boolean list is a mask, never the indices 0 and 1."""
    if frames is None:
        return None
    if isinstance(frames, str):
        indices, clamped = select_frames(frames, n_frames, where)
        if clamped:
            warnings.warn(clamped, stacklevel=4)
        return indices
    frames = _to_numpy(frames)
    if isinstance(frames, (int, np.integer, float, np.floating)):
        raise FramesTypeError(
            f"frames={frames!r}: give a list of indices ([{frames}]), a range or '0-99,200'"
        )
    try:
        values = np.asarray(list(frames) if not isinstance(frames, np.ndarray) else frames)
    except TypeError:
        raise FramesTypeError(
            f"frames={frames!r}: give indices, a range, or a string like '0-99,200'"
        ) from None
    if values.dtype.kind == "b":
        if values.shape != (n_frames,):
            raise FramesError(
                f"frames: a boolean mask must have one entry per frame ({n_frames} for "
                f"{where}), not shape {values.shape}; or give indices"
            )
        return np.flatnonzero(values).tolist()
    if values.size and values.dtype.kind not in "iu":
        raise FramesTypeError(
            f"frames: indices must be ints, not {values.dtype} ({values.flat[0]!r}); "
            "a float index is refused, never truncated"
        )
    picked = sorted({int(i) for i in values.reshape(-1)})
    outside = [i for i in picked if not 0 <= i < n_frames]
    if outside:
        raise FramesError(
            f"frames: index {outside[0]} is outside {where}'s {n_frames} frames (0-{n_frames - 1})"
        )
    return picked


def streams(tracking: TrackingOptions | None) -> str | None:
    """Why a run with these tracking options cannot stream (None: it can). A stream hands
    each frame on as soon as it is predicted; these trackers change earlier frames' tracks
    later (a track confirmed after its first frames, or re-tracked at the video's end)."""
    if tracking is None:
        return None
    if prepares(tracking):
        return f"tracker {tracking.tracker!r} re-tracks the whole video at its end"
    if tracking.links:
        return "identity linking relabels the whole video at its end"
    if tracking.tracker == "infer_bytetrack":
        return "tracker 'infer_bytetrack' labels a track's first frames once it is confirmed"
    return None


class _Run:
    """A source opened and checked, with its batch size, tracker and progress display."""

    def __init__(
        self,
        pipeline: Loaded,
        source: Any,
        frames: Any,
        batch_size: int | None,
        progress: bool | None,
    ) -> None:
        self.pipeline = pipeline
        self.opened = _Frames(pipeline, source, frames)
        if self.opened.size_warning:
            warnings.warn(self.opened.size_warning, stacklevel=4)
        self.online = start_tracker(
            pipeline, None, self.opened.channels(pipeline), self.opened.reader
        )
        self.total = self.opened.total
        pipeline.prepare_run(self.total, self.opened.frame_shape(pipeline))
        self.size = _batch_size(pipeline, batch_size, self.total)
        self.display = (
            FrameProgress(Path(self.opened.name).name or self.opened.name)
            if wanted(progress, self.opened.is_file)
            else None
        )

    def run(self, keep: Callable[[BatchPredictions, object], None]) -> RunStats:
        pipeline = self.pipeline
        if self.display is not None:
            self.display.start(self.total)
        try:
            return pipeline.runner.run(
                self.opened.stream(pipeline),
                sink=pipeline.sink(keep, self.online),
                progress=self.display.advance if self.display is not None else None,
                batch_size=self.size,
                keep_images=self.online is not None and self.online.needs_images,
                warmup=self.total > (self.size or pipeline.batch_size),
                on_bad_frame=self.opened.bad.append,
            )
        finally:
            if self.display is not None:
                self.display.close()

    def warn_bad_frames(self) -> None:
        for err in self.opened.bad:
            warnings.warn(f"{self.opened.name}: {err.describe()}", stacklevel=4)


def _batch_size(pipeline: Loaded, batch_size: Any, total: int) -> int | None:
    """``batch_size`` checked (a whole number >= 1) and, as the pipeline's own, never more
    than the frames there are: ``batch_size=10**9`` on 166 frames is one batch of 166, not
    a 489 TiB array of blank frames."""
    if batch_size is None:
        return pipeline.run_batch_size(total)
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise FramesTypeError(f"batch_size={batch_size!r}: must be a whole number >= 1")
    if batch_size < 1:
        raise FramesError(f"batch_size={batch_size}: must be at least 1")
    if pipeline.pads_short_videos:
        return int(batch_size)
    return max(1, min(int(batch_size), total))


def predict_in_memory(
    pipeline: Loaded,
    source: Any,
    frames: str | Sequence[int] | range | np.ndarray | None,
    batch_size: int | None,
    progress: bool | None = None,
) -> Prediction:
    """Predict ``source``'s frames; see :meth:`~sleap_infer.pipeline.pipeline.Pipeline.predict`."""
    run = _Run(pipeline, source, frames, batch_size, progress)
    opened, online = run.opened, run.online
    batches: list[BatchPredictions] = []

    where: dict[int, int] = {}  # frame index -> its batch in ``batches``

    def keep(preds: BatchPredictions, _snapshot: object) -> None:
        if preds.late_tracks is not None:  # a MOT track confirmed: its tentative frames
            late = preds.late_tracks.by_frame()
            for b in sorted({where[f] for f in late if f in where}):
                lay_over(batches[b], late)
            preds.late_tracks = None
        if preds.frame_indices is not None:
            where.update(dict.fromkeys(preds.frame_indices.tolist(), len(batches)))
        batches.append(preds)

    started = now_iso()
    stats = run.run(keep)
    run.warn_bad_frames()
    config = pipeline.layer.config
    n_tracks = online.tracker.n_tracks if online is not None else 0
    names = track_names(n_tracks) if pipeline.tracking else tuple(config.class_names)
    linking: dict[str, Any] = {}
    if prepares(pipeline.tracking):  # sleap-nn's MOT tracks after the pre-pass, as a file's
        from sleap_infer.pipeline.prepared import retrack_batches, with_tracks

        assert pipeline.tracking is not None
        carrier = tracking_carrier(pipeline.models)
        retracked = retrack_batches(
            lambda: batches, pipeline.tracking, carrier, len(pipeline.node_names),
            Product.EMBEDDINGS in pipeline.products,
        )  # fmt: skip
        batches = list(with_tracks(batches, retracked, carrier))
        names = track_names(retracked.n_tracks)
        linking["prepare"] = [retracked.calibration] if retracked.calibration else []
    if pipeline.tracking is not None and pipeline.tracking.links:  # as a file's run does
        masks = tracking_carrier(pipeline.models) == MASKS
        linked = link_batches(lambda: batches, pipeline.tracking, masks)
        batches = list(relabelled(batches, linked.relabel, masks))
        names, linking["linking"] = linked.names, asdict(linked.result)
    record = provenance(pipeline, opened.name, opened.indices)
    if pipeline.tracking is not None:
        record["tracking"] = {**tracking_provenance(pipeline.tracking, online), **linking}
    record.update(
        {
            "inference_start_timestamp": started,
            "inference_end_timestamp": now_iso(),
            "fps": round(stats.fps, 2),
            "bad_frames": [
                {"frame_idx": e.index, "count": e.count, "kind": e.kind, "reason": e.reason}
                for e in opened.bad
            ],
        }
    )
    return Prediction(
        **stack(batches, len(config.node_names)),
        track_names=names,
        node_names=tuple(config.node_names),
        products=pipeline.products,
        video=opened.sio_video(),
        provenance=record,
        skeleton=make_skeleton(config),
        box_categories=pipeline.box_categories,
        mask_output=pipeline.options.mask_output,
        polygon_epsilon=pipeline.options.polygon_epsilon,
        empty_frames=not pipeline.options.no_empty_frames,
        batches=batches,
    )


class _Stopped(Exception):
    """The stream's reader went away: ends the runner's thread at its next batch."""


_DONE = object()


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def stream_frames(
    pipeline: Loaded,
    source: Any,
    frames: str | Sequence[int] | range | np.ndarray | None,
    batch_size: int | None,
    progress: bool | None = None,
) -> Iterator[FrameResult]:
    """One :class:`FrameResult` per frame, in frame order, as batches come off the runner;
    see :meth:`~sleap_infer.pipeline.pipeline.Pipeline.stream`.

    The runner pushes each batch into its sink; a thread runs it into a queue of
    :data:`QUEUE_BATCHES` batches that this generator empties, so at most a few batches
    are alive whatever the video's length. Leaving the loop early stops the runner at
    its next batch (and the source's decoder with it).
    """
    why = streams(pipeline.tracking)
    if why is not None:
        raise UsageError(f"stream() cannot track this way: {why}; use predict()")
    run = _Run(pipeline, source, frames, batch_size, progress)
    results: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_BATCHES)
    stop = threading.Event()

    def put(item: object) -> None:
        while not stop.is_set():
            try:
                results.put(item, timeout=0.1)
                return
            except queue.Full:
                continue
        raise _Stopped

    def keep(preds: BatchPredictions, _snapshot: object) -> None:
        put(preds)

    def work() -> None:
        try:
            run.run(keep)
            put(_DONE)
        except _Stopped:
            pass
        except BaseException as exc:  # handed to the reader, raised in its thread
            with contextlib.suppress(_Stopped):
                put(_Failed(exc))

    thread = threading.Thread(target=work, name="sleap-infer-stream", daemon=True)
    thread.start()
    try:
        while True:
            item = results.get()
            if item is _DONE:
                break
            if isinstance(item, _Failed):
                raise item.exc
            yield from batch_frames(item)
        run.warn_bad_frames()
    finally:
        stop.set()
        thread.join()
