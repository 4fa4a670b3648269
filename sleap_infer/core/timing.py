"""Where does the time go? Exclusive per-stage wall time for a run.

Layers mark their stages (``preprocess``, ``network``, ``postprocess``, ...)
with :func:`stage`. Stages nest: a top-down layer's postprocessing runs the
instance network, and that time is booked to ``network`` only, so the
stage totals add up to the measured time instead of double counting. When
no timer is active (the default) a stage costs one context-variable lookup.

On CUDA, kernels run asynchronously; pass ``sync`` (e.g.
``torch.cuda.synchronize``) so each stage waits for its own work.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator

_ACTIVE: contextvars.ContextVar[StageTimer | None] = contextvars.ContextVar(
    "sleap_infer_stage_timer", default=None
)


class StageTimer:
    """Accumulates exclusive seconds per stage name."""

    def __init__(self, sync: Callable[[], None] | None = None) -> None:
        self.totals: dict[str, float] = {}
        self._children: list[float] = []  # time spent in sub-stages, per open stage
        self._sync = sync

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        if self._sync is not None:
            self._sync()
        t0 = time.perf_counter()
        self._children.append(0.0)
        try:
            yield
        finally:
            if self._sync is not None:
                self._sync()
            elapsed = time.perf_counter() - t0
            inner = self._children.pop()
            self.totals[name] = self.totals.get(name, 0.0) + elapsed - inner
            if self._children:
                self._children[-1] += elapsed

    @contextlib.contextmanager
    def activate(self) -> Iterator[StageTimer]:
        """Make this the timer that :func:`stage` books to, in this thread/context."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)


def stage(name: str) -> contextlib.AbstractContextManager[None]:
    """Book the enclosed block to ``name`` on the active timer, if any."""
    timer = _ACTIVE.get()
    if timer is None:
        return contextlib.nullcontext()
    return timer.stage(name)
