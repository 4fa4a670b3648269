"""Predict one video of a batch without letting its failure stop the others."""

from __future__ import annotations

import contextlib
import os
import traceback
from dataclasses import dataclass, field
from typing import Any, Protocol

from sleap_infer.batch.tasks import (
    DONE,
    FAILED,
    SKIPPED,
    TRUNCATED,
    VideoOutcome,
    VideoTask,
    interrupted_outcome,
    settled_before_running,
)
from sleap_infer.core.errors import OutputExistsError, SleapInferError
from sleap_infer.journal import JournalBusyError, in_use, journal_path
from sleap_infer.pipeline.pipeline import Pipeline
from sleap_infer.pipeline.request import checkpoint_hashes, request_record
from sleap_infer.pipeline.video_job import VideoResult
from sleap_infer.sources.video import MISSING_AT_END
from sleap_infer.writers.registry import get_formats

DEBUG_ENV = "SLEAP_INFER_DEBUG"  # set to print tracebacks of unexpected errors


@dataclass(frozen=True)
class JobSettings:
    """Per-video options shared by every task of a run (picklable for workers)."""

    frames: str | None = None
    output_format: str = "slp"
    resume: bool = False
    overwrite: bool = False
    merge_into_project: bool = False  # write a copy of each project input with predictions
    extra_provenance: dict[str, Any] = field(default_factory=dict)


class BatchEvents(Protocol):
    """What a batch reports as it goes (the progress display, or a worker's queue)."""

    def video_started(self, task: VideoTask, total_frames: int) -> None: ...

    def frames_done(self, task: VideoTask, n: int) -> None: ...

    def video_finished(self, outcome: VideoOutcome) -> None: ...


class QuietEvents:
    """:class:`BatchEvents` that report nothing (a batch run from Python without a display)."""

    def video_started(self, task: VideoTask, total_frames: int) -> None:
        pass

    def frames_done(self, task: VideoTask, n: int) -> None:
        pass

    def video_finished(self, outcome: VideoOutcome) -> None:
        pass


def outcome_from_result(task: VideoTask, result: VideoResult) -> VideoOutcome:
    warnings = list(result.warnings)
    missing = 0
    for err in result.bad_frames:
        if err.kind == MISSING_AT_END:
            missing += err.count
        else:
            warnings.append(f"{task.video}: {err.describe()}")
    if result.decoded_frames > result.metadata_frames:
        warnings.append(
            f"{task.video}: decoded {result.decoded_frames} frames but its metadata says "
            f"{result.metadata_frames}; all decoded frames were predicted"
        )
    outcome = VideoOutcome(
        task=task,
        status=TRUNCATED if result.truncated else DONE,
        counts=result.counts,
        fps=result.fps,
        bad_frames=result.n_bad_frames,
        resumed_frames=result.resumed_frames,
        warnings=warnings,
        outputs=tuple(result.outputs),
        backend=result.backend,
    )
    if result.truncated:
        first = min(e.index for e in result.bad_frames if e.kind == MISSING_AT_END)
        reason = next(e.reason for e in result.bad_frames if e.kind == MISSING_AT_END)
        outcome.message = (
            f"{task.video}: truncated: {missing} frames from frame {first} on are unreadable "
            f"({reason}); {result.counts.frames} predicted frames saved to {task.output}"
        )
    return outcome


def run_task(
    pipeline: Pipeline, task: VideoTask, settings: JobSettings, events: BatchEvents
) -> VideoOutcome:
    """Predict ``task``; every failure becomes a ``failed`` outcome with a one-line message.

    ``KeyboardInterrupt`` propagates (the video's journal is already closed and
    resumable). Unexpected exceptions are caught too, so one video hitting a
    bug does not cost the rest of the night's videos.
    """
    if task.problem is not None:
        outcome = VideoOutcome(task, FAILED, message=f"{task.name}: {task.problem}")
        events.video_finished(outcome)
        return outcome

    def on_start(info: object, total: int) -> None:
        events.video_started(task, total)

    try:
        result = pipeline.predict_to_file(
            task.video,
            task.output,
            frames=settings.frames,
            format=settings.output_format,
            resume=settings.resume,
            overwrite=settings.overwrite,
            video_index=task.video_index,
            on_start=on_start,
            on_progress=lambda n: events.frames_done(task, n),
            extra_provenance=settings.extra_provenance,
        )
        outcome = outcome_from_result(task, result)
    except SleapInferError as exc:
        outcome = _elsewhere(pipeline, task, settings, exc) or VideoOutcome(
            task, FAILED, message=str(exc)
        )
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        outcome = VideoOutcome(
            task,
            FAILED,
            message=f"{task.video}: unexpected error ({type(exc).__name__}: {exc}); "
            f"set {DEBUG_ENV}=1 for the traceback",
        )
    events.video_finished(outcome)
    return outcome


def _elsewhere(
    pipeline: Pipeline, task: VideoTask, settings: JobSettings, exc: SleapInferError
) -> VideoOutcome | None:
    """A video another run took care of is no failure of this one (two runs started on one
    folder): one it is predicting right now (its journal is locked by a live process) is
    left to it, and one it finished meanwhile, for the same request, is kept and skipped
    (this run's journal of it goes: the output holds the same predictions). None for
    any other error, or an output another run finished for another request."""
    journal = journal_path(task.output)
    if isinstance(exc, JournalBusyError):  # (it may be finished and gone by now)
        return VideoOutcome(
            task,
            SKIPPED,
            message=f"{task.output}: another infer process is predicting it right now; left to it",
            skip_reason="in progress elsewhere",
        )
    if not isinstance(exc, OutputExistsError) or settings.overwrite:
        return None

    def wanted() -> dict[str, Any]:
        spec = pipeline.spec
        return request_record(
            spec, checkpoint_hashes(spec.model_paths, spec.overrides), settings.frames
        )

    formats = get_formats(settings.output_format)
    try:
        settled = settled_before_running(task, formats, False, wanted)
    except SleapInferError:
        return None
    if settled is None or settled.status != SKIPPED:
        return None
    if not in_use(journal):
        with contextlib.suppress(OSError):
            journal.unlink(missing_ok=True)
    return VideoOutcome(
        task,
        SKIPPED,
        message=f"{task.output}: finished by another run while this one predicted; kept it",
        skip_reason="finished by another run",
    )


def run_sequential(
    pipeline: Pipeline, tasks: list[VideoTask], settings: JobSettings, events: BatchEvents
) -> tuple[list[VideoOutcome], bool]:
    """Outcomes of ``tasks`` in order, and whether Ctrl-C stopped the run."""
    outcomes: list[VideoOutcome] = []
    for i, task in enumerate(tasks):
        # --backend auto weighs a first export against every video still to come, not
        # only this one: a folder of short clips earns it back together.
        pipeline.videos_ahead = len(tasks) - i
        try:
            outcomes.append(run_task(pipeline, task, settings, events))
        except KeyboardInterrupt:
            outcome = interrupted_outcome(task)
            events.video_finished(outcome)
            outcomes.append(outcome)
            return outcomes, True
    return outcomes, False
