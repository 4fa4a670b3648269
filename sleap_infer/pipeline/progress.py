"""What the Python API says on stderr while it predicts a video: a bar or plain lines.

``pipe.predict("video.mp4")`` ran 10.5 s without a word. A file or video source
now shows its progress on stderr (stdout stays the caller's), as ``infer
predict`` does: a rich bar on a terminal and in Jupyter (rich renders it in the
cell), a timestamped line every :data:`PLAIN_INTERVAL_S` seconds otherwise (a
log file, a batch job's ``.out``, where a bar prints nothing until it stops).
``progress=False`` silences it; arrays in memory are quiet unless asked
(``progress=True``): they are usually one step of a caller's own loop.

This sits below the command line (the pipeline may not import ``sleap_infer.cli``),
so it is its own small display over one video, in the CLI's words: the CLI's
reporters (:mod:`sleap_infer.cli.progress`) follow a whole batch of tasks.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

PLAIN_INTERVAL_S = 10.0

Clock = Callable[[], float]


def format_eta(seconds: float | None) -> str:
    return "--:--:--" if seconds is None else str(timedelta(seconds=round(seconds)))


def _console() -> Any:
    """A rich console on the current ``sys.stderr`` (looked up per run, so a redirected or
    captured stderr is the one written to)."""
    from rich.console import Console

    return Console(file=sys.stderr)


class FrameProgress:
    """One source's progress: :meth:`start` with the frame count, :meth:`advance` per
    batch, :meth:`close` at the end (also on an error: the bar stops where it was)."""

    def __init__(
        self, name: str, clock: Clock = time.monotonic, interval: float = PLAIN_INTERVAL_S
    ) -> None:
        self.name = name
        self.clock = clock
        self.interval = interval
        self.total = 0
        self.done = 0
        self.started = 0.0
        self.last_line = 0.0
        self._bar: Any = None
        self._task: Any = None

    def start(self, total: int) -> None:
        self.total = total
        self.started = self.last_line = self.clock()
        console = _console()
        if console.is_terminal or console.is_jupyter:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("frames"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                TimeElapsedColumn(),
                console=console,
                speed_estimate_period=5.0,
            )
            self._bar.start()
            self._task = self._bar.add_task(self.name, total=total or None)
            return
        frames = f"{total} frames" if total > 0 else "frame count unknown"
        self._line(f"{self.name}: started, {frames}")

    def advance(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.advance(self._task, n)
            return
        now = self.clock()
        if now - self.last_line >= self.interval:
            self.last_line = now
            rate = self.done / (now - self.started) if now > self.started else None
            fps = "-- FPS" if rate is None else f"{rate:.1f} FPS"
            eta = (self.total - self.done) / rate if rate and self.total else None
            done = (
                f"{self.done}/{self.total} frames ({100 * self.done / self.total:.1f}%)"
                if self.total
                else f"{self.done} frames"
            )
            self._line(f"{self.name}: {done}, {fps}, ETA {format_eta(eta)}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
            return
        seconds = self.clock() - self.started
        fps = f", {self.done / seconds:.1f} FPS" if seconds > 0 else ""
        self._line(f"{self.name}: {self.done} frames in {seconds:.1f} s{fps}")

    def _line(self, text: str) -> None:
        stamp = time.strftime("[%H:%M:%S]")
        with contextlib.suppress(OSError, ValueError):  # a full stderr never stops predictions
            print(f"{stamp} {text}", file=sys.stderr, flush=True)


def wanted(progress: bool | None, is_file: bool) -> bool:
    """``progress`` as given, or by default: on for a file or video source only."""
    return is_file if progress is None else bool(progress)
