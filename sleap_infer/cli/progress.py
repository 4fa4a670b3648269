"""Rich progress display: frames (not batches), windowed FPS, ETA."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from sleap_infer.io.video import VideoInfo

console = Console(stderr=True)


class FpsColumn(ProgressColumn):
    """Frames per second over the last few seconds (so warmup does not drag it down)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None:
            return Text("-- FPS", style="progress.data.speed")
        return Text(f"{speed:,.1f} FPS", style="progress.data.speed")


def frame_progress(disable: bool = False) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("frames"),
        FpsColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        console=console,
        speed_estimate_period=5.0,
        disable=disable,
        transient=False,
    )


class VideoBar:
    """One progress task per video, created once the frame count is known."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task: int | None = None

    def start(self, info: VideoInfo, total: int) -> None:
        self.task = self.progress.add_task(info.path.name, total=total)

    def advance(self, n: int) -> None:
        if self.task is not None:
            self.progress.advance(self.task, n)
