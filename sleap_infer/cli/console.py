"""The one stderr console every command prints its human-readable lines to.

stdout stays free for machine-readable output (``--progress json``), as in
sleap-nn's ``--gui`` mode, so a pipeline can parse it line by line.

What is said about a run must never stop the run: a log on a full disk, or a
reader that went away (``infer predict ... 2>&1 | grep -m1 done``), silences
the console instead of ending the batch (rich's own answer to a broken pipe is
to exit). Predictions, outputs and the exit code are unaffected.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TextIO

from rich.console import Console


def silence(stream: TextIO) -> None:
    """Point ``stream``'s file descriptor at /dev/null, so what is still buffered for it
    (and Python's flush at exit) goes nowhere instead of failing again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


class QuietOnFailureConsole(Console):
    """A rich console that goes quiet when its stream cannot be written to."""

    broken: str | None = None  # why it went quiet

    def on_broken_pipe(self) -> None:
        self._go_quiet("broken pipe")

    def _check_buffer(self) -> None:
        try:
            super()._check_buffer()
        except OSError as exc:
            self._go_quiet(exc.strerror or str(exc))

    def _go_quiet(self, why: str) -> None:
        self.quiet = True
        self.broken = why
        del self._buffer[:]
        silence(self.file if self.file is not None else sys.stderr)


console = QuietOnFailureConsole(stderr=True)
