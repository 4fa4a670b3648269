"""Quality control of prediction files: where an output is likely wrong, and what to label next.

A predictor writes points and stops; a lab then scrolls the video to find identity
swaps, jumps and stretches the model was unsure of. This package reads a prediction
file (ours, sleap-nn's or SLEAP's ``.slp``) into dense per-track arrays
(:mod:`.records`' :class:`~.records.VideoData`), finds events in them, ranks frames to
label next, and writes the result as JSON and as a self-contained HTML page.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .records import QCResult


class _CallableModule(types.ModuleType):
    """``sleap_infer.qc(path)`` is the Python entry point and ``sleap_infer.qc`` the
    package: a package cannot also be a function's name (importing ``sleap_infer.qc.run``
    would replace the function with the module), so the module itself is callable."""

    def __call__(
        self, path_or_paths: str | Path | Sequence[str | Path], suggest: int = 0
    ) -> QCResult:
        """The qc records of one prediction file or several (see :func:`.run.qc`)."""
        from .run import qc as run_qc

        return run_qc(path_or_paths, suggest=suggest)


sys.modules[__name__].__class__ = _CallableModule
qc = sys.modules[__name__]  # what ``sleap_infer``'s lazy export of "qc" resolves to
