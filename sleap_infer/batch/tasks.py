"""What to predict and where it goes: one :class:`VideoTask` per video, one
:class:`VideoOutcome` back (both plain and picklable, for worker processes)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleap_infer.core.errors import SleapInferError, UsageError
from sleap_infer.core.products import Counts
from sleap_infer.journal import journal_path, read_journal
from sleap_infer.pipeline.request import REQUEST_KEY, read_side_record, request_changes
from sleap_infer.sources.inputs import VideoInput, is_labels_path, is_pattern
from sleap_infer.sources.remote import as_url, file_name
from sleap_infer.writers.outputs import (
    COMPLETE,
    default_output_path,
    existing_message,
    judge_output,
    name_problem,
    output_paths,
    stored_provenance,
)
from sleap_infer.writers.projects import count_videos, part_path
from sleap_infer.writers.registry import FORMATS, OutputFormat
from sleap_infer.writers.side_files import same_file

# VideoOutcome.status values.
DONE = "done"
TRUNCATED = "truncated"  # output written, but the video ended before its promised frames
SKIPPED = "skipped"
FAILED = "failed"
INTERRUPTED = "interrupted"
NOT_OK = frozenset({TRUNCATED, FAILED, INTERRUPTED})

_FILE_SUFFIXES = tuple(s for f in FORMATS.values() for s in f.suffixes)


@dataclass(frozen=True)
class ProjectPlan:
    """A SLEAP project input: the output of each of its videos predicted, and (several
    videos, ``.slp``) the one file that combines them once all exist."""

    project: Path
    parts: tuple[tuple[int, Path], ...]  # (video index, its output), in project order
    combined: Path | None = None

    @property
    def predictions(self) -> Path:
        """The file holding all of this project's predictions (what a merge reads)."""
        return self.combined if self.combined is not None else self.parts[0][1]


@dataclass(frozen=True)
class VideoTask:
    index: int  # position in the (sharded) input list; orders the summary
    video: Path
    output: Path
    problem: str | None = None  # set when the input cannot even be attempted
    video_index: int | None = None  # which video of a SLEAP project (None: --video-index's)
    project: ProjectPlan | None = None  # set for SLEAP project inputs

    @property
    def which(self) -> str:
        """`` [video N]`` for one video of a multi-video project, else nothing."""
        if self.project is not None and len(self.project.parts) > 1:
            return f" [video {self.video_index}]"
        return ""

    @property
    def name(self) -> str:
        """How the task is shown in messages: the input, and which video of a project."""
        return f"{self.video}{self.which}"


@dataclass
class VideoOutcome:
    task: VideoTask
    status: str
    counts: Counts = field(default_factory=Counts)
    fps: float = 0.0
    bad_frames: int = 0
    resumed_frames: int = 0
    message: str = ""  # the error line for failures
    warnings: list[str] = field(default_factory=list)
    outputs: tuple[Path, ...] = ()  # the files this run wrote (several with several formats)
    skip_reason: str = "exists"  # why a skipped video was skipped (the summary's status)
    backend: str = ""  # the runtime that predicted it (what --backend auto chose)

    @property
    def ok(self) -> bool:
        return self.status not in NOT_OK


def _output_for(
    item: VideoInput, output: Path | None, fmt: OutputFormat, video_index: int | None = None
) -> Path:
    # An image glob (``frames/cam1_*.png``) is named after its folder, as the predictor
    # names it (its VideoInfo.path is the folder), never with a literal ``*``.
    url = as_url(item.path)
    if url is not None:
        # Nowhere to write beside a URL: the current folder, under its file name (sleap-nn).
        source = Path(file_name(url))
    elif is_pattern(item.path):
        source = item.path.parent
    else:
        source = item.path
    if source.name in ("", ".", ".."):
        # ``.``, ``..``, or a glob in the current folder: named after the folder it is.
        source = source.absolute().resolve()
    if video_index is not None and is_labels_path(source):
        # Runs on different videos of one project must not share (and skip) one output.
        source = source.with_name(f"{source.name}.video{video_index}")
    if output is None:
        return default_output_path(source, fmt)
    sub = Path()
    if item.root is not None:
        sub = source.parent.relative_to(item.root)
    return output / sub / default_output_path(Path(source.name), fmt).name


def _check_name(task: VideoTask) -> VideoTask:
    """A task whose output name the file system cannot take fails alone (its problem),
    never the batch at planning."""
    if task.problem is not None:
        return task
    problem = name_problem(task.output)
    return task if problem is None else dataclasses.replace(task, problem=problem)


def _video_count(path: Path) -> tuple[int, str | None]:
    """A project's number of videos, or why it cannot be read (the task's problem)."""
    try:
        return count_videos(path), None
    except SleapInferError as exc:
        return 0, str(exc).removeprefix(f"{path}: ")


def _project_tasks(
    start: int, item: VideoInput, out: Path, fmt: OutputFormat, video_index: int | None
) -> list[VideoTask]:
    """One task per video of a project (``out`` is where all its predictions go), or the one
    ``--video-index`` names; a project with several videos also gets a combined file."""
    if video_index is not None or item.problem is not None:
        plan = ProjectPlan(item.path, ((video_index or 0, out),))
        return [VideoTask(start, item.path, out, item.problem, video_index, plan)]
    n, problem = _video_count(item.path)
    if problem is not None or n <= 1:
        plan = ProjectPlan(item.path, ((0, out),))
        return [VideoTask(start, item.path, out, problem, None, plan)]
    parts = tuple((i, part_path(out, i)) for i in range(n))
    plan = ProjectPlan(item.path, parts, out if fmt.name == "slp" else None)
    return [VideoTask(start + i, item.path, path, None, i, plan) for i, path in parts]


def _tasks_for(
    start: int, item: VideoInput, out: Path, fmt: OutputFormat, video_index: int | None
) -> list[VideoTask]:
    if is_labels_path(item.path):
        return _project_tasks(start, item, out, fmt, video_index)
    return [VideoTask(start, item.path, out, item.problem)]


def check_output_arg(output: Path, inputs: Sequence[VideoInput], fmt: OutputFormat) -> None:
    """One clear line (exit 2) for an ``-o`` that can be neither an output file nor a
    folder of outputs: ``-`` (no stdout output), an input, a path under a file, an
    existing file that is not an output of this format."""
    where = f"-o/--output {output}"
    if str(output) == "-":
        raise UsageError(f"{where}: predictions cannot go to stdout; give a file or folder name")
    for item in inputs:
        if same_file(output, item.path):
            raise UsageError(f"{where}: is an input of this run; give another name")
    for above in output.parents:
        if above.exists():
            if not above.is_dir():
                raise UsageError(f"{where}: {above} is a file, not a folder")
            break
    if output.is_file() and not output.name.endswith(fmt.suffixes):
        raise UsageError(
            f"{where}: is an existing file, not a --format {fmt.name} output "
            f"(a {fmt.suffix} file name or a folder)"
        )


def plan_tasks(
    inputs: Sequence[VideoInput],
    output: Path | None,
    fmt: OutputFormat | tuple[OutputFormat, ...],
    video_index: int | None = None,
) -> list[VideoTask]:
    """Output paths for every input; ``-o`` is a file for one input, else a folder.

    A SLEAP project with several videos becomes one task per video (outputs named
    ``.videoN``), unless ``video_index`` picks one. Raises :class:`UsageError` when
    two videos would write the same file. A task that would write over another
    input of the run (``'v.mp4*'`` matching ``v.mp4`` and a project named
    ``v.mp4.predictions.slp``) fails alone (:func:`output_input_problem`).
    """
    formats = fmt if isinstance(fmt, tuple) else (fmt,)
    tasks = _plan_tasks(inputs, output, formats[0], video_index)
    sources = {_key(item.path): item.path for item in inputs}  # unreadable ones too
    for i, task in enumerate(tasks):
        if task.problem is None:
            problem = output_input_problem(task, formats, sources)
            if problem is not None:
                tasks[i] = dataclasses.replace(task, problem=problem)
    return tasks


def _plan_tasks(
    inputs: Sequence[VideoInput],
    output: Path | None,
    fmt: OutputFormat,
    video_index: int | None = None,
) -> list[VideoTask]:
    if output is not None:
        check_output_arg(output, inputs, fmt)
    if output is not None and output.name.endswith(_FILE_SUFFIXES) and not output.is_dir():
        if len(inputs) != 1:
            raise UsageError(
                f"-o/--output {output}: must be a folder when predicting {len(inputs)} videos"
            )
        if not output.name.endswith(fmt.suffixes):
            raise UsageError(
                f"-o/--output {output}: a --format {fmt.name} file should end in {fmt.suffix}"
            )
        return [_check_name(t) for t in _tasks_for(0, inputs[0], output, fmt, video_index)]
    tasks: list[VideoTask] = []
    owners: dict[Path, Path] = {}
    for item in inputs:
        out = _output_for(item, output, fmt, video_index)
        for task in _tasks_for(len(tasks), item, out, fmt, video_index):
            task = _check_name(task)
            key = _key(task.output)
            if key in owners and item.problem is None:
                raise UsageError(
                    f"{item.path} and {owners[key]} would both write {task.output}; "
                    "rename one or predict them into different -o folders"
                )
            owners[key] = item.path
            tasks.append(task)
    return tasks


def settled_before_running(
    task: VideoTask,
    fmt: OutputFormat | tuple[OutputFormat, ...],
    overwrite: bool,
    wanted: Callable[[], dict[str, Any]] | None = None,
) -> VideoOutcome | None:
    """The outcome of a task that needs no model: an input that cannot be attempted, or
    an output that is already there (the rule: :func:`~sleap_infer.writers.outputs.
    refuse_existing`).

    A finished output is skipped only when it answers the request ``wanted()`` returns
    (:func:`~sleap_infer.pipeline.request.request_record`: models by checkpoint hash,
    options, frames; called only then, so it may raise for a bad model path); one that
    answers another request fails with what differs, and so does anything else there.
    A journal beside a finished output does not change that: its run may be another
    one (a ``--frames`` test), and is never let replace it.
    """
    if task.problem is not None:
        return VideoOutcome(task, FAILED, message=f"{task.video}: {task.problem}")
    if overwrite:
        return None
    formats = fmt if isinstance(fmt, tuple) else (fmt,)
    missing = 0
    for each, path in output_paths(task.output, formats):
        found, provenance = judge_output(path, each)
        if found is None:
            missing += 1
            continue
        if found != COMPLETE:
            return VideoOutcome(task, FAILED, message=existing_message(path, each, found))
        if each.hdf5_keys is None:  # CSV: its record is beside it
            provenance = read_side_record(path)
        if not is_ours(provenance):
            return VideoOutcome(task, FAILED, message=not_ours_message(path))
        changes = [] if wanted is None else request_changes(provenance, wanted())
        if changes:
            return VideoOutcome(task, FAILED, message=other_request_message(path, changes))
    if missing:
        # Nothing there, or some formats finished and others not: the pipeline predicts
        # (or resumes its journal) and writes only the missing ones, keeping the rest.
        return None  # a journal is the pipeline's to judge (resume, or ask for a flag)
    if len(formats) == 1:
        message = existing_message(task.output, formats[0], COMPLETE)
        return VideoOutcome(task, SKIPPED, message=message)
    names = ", ".join(str(path) for _, path in output_paths(task.output, formats))
    return VideoOutcome(task, SKIPPED, message=f"{names} exist (--overwrite replaces them)")


def is_ours(provenance: dict[str, Any] | None) -> bool:
    """Whether an output's provenance is one ``infer predict`` wrote: it holds the request
    record (or, written before requests were recorded, names us as its maker). A SLEAP
    1.x or sleap-nn file at the same name answers no request of ours."""
    if provenance is None:
        return False
    return REQUEST_KEY in provenance or provenance.get("sleap_infer") == "predict"


def not_ours_message(path: Path) -> str:
    """The line for a file at an output path that no ``infer predict`` run wrote."""
    what = (
        "e.g. a SLEAP labels file"
        if path.suffix in (".slp", ".h5", ".nwb")
        else ("or one replaced since, or written before records were kept beside CSV outputs")
    )
    return (
        f"{path}: exists but has no sleap_infer request record (not an output of "
        f"infer predict, {what}); kept it: move it away, or pass --overwrite to replace it"
    )


def output_input_problem(
    task: VideoTask, formats: tuple[OutputFormat, ...], inputs: dict[Path, Path]
) -> str | None:
    """Why ``task`` may not run because it would write over an input of the run (keyed by
    resolved path): its outputs, its journal, its project's combined file.
    Checked at planning, so nothing is written, and whatever ``--overwrite`` says."""
    paths = [path for _, path in output_paths(task.output, formats)]
    paths.append(journal_path(task.output))
    if task.project is not None and task.project.combined is not None:
        paths.append(task.project.combined)
    for path in paths:
        key = _key(path)
        if key in inputs:
            return (
                f"its output {path} is also an input of this run ({inputs[key]}); not "
                "predicted, so that input is never written over (even with --overwrite): "
                "rename it, or predict into another -o folder"
            )
    return None


def _key(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


# ``a.mp4`` -> ``a.mp4.predictions.slp``, ``.predictions.csv``, ``.predictions.slp.partial``,
# a project's ``a.slp.video1.predictions.slp`` and ``a.slp.merged.slp``.
_SUFFIXES = "|".join(re.escape(f.suffix) for f in FORMATS.values())
_OUTPUT_TAIL = re.compile(
    rf"\.(?:(?:video\d+\.)?predictions(?:{_SUFFIXES})(?:\.partial)?|merged\.slp)"
)


def _named_like_output(path: Path, names: set[str]) -> bool:
    """Whether ``path`` is named as our output of another input in its folder is."""
    name = path.name
    for i in (m.start() for m in re.finditer(r"\.", name)):
        if name[:i] in names and _OUTPUT_TAIL.fullmatch(name[i:]):
            return True
    return False


def _made_by_us(provenance: dict[str, Any] | None) -> bool:
    """An output of ``infer predict`` (:func:`is_ours`), or a project copy that
    ``--merge-into-project`` wrote (it holds the project's user labels too)."""
    return is_ours(provenance) or "sleap_infer_merged_from" in (provenance or {})


def _has_user_instances(path: Path) -> bool:
    """Whether a ``.slp`` holds labels a person made (instance type 0): a project to keep
    as an input, never a predictions file to pass over."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            if "instances" not in f:
                return False
            return bool((f["instances"]["instance_type"][()] == 0).any())
    except (OSError, KeyError, ValueError, TypeError):
        return False


def drop_own_outputs(inputs: Sequence[VideoInput]) -> tuple[list[VideoInput], list[Path]]:
    """Inputs a glob matched that are our own outputs, taken out (kept, dropped).

    ``infer predict 'data/*'`` would otherwise predict ``a.mp4.predictions.slp`` as
    a project, one generation more per rerun. Dropped: files holding our request
    record, and files named as our output of another input of the same expansion
    (``a.mp4.predictions.csv`` next to ``a.mp4``) unless they hold user labels: a
    SLEAP project of that name stays an input (and the other input, whose output it
    would be, is refused). Inputs named one by one are never dropped.
    """
    by_folder: dict[Path, set[str]] = {}
    for item in inputs:
        by_folder.setdefault(item.path.parent, set()).add(item.path.name)
    kept: list[VideoInput] = []
    dropped: list[Path] = []
    for item in inputs:
        path = item.path
        if item.matched and item.problem is None:
            named = _named_like_output(path, by_folder[path.parent])
            hdf5 = path.suffix.lower() in (".slp", ".h5", ".nwb")
            ours = hdf5 and _made_by_us(stored_provenance(path))
            if ours or (named and not (is_labels_path(path) and _has_user_instances(path))):
                dropped.append(path)
                continue
        kept.append(item)
    return kept, dropped


# What each part of a request (pipeline/request.py's record) is, in words, for the
# one-line refusal: "predicted with other models and other tracking settings".
_REQUEST_WORDS = {
    "models": "other models",
    "tracking": "other tracking settings",
    "filters": "other instance filters",
    "overrides": "other preprocessing overrides",
    "project": "other project frame choices",
    "centroid_only": "another --centroid-only",
}


def other_request_message(path: Path, changes: list[str]) -> str:
    """One readable line for a finished output that answers another request.

    ``changes`` are :func:`~sleap_infer.pipeline.request.request_changes`' ``"key: OLD
    then, NEW now"`` strings, which hold checkpoint hashes and JSON blobs: the line
    says only which parts differ, in words (the option names, and the frame ranges,
    being short). The rule stays: finished work is never replaced without asking.
    """
    words: list[str] = []
    options: list[str] = []
    for change in changes:
        key, _, rest = change.partition(": ")
        top, _, leaf = key.partition(".")
        if top == "options":
            options.append(leaf or top)
        elif top == "frames":
            then, _, now = rest.removesuffix(" now").partition(" then, ")
            words.append(f"other frames ({then.strip(chr(34))} then, {now.strip(chr(34))} now)")
        elif top == "models" and rest.startswith("training config sha256 none then"):
            words.append("no training config recorded (an older output)")
        elif top == "models" and rest.startswith("training config"):
            words.append("another training_config.yaml")
        elif key == "tracking" and rest.startswith("unset then"):
            words.append("no tracking (this run tracks)")
        elif key == "tracking" and rest.endswith("unset now"):
            words.append("tracking (this run does not track)")
        else:
            words.append(_REQUEST_WORDS.get(top, f"other {top}"))
    if options:
        words.append(f"other options ({', '.join(options)})")
    if "other models" in words:  # other checkpoints: their configs differ with them
        words = [w for w in words if "training" not in w]
    words = list(dict.fromkeys(words)) or ["other settings"]
    said = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
    return (
        f"{path}: exists, predicted with {said}; "
        "--overwrite replaces it, or -o writes this run elsewhere"
    )


def saved_frames(task: VideoTask) -> int:
    """Frames already saved in the video's journal (0 if there is none or it is unreadable)."""
    try:
        return read_journal(journal_path(task.output)).n_predicted
    except (SleapInferError, OSError):
        return 0


def kept_hint(task: VideoTask) -> str:
    """What became of an unfinished video's predictions."""
    journal = journal_path(task.output)
    if journal.exists():
        return f"predictions so far are kept in {journal}: rerun with --resume to continue"
    return "nothing was saved for it yet"


def interrupted_outcome(task: VideoTask) -> VideoOutcome:
    """The frames count is what the journal holds, so the summary shows what was saved."""
    return VideoOutcome(
        task,
        INTERRUPTED,
        counts=Counts(frames=saved_frames(task)),
        message=f"{task.video}: interrupted; {kept_hint(task)}",
    )
