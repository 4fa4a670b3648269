"""What ``infer predict`` says while it runs, in one of four ``--progress`` modes.

* ``bar``: rich bars (a bar per running video plus an overall one), for a terminal.
* ``plain``: a timestamped line per running video every ``--progress-interval``
  seconds, and at each video's start and end, for logs that are not a terminal
  (SLURM ``.out`` files), where a bar prints nothing until it stops.
* ``json``: one JSON object per line on stdout (events ``model_loaded``,
  ``video_started``, ``progress``, ``video_finished``, ``warning``, ``error``,
  ``summary``, and ``export`` around a first-use export), like sleap-nn's ``--gui``;
  progress events carry sleap-nn's keys (``n_processed``, ``n_total``, ``rate``,
  ``eta``). Human lines stay on stderr.
* ``none``: only the per-video result lines.

Every reporter implements :class:`sleap_infer.batch.execute.BatchEvents` plus
``note(line)``, and prints the same line per finished video. A first-use export (on
the first batch, inside a video's clock) is a stage of its own: its lines go through
the display now running, and its time is kept out of the video's rate and ETA.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TextIO

from rich.markup import escape
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
from rich.text import Text

from sleap_infer.batch.tasks import DONE, SKIPPED, VideoOutcome, VideoTask
from sleap_infer.cli.console import console, silence
from sleap_infer.cli.summary import iso_time, video_record

PLAIN_INTERVAL_S = 10.0
JSON_INTERVAL_S = 1.0
MODES = ("auto", "bar", "plain", "json", "none")

Clock = Callable[[], float]


def _written(outcome: VideoOutcome) -> str:
    """Every file the video's run wrote (one per format), else its output path."""
    return ", ".join(str(p) for p in outcome.outputs or (outcome.task.output,))


def outcome_line(outcome: VideoOutcome) -> str:
    """The rich-markup line for a finished video: done, skipped or the error."""
    video = escape(outcome.task.name)
    if outcome.status == DONE:
        resumed = f" (resumed after {outcome.resumed_frames})" if outcome.resumed_frames else ""
        return (
            f"[green]✓[/] {video}: {outcome.counts.frames} frames{resumed}, {_found(outcome)}, "
            f"{outcome.fps:.1f} FPS{f' ({outcome.backend})' if outcome.backend else ''} -> "
            f"{escape(_written(outcome))}"
        )
    if outcome.status == SKIPPED:
        return f"- {video}: skipped, {escape(outcome.message)}"
    return f"[red]error:[/] {escape(outcome.message)}"


def _found(outcome: VideoOutcome) -> str:
    """``12 instances``, or ``98 masks`` / ``48 boxes`` for models that find no instances;
    `` in 3 tracks`` after it in a tracked run."""
    counts = outcome.counts
    tracks = f" in {counts.tracks} tracks" if counts.tracks else ""
    return f"{counts.of(counts.headline)} {counts.headline.value}{tracks}"


# The display now running (entered), which export notices go through; a stack, not one
# slot, so that a nested display (tests) hands back to the outer one.
_RUNNING: list[Reporter] = []


def show_export_notice(message: str) -> bool:
    """Show an export notice on the running display; False where none runs (the caller
    prints it: an export before the run, or in a ``--devices`` worker process)."""
    if not _RUNNING:
        return False
    _RUNNING[-1].export_notice(message)
    return True


class Reporter:
    """``--progress none``: the model line, warnings, and one line per finished video."""

    def __init__(self, n_videos: int) -> None:
        self.n_videos = n_videos
        self.n_finished = 0

    def __enter__(self) -> Reporter:
        _RUNNING.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self in _RUNNING:
            _RUNNING.remove(self)

    def say(self, markup: str) -> None:
        """Print a line as is: ``error:`` and ``warning:`` lines start the line, for grep."""
        console.print(markup, highlight=False, soft_wrap=True)

    def log(self, markup: str) -> None:
        """Print a line about progress (plain mode puts the time before it)."""
        self.say(markup)

    def model_loaded(self, what: str, where: str, batch_size: int) -> None:
        self.log(
            f"Model: [bold]{escape(what)}[/] on [bold]{escape(where)}[/], batch size {batch_size}"
        )

    def video_started(self, task: VideoTask, total_frames: int) -> None:
        return None

    def frames_done(self, task: VideoTask, n: int) -> None:
        return None

    def video_finished(self, outcome: VideoOutcome) -> None:
        self.n_finished += 1
        for line in outcome.warnings:
            self.say(f"[yellow]warning:[/] {escape(line)}")
        if outcome.status in (DONE, SKIPPED):
            self.log(self.count_prefix() + outcome_line(outcome))
        else:
            self.say(outcome_line(outcome))

    def count_prefix(self) -> str:
        """Before a result line: how far the run is (only logs without a bar need it)."""
        return ""

    def note(self, line: str) -> None:
        self.say(f"[yellow]warning:[/] {escape(line)}")

    def export_notice(self, message: str) -> None:
        """A line from an export; one that ends it (``ExportNotice`` of stage ``finished``
        or ``failed``) hands its seconds to :meth:`export_done`."""
        stage = getattr(message, "stage", None)
        if stage != "failed":  # the error itself is reported where it is raised
            self.log(f"[cyan]export:[/] {escape(message)}")
        if stage in ("finished", "failed"):
            self.export_done(float(getattr(message, "seconds", None) or 0.0))

    def export_done(self, seconds: float) -> None:
        """An export that took ``seconds`` of the running videos' time has ended."""
        return None

    def error(self, message: str, exit_code: int) -> None:
        """A fatal error; ``main`` prints it, machine-readable modes report it too."""
        return None

    def finished(self, summary: dict[str, Any]) -> None:
        """The run summary (``--summary-json``'s content), once, at the very end."""
        return None


# ------------------------------------------------------------------- bar
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


class BarProgress(Reporter):
    """A rich bar per running video plus an overall one (several videos)."""

    def __init__(self, n_videos: int) -> None:
        super().__init__(n_videos)
        self.progress = frame_progress(disable=n_videos == 0)
        self.overall: TaskID | None = None
        self.bars: dict[int, TaskID] = {}

    def __enter__(self) -> BarProgress:
        super().__enter__()
        self.progress.start()
        if self.n_videos > 1:
            self.overall = self.progress.add_task("all videos", total=self.n_videos, unit="videos")
        return self

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        self.progress.stop()

    def export_done(self, seconds: float) -> None:
        """Bars still at frame 0 start their clock again: elapsed and ETA are prediction's."""
        for bar in self.bars.values():
            task = self.progress.tasks[self.progress.task_ids.index(bar)]
            if task.completed == 0:
                self.progress.reset(bar, total=task.total)

    def video_started(self, task: VideoTask, total_frames: int) -> None:
        self.bars[task.index] = self.progress.add_task(
            escape(task.video.name + task.which), total=total_frames
        )

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
        super().video_finished(outcome)


# ------------------------------------------------- plain lines and JSON events
@dataclass
class VideoMeter:
    """Frames of one running video, and where the last report left them (for a windowed FPS)."""

    task: VideoTask
    total: int
    mark_time: float
    done: int = 0
    mark_done: int = 0

    def rate(self, now: float) -> float | None:
        """Frames per second since the last report; None before any time has passed."""
        elapsed = now - self.mark_time
        return (self.done - self.mark_done) / elapsed if elapsed > 0 else None

    def eta(self, rate: float | None) -> float | None:
        if not rate or self.total <= 0:
            return None
        return max(self.total - self.done, 0) / rate

    def percent(self) -> float | None:
        return 100.0 * self.done / self.total if self.total > 0 else None

    def mark(self, now: float) -> None:
        self.mark_time, self.mark_done = now, self.done


class TickingReporter(Reporter):
    """Reports every running video once per ``interval`` (checked as frames arrive)."""

    def __init__(
        self,
        n_videos: int,
        interval: float,
        clock: Clock = time.monotonic,
        wall: Clock = time.time,
    ) -> None:
        super().__init__(n_videos)
        self.interval = interval
        self.clock = clock
        self.wall = wall
        self.meters: dict[int, VideoMeter] = {}
        self.last_tick = clock()

    def video_started(self, task: VideoTask, total_frames: int) -> None:
        meter = VideoMeter(task, total_frames, self.clock())
        self.meters[task.index] = meter
        self.report_start(meter)

    def frames_done(self, task: VideoTask, n: int) -> None:
        meter = self.meters.get(task.index)
        if meter is None:
            return
        meter.done += n
        now = self.clock()
        if now - self.last_tick >= self.interval:
            self.last_tick = now
            for m in self.meters.values():
                self.report_progress(m, now)
                m.mark(now)

    def video_finished(self, outcome: VideoOutcome) -> None:
        self.meters.pop(outcome.task.index, None)
        super().video_finished(outcome)

    def export_done(self, seconds: float) -> None:
        """The export's seconds leave each running video's rate window (and so its ETA)."""
        now = self.clock()
        for meter in self.meters.values():
            meter.mark_time = min(now, meter.mark_time + seconds)

    def report_start(self, meter: VideoMeter) -> None:
        raise NotImplementedError

    def report_progress(self, meter: VideoMeter, now: float) -> None:
        raise NotImplementedError


def format_eta(seconds: float | None) -> str:
    return "--:--:--" if seconds is None else str(timedelta(seconds=round(seconds)))


class PlainProgress(TickingReporter):
    """Timestamped lines: ``[12:03:01] v.mp4: 480/1100 frames (43.6%), 31.2 FPS, ETA 0:00:20``."""

    def stamp(self) -> str:
        return time.strftime("[%H:%M:%S]", time.localtime(self.wall()))

    def log(self, markup: str) -> None:
        self.say(f"{self.stamp()} {markup}")

    def report_start(self, meter: VideoMeter) -> None:
        frames = f"{meter.total} frames" if meter.total > 0 else "frame count unknown"
        self.log(
            f"{escape(meter.task.name)}: started, {frames} -> {escape(str(meter.task.output))}"
        )

    def report_progress(self, meter: VideoMeter, now: float) -> None:
        rate = meter.rate(now)
        fps = "-- FPS" if rate is None else f"{rate:.1f} FPS"
        percent = meter.percent()
        if percent is None:
            done = f"{meter.done} frames"
        else:
            done = f"{meter.done}/{meter.total} frames ({percent:.1f}%)"
        self.log(f"{escape(meter.task.name)}: {done}, {fps}, ETA {format_eta(meter.eta(rate))}")

    def count_prefix(self) -> str:
        return f"{self.n_finished}/{self.n_videos} " if self.n_videos > 1 else ""


class JsonProgress(TickingReporter):
    """One JSON object per line on stdout; the human lines still go to stderr."""

    def __init__(
        self,
        n_videos: int,
        interval: float,
        clock: Clock = time.monotonic,
        wall: Clock = time.time,
        out: TextIO | None = None,
    ) -> None:
        super().__init__(n_videos, interval, clock, wall)
        self.out = out
        self.stopped = False  # stdout failed: events end, the run does not

    def emit(self, event: str, **fields: Any) -> None:
        """One event line; a stdout nobody reads any more (``| grep -m1``) or a full disk
        ends the events, never the run: one warning on stderr, and prediction goes on."""
        if self.stopped:
            return
        record = {"event": event, "time": iso_time(self.wall()), **fields}
        out = self.out if self.out is not None else sys.stdout  # resolved late: capture swaps it
        try:
            out.write(json.dumps(record, allow_nan=False) + "\n")
            out.flush()
        except OSError as exc:
            self.stopped = True
            silence(out)
            reason = exc.strerror or type(exc).__name__
            self.say(
                f"[yellow]warning:[/] --progress json: stdout cannot be written "
                f"({escape(reason)}); no more events, prediction goes on"
            )

    def model_loaded(self, what: str, where: str, batch_size: int) -> None:
        super().model_loaded(what, where, batch_size)
        self.emit("model_loaded", model=what, device=where, batch_size=batch_size)

    def report_start(self, meter: VideoMeter) -> None:
        task = meter.task
        self.emit(
            "video_started",
            index=task.index,
            video=str(task.video),
            output=str(task.output),
            n_total=meter.total if meter.total > 0 else None,
        )

    def report_progress(self, meter: VideoMeter, now: float) -> None:
        rate = meter.rate(now)
        eta = meter.eta(rate)
        percent = meter.percent()
        self.emit(
            "progress",
            index=meter.task.index,
            video=str(meter.task.video),
            n_processed=meter.done,
            n_total=meter.total if meter.total > 0 else None,
            percent=None if percent is None else round(percent, 1),
            rate=None if rate is None else round(rate, 1),
            eta=None if eta is None else round(eta, 1),
        )

    def video_finished(self, outcome: VideoOutcome) -> None:
        super().video_finished(outcome)
        self.emit(
            "video_finished",
            index=outcome.task.index,
            videos_finished=self.n_finished,
            videos_total=self.n_videos,
            **video_record(outcome),
        )

    def note(self, line: str) -> None:
        super().note(line)
        self.emit("warning", message=line)

    def export_notice(self, message: str) -> None:
        super().export_notice(message)
        seconds = getattr(message, "seconds", None)
        self.emit(
            "export",
            stage=getattr(message, "stage", None),
            message=str(message),
            seconds=None if seconds is None else round(seconds, 1),
        )

    def error(self, message: str, exit_code: int) -> None:
        self.emit("error", message=message, exit_code=exit_code)

    def finished(self, summary: dict[str, Any]) -> None:
        self.emit("summary", **summary)


def make_reporter(mode: str, n_videos: int, interval: float | None = None) -> Reporter:
    """The reporter for ``--progress mode``; ``auto`` is a bar on a terminal, else plain lines."""
    if mode == "auto":
        mode = "bar" if console.is_terminal else "plain"
    if mode == "bar":
        return BarProgress(n_videos)
    if mode == "plain":
        return PlainProgress(n_videos, PLAIN_INTERVAL_S if interval is None else interval)
    if mode == "json":
        return JsonProgress(n_videos, JSON_INTERVAL_S if interval is None else interval)
    return Reporter(n_videos)
