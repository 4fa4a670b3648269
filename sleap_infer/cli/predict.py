"""``infer predict``: parse the options, run the batch (:mod:`sleap_infer.batch.run`), summarise.

Exit codes: 0 when every video is done or skipped, 1 when any video failed
(or a model could not load), 2 for bad options, 130 when interrupted.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from sleap_infer.cli.options import (
    DEFAULT_BACKEND,
    DEFAULT_FORMAT,
    BackendOption,
    Device,
    DistPenaltyWeight,
    Fp16,
    IntegralPatchSize,
    MaxEdgeLengthRatio,
    ModelOption,
    NoRefine,
    NPoints,
    OutputFormatOption,
    PeakThreshold,
)
from sleap_infer.cli.progress import BatchProgress, console, print_summary
from sleap_infer.vocab import options as defaults
from sleap_infer.vocab.errors import UsageError
from sleap_infer.vocab.options import PredictOptions

if TYPE_CHECKING:
    from sleap_infer.batch.run import Batch

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
    model: ModelOption,
    backend: BackendOption = DEFAULT_BACKEND,
    device: Device = "auto",
    devices: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated devices, one worker process each, e.g. cuda:0,cuda:1. "
            "Videos go to whichever worker is free."
        ),
    ] = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", "-b", min=1, help="Frames per batch.")
    ] = defaults.BATCH_SIZE,
    peak_threshold: PeakThreshold = defaults.PEAK_THRESHOLD,
    no_refine: NoRefine = False,
    integral_patch_size: IntegralPatchSize = defaults.INTEGRAL_PATCH_SIZE,
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
    output_format: OutputFormatOption = DEFAULT_FORMAT,
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
    fp16: Fp16 = False,
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
    max_edge_length_ratio: MaxEdgeLengthRatio = defaults.MAX_EDGE_LENGTH_RATIO,
    dist_penalty_weight: DistPenaltyWeight = defaults.DIST_PENALTY_WEIGHT,
    n_points: NPoints = defaults.N_POINTS,
    min_instance_peaks: Annotated[
        float,
        typer.Option(
            min=0,
            help="Bottom-up: drop animals with fewer peaks (below 1: a fraction of the nodes).",
        ),
    ] = defaults.MIN_INSTANCE_PEAKS,
    min_line_scores: Annotated[
        float, typer.Option(help="Bottom-up: minimum PAF score for a connection to count.")
    ] = defaults.MIN_LINE_SCORES,
) -> None:
    """Predict poses on videos and save them as SLEAP .slp (or NWB, analysis HDF5, CSV)."""
    from sleap_infer.batch.execute import JobSettings
    from sleap_infer.batch.pool import PredictorSpec
    from sleap_infer.batch.run import Batch, device_list, plan_batch
    from sleap_infer.io.formats import get_format
    from sleap_infer.io.frames import check_frames
    from sleap_infer.io.inputs import parse_shard

    if resume and overwrite:
        raise UsageError("--resume and --overwrite contradict each other: pick one")
    check_frames(frames)
    fmt = get_format(output_format.value)
    worker_devices = device_list(devices, device)
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
    tasks = plan_batch(videos, output, fmt, recursive, parse_shard(shard))
    if not tasks:
        console.print(f"nothing to predict: shard {shard} of these inputs is empty")  # n > inputs
        return
    spec = PredictorSpec(
        model_paths=tuple(str(m) for m in model),
        backend=backend.value,
        batch_size=batch_size,
        options=options,
        # onnx/trt export on first use (a few seconds): print_export_notice says so.
        backend_options={
            "fp16": fp16,
            "bf16": bf16,
            "compile": compile,
            "notify": print_export_notice,
        },
    )
    cli_args = {
        "videos": list(videos),
        "model": [str(m) for m in model],
        "backend": backend.value,
        "device": device,
        "devices": devices,
        "batch_size": batch_size,
        "frames": frames,
        "format": fmt.name,
        "shard": shard,
    }
    settings = JobSettings(
        frames=frames,
        output_format=fmt.name,
        resume=resume,
        overwrite=overwrite,
        extra_provenance={"cli_args": cli_args},
    )
    batch = Batch(tasks, spec, settings, worker_devices, skip_existing=skip_existing)
    _run(batch, len(tasks), quiet)


def _run(batch: Batch, n_tasks: int, quiet: bool) -> None:
    """Load the model (every model problem surfaces here, before any video is opened),
    predict with a progress display, print the summary, exit non-zero on trouble."""
    if batch.todo:
        with console.status("Loading model...", spinner="dots"):
            summary = batch.load()
        console.print(
            f"Model: [bold]{escape(summary.what)}[/] on [bold]{escape(summary.where)}[/], "
            f"batch size {summary.batch_size}",
            soft_wrap=True,
        )
    with BatchProgress(n_tasks, disable=quiet) as progress:
        result = batch.run(progress, on_worker_error=progress.note)
    print_summary(result.outcomes)
    if result.interrupted:
        console.print(
            "[yellow]interrupted:[/] rerun the same command with --resume to continue "
            "(finished videos are skipped)"
        )
        raise typer.Exit(EXIT_INTERRUPTED)
    if result.failed:
        raise typer.Exit(EXIT_FAILED)


def print_export_notice(message: str) -> None:
    """Module-level (not a lambda) so ``--devices`` workers can unpickle it."""
    console.print(f"[cyan]export:[/] {escape(message)}")
