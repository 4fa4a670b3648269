"""Frames to label next (placeholder: being written)."""

from __future__ import annotations

from pathlib import Path

from .records import Event, Suggestion, VideoData


def suggest_frames(data: VideoData, events: list[Event], n: int) -> list[Suggestion]:
    """The ``n`` frames of one video whose labels should help the model most, best first."""
    raise NotImplementedError("qc suggestions are being written")


def write_suggestions(into: Path, output: Path, suggestions: dict[str, list[Suggestion]]) -> None:
    """Copy the project ``into`` to ``output`` with ``suggestions`` added.

    ``suggestions`` maps a video filename to its frames.
    """
    raise NotImplementedError("qc suggestions are being written")
