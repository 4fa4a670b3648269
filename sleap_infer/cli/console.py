"""The one stderr console every command prints its human-readable lines to.

stdout stays free for machine-readable output (``--progress json``), as in
sleap-nn's ``--gui`` mode, so a pipeline can parse it line by line.

``-q/--quiet`` (any command) makes it print only errors: every line that
starts ``error:`` gets through (a failed video, a model that would not load,
a bad option), everything else (the model line, results tables, spinners,
notes) is dropped. Deciding here, not at every print, keeps the commands
free of ``if not quiet`` and makes a new line quiet by default.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

from rich.console import Console

ERROR_PREFIX = "[red]error:[/]"


class CliConsole(Console):
    """A rich console that, with :attr:`errors_only`, prints only ``error:`` lines."""

    errors_only = False

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if self.errors_only and not _is_error(objects):
            return
        super().print(*objects, **kwargs)

    def status(self, *args: Any, **kwargs: Any) -> AbstractContextManager[Any]:  # type: ignore[override]
        if self.errors_only:
            return nullcontext()
        return super().status(*args, **kwargs)


def _is_error(objects: tuple[Any, ...]) -> bool:
    return len(objects) == 1 and isinstance(objects[0], str) and objects[0].startswith(ERROR_PREFIX)


console = CliConsole(stderr=True)
