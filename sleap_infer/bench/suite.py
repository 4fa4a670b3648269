"""Run every requested backend x batch size on the same frames; torch is the baseline."""

from __future__ import annotations

import contextlib
import importlib.util
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from sleap_infer.backends.threads import cpu_budget
from sleap_infer.bench.measure import (
    FAILED,
    OK,
    UNAVAILABLE,
    Measurement,
    box_delta,
    keypoint_delta,
    mask_agreement,
    measure_layer,
    measure_pipelined,
)
from sleap_infer.bench.peak import PeakCalibration, count_flops, fill_rates, row_precision
from sleap_infer.core.errors import SleapInferError, UsageError
from sleap_infer.core.options import PredictOptions
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.provenance import now_iso, package_versions, system_info
from sleap_infer.layers import build_layer
from sleap_infer.layers.base import InferenceLayer
from sleap_infer.model.loader import load_model
from sleap_infer.runtimes import RUNTIME_NAMES, backend_maker

BASELINE = "torch"
DEFAULT_BACKENDS = ("torch", "onnx")
"""What :class:`BenchConfig` measures when built without ``backends`` (library callers);
``infer bench`` measures :func:`installed_backends` unless ``--backend`` is given."""
RUNTIME_MODULES = {
    "torch": "torch",
    "onnx": "onnxruntime",
    "openvino": "openvino",
    "trt": "tensorrt",
}
"""The package each runtime runs on: the runtime is installed when that package is."""


def installed_backends() -> list[str]:
    """Every runtime whose package is installed, in :data:`RUNTIME_NAMES` order.

    ``infer bench`` with no ``--backend`` measures these: its question is "which
    runtime is fastest here", and the README calls OpenVINO the fastest on a CPU, so
    leaving it out by default answered another question. A runtime installed but unable
    to run on the device (TensorRT on a CPU) gets its ``unavailable`` row with the reason.
    """
    return [
        name
        for name in RUNTIME_NAMES
        if importlib.util.find_spec(RUNTIME_MODULES.get(name, name)) is not None
    ]


# Extra rows that are a backend with options (``infer bench --fp16`` / ``--bf16`` / ``--int8``).
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "torch+fp16": ("torch", {"fp16": True}),
    "onnx+fp16": ("onnx", {"fp16": True}),
    "trt+fp16": ("trt", {"fp16": True}),
    "torch+bf16": ("torch", {"bf16": True}),
    "openvino+bf16": ("openvino", {"bf16": True}),
    "onnx+int8": ("onnx", {"int8": True}),
    "openvino+int8": ("openvino", {"int8": True}),
}
CALIBRATION_FRAMES = 64
"""Frames run through an int8 row's layer before it is timed: its backends quantise on
the first 32 inputs they see, as ``infer predict --int8`` does on a video's first frames."""


def reduced_precision_rows(
    backends: Sequence[str], bf16: bool, int8: bool, fp16: bool = False
) -> list[str]:
    """The variant rows ``--fp16`` / ``--bf16`` / ``--int8`` add for the backends measured."""
    out: list[str] = []
    for name, (runtime, extra) in VARIANTS.items():
        wanted = (
            (fp16 and extra.get("fp16"))
            or (bf16 and extra.get("bf16"))
            or (int8 and extra.get("int8"))
        )
        if wanted and (runtime == BASELINE or runtime in backends):
            out.append(name)
    return out


@dataclass
class BenchConfig:
    model_paths: Sequence[str | Path]
    device: str = "auto"
    backends: Sequence[str] = DEFAULT_BACKENDS
    batch_sizes: Sequence[int] = (1, 4, 16)
    video: str | Path | None = None
    size: tuple[int, int] | None = None  # (H, W) of synthetic frames when no video
    iters: int = 20
    warmup_iters: int = 3
    options: PredictOptions = field(default_factory=PredictOptions)
    backend_options: dict[str, dict[str, Any]] = field(default_factory=dict)


def parse_backends(names: str | Sequence[str]) -> list[str]:
    """``"torch,onnx"``, ``["onnx", "trt"]`` or ``"all"`` -> ordered, de-duplicated names;
    torch always first (it is the baseline)."""
    items = names.split(",") if isinstance(names, str) else list(names)
    if any(item.strip().lower() == "all" for item in items):
        items = list(RUNTIME_NAMES)
    out: list[str] = [BASELINE]
    for name in items:
        key = name.strip().lower()
        if not key:
            continue
        if key not in RUNTIME_NAMES and key not in VARIANTS:
            choices = ", ".join(RUNTIME_NAMES)
            raise UsageError(f"unknown backend {name!r} (choose from {choices}, all)")
        if key not in out:
            out.append(key)
    return out


def parse_batch_sizes(text: str) -> list[int]:
    try:
        sizes = sorted({int(t) for t in text.split(",") if t.strip()})
    except ValueError as exc:
        raise UsageError(f"--batch-sizes {text!r}: expected integers like 1,4,16") from exc
    if not sizes or sizes[0] < 1:
        raise UsageError(f"--batch-sizes {text!r}: sizes must be >= 1")
    return sizes


def bench_frames(layer: InferenceLayer, config: BenchConfig, n: int) -> tuple[np.ndarray, str]:
    """``n`` frames ``(n, H, W, C)`` uint8: the video's first frames (tiled if it is shorter),
    or deterministic synthetic frames of ``config.size``. Returns them and a description."""
    if config.video is not None:
        from sleap_infer.sources.video import VideoReader  # PyAV: only when a video is benched

        reader = VideoReader(config.video)
        channels = reader.channels_for(layer.input_channels)
        got = [f for _, f in reader.iter_frames(range(min(n, reader.info.n_frames)), channels)]
        if not got:
            raise UsageError(f"{config.video}: no frames decoded")
        frames = np.stack([got[i % len(got)] for i in range(n)])
        return frames, f"{Path(config.video).name} ({len(got)} real frames)"
    h, w = config.size or (384, 384)
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (n, h, w, layer.input_channels), dtype=np.uint8)
    return frames, f"synthetic {h}x{w}x{layer.input_channels} noise"


def build_bench_layer(config: BenchConfig, name: str) -> InferenceLayer:
    """Load the models and build the layer for backend (or variant) ``name``."""
    runtime, extra = VARIANTS.get(name, (name, {}))
    models = [load_model(p) for p in config.model_paths]
    options = {**config.backend_options.get(runtime, {}), **extra}
    layer = build_layer(models, backend_maker(runtime, config.device, **options), config.options)
    if extra.get("int8"):
        frames, _ = bench_frames(layer, config, CALIBRATION_FRAMES)
        for start in range(0, len(frames), 4):  # quantises once its backends saw enough
            layer.predict(frames[start : start + 4])
    return layer


def auto_pick(config: BenchConfig) -> list[str]:
    """What ``--backend auto`` (predict's default) picks for these models on this device,
    and why: the runtimes installed here, then a long input's and a 30-frame run's choice."""
    from sleap_infer.pipeline.models import auto_backend, load_models
    from sleap_infer.pipeline.spec import bind

    spec = bind(tuple(str(p) for p in config.model_paths), "auto")
    if spec.backend != "auto":  # an export folder runs on its own runtime
        return [f"an export folder: {spec.backend}"]
    models = load_models(spec.model_paths, spec.backend)
    return auto_backend(models, config.device, spec, embeds_labels=False).describe()


def machine_info() -> dict[str, Any]:
    info = system_info()
    info["cpu"] = _cpu_name()
    info["cpu_budget"] = cpu_budget()
    info["machine"] = platform.machine()
    info["versions"] = package_versions()
    info["date"] = now_iso()
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_bench(
    config: BenchConfig,
    on_row: Callable[[Measurement], None] | None = None,
) -> tuple[list[Measurement], dict[str, Any]]:
    """Measure every backend x batch size; rows for backends that can't run say why.

    Returns the rows and a context dict (frames used, machine info) for the JSON report.
    """
    rows: list[Measurement] = []
    reference: dict[int, BatchPredictions] = {}
    work: dict[int, float] = {}  # GFLOP per frame at each batch size, from torch's network
    calibration = PeakCalibration()
    context: dict[str, Any] = {"system": machine_info(), "frames": None}
    frames: np.ndarray | None = None

    def emit(row: Measurement) -> None:
        rows.append(row)
        if on_row is not None:
            on_row(row)

    for backend in parse_backends(",".join(config.backends)):
        t0 = time.perf_counter()
        try:
            layer = build_bench_layer(config, backend)
        except (SleapInferError, ImportError) as exc:
            if backend == BASELINE:
                raise  # no baseline, no bench: the model itself is the problem
            for b in config.batch_sizes:
                emit(Measurement(backend, b, status=UNAVAILABLE, reason=str(exc)))
            continue
        setup_ms = (time.perf_counter() - t0) * 1e3
        context.setdefault("devices", {})[backend] = str(layer.device)
        if frames is None:
            frames, context["frames"] = bench_frames(layer, config, max(config.batch_sizes))
        for b in config.batch_sizes:
            row = Measurement(backend, b, setup_ms=setup_ms, precision=row_precision(backend))
            try:
                preds = measure_layer(layer, frames[:b], config.iters, config.warmup_iters, row)
                measure_pipelined(layer, frames[:b], config.iters, row)
            except (SleapInferError, RuntimeError, ValueError) as exc:
                row.status, row.reason = FAILED, f"{type(exc).__name__}: {exc}"
                emit(row)
                continue
            if backend == BASELINE:
                # Counted apart from the timed calls (the counter slows every op); every
                # backend runs this network on these frames, so the count serves them all.
                with contextlib.suppress(RuntimeError, NotImplementedError):
                    # A network the counter cannot follow leaves the rates unknown ("-").
                    work[b] = count_flops(partial(layer.predict, frames[:b])) / b / 1e9
            fill_rates(row, work.get(b), calibration.peak(layer.device, row_precision(backend)))
            if backend == BASELINE:
                reference[b] = preds
                row.delta_px_mean, row.delta_px_max, row.matched_points = 0.0, 0.0, None
            elif b in reference:
                row.delta_px_mean, row.delta_px_max, row.matched_points = keypoint_delta(
                    reference[b], preds
                )
                row.masks_identical = mask_agreement(reference[b], preds)
                row.box_delta_px = box_delta(reference[b], preds, in_order=False)
            emit(row)
    calibration.remeasure()  # at the end too: the better of two moments of the run
    for row in rows:
        if row.status == OK:
            device = context["devices"][row.backend].split(":")[0]  # "cuda:0" -> "cuda"
            fill_rates(row, row.gflop_per_frame, calibration.peaks.get(f"{device}:{row.precision}"))
    context["peak"] = calibration.to_json()
    return rows, context
