"""The end of a run: a table on stderr, and (``--summary-json``) a file a pipeline can read.

The JSON file lists every planned video, also those an interruption or a model
failure left unstarted, so a job script can tell what is done, what failed and
what a ``--resume`` would continue without parsing logs. It is written under a
temporary name and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.text import Text

from sleap_infer import __version__
from sleap_infer.batch.projects import ProjectStep
from sleap_infer.batch.tasks import (
    DONE,
    FAILED,
    INTERRUPTED,
    SKIPPED,
    TRUNCATED,
    VideoOutcome,
    VideoTask,
)
from sleap_infer.cli.console import console
from sleap_infer.cli.help import EXIT_INTERRUPTED, EXIT_OK
from sleap_infer.core.products import Counts, Product
from sleap_infer.journal import journal_path
from sleap_infer.writers.outputs import output_paths
from sleap_infer.writers.projects import merged_path
from sleap_infer.writers.registry import OutputFormat
from sleap_infer.writers.side_files import check_side_file, model_inputs, write_json

SCHEMA = "sleap_infer.run_summary/1"
NOT_STARTED = "not_started"  # planned, but the run ended before it
STATUSES = (DONE, TRUNCATED, SKIPPED, FAILED, INTERRUPTED, NOT_STARTED)


def iso_time(seconds: float) -> str:
    """Local time with its UTC offset, to the second: what a log reader can compare."""
    return datetime.fromtimestamp(seconds).astimezone().isoformat(timespec="seconds")


def _number(value: float | None, digits: int) -> float | None:
    """JSON has no NaN or infinity: those become null."""
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), digits)


def video_record(outcome: VideoOutcome) -> dict[str, Any]:
    """One video's line of the summary (and of ``--progress json``'s video_finished event)."""
    task = outcome.task
    journal = journal_path(task.output)
    return {
        "video": str(task.video),
        **({"video_index": task.video_index} if task.video_index is not None else {}),
        "output": str(task.output),
        "outputs": [str(p) for p in outcome.outputs],
        "status": outcome.status,
        **outcome.counts.to_json(),
        "mean_score": _number(outcome.counts.mean_score, 6),
        "fps": _number(outcome.fps, 2) if outcome.fps else None,
        "backend": outcome.backend or None,
        "bad_frames": outcome.bad_frames,
        "resumed_frames": outcome.resumed_frames,
        "message": outcome.message or None,
        "warnings": list(outcome.warnings),
        "journal": str(journal) if _exists(journal) else None,
    }


def _exists(path: Path) -> bool:
    """``path.exists()`` that says no for a name the file system cannot even hold."""
    try:
        return path.exists()
    except OSError:
        return False


def _pending_record(task: VideoTask) -> dict[str, Any]:
    return video_record(VideoOutcome(task, NOT_STARTED))


def _run_status(exit_code: int, error: str | None) -> str:
    if exit_code == EXIT_OK:
        return "ok"
    if exit_code == EXIT_INTERRUPTED:
        return "interrupted"
    return "error" if error is not None else "failed"


@dataclass
class RunReport:
    """What a summary needs beyond the outcomes: the plan, the options, the model, the clock."""

    tasks: Sequence[VideoTask]
    options: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.time)
    model: dict[str, Any] | None = None
    projects: Sequence[ProjectStep] = ()  # files assembled per SLEAP project input
    overwrite: bool = False  # --overwrite: the summary may replace a file that is not ours

    def build(
        self,
        outcomes: Sequence[VideoOutcome],
        exit_code: int,
        error: str | None = None,
        finished: float | None = None,
    ) -> dict[str, Any]:
        """The summary as a JSON-ready dict; tasks without an outcome are ``not_started``."""
        finished = time.time() if finished is None else finished
        by_index = {o.task.index: o for o in outcomes}
        videos = [
            video_record(by_index[t.index]) if t.index in by_index else _pending_record(t)
            for t in self.tasks
        ]
        totals: dict[str, int] = {"videos": len(videos)}
        totals.update({status: 0 for status in STATUSES})
        for v in videos:
            totals[v["status"]] = totals.get(v["status"], 0) + 1
        for key in ("frames", *(p.value for p in Product)):
            totals[key] = sum(v[key] for v in videos)
        out_root = common_folder([t.output for t in self.tasks])
        return {
            "schema": SCHEMA,
            "sleap_infer": __version__,
            "status": _run_status(exit_code, error),
            "exit_code": exit_code,
            "error": error,
            "started": iso_time(self.started),
            "finished": iso_time(finished),
            "elapsed_s": round(finished - self.started, 3),
            "model": self.model,
            "options": self.options,
            "output_folder": None if out_root is None else str(out_root),
            "totals": totals,
            "videos": videos,
            "projects": [
                {
                    "project": str(step.project),
                    "written": None if step.written is None else str(step.written),
                    "ok": step.ok,
                    "message": step.message,
                }
                for step in self.projects
            ],
        }


def check_summary_path(
    path: Path,
    tasks: Sequence[VideoTask] = (),
    model_paths: Sequence[str | Path] = (),
    overwrite: bool = False,
    formats: tuple[OutputFormat, ...] = (),
) -> None:
    """Fail before any prediction if the summary may not or could not be written at the
    end: never over an input (video, model file) or this run's own outputs, and never over
    a file that is not a run summary of ours unless ``overwrite``."""
    outputs: list[Path] = []
    for task in tasks:
        outputs += [task.output, journal_path(task.output)]
        outputs += [path for _, path in output_paths(task.output, formats)] if formats else []
        if task.project is not None:
            outputs += [task.project.predictions, merged_path(task.project.predictions)]
    check_side_file(
        path,
        "--summary-json",
        SCHEMA,
        overwrite=overwrite,
        inputs=[t.video for t in tasks] + model_inputs(model_paths),
        outputs=outputs,
    )


def write_summary(path: Path, summary: dict[str, Any], overwrite: bool = False) -> None:
    """Write ``summary`` to ``path`` atomically: a temporary file, fsync, rename."""
    failure = f"--summary-json {path}: cannot write the run summary"
    write_json(path, summary, failure, schema=SCHEMA, overwrite=overwrite)


# ------------------------------------------------------------------ the table
def common_folder(paths: Sequence[Path]) -> Path | None:
    """The deepest folder holding every path, so the table can show short names."""
    if not paths or any("://" in str(p) for p in paths):  # a URL input has no folder here
        return None
    try:
        return Path(os.path.commonpath([Path(os.path.realpath(p)).parent for p in paths]))
    except ValueError:  # nothing in common (e.g. different drives)
        return None


def _status_text(outcome: VideoOutcome) -> Text:
    if outcome.status == DONE:
        extra = f" ({outcome.bad_frames} bad frames)" if outcome.bad_frames else ""
        return Text(f"done{extra}", style="green")
    if outcome.status == SKIPPED:
        return Text(f"skipped ({outcome.skip_reason})", style="dim")
    if outcome.status == TRUNCATED:
        return Text(f"truncated ({outcome.bad_frames} frames unread)", style="yellow")
    if outcome.status == INTERRUPTED:
        saved = outcome.counts.frames
        kept = f"{saved} frames saved" if saved else "nothing saved"
        return Text(f"interrupted ({kept})", style="yellow")
    if outcome.status == NOT_STARTED:
        return Text("not started", style="dim")
    return Text(outcome.status, style="red")


def _found_column(rows: Sequence[VideoOutcome]) -> str:
    """What the count column counts: instances, or masks / boxes for models that find
    no keypoint instances (segmentation models, box detectors)."""
    return Counts.total(o.counts for o in rows).headline.value


def _cells(o: VideoOutcome, column: str) -> tuple[str, ...]:
    """Frames, instances (or masks, or boxes) and FPS; an interrupted row shows the frames
    its journal holds."""
    finished = o.status in (DONE, TRUNCATED)
    frames = str(o.counts.frames) if finished or o.counts.frames else "-"
    found = o.counts.of(Product(column))
    instances = str(found) if finished or found else "-"
    fps = f"{o.fps:.1f}" if finished and o.fps else "-"
    return frames, instances, fps


def _relative(path: Path, root: Path | None) -> str:
    if root is None:
        return str(path)
    try:
        return str(Path(os.path.realpath(path)).relative_to(root))
    except ValueError:
        return str(path)


def _rows(outcomes: Sequence[VideoOutcome], tasks: Sequence[VideoTask]) -> list[VideoOutcome]:
    """Every planned video in input order: its outcome, or "not started"."""
    by_index = {o.task.index: o for o in outcomes}
    for task in tasks:
        by_index.setdefault(task.index, VideoOutcome(task, NOT_STARTED))
    return [by_index[i] for i in sorted(by_index)]


def summary_heading(outcomes: Sequence[VideoOutcome], tasks: Sequence[VideoTask] = ()) -> str:
    """The table's title line: where the outputs went, and where the videos came from.

    Printed as a line of its own rather than a rich table title, which would be
    wrapped to the table's width and cut a long path into pieces.
    """
    rows = _rows(outcomes, tasks)
    out_root = common_folder([o.task.output for o in rows])
    in_root = common_folder([o.task.video for o in rows])
    heading = f"outputs in {out_root}" if out_root is not None else "outputs"
    if in_root is not None and in_root != out_root:
        heading += f" (videos in {in_root})"
    return heading


def summary_table(outcomes: Sequence[VideoOutcome], tasks: Sequence[VideoTask] = ()) -> Table:
    """One row per planned video: names relative to the videos' common folder."""
    rows = _rows(outcomes, tasks)
    in_root = common_folder([o.task.video for o in rows])
    column = _found_column(rows)
    table = Table(header_style="bold")
    table.add_column("video", overflow="fold")
    for name in ("frames", column, "FPS"):
        table.add_column(name, justify="right")
    table.add_column("status")
    for o in rows:
        cells = _cells(o, column)
        name = _relative(o.task.video, in_root) + o.task.which
        table.add_row(escape(name), *cells, _status_text(o))
    return table


def count_line(statuses: Sequence[str]) -> str:
    """``3 videos: 2 done, 1 failed`` (statuses in first-seen order)."""
    counts: dict[str, int] = {}
    for status in statuses:
        counts[status] = counts.get(status, 0) + 1
    parts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in counts.items())
    return f"{len(statuses)} video{'s' if len(statuses) != 1 else ''}: {parts}"


def print_summary(outcomes: Sequence[VideoOutcome], tasks: Sequence[VideoTask] = ()) -> None:
    """The end-of-run heading and table, then a one-line count by status."""
    console.print(summary_heading(outcomes, tasks), highlight=False, soft_wrap=True, markup=False)
    console.print(summary_table(outcomes, tasks))
    statuses = [o.status for o in outcomes]
    seen = {o.task.index for o in outcomes}
    statuses += [NOT_STARTED for t in tasks if t.index not in seen]
    console.print(count_line(statuses), highlight=False)


def print_project_steps(steps: Sequence[ProjectStep]) -> None:
    """The files assembled per SLEAP project (combined, merged copy), after the table."""
    for step in steps:
        if not step.ok:
            console.print(f"[red]error:[/] {escape(step.message)}", highlight=False, soft_wrap=True)
        elif step.written is None:
            line = f"[yellow]note:[/] {escape(str(step.project))}: {escape(step.message)}"
            console.print(line, highlight=False, soft_wrap=True)
        else:
            line = f"[green]✓[/] {escape(str(step.written))}: {escape(step.message)}"
            console.print(line, highlight=False, soft_wrap=True)
