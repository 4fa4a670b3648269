"""``infer export``: write an ONNX graph (and optionally a TensorRT engine) for a model."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from sleap_infer.cli.progress import console
from sleap_infer.errors import UsageError
from sleap_infer.export.metadata import ExportInfo
from sleap_infer.export.settings import DEFAULT_MAX_PEAKS


def export(
    model: Annotated[
        list[Path],
        typer.Argument(
            help="Model directory (or its best.ckpt / training_config.yaml); two for a "
            "top-down pair (a centroid and a centered-instance or multi-class model)."
        ),
    ],
    format: Annotated[
        str, typer.Option("--format", "-f", help="onnx, trt (engine + its ONNX) or both.")
    ] = "onnx",
    fp16: Annotated[
        bool, typer.Option("--fp16", help="Half-precision network (decoding stays fp32).")
    ] = False,
    batch: Annotated[
        int | None,
        typer.Option("--batch", min=1, help="Static batch size (default: dynamic batch)."),
    ] = None,
    dynamic_batch: Annotated[
        bool, typer.Option("--dynamic-batch", help="Dynamic batch axis (the default).")
    ] = False,
    input_size: Annotated[
        str | None,
        typer.Option(
            help="Frame size HxW the export is traced for (default: the model's "
            "max_height x max_width)."
        ),
    ] = None,
    opset: Annotated[int, typer.Option(help="ONNX opset (18 or newer).")] = 18,
    max_peaks: Annotated[
        int,
        typer.Option(
            "--max-peaks",
            "--max-peaks-per-node",
            min=1,
            help="Local-peak slots per channel: centroids, or bottom-up peaks per node.",
        ),
    ] = DEFAULT_MAX_PEAKS,
    n_points: Annotated[
        int, typer.Option(min=2, help="Bottom-up: samples along each PAF line integral.")
    ] = 10,
    max_edge_length_ratio: Annotated[
        float,
        typer.Option(
            help="Bottom-up: connections longer than this fraction of the image are penalised."
        ),
    ] = 0.25,
    dist_penalty_weight: Annotated[
        float, typer.Option(help="Bottom-up: weight of the long-connection penalty.")
    ] = 1.0,
    no_refine: Annotated[
        bool, typer.Option("--no-refine", help="Do not bake integral refinement.")
    ] = False,
    integral_patch_size: Annotated[int, typer.Option(min=1, help="Refinement patch side.")] = 5,
    peak_threshold: Annotated[
        float, typer.Option(help="Threshold for the *_valid outputs (values are always output).")
    ] = 0.2,
    device: Annotated[
        str, typer.Option(help="GPU for the TensorRT build: cuda or cuda:N.")
    ] = "auto",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Export directory (default MODEL/exported; a top-down pair: "
            "CENTROID/exported_topdown).",
        ),
    ] = None,
) -> None:
    """Export a model to ONNX / TensorRT with peak finding and refinement in the graph."""
    from sleap_infer.export.exporter import export_model
    from sleap_infer.export.pipeline import export_topdown
    from sleap_infer.export.settings import (
        DecodeSettings,
        ExportSettings,
        parse_formats,
        parse_size,
    )

    if len(model) > 2:
        raise UsageError("give one model directory, or two for a top-down pair")
    if batch is not None and dynamic_batch:
        raise UsageError("--batch N and --dynamic-batch exclude each other")
    settings = ExportSettings(
        formats=parse_formats(format),
        opset=opset,
        fp16=fp16,
        batch_size=batch,
        frame_size=None if input_size is None else parse_size(input_size),
        decode=DecodeSettings(
            refine=not no_refine,
            integral_patch_size=integral_patch_size,
            max_peaks=max_peaks,
            peak_threshold=peak_threshold,
            n_points=n_points,
            max_edge_length_ratio=max_edge_length_ratio,
            dist_penalty_weight=dist_penalty_weight,
        ),
    )
    t0 = time.perf_counter()

    def say(message: str) -> None:
        console.print(escape(message))

    names = " + ".join(str(m) for m in model)
    with console.status(f"Exporting {names}...", spinner="dots"):
        if len(model) == 2:
            folder, *stages = export_topdown(model, output, settings, device=device, notify=say)
        else:
            stages = [export_model(model[0], output, settings, device=device, notify=say)]
            folder = stages[0].path
    seconds = time.perf_counter() - t0
    kinds = " + ".join(info.model_type for info in stages)
    console.print(f"[green]✓[/] {kinds} exported in {seconds:.1f} s -> {escape(str(folder))}")
    for info in stages:
        _describe(info, folder)


def _describe(info: ExportInfo, folder: Path) -> None:
    """One line per stage (input, outputs), then its files and their sizes."""
    shape = "x".join(str(d) for d in info.input_shape)
    where = "" if info.path == folder else f"{info.path.name}/: "
    console.print(
        f"  {escape(where)}{info.model_type}: input image uint8 {shape}; "
        f"outputs {', '.join(info.output_names)}"
    )
    for name in sorted(info.data["files"].values(), key=str):
        if name is not None:
            size = (info.path / name).stat().st_size
            console.print(f"  {escape(where)}{name}: {size / 1e6:.2f} MB")
