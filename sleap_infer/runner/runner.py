"""The batched, pipelined prediction loop shared by ``infer predict`` and ``infer bench``."""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from sleap_infer.core.errors import NonFiniteOutputError
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.startup import mark, span
from sleap_infer.core.timing import StageTimer
from sleap_infer.layers.base import InferenceLayer
from sleap_infer.runner.overlap import FinishQueue
from sleap_infer.runner.prefetch import Prefetcher
from sleap_infer.runner.staging import Staged, Stager
from sleap_infer.sources.video import FrameError

NON_FINITE = "nonfinite"
"""``FrameError.kind`` of a frame whose network outputs held NaN or Inf."""


class _Redo:
    """What a batch finishes as when its network outputs were not finite: the runner
    predicts its frames one by one (on its own thread, the queue drained) instead."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _guarded(finish: Callable[[], BatchPredictions]) -> Callable[[], BatchPredictions | _Redo]:
    def finish_or_redo() -> BatchPredictions | _Redo:
        try:
            return finish()
        except NonFiniteOutputError as exc:
            return _Redo(str(exc))

    return finish_or_redo


@dataclass
class FrameBatch:
    """``n`` real frames, zero-padded to the full batch size so shapes stay static."""

    indices: np.ndarray  # (n,)
    frames: np.ndarray  # (batch_size, H, W, C) uint8
    n: int
    staged: Staged | None = None  # the frames on the layer's device, uploaded ahead of use


def make_batches(
    frames: Iterable[tuple[int, np.ndarray]], batch_size: int, pad: bool = True
) -> Iterator[FrameBatch]:
    """Group ``(index, frame)`` pairs into batches; a shape change starts a new batch."""
    buf: list[np.ndarray] = []
    idx: list[int] = []

    def flush() -> FrameBatch:
        n = len(buf)
        stack = np.stack(buf)
        if pad and n < batch_size:
            stack = np.concatenate(
                [stack, np.zeros((batch_size - n, *stack.shape[1:]), stack.dtype)]
            )
        batch = FrameBatch(indices=np.asarray(idx, dtype=np.int64), frames=stack, n=n)
        buf.clear()
        idx.clear()
        return batch

    for i, frame in frames:
        if buf and frame.shape != buf[0].shape:
            yield flush()
        buf.append(frame)
        idx.append(i)
        if len(buf) == batch_size:
            yield flush()
    if buf:
        yield flush()


@dataclass
class RunStats:
    """Where the time went for one run (seconds) and what came out."""

    frames: int = 0
    instances: int = 0
    batches: int = 0
    warmup_s: float = 0.0
    wall_s: float = 0.0  # first timed batch to the end (excludes warmup)
    wait_s: float = 0.0  # main thread waiting for decoded batches
    predict_s: float = 0.0  # layer time: preprocess + network, plus postprocess (maybe overlapped)
    sink_s: float = 0.0  # writer time
    # Exclusive seconds per layer stage (preprocess, network, postprocess, ...), timed batches
    # only: the provenance report's profile. Host seconds: on a GPU the work they queue runs
    # later, so a stage that waits for results absorbs it (``infer bench`` synchronises at
    # every stage boundary instead, for a true per-stage profile).
    stages: dict[str, float] = field(default_factory=dict)

    @property
    def fps(self) -> float:
        return self.frames / self.wall_s if self.wall_s > 0 else 0.0


def staged_batches(batches: Iterable[FrameBatch], stager: Stager) -> Iterator[FrameBatch]:
    """Start each batch's upload as it is made (on the decode thread, ahead of its turn)."""
    for batch in batches:
        batch.staged = stager.stage(batch.frames)
        yield batch


class Runner:
    """Decode -> batch -> (warm up once per input shape) -> preprocess + network ->
    postprocess (on a second thread, overlapping the next batch's network) -> sink, in order.

    Three threads at most: the decoder (:class:`Prefetcher`), this one, and the
    postprocessor (:class:`FinishQueue`, on by default for cuda/mps devices only).
    On CUDA the decoder also uploads each batch from pinned memory on a copy stream,
    and postprocessing runs on a stream of its own (:mod:`sleap_infer.runner.staging`);
    ``stage`` forces that staging on or off (on a CPU it is a no-copy tensor view).
    """

    def __init__(
        self,
        layer: InferenceLayer,
        batch_size: int = 4,
        prefetch: int = 4,
        warmup: bool = True,
        overlap: bool | None = None,
        stage: bool | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.layer = layer
        self.batch_size = batch_size
        self.prefetch = prefetch
        self.do_warmup = warmup
        # Postprocess batch k while the network runs batch k+1: by default only when the
        # network runs on an accelerator. On the CPU the network's thread pool already uses
        # every core, and a postprocessing thread beside it slowed whole runs down (0.73-0.89x
        # on 2 cores, benchmarks/overlap.py).
        self.overlap = layer.device.type != "cpu" if overlap is None else overlap
        self.stage = layer.device.type == "cuda" if stage is None else stage
        self._warmed: set[tuple[int, ...]] = set()

    def warmup(self, shape: tuple[int, ...]) -> float:
        """Warm the layer for a ``(B, H, W, C)`` batch shape once; returns seconds spent."""
        if not self.do_warmup or shape in self._warmed:
            return 0.0
        t0 = time.perf_counter()
        # Zeros that give NaN or Inf are no frame of the video: the real batches are checked.
        with span("warmup"), contextlib.suppress(NonFiniteOutputError):
            self.layer.warmup(shape)  # type: ignore[arg-type]
        self._warmed.add(shape)
        return time.perf_counter() - t0

    def _start(
        self, batch: FrameBatch, stager: Stager | None
    ) -> Callable[[], BatchPredictions | _Redo]:
        """Preprocess and network for ``batch`` now; its postprocessing as a call for later."""
        try:
            if stager is None or batch.staged is None:
                return _guarded(self.layer.start(batch.frames))
            finish = self.layer.start(stager.claim(batch.staged))
        except NonFiniteOutputError as exc:
            redo = _Redo(str(exc))
            return lambda: redo
        batch.staged = None  # the layer holds what it still needs
        return _guarded(stager.finish_on_side_stream(finish) if self.overlap else finish)

    def _one_by_one(
        self,
        batch: FrameBatch,
        reason: str,
        emit: Callable[[FrameBatch, BatchPredictions], None],
        bad_frame: Callable[[FrameError], None],
    ) -> None:
        """``batch``'s frames predicted alone (zero-padded to the batch's shape): a frame
        whose outputs are still not finite goes to ``bad_frame``, the others to ``emit`` as
        they would have. Only after a failed check, so its cost never matters."""
        for i in range(batch.n):
            frames = np.zeros_like(batch.frames)
            frames[0] = batch.frames[i]
            alone = FrameBatch(indices=batch.indices[i : i + 1], frames=frames, n=1)
            try:
                preds = self.layer.predict(frames)
            except NonFiniteOutputError as exc:
                bad_frame(FrameError(int(batch.indices[i]), str(exc) or reason, NON_FINITE))
                continue
            emit(alone, preds)

    def run(
        self,
        frames: Iterable[tuple[int, np.ndarray]],
        sink: Callable[[BatchPredictions], None] | None = None,
        progress: Callable[[int], None] | None = None,
        batch_size: int | None = None,
        keep_images: bool = False,
        warmup: bool = True,
        on_bad_frame: Callable[[FrameError], None] | None = None,
    ) -> RunStats:
        """Predict ``frames`` batch by batch; ``batch_size`` overrides the runner's own for
        this run (the predictor passes a smaller one for a video shorter than a batch).
        ``keep_images`` hands the sink the batch's frames too (``extras["images"]``), for
        trackers that look at pixels (optical flow). ``warmup=False`` skips the warmup for
        this run: a run of one batch has no later batch to keep the cold start away from,
        so warming up would only run the network one more time before it. A frame whose
        network outputs hold NaN or Inf is never handed to the sink: it goes to
        ``on_bad_frame`` (the run's bad-frame record) as a ``nonfinite`` :class:`FrameError`."""
        stats = RunStats()
        timer = StageTimer()
        size = batch_size or self.batch_size
        source = make_batches(frames, size)
        stager = Stager(self.layer.device) if self.stage else None
        if stager is not None:
            source = staged_batches(source, stager)
        batches = Prefetcher(source, maxsize=self.prefetch)
        finishing: FinishQueue[FrameBatch, BatchPredictions | _Redo] = FinishQueue(
            int(self.overlap)
        )
        # Set while results are handed on: a batch that failed, or a sink that failed (a full
        # disk stays full), is never followed by a later batch.
        handing_on = [False]

        def hand_on(results: Iterable[tuple[FrameBatch, BatchPredictions | _Redo]]) -> None:
            handing_on[0] = True
            for batch, preds in results:
                if isinstance(preds, _Redo):
                    # Never two threads in one backend: the batches behind this one finish
                    # first (their results wait in the queue, in order).
                    finishing.wait()
                    self._one_by_one(batch, preds.reason, emit, bad_frame)
                else:
                    emit(batch, preds)
            handing_on[0] = False

        bad_frame = functools.partial(_bad_frame, on_bad_frame, progress)

        def emit(batch: FrameBatch, preds: BatchPredictions) -> None:
            preds = preds.take(batch.n)
            preds.frame_indices = batch.indices
            if keep_images:
                preds.extras["images"] = batch.frames[: batch.n]
            t1 = time.perf_counter()
            if sink is not None:
                sink(preds)
            stats.sink_s += time.perf_counter() - t1
            stats.frames += batch.n
            stats.instances += preds.n_instances
            stats.batches += 1
            if progress is not None:
                progress(batch.n)
            mark("first_batch")  # predicted and handed to the sink

        start: float | None = None
        late_warmup = 0.0  # warmups for a new shape mid-run are not throughput time
        t_wait = time.perf_counter()
        try:
            for batch in batches:
                now = time.perf_counter()
                mark("first_frames")  # the first batch decoded
                stats.wait_s += now - t_wait if start is not None else 0.0
                shape = tuple(batch.frames.shape)
                if warmup and shape not in self._warmed:
                    hand_on(finishing.drain())  # never two threads in one backend
                warm = self.warmup(shape) if warmup else 0.0
                stats.warmup_s += warm
                if start is None:
                    start = time.perf_counter()
                else:
                    late_warmup += warm
                t0 = time.perf_counter()
                with timer.activate():
                    finish = self._start(batch, stager)
                stats.predict_s += time.perf_counter() - t0
                hand_on(finishing.submit(batch, finish))
                t_wait = time.perf_counter()
            hand_on(finishing.drain())
        except BaseException:
            # A batch whose network already ran still reaches the sink (the journal) when a
            # later batch fails or Ctrl-C arrives, as it did before postprocessing overlapped.
            if not handing_on[0]:
                with contextlib.suppress(Exception):
                    hand_on(finishing.drain())
            raise
        finally:
            finishing.close()
        stats.stages = _merged(timer.totals, finishing.timer.totals)
        stats.predict_s += sum(finishing.timer.totals.values())  # the layers' postprocessing
        if start is not None:
            stats.wall_s = time.perf_counter() - start - late_warmup
        return stats


def _bad_frame(
    record: Callable[[FrameError], None] | None,
    progress: Callable[[int], None] | None,
    error: FrameError,
) -> None:
    """A frame left out of the sink: recorded, and counted as done by the progress."""
    if record is not None:
        record(error)
    if progress is not None:
        progress(error.count)


def _merged(*totals: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in totals:
        for name, seconds in part.items():
            out[name] = out.get(name, 0.0) + seconds
    return out
