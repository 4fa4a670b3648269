"""``infer bench``: how fast is each backend x batch size on this machine, and is it right.

Exit codes: 0 when every row ran or says why its backend cannot run here
(``unavailable``), 1 when the model or input video fails or a row ``failed``
(the table and ``--json`` report are still written), 2 for bad options.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
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
            "default every installed runtime (one that cannot run on --device gets a row "
            "saying why). torch always runs: it is the baseline.",
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
    keypoint difference against the torch backend on the same frames. The table shows
    the main columns at 80 columns; --json has them all."""
    from sleap_infer.bench.measure import FAILED, OK
    from sleap_infer.bench.suite import (
        BenchConfig,
        auto_pick,
        installed_backends,
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
        backends=parse_backends(",".join(backend) if backend else installed_backends()),
        batch_sizes=parse_batch_sizes(batch_sizes),
        video=input,
        size=parse_size(size, "--size", minimum=8) if size else None,
        iters=iters,
        warmup_iters=warmup,
        options=PredictOptions(peak_threshold=peak_threshold),
    )

    config.backends = [
        *config.backends,
        *reduced_precision_rows(config.backends, bf16=bf16, int8=int8, fp16=fp16),
    ]
    auto_lines = auto_pick(config)
    for line in auto_lines:  # predict's default: what it would run here, and why
        console.print(f"auto: {escape(line)}", highlight=False, soft_wrap=True)
    eta = Eta(len(config.backends), config.batch_sizes)
    with console.status(f"benchmarking: {eta.text()}") as status:

        def show(row: Measurement) -> None:
            left = eta.done(row)
            if row.status == OK:
                line = f"  {row.backend} batch {row.batch}: {row.fps:.1f} FPS ({left})"
                console.print(line, highlight=False)
            elif row.status == FAILED:  # an error line: -q shows it
                line = f"[red]error:[/] {row.backend} batch {row.batch}: {escape(row.reason)}"
                console.print(line, highlight=False, soft_wrap=True)
            elif row.batch == config.batch_sizes[-1]:  # one line per backend that cannot run
                console.print(f"  {row.backend}: {row.status} ({left})", highlight=False)
            if status is not None:  # None under -q
                status.update(f"benchmarking: {left}")

        rows, context = run_bench(config, on_row=show)
    if not console.errors_only:  # -q: the table is not an error
        report = Console(width=None if console.is_terminal else 80)  # stdout: the report
        report.print(_table(rows, context))
        for line in _not_run(rows):
            report.print(line, highlight=False)
        if json_path is None:
            console.print(
                "latency (p50, p95), cold start, memory and GFLOP/s per row: --json PATH",
                highlight=False,
            )
    _print_profile(rows)
    if json_path is not None:
        payload = {
            "schema": BENCH_SCHEMA,
            "config": _config_json(config),
            "auto": auto_lines,
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


class Eta:
    """Rows done and an estimate of the time left, from the rows measured so far.

    A row's work grows with its batch size (the same iterations of more frames), so the
    estimate is the time per batch-size unit times the units left; a row that cannot run
    costs nothing and leaves the total. The clock starts when the first row is done: that
    row also paid for start-up (loading the model, measuring this machine's peak), which
    the others do not, and counting it made the first estimates several times too long.
    The next backends' loading and export still fall inside their first rows.
    """

    def __init__(
        self, n_backends: int, batch_sizes: Sequence[int], clock: Callable[[], float] | None = None
    ) -> None:
        self.clock = clock or time.monotonic
        self.n_rows = n_backends * len(batch_sizes)
        self.rows = 0
        self.total = n_backends * sum(batch_sizes)
        self.weight = 0
        self.first: tuple[float, int] | None = None  # (when, weight) at the first row done

    def done(self, row: Measurement) -> str:
        """Count ``row`` in; return :meth:`text`."""
        from sleap_infer.bench.measure import UNAVAILABLE

        self.rows += 1
        if row.status == UNAVAILABLE:
            self.total -= row.batch
        else:
            self.weight += row.batch
            if self.first is None:
                self.first = (self.clock(), self.weight)
        return self.text()

    def text(self) -> str:
        """``"3/9 rows, about 2 min left"``."""
        head = f"{self.rows}/{self.n_rows} rows"
        if self.rows >= self.n_rows:
            return f"{head}, done"
        if self.first is None or self.weight == self.first[1]:
            return f"{head}, estimating the time left"
        per_unit = (self.clock() - self.first[0]) / (self.weight - self.first[1])
        left = per_unit * max(self.total - self.weight, 0)
        return f"{head}, about {_duration(left)} left"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(round(seconds), 1)} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _peak_caption(context: dict[str, Any]) -> str:
    """The measured peaks the "% peak" column divides by, or why one is missing."""
    peak = context.get("peak") or {}
    rates = peak.get("gflops") or {}
    parts = [f"{key} {'n/a' if rate is None else f'{rate:.0f}'}" for key, rate in rates.items()]
    if not parts:
        return "peak: not measured"
    unit = "GFLOP/s (int8: GOP/s)"
    return f"%peak: of a matmul's {unit} on {peak.get('threads')} threads: " + ", ".join(parts)


def _table(rows: list[Measurement], context: dict[str, Any]) -> Table:
    """The rows that ran, in the columns that answer "which is fastest, and is it right",
    narrow enough for 80 columns; every other measure is in ``--json``."""
    from sleap_infer.bench.measure import OK

    system = context.get("system", {})
    title = f"{system.get('cpu', '?')} ({system.get('cpu_budget', '?')} cores)"
    if system.get("gpus"):
        title += " + " + ", ".join(system["gpus"])
    caption = f"frames: {context.get('frames')}; {_peak_caption(context)}"
    table = Table(title=title, caption=caption)
    table.add_column("Backend")
    for name in ("Batch", "FPS", "Piped FPS", "%peak"):
        table.add_column(name, justify="right")
    ran = [r for r in rows if r.status == OK]
    gpu = any(r.gpu_peak_mb is not None for r in ran)
    if gpu:
        table.add_column("GPU MiB", justify="right")
    masks = any(r.masks_identical is not None for r in ran)
    boxes = any(r.box_delta_px is not None for r in ran)
    if masks:
        table.add_column("Masks = torch", justify="right")
    elif boxes:
        table.add_column("Δ box px", justify="right")
    else:
        table.add_column("Δ px mean/max", justify="right")
    for r in ran:
        cells = [
            r.backend,
            str(r.batch),
            _fmt(r.fps),
            _fmt(r.pipelined_fps),
            _percent(r.peak_fraction),
        ]
        if gpu:
            cells.append(_fmt(r.gpu_peak_mb, 0))
        if masks:
            share = r.masks_identical
            cells.append("1.0" if r.backend == "torch" else _fmt(share, 4))
        elif boxes:
            cells.append("0" if r.backend == "torch" else _fmt(r.box_delta_px, 4))
        else:
            cells.append(f"{_fmt(r.delta_px_mean, 3)}/{_fmt(r.delta_px_max, 3)}")
        table.add_row(*cells)
    return table


def _not_run(rows: list[Measurement]) -> list[str]:
    """One line per backend that could not run (and per failed row): what and why."""
    from sleap_infer.bench.measure import OK, UNAVAILABLE

    lines: dict[str, str] = {}
    for r in rows:
        if r.status == UNAVAILABLE:
            lines.setdefault(r.backend, f"{r.backend}: unavailable: {escape(r.reason)}")
        elif r.status != OK:
            lines[f"{r.backend}/{r.batch}"] = (
                f"{r.backend} batch {r.batch}: {r.status}: {escape(r.reason)}"
            )
    return list(lines.values())


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
