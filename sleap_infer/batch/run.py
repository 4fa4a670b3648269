"""A whole batch, callable from Python: what ``infer predict`` does between parsing and summary.

Order of work, so that mistakes surface before any time is spent:
:func:`plan_batch` expands the inputs (names only) and plans every output
path, and settles what needs no model (finished outputs are skipped, missing
inputs fail); :meth:`Batch.load` builds the model (a bad model directory fails
here, before any video is opened); :meth:`Batch.run` reports the settled
tasks, then predicts video by video on one device or over a pool of device workers. A
video that fails is one outcome, never the end of the batch; SIGTERM (SLURM
preemption, ``kill``) stops it like Ctrl-C, with every journal kept.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleap_infer.batch.execute import BatchEvents, JobSettings, QuietEvents, run_sequential
from sleap_infer.batch.pool import run_on_devices
from sleap_infer.batch.projects import ProjectStep, finish_projects
from sleap_infer.batch.tasks import (
    VideoOutcome,
    VideoTask,
    drop_own_outputs,
    plan_tasks,
    settled_before_running,
)
from sleap_infer.core.errors import UsageError
from sleap_infer.pipeline.request import checkpoint_hashes, request_record
from sleap_infer.pipeline.spec import PipelineSpec
from sleap_infer.sources.inputs import expand_inputs, take_shard
from sleap_infer.writers.registry import FORMATS, OutputFormat, get_formats

if TYPE_CHECKING:
    from sleap_infer.pipeline.pipeline import Pipeline


@dataclass
class BatchResult:
    """Every task's outcome, in input order, and whether the run was interrupted."""

    outcomes: list[VideoOutcome]
    interrupted: bool
    projects: list[ProjectStep] = field(default_factory=list)  # files assembled per project

    @property
    def failed(self) -> bool:
        return any(not o.ok for o in self.outcomes) or any(not s.ok for s in self.projects)


@dataclass(frozen=True)
class ModelSummary:
    """What runs where, for the line printed once the model is loaded."""

    what: str
    where: str
    batch_size: int
    warnings: tuple[str, ...] = ()  # e.g. a top-down pair trained on different skeletons


def plan_batch(
    videos: Sequence[str | Path],
    output: Path | None,
    fmt: OutputFormat | tuple[OutputFormat, ...],
    recursive: bool = False,
    shard: tuple[int, int] | None = None,
    video_index: int | None = None,
    notes: list[str] | None = None,
) -> list[VideoTask]:
    """One task per video named by ``videos`` (files, folders, globs, lists), this shard's;
    ``video_index``: which video of each SLEAP project (named in its outputs' names);
    ``fmt``: every format of the run (the first names the outputs). Our own outputs
    that a glob matched are passed over, in one line added to ``notes``."""
    inputs, dropped = drop_own_outputs(expand_inputs(videos, recursive))
    if dropped and notes is not None:
        shown = ", ".join(p.name for p in dropped[:3]) + (", ..." if len(dropped) > 3 else "")
        notes.append(
            f"skipped {len(dropped)} input{'s' if len(dropped) != 1 else ''} that "
            f"{'are' if len(dropped) != 1 else 'is'} our own predictions, not videos ({shown})"
        )
    tasks = plan_tasks(inputs, output, fmt, video_index)
    return take_shard(tasks, shard)


def device_list(devices: str | None, device: str) -> list[str]:
    """``--devices a,b`` (one worker each) or the single ``--device``."""
    if devices is None:
        return [device]
    if device != "auto":
        raise UsageError("give either --device or --devices, not both")
    out = [d.strip() for d in devices.split(",") if d.strip()]
    if not out:
        raise UsageError(f"--devices {devices!r}: expected e.g. cuda:0,cuda:1")
    return out


class Batch:
    """Tasks, the model to run them with, and where to run it."""

    def __init__(
        self,
        tasks: Sequence[VideoTask],
        spec: PipelineSpec,
        settings: JobSettings,
        devices: Sequence[str] = ("auto",),
        notes: Sequence[str] = (),
    ) -> None:
        self.tasks = list(tasks)
        self.notes = list(notes)  # lines about the inputs for the user (see plan_batch)
        self.spec = spec
        self.settings = settings
        self.devices = list(devices)
        self.formats = get_formats(settings.output_format)
        self.fmt = self.formats[0]
        # Settled without the model: finished outputs (skipped unless --overwrite) and inputs
        # that cannot be attempted. When that is every task, the model is never loaded.
        self.skipped: list[VideoOutcome] = []
        self.todo: list[VideoTask] = []
        # A finished output is skipped only for the same request (models by checkpoint hash,
        # options, frames): the model paths are checked (and hashed) before the first skip,
        # and only then (missing inputs alone never need the model).
        asked: list[dict[str, Any]] = []

        def wanted() -> dict[str, Any]:
            if not asked:
                hashes = checkpoint_hashes(spec.model_paths, spec.overrides)
                asked.append(request_record(spec, hashes, settings.frames))
            return asked[0]

        for task in tasks:
            settled = settled_before_running(task, self.formats, settings.overwrite, wanted)
            if settled is None:
                self.todo.append(task)
            else:
                self.skipped.append(settled)
        self.pipeline: Pipeline | None = None

    def load(self) -> ModelSummary:
        """Load the models now: one pipeline, or (several devices) check they all work."""
        spec = self.spec
        nwb = spec.nwb.dandi_warning() if FORMATS["nwb"] in self.formats else None
        if len(self.devices) == 1:
            pipeline = spec.build(self.devices[0])
            pipeline.check_formats(self.formats)
            self.pipeline = pipeline
            return ModelSummary(
                pipeline.describe(),
                pipeline.backend_label,
                spec.batch_size,
                (*pipeline.warnings, *filter(None, [nwb])),
            )
        warnings = spec.check(self.devices, self.formats)
        return ModelSummary(
            ", ".join(spec.model_paths),
            f"{spec.backend}, {len(self.devices)} workers ({', '.join(self.devices)})",
            spec.batch_size,
            (*warnings, *filter(None, [nwb])),
        )

    def run(
        self,
        events: BatchEvents | None = None,
        on_worker_error: Callable[[str], None] | None = None,
    ) -> BatchResult:
        """Report the skipped videos, predict the rest; outcomes in task order.

        ``on_worker_error`` hears about device workers that fail or die (several devices).
        """
        events = events if events is not None else QuietEvents()
        with sigterm_as_interrupt():
            for outcome in self.skipped:
                events.video_finished(outcome)
            if not self.todo:
                outcomes: list[VideoOutcome] = []
                interrupted = False
            elif len(self.devices) == 1:
                if self.pipeline is None:
                    self.load()
                assert self.pipeline is not None
                outcomes, interrupted = run_sequential(
                    self.pipeline, self.todo, self.settings, events
                )
            else:
                outcomes, interrupted = run_on_devices(
                    self.devices,
                    self.spec,
                    self.todo,
                    self.settings,
                    events,
                    on_worker_error or (lambda _line: None),
                )
        everything = sorted(self.skipped + outcomes, key=lambda o: o.task.index)
        steps: list[ProjectStep] = []
        if not interrupted:
            tasks = [o.task for o in everything]
            steps = finish_projects(tasks, self.fmt, self.settings.merge_into_project)
        return BatchResult(everything, interrupted, steps)


def run_batch(
    tasks: Sequence[VideoTask],
    spec: PipelineSpec,
    settings: JobSettings,
    events: BatchEvents,
    devices: Sequence[str] = ("auto",),
) -> BatchResult:
    """Load the model once and predict every task (see :class:`Batch` to load separately)."""
    batch = Batch(tasks, spec, settings, devices)
    if batch.todo:
        batch.load()
    return batch.run(events)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM (SLURM preemption, ``kill``) like Ctrl-C: stop cleanly, keep journals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
