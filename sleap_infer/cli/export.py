"""``infer export``: write an ONNX graph (and optionally a TensorRT engine) for a model."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from sleap_infer.cli.progress import console
from sleap_infer.errors import UsageError


def export(
    model: Annotated[
        list[Path],
        typer.Argument(help="Model directory (or its best.ckpt / training_config.yaml)."),
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
        int, typer.Option(min=1, help="Local-peak candidates kept per channel (centroids).")
    ] = 64,
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
        typer.Option("--output", "-o", help="Export directory (default MODEL/exported)."),
    ] = None,
) -> None:
    """Export a model to ONNX / TensorRT with peak finding and refinement in the graph."""
    from sleap_infer.export.exporter import export_model
    from sleap_infer.export.settings import (
        DecodeSettings,
        ExportSettings,
        parse_formats,
        parse_size,
    )

    if len(model) > 1:
        raise UsageError(
            "exporting two models (top-down) is not supported yet; export each model on its own"
        )
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
        ),
    )
    t0 = time.perf_counter()
    with console.status(f"Exporting {model[0]}...", spinner="dots"):
        info = export_model(
            model[0], output, settings, device=device, notify=lambda m: console.print(escape(m))
        )
    shape = "x".join(str(d) for d in info.input_shape)
    console.print(
        f"[green]✓[/] {info.model_type} exported in {time.perf_counter() - t0:.1f} s -> "
        f"{escape(str(info.path))} (input image uint8 {shape}; "
        f"outputs {', '.join(info.output_names)})"
    )
    for name in sorted(info.data["files"].values(), key=str):
        if name is not None:
            size = (info.path / name).stat().st_size
            console.print(f"  {name}: {size / 1e6:.2f} MB")
