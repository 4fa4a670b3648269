"""The one stderr console every command prints its human-readable lines to.

stdout stays free for machine-readable output (``--progress json``), as in
sleap-nn's ``--gui`` mode, so a pipeline can parse it line by line.

``-q/--quiet`` (any command) makes it print only errors: every line that
starts ``error:`` gets through (a failed video, a model that would not load,
a bad option), everything else (the model line, results tables, spinners,
notes) is dropped. Deciding here, not at every print, keeps the commands
free of ``if not quiet`` and makes a new line quiet by default.

What is said about a run must never stop the run: a log on a full disk, or a
reader that went away (``infer predict ... 2>&1 | grep -m1 done``), silences
the console instead of ending the batch (rich's own answer to a broken pipe is
to exit). Predictions, outputs and the exit code are unaffected.
"""

from __future__ import annotations

import contextlib
import os
import sys
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TextIO

from rich.console import Console

ERROR_PREFIX = "[red]error:[/]"


def silence(stream: TextIO) -> None:
    """Point ``stream``'s file descriptor at /dev/null, so what is still buffered for it
    (and Python's flush at exit) goes nowhere instead of failing again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


class CliConsole(Console):
    """A rich console that, with :attr:`errors_only`, prints only ``error:`` lines, and
    goes quiet when its stream cannot be written to."""

    errors_only = False
    broken: str | None = None  # why it went quiet

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if self.errors_only and not _is_error(objects):
            return
        super().print(*objects, **kwargs)

    def status(self, *args: Any, **kwargs: Any) -> AbstractContextManager[Any]:  # type: ignore[override]
        if self.errors_only:
            return nullcontext()
        return super().status(*args, **kwargs)

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


def _is_error(objects: tuple[Any, ...]) -> bool:
    return len(objects) == 1 and isinstance(objects[0], str) and objects[0].startswith(ERROR_PREFIX)


console = CliConsole(stderr=True)
