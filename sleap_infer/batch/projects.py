"""After a batch's videos: the files assembled for each SLEAP project input.

They are made only from outputs on disk, never from this run's outcomes, so
that a project whose videos were split over ``--shard`` array tasks (or
predicted over several reruns) is assembled by whichever run completes its
last video. A project with a video still missing gets a note, not a file: the
next run that completes it writes the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sleap_infer.batch.tasks import ProjectPlan, VideoTask
from sleap_infer.core.errors import SleapInferError
from sleap_infer.writers.outputs import is_complete
from sleap_infer.writers.projects import combine_predictions, merge_into_project, merged_path
from sleap_infer.writers.registry import OutputFormat


@dataclass(frozen=True)
class ProjectStep:
    """One file written for a project (or why it was not)."""

    project: Path
    written: Path | None
    message: str
    ok: bool = True


def project_plans(tasks: Sequence[VideoTask]) -> list[ProjectPlan]:
    """Each readable project input's plan once, in input order."""
    plans: list[ProjectPlan] = []
    for task in tasks:
        if task.project is not None and task.project not in plans:
            plans.append(task.project)
    # A project that could not even be read has its error line already; no note on top.
    unreadable = [t.project for t in tasks if t.problem is not None]
    return [plan for plan in plans if plan not in unreadable]


def _assemble(plan: ProjectPlan, merge: bool) -> list[ProjectStep]:
    steps: list[ProjectStep] = []
    parts = dict(plan.parts)
    if plan.combined is not None:
        n = combine_predictions(plan.project, parts, plan.combined)
        note = f"{len(parts)} videos, {n} predicted frames in one file"
        steps.append(ProjectStep(plan.project, plan.combined, note))
    if merge:
        out = merged_path(plan.predictions)
        counts = merge_into_project(plan.project, parts, out)
        note = (
            f"copy of the project with {counts.instances} predicted instances merged into "
            f"{counts.frames} frames (user instances untouched)"
        )
        steps.append(ProjectStep(plan.project, out, note))
    return steps


def finish_projects(
    tasks: Sequence[VideoTask], fmt: OutputFormat, merge: bool = False
) -> list[ProjectStep]:
    """Write the combined predictions of multi-video projects and, with ``merge``, the
    merged copies, for every project whose videos all have their output."""
    steps: list[ProjectStep] = []
    for plan in project_plans(tasks):
        if plan.combined is None and not merge:
            continue
        missing = [path for _, path in plan.parts if not is_complete(path, fmt)]
        if missing:
            note = (
                f"{len(missing)} of {len(plan.parts)} videos have no predictions yet; "
                "its combined/merged file is written once they all do"
            )
            steps.append(ProjectStep(plan.project, None, note))
            continue
        try:
            steps += _assemble(plan, merge)
        except SleapInferError as exc:
            steps.append(ProjectStep(plan.project, None, str(exc), ok=False))
    return steps
