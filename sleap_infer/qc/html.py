"""The qc report as one self-contained HTML page (placeholder: being written)."""

from __future__ import annotations

from pathlib import Path

from .records import QCResult, VideoData


def write_html(result: QCResult, data: list[list[VideoData]], path: Path) -> None:
    """Write ``result`` as one HTML page.

    ``data[i][j]`` holds the arrays of ``result.files[i].videos[j]``.
    """
    raise NotImplementedError("the qc HTML report is being written")
