"""The public Python API: ``load`` a pipeline, ``predict`` a batch of videos into files.

    import sleap_infer

    pipe = sleap_infer.load("models/centroid", "models/centered_instance")
    pred = pipe.predict(frames)              # numpy / torch, list of frames, path, sio.Video
    pred.points                              # (frames, instances, nodes, 2)
    pred[0].points                           # one frame: (instances found, nodes, 2)
    labels = pred.to_labels()                # sio.Labels; pred.to_dataframe(), to_movement()
    for frame in pipe.stream("video.mp4"):   # FrameResults as predicted, flat memory
        ...
    pipe.predict_to_file("video.mp4", "video.slp")   # journal, resume, atomic output

    sleap_infer.predict(["a.mp4", "b.mp4"], ["models/bottomup"], output="preds/")

Option names and defaults are ``infer predict``'s (``peak_threshold=0.2``,
``batch_size=4``, ``max_instances=None``, ``tracking=False``, no ``filter_*``
post-filter ...): :func:`sleap_infer.pipeline.spec.bind` routes both to the same
records and checks each value's kind and range once for both, and the command
line is a thin layer over :func:`plan` and :class:`Batch`. Errors leave these
calls in Python's words (``overwrite=True``, not ``--overwrite``).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sleap_infer.batch.execute import BatchEvents, JobSettings
from sleap_infer.batch.run import Batch, BatchResult, device_list, plan_batch
from sleap_infer.core.errors import UsageError
from sleap_infer.pipeline.pipeline import Pipeline
from sleap_infer.pipeline.python_terms import in_python_words
from sleap_infer.pipeline.spec import PipelineSpec, bind
from sleap_infer.sources.frames import check_frames
from sleap_infer.sources.inputs import parse_shard
from sleap_infer.writers.registry import FORMATS, format_names, get_formats

Paths = str | Path | Sequence[str | Path]


def _model_paths(models: Paths, more: Sequence[str | Path] = ()) -> tuple[str, ...]:
    paths = [models, *more] if isinstance(models, (str, Path)) else [*models, *more]
    if not paths:
        raise UsageError("no model given: pass a model directory (or a top-down pair)")
    if len(paths) > 2:
        raise UsageError(f"{len(paths)} models given: give one model, or a top-down pair")
    return tuple(str(p) for p in paths)


@in_python_words
def load(
    models: Paths,
    *more_models: str | Path,
    backend: str | None = None,
    device: str = "auto",
    **options: Any,
) -> Pipeline:
    """A pipeline for one model directory or a top-down pair, loaded and ready.

    ``models``: a sleap-nn model folder (``training_config.yaml`` + ``best.ckpt``) or
    a SLEAP 1.x one, or a pair (``load(centroid, instance)`` or ``load([centroid,
    instance])``), or a folder written by ``infer export`` (it runs on its own, no
    checkpoint needed). ``backend``: ``auto`` (default: per call, the fastest exact
    runtime installed for these models and that many frames; an export folder's own
    runtime), ``torch``, ``onnx``, ``openvino`` or ``trt``;
    ``device``: ``auto``, ``cpu``, ``cuda:N`` or ``mps``. ``options``: any of
    ``infer predict``'s options by their Python name (``peak_threshold``,
    ``max_instances``, ``batch_size``, ``tracking``, ``fp16`` ...), same defaults.
    """
    spec = bind(_model_paths(models, more_models), backend, **options)
    return Pipeline(spec, device)


@in_python_words
def plan(videos: Paths, models: Paths, *, backend: str | None = None, **kwargs: Any) -> Batch:
    """Everything :func:`predict` will do, checked and planned, nothing loaded yet.

    ``kwargs``: :func:`plan_spec`'s arguments (``output``, ``format``, ``frames``,
    ``resume``, ``overwrite``, ``recursive``, ``shard``, ``device``, ``devices``,
    ``merge_into_project``) and every option of :func:`load`. Inputs are expanded
    and every output path planned (finished outputs will be skipped, missing inputs
    fail) before any model loads; ``Batch.load()`` then loads the models,
    ``Batch.run(events)`` predicts.
    """
    run = {k: kwargs.pop(k) for k in _run_args() if k in kwargs}
    spec = bind(_model_paths(models), backend, **kwargs)
    return plan_spec(videos, spec, **run)


@in_python_words
def plan_spec(
    videos: Paths,
    spec: PipelineSpec,
    *,
    output: str | Path | None = None,
    format: str | Sequence[str] = "slp",
    frames: str | None = None,
    resume: bool = False,
    overwrite: bool = False,
    recursive: bool = False,
    shard: str | None = None,
    device: str = "auto",
    devices: str | Sequence[str] | None = None,
    merge_into_project: bool = False,
    extra_provenance: dict[str, Any] | None = None,
) -> Batch:
    """:func:`plan` for a spec already bound (the command line binds its flags itself)."""
    if resume and overwrite:
        raise UsageError("--resume and --overwrite contradict each other: pick one")
    check_frames(frames)
    formats = get_formats(format)
    fmt = formats[0]  # the main format: names the journal (and -o FILE, with one format)
    spec.nwb.check_format("nwb" if FORMATS["nwb"] in formats else fmt.name)
    if devices is not None and not isinstance(devices, str):
        devices = ",".join(devices)
    worker_devices = device_list(devices, device)
    inputs = [videos] if isinstance(videos, (str, Path)) else list(videos)
    out = Path(output) if output is not None else None
    notes: list[str] = []
    tasks = plan_batch(
        inputs, out, formats, recursive, parse_shard(shard), _video_index(spec), notes
    )
    if merge_into_project:
        check_merge(tasks, format_names(formats))
    settings = JobSettings(
        frames=frames,
        output_format=format_names(formats),
        resume=resume,
        overwrite=overwrite,
        merge_into_project=merge_into_project,
        extra_provenance=dict(extra_provenance or {}),
    )
    return Batch(tasks, spec, settings, worker_devices, notes)


def _run_args() -> frozenset[str]:
    """:func:`plan_spec`'s keyword arguments: what :func:`plan` does not bind as options."""
    return frozenset(inspect.signature(plan_spec).parameters) - {"videos", "spec"}


def _video_index(spec: PipelineSpec) -> int | None:
    return spec.project.video_index if spec.project is not None else None


def check_merge(tasks: Sequence[Any], fmt: str) -> None:
    """``merge_into_project`` needs a project among the inputs and ``.slp`` predictions."""
    if fmt != "slp":
        raise UsageError(
            f"--merge-into-project writes a SLEAP project: use --format slp, not {fmt}"
        )
    if tasks and all(t.project is None for t in tasks):
        raise UsageError("--merge-into-project needs a SLEAP project (.slp) among the inputs")


@in_python_words
def predict(
    videos: Paths,
    models: Paths,
    *,
    output: str | Path | None = None,
    events: BatchEvents | None = None,
    **kwargs: Any,
) -> BatchResult:
    """Predict every video into a file, as ``infer predict`` does; returns every outcome.

    ``videos``: files, folders, globs or ``.txt`` lists; ``output``: a file (one
    video) or folder. Takes :func:`plan`'s arguments and every option of
    :func:`load`. A video that fails is one failed outcome (``result.outcomes``),
    never the end of the batch; bad options or models raise before any video runs.
    """
    batch = plan(videos, models, output=output, **kwargs)
    if batch.todo:
        batch.load()
    return batch.run(events)
