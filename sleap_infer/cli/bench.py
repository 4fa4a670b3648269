"""``infer bench``: how fast is each backend x batch size on this machine, and is it right.

Exit codes: 0 when every row ran or says why its backend cannot run here
(``unavailable``), 1 when the model or input video fails or a row ``failed``
(the table and ``--json`` report are still written), 2 for bad options.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sleap_infer.cli.console import console
from sleap_infer.cli.help import EXIT_FAILED, exit_codes
from sleap_infer.cli.options import (
    BENCH_BACKENDS,
    Device,
    ModelDirs,
    PeakThreshold,
    check_device,
    parse_size,
)
from sleap_infer.core import options as defaults
from sleap_infer.core.errors import UsageError

if TYPE_CHECKING:  # the bench machinery imports torch and every layer: only when run
    from sleap_infer.bench.measure import Measurement
    from sleap_infer.bench.suite import BenchConfig

BENCH_SCHEMA = "sleap_infer.bench/1"
EPILOG = exit_codes(
    ok="measured; a backend that cannot run here gets an 'unavailable' row",
    failed="the model or --input video failed, or a row failed",
)


def bench(
    model: ModelDirs,
    device: Device = "auto",
    backend: Annotated[
        list[str] | None,
        typer.Option(
            "--backend",
            metavar="LIST",
            help=f"Backends to measure, comma-separated or repeated ({', '.join(BENCH_BACKENDS)}); "
            "default torch,onnx. torch always runs: it is the baseline.",
            show_default=False,
        ),
    ] = None,
    batch_sizes: Annotated[
        str, typer.Option("--batch-sizes", metavar="LIST", help="Comma-separated batch sizes.")
    ] = "1,4,16",
    input: Annotated[
        Path | None,
        typer.Option(
            "--input",
            "-i",
            metavar="VIDEO",
            help="Benchmark on this video's first frames (real poses).",
        ),
    ] = None,
    size: Annotated[
        str | None,
        typer.Option(
            metavar="HxW", help="Synthetic frames of HxW instead of a video (default 384x384)."
        ),
    ] = None,
    iters: Annotated[int, typer.Option(min=1, metavar="N", help="Timed iterations per row.")] = 20,
    warmup: Annotated[
        int, typer.Option(min=0, metavar="N", help="Untimed warmup iterations per row.")
    ] = 3,
    peak_threshold: PeakThreshold = defaults.PEAK_THRESHOLD,
    fp16: Annotated[
        bool,
        typer.Option(
            "--fp16",
            help="Also measure half precision for each backend being measured: torch "
            "autocast (cuda/mps), fp16 ONNX and TensorRT exports; the Δ px column shows how "
            "far keypoints move from torch float32 on your model.",
        ),
    ] = False,
    bf16: Annotated[
        bool,
        typer.Option(
            "--bf16",
            help="Also measure bfloat16: torch autocast (cpu/cuda), and OpenVINO's bf16 mode "
            "when openvino is measured; the Δ px column shows how far keypoints move from "
            "torch float32 on your model.",
        ),
    ] = False,
    int8: Annotated[
        bool,
        typer.Option(
            "--int8",
            help="Also measure int8 for each of onnx and openvino being measured (quantised "
            "on the input's first frames, as predict --int8 does); Δ px is against torch "
            "float32.",
        ),
    ] = False,
    json_path: Annotated[
        Path | None,
        typer.Option("--json", metavar="PATH", help="Write all rows and system info here."),
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option("--overwrite", help="Let --json replace an existing file that is not ours."),
    ] = False,
) -> None:
    """Benchmark backends x batch sizes: cold start, warmup, p50/p95 latency, FPS, memory,
    GFLOP/s as a share of this machine's peak (a GEMM measured in the same run), and the
    keypoint difference against the torch backend on the same frames."""
    from sleap_infer.bench.measure import FAILED, OK
    from sleap_infer.bench.suite import (
        DEFAULT_BACKENDS,
        BenchConfig,
        parse_backends,
        parse_batch_sizes,
        reduced_precision_rows,
        run_bench,
    )
    from sleap_infer.core.options import PredictOptions
    from sleap_infer.writers.side_files import check_side_file, model_inputs, write_json

    if input is not None and size is not None:
        raise UsageError("--input and --size contradict each other: pick one")
    if json_path is not None:
        given = model_inputs(model) + ([Path(input)] if input is not None else [])
        check_side_file(json_path, "--json", BENCH_SCHEMA, overwrite=overwrite, inputs=given)
    check_device(device)
    config = BenchConfig(
        model_paths=model,
        device=device,
        backends=parse_backends(",".join(backend) if backend else DEFAULT_BACKENDS),
        batch_sizes=parse_batch_sizes(batch_sizes),
        video=input,
        size=parse_size(size, "--size", minimum=8) if size else None,
        iters=iters,
        warmup_iters=warmup,
        options=PredictOptions(peak_threshold=peak_threshold),
    )

    def show(row: Measurement) -> None:
        if row.status == OK:
            console.print(f"  {row.backend} batch {row.batch}: {row.fps:.1f} FPS", highlight=False)
        elif row.status == FAILED:  # an error line: -q shows it
            line = f"[red]error:[/] {row.backend} batch {row.batch}: {escape(row.reason)}"
            console.print(line, highlight=False, soft_wrap=True)
        else:
            console.print(f"  {row.backend}: {row.status}", highlight=False)

    config.backends = [
        *config.backends,
        *reduced_precision_rows(config.backends, bf16=bf16, int8=int8, fp16=fp16),
    ]
    with console.status("benchmarking..."):
        rows, context = run_bench(config, on_row=show)
    if not console.errors_only:  # -q: the table is not an error
        Console(width=None if console.is_terminal else 140).print(_table(rows, context))
    _print_profile(rows)
    if json_path is not None:
        payload = {
            "schema": BENCH_SCHEMA,
            "config": _config_json(config),
            **context,
            "rows": [r.to_json() for r in rows],
        }
        failure = f"--json {json_path}: cannot write the JSON report"
        plain = json.loads(json.dumps(payload, default=str))
        write_json(
            json_path, plain, failure, schema=BENCH_SCHEMA, overwrite=overwrite, allow_nan=True
        )
        console.print(f"wrote {escape(str(json_path))}", highlight=False)
    if any(r.status == FAILED for r in rows):
        raise typer.Exit(EXIT_FAILED)


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def _percent(share: float | None) -> str:
    return "-" if share is None or math.isnan(share) else f"{share:.0%}"


def _peak_caption(context: dict[str, Any]) -> str:
    """The measured peaks the "% peak" columns divide by, or why one is missing."""
    peak = context.get("peak") or {}
    rates = peak.get("gflops") or {}
    parts = [f"{key} {'n/a' if rate is None else f'{rate:.0f}'}" for key, rate in rates.items()]
    if not parts:
        return "peak: not measured"
    unit = "GFLOP/s (int8: GOP/s)"
    return f"peak {unit}, matmul on {peak.get('threads')} threads: " + ", ".join(parts)


def _table(rows: list[Measurement], context: dict[str, Any]) -> Table:
    from sleap_infer.bench.measure import OK

    system = context.get("system", {})
    title = f"{system.get('cpu', '?')} ({system.get('cpu_budget', '?')} cores)"
    if system.get("gpus"):
        title += " + " + ", ".join(system["gpus"])
    table = Table(title=title, caption=f"frames: {context.get('frames')}; {_peak_caption(context)}")
    table.add_column("Backend")
    table.add_column("Status", max_width=40)
    columns = ("Batch", "Cold ms", "Warmup ms", "p50 ms", "p95 ms", "FPS", "Pipelined FPS")
    for name in (*columns, "RSS MiB", "GFLOP/s (%peak)"):
        table.add_column(name, justify="right")
    gpu = any(r.gpu_peak_mb is not None for r in rows)
    if gpu:
        table.add_column("GPU MiB", justify="right")
    masks = any(r.masks_identical is not None for r in rows)
    boxes = any(r.box_delta_px is not None for r in rows)
    if masks:
        table.add_column("Masks = torch", justify="right")
    elif boxes:
        table.add_column("Δ box px vs torch (max)", justify="right")
    else:
        table.add_column("Δ px vs torch (mean/max)", justify="right")
    for r in rows:
        if r.status != OK:
            table.add_row(r.backend, f"{r.status}: {escape(r.reason)}", str(r.batch))
            continue
        cells = [
            r.backend,
            r.status,
            str(r.batch),
            _fmt(r.cold_ms),
            _fmt(r.warmup_ms),
            _fmt(r.p50_ms),
            _fmt(r.p95_ms),
            _fmt(r.fps),
            _fmt(r.pipelined_fps),
            _fmt(r.peak_rss_mb, 0),
            f"{_fmt(r.achieved_gflops)} ({_percent(r.peak_fraction)})",
        ]
        if gpu:
            cells.append(_fmt(r.gpu_peak_mb, 0))
        if masks:
            share = r.masks_identical
            cells.append("1.0" if r.backend == "torch" else _fmt(share, 4))
        elif boxes:
            cells.append("0" if r.backend == "torch" else _fmt(r.box_delta_px, 6))
        else:
            cells.append(f"{_fmt(r.delta_px_mean, 4)}/{_fmt(r.delta_px_max, 4)}")
        table.add_row(*cells)
    return table


def _print_profile(rows: list[Measurement]) -> None:
    """Where the time goes, for the largest batch of each backend that ran."""
    from sleap_infer.bench.measure import OK

    best: dict[str, Measurement] = {}
    for r in rows:
        if r.status == OK and r.stages:
            best[r.backend] = r
    for name, r in best.items():
        split = ", ".join(f"{k} {v:.0%}" for k, v in r.stages.items())
        console.print(f"profile {name} batch {r.batch}: {split}", highlight=False)


def _config_json(config: BenchConfig) -> dict[str, Any]:
    out = {k: v for k, v in vars(config).items() if k not in ("options", "backend_options")}
    out["options"] = vars(config.options)
    out["model_paths"] = [str(p) for p in config.model_paths]
    return out
