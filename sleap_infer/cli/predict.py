"""``infer predict``: run a model over one or more videos and write ``.slp`` files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from sleap_infer.cli.progress import VideoBar, console, frame_progress
from sleap_infer.errors import UsageError
from sleap_infer.layers import PredictOptions


def predict(
    videos: Annotated[list[Path], typer.Argument(help="Video file(s) to predict on.")],
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
            help="Output .slp (one video) or folder (several videos). "
            "Default: <video>.predictions.slp next to each video.",
        ),
    ] = None,
    fp16: Annotated[
        bool,
        typer.Option(
            "--fp16",
            help="Half precision: torch autocast (cuda/mps), or an fp16 export (onnx/trt).",
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
    """Predict poses on videos and save them as SLEAP .slp files."""
    from sleap_infer.predictor import Predictor

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
    outputs = _output_paths(videos, output)
    with console.status("Loading model...", spinner="dots"):
        predictor = Predictor(
            model,
            backend=backend,
            device=device,
            batch_size=batch_size,
            options=options,
            backend_options=_backend_options(backend, fp16, compile),
        )
    console.print(
        f"Model: [bold]{type(predictor.layer).__name__}[/] "
        f"({', '.join(m.model_type for m in predictor.models)}) on "
        f"[bold]{predictor.backend_name}[/]/{predictor.device}, batch size {batch_size}"
    )
    cli_args = {
        "videos": [str(v) for v in videos],
        "model": [str(m) for m in model],
        "backend": backend,
        "device": device,
        "batch_size": batch_size,
        "frames": frames,
    }
    for video, out in zip(videos, outputs):
        with frame_progress(disable=quiet) as progress:
            bar = VideoBar(progress)
            result = predictor.predict_video(
                video,
                output=out,
                frames=frames,
                on_start=bar.start,
                on_progress=bar.advance,
                extra_provenance={"cli_args": cli_args},
            )
        for err in result.bad_frames:
            console.print(f"[yellow]warning:[/] {video}: frame {err.index}: {err.reason}")
        console.print(
            f"[green]✓[/] {video}: {result.frames} frames, {result.instances} instances, "
            f"{result.fps:.1f} FPS -> {result.output}"
        )


def _output_paths(videos: list[Path], output: Path | None) -> list[Path | None]:
    if output is None:
        return [None] * len(videos)
    if len(videos) == 1 and output.suffix == ".slp":
        return [output]
    if output.suffix == ".slp":
        raise UsageError("-o/--output must be a folder when predicting several videos")
    return [output / (v.name + ".predictions.slp") for v in videos]


def _backend_options(backend: str, fp16: bool, compile: bool) -> dict[str, object]:
    if backend.strip().lower() == "torch":
        return {"fp16": fp16, "compile": compile}
    if compile:
        raise UsageError("--compile applies to --backend torch only")
    # onnx/trt export on first use; say so, since it takes a few seconds.
    return {"fp16": fp16, "notify": lambda msg: console.print(f"[cyan]export:[/] {escape(msg)}")}
