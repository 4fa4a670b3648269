"""``infer predict``: run a model over many videos and write one prediction file each.

Order of work, so that mistakes surface before any time is spent: check the
options, expand the inputs (names only), plan every output path, load and
build the model (a bad model directory fails here, before any video is
opened), then predict video by video. A video that fails is reported in one
line and the batch goes on; the exit code is non-zero if any video failed
(1) or the run was interrupted (130).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from sleap_infer.cli.progress import BatchProgress, console, print_summary
from sleap_infer.errors import UsageError
from sleap_infer.layers import PredictOptions

if TYPE_CHECKING:
    from sleap_infer.batch.pool import PredictorSpec
    from sleap_infer.predictor import Predictor

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


def predict(
    videos: Annotated[
        list[str],
        typer.Argument(
            help="Videos: files, folders, globs ('data/*.mp4'), or .txt files listing them.",
            show_default=False,
        ),
    ],
    model: Annotated[
        list[Path],
        typer.Option(
            "--model",
            "-m",
            help="Model directory (or its best.ckpt / training_config.yaml). Give two for "
            "top-down: a centroid model and a centered-instance model, in either order.",
        ),
    ],
    backend: Annotated[str, typer.Option(help="Runtime: torch, onnx or trt.")] = "torch",
    device: Annotated[
        str, typer.Option(help="auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps.")
    ] = "auto",
    devices: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated devices, one worker process each, e.g. cuda:0,cuda:1. "
            "Videos go to whichever worker is free."
        ),
    ] = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", "-b", min=1, help="Frames per batch.")
    ] = 4,
    peak_threshold: Annotated[
        float, typer.Option(help="Minimum confidence-map value for a peak.")
    ] = 0.2,
    no_refine: Annotated[
        bool, typer.Option("--no-refine", help="Disable integral sub-pixel refinement.")
    ] = False,
    integral_patch_size: Annotated[
        int, typer.Option(min=1, help="Patch side for integral refinement.")
    ] = 5,
    max_instances: Annotated[
        int | None,
        typer.Option("--max-instances", "-n", min=1, help="Keep at most N animals per frame."),
    ] = None,
    frames: Annotated[
        str | None,
        typer.Option(help="Frames to predict, e.g. '0-99,200' or '500-' (inclusive; default all)."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Output file (one video) or folder (several; folder inputs keep their "
            "layout). Default: <video>.predictions.<ext> next to each video.",
        ),
    ] = None,
    output_format: Annotated[
        str,
        typer.Option("--format", help="Output format: slp, nwb, analysis-h5 or csv."),
    ] = "slp",
    recursive: Annotated[
        bool, typer.Option("--recursive", "-r", help="Search folders' subfolders too.")
    ] = False,
    skip_existing: Annotated[
        bool,
        typer.Option("--skip-existing", help="Skip videos whose output already exists."),
    ] = False,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Continue interrupted videos from their .partial journal (implies "
            "--skip-existing).",
        ),
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="Discard partial journals of interrupted runs."),
    ] = False,
    shard: Annotated[
        str | None,
        typer.Option(
            help="Predict only share i of n of the inputs (0-based 'i/n', e.g. "
            "$SLURM_ARRAY_TASK_ID/8)."
        ),
    ] = None,
    fp16: Annotated[
        bool,
        typer.Option(
            "--fp16",
            help="Half precision: torch autocast (cuda/mps), or an fp16 export (onnx/trt).",
        ),
    ] = False,
    bf16: Annotated[
        bool,
        typer.Option(
            "--bf16",
            help="bfloat16 autocast for --backend torch on cpu/cuda: about 1.8x faster on CPUs "
            "with AVX512-BF16/AMX, keypoints differ slightly from float32.",
        ),
    ] = False,
    compile: Annotated[
        bool, typer.Option("--compile", help="torch.compile the network (slow first batch).")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    # --- model-type knobs (top-down stage 1, bottom-up PAF grouping); sleap-nn's defaults.
    centroid_peak_threshold: Annotated[
        float | None,
        typer.Option(
            help="Top-down: peak threshold for the centroid stage (default: --peak-threshold)."
        ),
    ] = None,
    max_edge_length_ratio: Annotated[
        float,
        typer.Option(
            help="Bottom-up: connections longer than this fraction of the image are penalised."
        ),
    ] = 0.25,
    dist_penalty_weight: Annotated[
        float, typer.Option(help="Bottom-up: weight of the long-connection penalty.")
    ] = 1.0,
    n_points: Annotated[
        int, typer.Option(min=2, help="Bottom-up: samples along each PAF line integral.")
    ] = 10,
    min_instance_peaks: Annotated[
        float,
        typer.Option(
            min=0,
            help="Bottom-up: drop animals with fewer peaks (below 1: a fraction of the nodes).",
        ),
    ] = 0,
    min_line_scores: Annotated[
        float, typer.Option(help="Bottom-up: minimum PAF score for a connection to count.")
    ] = 0.25,
) -> None:
    """Predict poses on videos and save them as SLEAP .slp (or NWB, analysis HDF5, CSV)."""
    from sleap_infer.batch.execute import JobSettings, run_sequential
    from sleap_infer.batch.pool import PredictorSpec, run_on_devices
    from sleap_infer.batch.tasks import SKIPPED, VideoOutcome, already_done, plan_tasks
    from sleap_infer.io.frames import check_frames
    from sleap_infer.io.inputs import expand_inputs, parse_shard, take_shard
    from sleap_infer.io.outputs import get_format

    if resume and overwrite:
        raise UsageError("--resume and --overwrite contradict each other: pick one")
    check_frames(frames)
    fmt = get_format(output_format)
    shard_spec = parse_shard(shard)
    device_list = _device_list(devices, device)
    options = PredictOptions(
        peak_threshold=peak_threshold,
        refine=not no_refine,
        integral_patch_size=integral_patch_size,
        max_instances=max_instances,
        centroid_peak_threshold=centroid_peak_threshold,
        max_edge_length_ratio=max_edge_length_ratio,
        dist_penalty_weight=dist_penalty_weight,
        n_points=n_points,
        min_instance_peaks=min_instance_peaks,
        min_line_scores=min_line_scores,
    )
    tasks = take_shard(plan_tasks(expand_inputs(videos, recursive), output, fmt), shard_spec)
    if not tasks:
        console.print(f"nothing to predict: shard {shard} of these inputs is empty")  # n > inputs
        return
    finished: list[VideoOutcome] = []
    todo = []
    for task in tasks:
        if (skip_existing or resume) and already_done(task, fmt):
            finished.append(VideoOutcome(task, SKIPPED, message=f"{task.output} is complete"))
        else:
            todo.append(task)

    spec = PredictorSpec(
        model_paths=tuple(str(m) for m in model),
        backend=backend,
        batch_size=batch_size,
        options=options,
        backend_options=_backend_options(backend, fp16, compile, bf16),
    )
    settings = JobSettings(
        frames=frames,
        output_format=fmt.name,
        resume=resume,
        overwrite=overwrite,
        extra_provenance={
            "cli_args": {
                "videos": list(videos),
                "model": [str(m) for m in model],
                "backend": backend,
                "device": device,
                "devices": devices,
                "batch_size": batch_size,
                "frames": frames,
                "format": fmt.name,
                "shard": shard,
            }
        },
    )
    predictor = None
    if todo:
        with console.status("Loading model...", spinner="dots"):
            # Every model problem surfaces here, before any video is opened.
            predictor = spec.build(device_list[0]) if len(device_list) == 1 else None
            if predictor is None:
                _check_devices(spec, device_list)
        _describe(spec, predictor, device_list)

    with BatchProgress(len(tasks), disable=quiet) as progress, sigterm_as_interrupt():
        for outcome in finished:
            progress.video_finished(outcome)
        if predictor is not None:
            outcomes, interrupted = run_sequential(predictor, todo, settings, progress)
        elif todo:
            outcomes, interrupted = run_on_devices(
                device_list, spec, todo, settings, progress, progress.note
            )
        else:
            outcomes, interrupted = [], False
    everything = sorted(finished + outcomes, key=lambda o: o.task.index)
    print_summary(everything)
    if interrupted:
        console.print(
            "[yellow]interrupted:[/] rerun the same command with --resume to continue "
            "(finished videos are skipped)"
        )
        raise typer.Exit(EXIT_INTERRUPTED)
    if any(not o.ok for o in everything):
        raise typer.Exit(EXIT_FAILED)


def _backend_options(backend: str, fp16: bool, compile: bool, bf16: bool) -> dict[str, object]:
    if backend.strip().lower() == "torch":
        return {"fp16": fp16, "compile": compile, "bf16": bf16}
    for flag, used in (("--compile", compile), ("--bf16", bf16)):
        if used:
            raise UsageError(f"{flag} applies to --backend torch only")
    # onnx/trt export on first use; say so, since it takes a few seconds.
    return {"fp16": fp16, "notify": print_export_notice}


def print_export_notice(message: str) -> None:
    """Module-level (not a lambda) so ``--devices`` workers can unpickle it."""
    console.print(f"[cyan]export:[/] {escape(message)}")


def _device_list(devices: str | None, device: str) -> list[str]:
    if devices is None:
        return [device]
    if device != "auto":
        raise UsageError("give either --device or --devices, not both")
    out = [d.strip() for d in devices.split(",") if d.strip()]
    if not out:
        raise UsageError(f"--devices {devices!r}: expected e.g. cuda:0,cuda:1")
    return out


def _check_devices(spec: PredictorSpec, devices: list[str]) -> None:
    """Before spawning workers: the models load and combine, and every device exists."""
    from sleap_infer.backends import backend_factory
    from sleap_infer.layers import build_layer
    from sleap_infer.model.loader import load_model

    models = [load_model(p) for p in spec.model_paths]
    for d in devices:
        backend_factory(spec.backend, d, **spec.backend_options)
    build_layer(models, backend_factory("torch", "cpu"), spec.options)


def _describe(spec: PredictorSpec, predictor: Predictor | None, devices: list[str]) -> None:
    if predictor is not None:
        where = f"{predictor.backend_name}/{predictor.device}"
        types = ", ".join(m.model_type for m in predictor.models)
        what = f"{type(predictor.layer).__name__} ({types})"
    else:
        where = f"{spec.backend}, {len(devices)} workers ({', '.join(devices)})"
        what = ", ".join(spec.model_paths)
    console.print(
        f"Model: [bold]{what}[/] on [bold]{where}[/], batch size {spec.batch_size}",
        soft_wrap=True,
    )


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
