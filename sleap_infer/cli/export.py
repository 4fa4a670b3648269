"""``infer export``: write an ONNX graph (and optionally a TensorRT engine) for a model.

Keypoint models get a graph that decodes in-graph; segmentation and tiled models a
graph of the network's raw maps, decoded on the host (the output says which).

Exit codes as ``infer predict``: 1 when the model cannot be loaded or exported
(a missing model directory included, as in predict and bench), 2 for bad options.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from sleap_infer.cli.console import console
from sleap_infer.cli.help import exit_codes
from sleap_infer.cli.options import (
    DEFAULT_EXPORT_FORMAT,
    EXPORT_FORMAT_ALIASES,
    Device,
    DistPenaltyWeight,
    ExportFormat,
    Fp16,
    IntegralPatchSize,
    MaxEdgeLengthRatio,
    ModelDirs,
    NoRefine,
    NPoints,
    PeakThreshold,
    check_device,
    parse_size,
)
from sleap_infer.core import options as defaults
from sleap_infer.core.artifact import ExportInfo
from sleap_infer.core.errors import UsageError
from sleap_infer.core.options import DecodeSettings
from sleap_infer.export.settings import TRT_DYNAMIC_BATCH

EPILOG = exit_codes(
    ok="exported",
    failed="the model failed to load or export, or TensorRT or CUDA is missing",
)


def export(
    model: ModelDirs,
    export_format: Annotated[
        ExportFormat,  # type: ignore[valid-type]
        typer.Option(
            "--format",
            "-f",
            "--runtime",
            case_sensitive=False,
            help="What to export for: onnx or openvino (the ONNX graph), or trt / tensorrt / "
            "both (a TensorRT engine, plus the ONNX graph it is built from).",
        ),
    ] = DEFAULT_EXPORT_FORMAT,
    fp16: Fp16 = False,
    batch: Annotated[
        int | None,
        typer.Option(
            "--batch", min=1, metavar="N", help="Static batch size (default: dynamic batch)."
        ),
    ] = None,
    dynamic_batch: Annotated[
        bool, typer.Option("--dynamic-batch", help="Dynamic batch axis (the default).")
    ] = False,
    max_batch_size: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="N",
            help="Largest batch of a dynamic-batch TensorRT engine (sleap-nn's default: 8).",
        ),
    ] = TRT_DYNAMIC_BATCH[2],
    input_size: Annotated[
        str | None,
        typer.Option(
            metavar="HxW",
            help="Frame size HxW the export is traced for (default: the model's "
            "max_height x max_width).",
        ),
    ] = None,
    input_scale: Annotated[
        float | None,
        typer.Option(
            metavar="FLOAT",
            help="Input scale to export with instead of the trained one (every model of "
            "the export); the export folder then predicts with it.",
        ),
    ] = None,
    crop_size: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="PX",
            help="Crop size to export a centered-instance (top-down) model with instead of "
            "the trained one; the export folder then predicts with it.",
        ),
    ] = None,
    opset: Annotated[int, typer.Option(metavar="N", help="ONNX opset (18 or newer).")] = 18,
    max_peaks: Annotated[
        int,
        typer.Option(
            "--max-peaks",
            "--max-peaks-per-node",
            min=1,
            metavar="K",
            help="Local-peak slots per channel: centroids, or bottom-up peaks per node.",
        ),
    ] = defaults.MAX_PEAKS,
    n_points: NPoints = defaults.N_POINTS,
    max_edge_length_ratio: MaxEdgeLengthRatio = defaults.MAX_EDGE_LENGTH_RATIO,
    dist_penalty_weight: DistPenaltyWeight = defaults.DIST_PENALTY_WEIGHT,
    no_refine: NoRefine = False,
    integral_patch_size: IntegralPatchSize = defaults.INTEGRAL_PATCH_SIZE,
    peak_threshold: PeakThreshold = defaults.PEAK_THRESHOLD,
    device: Device = "auto",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="DIR",
            help="Export directory (default MODEL/exported; a top-down pair: "
            "CENTROID/exported_topdown, or exported_topdown_segmentation).",
        ),
    ] = None,
    workspace_gb: Annotated[
        float,
        typer.Option(min=0.1, metavar="GB", help="TensorRT builder workspace (trt only)."),
    ] = 2.0,
    # sleap-nn's spellings (docs/from_sleap_nn.md), hidden: --input-size and --fp16 say it.
    input_height: Annotated[int | None, typer.Option(min=1, hidden=True)] = None,
    input_width: Annotated[int | None, typer.Option(min=1, hidden=True)] = None,
    precision: Annotated[str | None, typer.Option(hidden=True)] = None,
) -> None:
    """Export a model to ONNX / TensorRT with peak finding and refinement in the graph
    (segmentation and tiled models: the network's raw maps, decoded on the host)."""
    from sleap_infer.export.exporter import export_model
    from sleap_infer.export.pipeline import export_topdown
    from sleap_infer.export.settings import ExportSettings
    from sleap_infer.runtimes import get_runtime

    if len(model) > 2:
        raise UsageError("give one model directory, or two for a top-down pair")
    if batch is not None and dynamic_batch:
        raise UsageError("--batch N and --dynamic-batch exclude each other")
    check_device(device)
    runtime = EXPORT_FORMAT_ALIASES.get(export_format.value, export_format.value)
    formats = get_runtime(runtime).export_formats
    settings = ExportSettings(
        formats=formats,
        opset=opset,
        fp16=fp16 or _engine_fp16(precision, formats),
        batch_size=batch,
        frame_size=_frame_size(input_size, input_height, input_width),
        workspace_gb=workspace_gb,
        max_batch=max_batch_size,
        input_scale=input_scale,
        crop_size=crop_size,
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


def _frame_size(
    input_size: str | None, height: int | None, width: int | None
) -> tuple[int, int] | None:
    """``--input-size HxW``, or sleap-nn's ``--input-height H --input-width W`` (both)."""
    if height is None and width is None:
        return None if input_size is None else parse_size(input_size, "--input-size")
    if input_size is not None:
        raise UsageError("--input-size and --input-height/--input-width: give one of them")
    if height is None or width is None:
        raise UsageError("--input-height and --input-width go together (or use --input-size HxW)")
    return height, width


def _engine_fp16(precision: str | None, formats: tuple[str, ...]) -> bool:
    """sleap-nn's ``--precision``: the TensorRT engine's precision, nothing else. fp16 halves
    our engine (and the ONNX graph it is built from); for an ONNX-only export it changes
    nothing, as in sleap-nn."""
    if precision is None or precision.lower() == "fp32":
        return False
    if precision.lower() == "fp16":
        return "trt" in formats
    raise UsageError(f"--precision {precision}: fp32 or fp16 (tf32 is not implemented in infer)")


def _describe(info: ExportInfo, folder: Path) -> None:
    """One line per stage (input, outputs, where decoding runs), then its files and sizes."""
    shape = "x".join(str(d) for d in info.input_shape)
    where = "" if info.path == folder else f"{info.path.name}/: "
    if info.raw_maps:
        tiles = " (tiles)" if info.data.get("tiling") else ""
        outputs = f"raw maps {', '.join(info.output_names)}; decoding runs on the host"
    else:
        tiles = ""
        outputs = f"outputs {', '.join(info.output_names)}; decoding runs in the graph"
    console.print(
        f"  {escape(where)}{info.model_type}: input image uint8 {shape}{tiles}; {outputs}"
    )
    for name in sorted(info.data["files"].values(), key=str):
        if name is not None:
            size = (info.path / name).stat().st_size
            console.print(f"  {escape(where)}{name}: {size / 1e6:.2f} MB")
