"""Rich progress display: frames (not batches), windowed FPS, ETA; per video and overall."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from sleap_infer.batch.tasks import DONE, SKIPPED, TRUNCATED, VideoOutcome, VideoTask

console = Console(stderr=True)


class FpsColumn(ProgressColumn):
    """Frames per second over the last few seconds (so warmup does not drag it down)."""

    def render(self, task: Task) -> Text:
        if task.fields.get("unit") == "videos":
            return Text("")
        speed = task.finished_speed or task.speed
        if speed is None:
            return Text("-- FPS", style="progress.data.speed")
        return Text(f"{speed:,.1f} FPS", style="progress.data.speed")


class UnitColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        return Text(str(task.fields.get("unit", "frames")))


def frame_progress(disable: bool = False) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        UnitColumn(),
        FpsColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        console=console,
        speed_estimate_period=5.0,
        disable=disable,
        transient=False,
    )


class BatchProgress:
    """A bar per running video plus an overall one; prints one line per finished video.

    Implements :class:`sleap_infer.batch.execute.BatchEvents`.
    """

    def __init__(self, n_videos: int, disable: bool = False) -> None:
        self.progress = frame_progress(disable=disable or n_videos == 0)
        self.n_videos = n_videos
        self.overall: TaskID | None = None
        self.bars: dict[int, TaskID] = {}

    def __enter__(self) -> BatchProgress:
        self.progress.start()
        if self.n_videos > 1:
            self.overall = self.progress.add_task("all videos", total=self.n_videos, unit="videos")
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def video_started(self, task: VideoTask, total_frames: int) -> None:
        self.bars[task.index] = self.progress.add_task(task.video.name, total=total_frames)

    def frames_done(self, task: VideoTask, n: int) -> None:
        bar = self.bars.get(task.index)
        if bar is not None:
            self.progress.advance(bar, n)

    def video_finished(self, outcome: VideoOutcome) -> None:
        bar = self.bars.pop(outcome.task.index, None)
        if bar is not None:
            self.progress.remove_task(bar)
        if self.overall is not None:
            self.progress.advance(self.overall, 1)
        for line in outcome.warnings:
            console.print(f"[yellow]warning:[/] {line}", highlight=False, soft_wrap=True)
        video = outcome.task.video
        if outcome.status == DONE:
            resumed = f" (resumed after {outcome.resumed_frames})" if outcome.resumed_frames else ""
            console.print(
                f"[green]✓[/] {video}: {outcome.frames} frames{resumed}, {outcome.instances} "
                f"instances, {outcome.fps:.1f} FPS -> {outcome.task.output}",
                highlight=False,
                soft_wrap=True,
            )
        elif outcome.status == SKIPPED:
            console.print(f"- {video}: skipped, {outcome.message}", highlight=False, soft_wrap=True)
        else:
            console.print(f"[red]error:[/] {outcome.message}", highlight=False, soft_wrap=True)

    def note(self, line: str) -> None:
        console.print(f"[yellow]warning:[/] {line}", highlight=False, soft_wrap=True)


def _status_text(outcome: VideoOutcome) -> Text:
    if outcome.status == DONE:
        extra = f" ({outcome.bad_frames} bad frames)" if outcome.bad_frames else ""
        return Text(f"done{extra}", style="green")
    if outcome.status == SKIPPED:
        return Text("skipped (exists)", style="dim")
    if outcome.status == TRUNCATED:
        return Text(f"truncated ({outcome.bad_frames} frames unread)", style="yellow")
    return Text(outcome.status, style="red")


def _common_folder(paths: Sequence[Path]) -> Path | None:
    """The deepest folder holding every video, so the table can show short names."""
    try:
        return Path(os.path.commonpath([p.resolve().parent for p in paths]))
    except ValueError:  # nothing in common (e.g. different drives)
        return None


def print_summary(outcomes: Sequence[VideoOutcome]) -> None:
    """The end-of-run table, then a one-line count by status."""
    root = _common_folder([o.task.video for o in outcomes]) if outcomes else None
    table = Table(
        title=f"in {root}" if root is not None else None,
        title_justify="left",
        header_style="bold",
    )
    table.add_column("video", overflow="fold")
    table.add_column("frames", justify="right")
    table.add_column("instances", justify="right")
    table.add_column("FPS", justify="right")
    table.add_column("status")
    for o in outcomes:
        ran = o.status not in (SKIPPED,) and (o.frames or o.status in (DONE, TRUNCATED))
        table.add_row(
            str(o.task.video.resolve().relative_to(root)) if root else str(o.task.video),
            str(o.frames) if ran else "-",
            str(o.instances) if ran else "-",
            f"{o.fps:.1f}" if ran and o.fps else "-",
            _status_text(o),
        )
    console.print(table)
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    parts = ", ".join(f"{n} {status}" for status, n in counts.items())
    console.print(f"{len(outcomes)} video{'s' if len(outcomes) != 1 else ''}: {parts}")
