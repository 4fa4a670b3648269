"""Postprocess batch k on a second thread while the network runs batch k+1.

The network (torch, ONNX Runtime, OpenVINO) releases the GIL and keeps the
cores busy; peak finding, PAF grouping, crop extraction and a top-down
second network are mostly Python and small kernels that leave cores idle.
Run back to back their times add; run side by side the slower one sets the
pace. Results come back in submission order, so sinks and trackers see
batches exactly as before, and an exception raised while finishing a batch
is re-raised in the caller when that batch's turn comes.

The quirk: two threads must never run one backend at once (OpenVINO's
compiled model owns one infer request; calibration state is not locked), so
anything that calls a layer outside this queue (a warmup for a new input
shape) drains it first (:meth:`FinishQueue.drain`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

from sleap_infer.core.timing import StageTimer

T = TypeVar("T")
K = TypeVar("K")


class FinishQueue(Generic[K, T]):
    """At most ``depth`` finishing calls in flight on one worker thread (``depth=0``: none,
    every call runs at once on the caller's thread). ``timer`` books the worker's stages."""

    def __init__(self, depth: int = 1) -> None:
        self.depth = max(0, depth)
        self.timer = StageTimer()
        self._pending: deque[tuple[K, Future[T]]] = deque()
        self._pool = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="sleap-infer-postprocess")
            if self.depth
            else None
        )

    def _timed(self, finish: Callable[[], T]) -> T:
        with self.timer.activate():
            return finish()

    def submit(self, key: K, finish: Callable[[], T]) -> Iterator[tuple[K, T]]:
        """Queue ``finish``; yields ``(key, result)`` of the calls that must complete now
        to keep at most ``depth`` in flight, oldest first."""
        future: Future[T]
        if self._pool is None:
            future = Future()
            future.set_result(self._timed(finish))
        else:
            future = self._pool.submit(self._timed, finish)
        self._pending.append((key, future))
        while len(self._pending) > self.depth:
            done_key, done = self._pending.popleft()
            yield done_key, done.result()

    def wait(self) -> None:
        """Block until every queued call has finished; their results stay queued."""
        for _, future in self._pending:
            future.exception()

    def drain(self) -> Iterator[tuple[K, T]]:
        """Every queued call's ``(key, result)``, oldest first."""
        while self._pending:
            key, future = self._pending.popleft()
            yield key, future.result()

    def close(self) -> None:
        """Stop the worker; calls not yet started are dropped (their batches were not
        handed to any sink, so a resumed run predicts them again)."""
        for _, future in self._pending:
            future.cancel()
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
