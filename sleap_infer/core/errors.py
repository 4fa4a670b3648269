"""Error types whose message is the one line a user sees.

Every failure a user can cause (a bad path, a broken checkpoint, an unknown
backend, an unreadable video) is raised as a :class:`SleapInferError` subclass
whose ``str`` says *what* went wrong and *where*. The CLI prints that line
and exits non-zero instead of dumping a traceback.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain(text: str) -> str:
    """``text`` without terminal escape codes: some libraries (torch.export) colour their
    messages, and ours are one plain line, whether or not stderr is a terminal."""
    return _ANSI.sub("", text)


def raise_if_interrupted(exc: BaseException) -> None:
    """Raise ``KeyboardInterrupt`` when ``exc`` was caused by one.

    torch.export catches Ctrl-C mid-trace and raises its own error in its place (with
    the interrupt as its context); reported as a failed export that exited 1, not as an
    interruption (130). Call this first in an ``except Exception`` around such code.
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            raise KeyboardInterrupt from exc
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__


class SleapInferError(Exception):
    """Base class: a user-facing, one-line error."""

    exit_code: int = 1


class ModelError(SleapInferError):
    """A model directory is missing, corrupt or unsupported."""


class ConfigError(ModelError):
    """``training_config.yaml`` is missing fields or describes an unsupported network."""


class BackendError(SleapInferError):
    """A runtime backend cannot be created on this machine (missing package, no GPU...)."""


class VideoError(SleapInferError):
    """A video cannot be opened or decoded."""


class OutputError(SleapInferError):
    """A prediction file cannot be written (permissions, full disk...)."""


class OutputExistsError(OutputError):
    """The output path holds a finished output (or someone else's file): never replaced
    without ``overwrite``."""


class NonFiniteOutputError(SleapInferError):
    """A network returned NaN or Inf for a batch.

    Raised by the layers' one check per backend call
    (:func:`sleap_infer.backends.base.check_finite`); the runner catches it and
    predicts that batch's frames one by one, so the frames whose outputs are not
    finite become recorded bad frames instead of points at (0, 0) or "nothing detected".
    """


class ResumeError(OutputError):
    """A partial-predictions journal exists but cannot (or may not) be continued."""


class Interrupted(SleapInferError):
    """Ctrl-C (or SIGTERM turned into it) stopped a command: exit 130, as shells report SIGINT."""

    exit_code = 130


class UsageError(SleapInferError):
    """Inconsistent command-line arguments."""

    exit_code = 2


class OptionValueError(UsageError, ValueError):
    """A numeric option that is NaN, Inf or out of its range (also a ``ValueError``, so
    Python callers of ``sleap_infer.load(...)`` may catch it as one)."""


class ExportError(SleapInferError):
    """A model cannot be exported, or an export on disk is missing, corrupt or incompatible."""
