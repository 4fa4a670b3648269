"""Run an iterator in a background thread behind a bounded queue.

Decoding (PyAV releases the GIL) then overlaps with inference on the main
thread, and the bound keeps memory flat however long the video is.
Exceptions raised by the producer are re-raised in the consumer.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

_DONE = object()


class _Failure:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class Prefetcher(Generic[T]):
    """Iterate ``source`` on a daemon thread, at most ``maxsize`` items ahead."""

    def __init__(self, source: Iterable[T], maxsize: int = 4) -> None:
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, maxsize))
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._produce, args=(source,), name="sleap-infer-decode", daemon=True
        )
        self._thread.start()

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self, source: Iterable[T]) -> None:
        try:
            for item in source:
                if not self._put(item):
                    return
        except BaseException as exc:  # forwarded to the consumer, re-raised there
            self._put(_Failure(exc))
            return
        self._put(_DONE)

    def __iter__(self) -> Iterator[T]:
        try:
            while True:
                item = self._queue.get()
                if item is _DONE:
                    return
                if isinstance(item, _Failure):
                    raise item.exc
                yield item  # type: ignore[misc]
        finally:
            self.close()

    def close(self) -> None:
        """Stop the producer (it exits at its next put) and wait briefly for it."""
        self._stop.set()
        self._thread.join(timeout=5.0)
