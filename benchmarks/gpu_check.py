#!/usr/bin/env python
"""GPU check: every backend x precision x batch on every fixture model type and on one
realistically sized network, inside a fixed time budget, written into one folder.

Why a budget: the machine this is for (one H200) is lent for minutes, and TensorRT
engines are static-batch here, so each model x batch x precision cell builds its own
engine (10-40 s each on a GPU; a top-down pair builds two). The full matrix does not fit
in ten minutes, so cells run in priority order:

1. the realistic network (a random-weight UNet, filters 32, max stride 16, at
   1024x1024: what a real SLEAP model costs), its full matrix: torch and onnx at fp32 and
   fp16 x batch 1/8/32, then TensorRT fp32/fp16 at batch 8, 1, 32;
2. every fixture model type's torch and onnx cells (fp32, fp16 x batch 1/8/32);
3. sleap-nn's own GPU paths against ours end to end (``vs_sleap_nn.py``: ``sleap-nn
   predict`` on the checkpoints and with ``--runtime tensorrt``), when a sleap-nn
   executable is available; its time is reserved out of the budget up front;
4. the fixture models' TensorRT cells: batch 8 for every model first, then 1, then 32.

Before each cell its cost is estimated from the cells already run (the first of a kind
from a table below); a cell that would end past the deadline is recorded as ``skipped``
with reason ``time budget``, never dropped, and cheaper cells after it still run.
``results.json`` and ``summary.md`` are rewritten after every cell, so a hard kill (the
shell script's ``timeout``) still leaves everything measured so far.

Without CUDA the same script runs its CPU-safe part: the fixture models' torch and onnx
cells at fp32, batch 1, few iterations; the realistic network and every fp16 / TensorRT
cell are listed as skipped with reason ``no CUDA``.

    python benchmarks/gpu_check.py --out gpu-check-out            # what gpu_check.sh runs
    python benchmarks/gpu_check.py --out /tmp/x --quick --device cpu  # seconds: for tests

Timings are ``infer bench``'s (``sleap_infer.bench``): wall time per ``layer.predict`` on
frames already decoded (preprocess, network, postprocess), so decoding is not in them;
``vs_sleap_nn.py`` measures whole commands end to end.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from sleap_infer.bench.measure import Measurement
    from sleap_infer.bench.suite import BenchConfig
    from sleap_infer.core.predictions import BatchPredictions
    from sleap_infer.layers.base import InferenceLayer

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # the package from this checkout, installed or not
    sys.path.insert(0, str(ROOT))

REALISTIC = "realistic_unet"
# A single-instance head: a random-weight bottom-up model would flood PAF grouping with
# random peaks and time the grouping of noise, not the network.
REALISTIC_TYPE = "single_instance"
REALISTIC_UNET = {"filters": 32, "max_stride": 16}  # the factory's other keys: output_stride 2
REALISTIC_SIZE = (1024, 1024)
REALISTIC_ITERS = 10  # its batches take up to ~100x a fixture's: fewer, longer iterations

TORCH_ROWS = ("torch", "torch+fp16", "onnx", "onnx+fp16")
TRT_ROWS = ("trt", "trt+fp16")
BATCHES = (1, 8, 32)
TRT_BATCH_ORDER = (8, 1, 32)
SKIPPED = "skipped"
PENDING = "pending"
TIME_BUDGET = "time budget"
NO_CUDA = "no CUDA: device is cpu"
QUICK_GROUPS = ("single_instance", "topdown", "semantic_segmentation")
FAILED_BUILD = "building the layer failed: "

# Seconds before anything of the kind ran here, per (realistic network?, runtime): the
# build a layer's first cell pays (load, and for onnx the export; every trt cell builds an
# engine), per model (a top-down pair builds two), and the timed part of a cell (cold
# call, warmup, iterations) at batch 1. Measured values replace them as cells finish.
DEFAULT_BUILD_S: dict[tuple[bool, str], float] = {
    (True, "torch"): 15.0,
    (True, "onnx"): 45.0,
    (True, "trt"): 75.0,
    (False, "torch"): 3.0,
    (False, "onnx"): 8.0,
    (False, "trt"): 25.0,
}
DEFAULT_RUN_S = {True: 5.0, False: 1.5}
ESTIMATE_MARGIN = 1.15


@dataclass(frozen=True)
class Group:
    """One model type: its model folders (a top-down pair is two) and its input."""

    name: str
    models: tuple[str, ...]  # fixture model folder names, or paths for the realistic net
    video: str | None  # a fixture video; synthetic frames of ``size`` without it or PyAV
    size: tuple[int, int]  # (H, W)
    realistic: bool = False


FIXTURE_GROUPS = (
    Group("single_instance", ("minimal_instance_single_instance",), "small_robot.mp4", (320, 560)),
    Group(
        "topdown",
        ("minimal_instance_centroid", "minimal_instance_centered_instance"),
        "centered_pair_small.mp4",
        (384, 384),
    ),
    Group("bottomup", ("minimal_instance_bottomup",), "centered_pair_small.mp4", (384, 384)),
    Group(
        "multi_class_bottomup",
        ("minimal_instance_multiclass_bottomup",),
        "centered_pair_small.mp4",
        (384, 384),
    ),
    Group(
        "multi_class_topdown",
        ("minimal_instance_centroid", "minimal_instance_multiclass_centered_instance"),
        "centered_pair_small.mp4",
        (384, 384),
    ),
    Group(
        "bottomup_segmentation",
        ("synthetic_bottomup_segmentation",),
        "synthetic_multi.mp4",
        (128, 128),
    ),
    Group(
        "semantic_segmentation",
        ("synthetic_semantic_segmentation",),
        "synthetic_multi.mp4",
        (128, 128),
    ),
    Group(
        "topdown_segmentation",
        ("synthetic_centroid", "synthetic_centered_instance_segmentation"),
        "synthetic_multi.mp4",
        (128, 128),
    ),
    Group(
        "embedding",
        ("synthetic_centroid", "synthetic_embedding"),
        "synthetic_multi.mp4",
        (128, 128),
    ),
    Group("bbox_centernet", ("synthetic_bbox_centernet",), "synthetic_multi.mp4", (128, 128)),
    Group("bbox_ssd", ("synthetic_bbox_ssd",), "synthetic_multi.mp4", (128, 128)),
    # Its input is a .pkg.slp, which the bench's video reader does not open: noise frames.
    Group("single_instance_tiled", ("synthetic_single_instance_tiled",), None, (256, 256)),
    Group(
        "bottomup_segmentation_tiled",
        ("synthetic_bottomup_segmentation_tiled",),
        "synthetic_multi.mp4",
        (128, 128),
    ),
    Group(
        "semantic_segmentation_tiled",
        ("synthetic_semantic_segmentation_tiled",),
        "synthetic_multi.mp4",
        (128, 128),
    ),
)


def find_fixtures() -> Path | None:
    """``$SLEAP_INFER_FIXTURES``, ``./shared/fixtures`` or ``../shared/fixtures``."""
    env = os.environ.get("SLEAP_INFER_FIXTURES")
    candidates = [Path(env)] if env else []
    candidates += [ROOT / "shared" / "fixtures", ROOT.parent / "shared" / "fixtures"]
    return next((c for c in candidates if (c / "models").is_dir()), None)


def realistic_config() -> dict[str, Any]:
    """The realistic network's ``training_config.yaml`` (the test model factory's layout)."""
    if str(ROOT / "tests") not in sys.path:
        sys.path.append(str(ROOT / "tests"))
    from model_factory import config_dict

    return config_dict(REALISTIC_TYPE, unet=dict(REALISTIC_UNET))


def write_realistic_model(path: Path, seed: int = 0) -> Path:
    """Random weights in sleap-nn's layout (sleap-nn can load it too)."""
    raw = realistic_config()
    from model_factory import write_model_dir

    return write_model_dir(path, raw, seed=seed)


def runtime_of(backend: str) -> str:
    return backend.split("+", 1)[0]


def precision_of(backend: str) -> str:
    return backend.split("+", 1)[1] if "+" in backend else "fp32"


@dataclass
class Cell:
    """One model x backend (with precision) x batch, and what happened to it."""

    group: Group
    backend: str
    batch: int
    status: str = PENDING
    reason: str = ""
    row: dict[str, Any] = field(default_factory=dict)  # Measurement.to_json() when run
    elapsed_s: float | None = None
    estimate_s: float | None = None

    def skip(self, reason: str) -> None:
        self.status, self.reason = SKIPPED, reason

    def to_json(self) -> dict[str, Any]:
        return {
            **self.row,
            "model": self.group.name,
            "models": list(self.group.models),
            "backend": self.backend,
            "runtime": runtime_of(self.backend),
            "precision": precision_of(self.backend),
            "batch": self.batch,
            "status": self.status,
            "reason": self.reason,
            "elapsed_s": self.elapsed_s,
            "estimate_s": self.estimate_s,
        }


def plan(groups: Sequence[Group]) -> tuple[list[Cell], list[Cell]]:
    """The cells in priority order, split where the sleap-nn comparison goes between."""
    first: list[Cell] = []
    realistic = [g for g in groups if g.realistic]
    fixtures = [g for g in groups if not g.realistic]
    for g in realistic:
        first += [Cell(g, b, n) for b in TORCH_ROWS for n in BATCHES]
        first += [Cell(g, b, n) for n in TRT_BATCH_ORDER for b in TRT_ROWS]
    for g in fixtures:
        first += [Cell(g, b, n) for b in TORCH_ROWS for n in BATCHES]
    last = [Cell(g, b, n) for n in TRT_BATCH_ORDER for g in fixtures for b in TRT_ROWS]
    return first, last


def pre_skip(cells: Sequence[Cell], gpu: bool, quick: bool, fixtures: Path | None) -> None:
    """Mark what this run will not attempt, and why, before anything runs."""
    for c in cells:
        if c.group.realistic and not gpu:
            c.skip(NO_CUDA)
        elif not c.group.realistic and fixtures is None:
            c.skip("fixtures not found (set SLEAP_INFER_FIXTURES)")
        elif quick and not c.group.realistic and c.group.name not in QUICK_GROUPS:
            c.skip("--quick")
        elif not gpu and (runtime_of(c.backend) == "trt" or precision_of(c.backend) != "fp32"):
            c.skip(NO_CUDA)
        elif not gpu and c.batch != 1:
            c.skip("CPU run: batch 1 only")


class Stop(BaseException):
    """SIGTERM (the shell script's hard limit) or Ctrl-C: write what there is and leave."""


class Unavailable(Exception):
    """The backend cannot run here (no TensorRT, no CUDA provider...): a clean skip."""


class Bench:
    """Runs cells one at a time, reusing layers, frames and the torch references."""

    def __init__(self, device: str, fixtures: Path | None, iters: int, warmup: int) -> None:
        self.device = device
        self.fixtures = fixtures
        self.iters, self.warmup = iters, warmup
        self.layers: dict[tuple[str, str], tuple[InferenceLayer, float] | str] = {}
        self.frames: dict[str, np.ndarray] = {}
        self.frames_text: dict[str, str] = {}
        self.refs: dict[tuple[str, int], BatchPredictions] = {}
        self.runs: dict[tuple[bool, str], list[tuple[int, float]]] = {}  # (batch, s)
        self.builds: dict[tuple[bool, str], list[float]] = {}  # s per model

    def config(self, group: Group) -> BenchConfig:
        from sleap_infer.bench.suite import BenchConfig

        video = None
        if group.video and self.fixtures is not None and _has_pyav():
            video = self.fixtures / "videos" / group.video
        return BenchConfig(
            model_paths=self.paths(group),
            device=self.device,
            video=video,
            size=None if video else group.size,
            iters=self.iters,
            warmup_iters=self.warmup,
        )

    def paths(self, group: Group) -> list[Path]:
        if group.realistic:
            return [Path(m) for m in group.models]
        assert self.fixtures is not None
        return [self.fixtures / "models" / m for m in group.models]

    def first_of_kind(self, cell: Cell) -> bool:
        return runtime_of(cell.backend) == "trt" or (cell.group.name, cell.backend) not in (
            self.layers
        )

    def estimate(self, cell: Cell) -> float:
        """Seconds this cell will take: its build (if it pays one) plus its timed part,
        from the last cells of its kind here (a smaller batch's scaled up linearly), with
        a margin; the default tables before any ran."""
        key = (cell.group.realistic, runtime_of(cell.backend))
        runs = self.runs.get(key)
        if runs:
            run_s = max(s * max(1.0, cell.batch / b) for b, s in runs[-3:])
        else:
            run_s = DEFAULT_RUN_S[cell.group.realistic] * cell.batch**0.5
        build_s = 0.0
        if self.first_of_kind(cell):
            builds = self.builds.get(key)
            per_model = max(builds[-3:]) if builds else DEFAULT_BUILD_S[key]
            build_s = per_model * len(cell.group.models)
        return (build_s + run_s) * ESTIMATE_MARGIN

    def learn(self, cell: Cell, first: bool, seconds: float) -> None:
        """Split a finished cell's wall time into its build and its timed part."""
        key = (cell.group.realistic, runtime_of(cell.backend))
        row = cell.row
        if row.get("cold_ms") is None or row.get("warmup_ms") is None:
            return  # failed before it was timed: nothing to learn from
        calls = 1 + self.warmup + (row.get("iters") or self.iters)
        run_s = min(seconds, (row.get("p50_ms") or 0.0) * calls / 1e3)
        run_s = max(run_s, row["warmup_ms"] / 1e3)
        self.runs.setdefault(key, []).append((cell.batch, run_s))
        if first:
            build_s = max(0.0, seconds - run_s) / len(cell.group.models)
            self.builds.setdefault(key, []).append(build_s)

    def layer(self, cell: Cell) -> tuple[InferenceLayer, float]:
        from sleap_infer.bench.suite import build_bench_layer
        from sleap_infer.core.errors import SleapInferError

        key = (cell.group.name, cell.backend)
        got = self.layers.get(key)
        if isinstance(got, str):
            raise Unavailable(got)
        if got is not None:
            return got
        self.drop_other_groups(cell.group.name)
        t0 = time.perf_counter()
        try:
            layer = build_bench_layer(self.config(cell.group), cell.backend)
        except (SleapInferError, ImportError) as exc:  # as run_bench: the backend can't run
            self.layers[key] = str(exc)
            raise Unavailable(str(exc)) from exc
        except Exception as exc:  # anything else is a finding: reported, and the check goes on
            self.layers[key] = f"{FAILED_BUILD}{type(exc).__name__}: {exc}"
            raise Unavailable(self.layers[key]) from exc
        self.layers[key] = (layer, (time.perf_counter() - t0) * 1e3)
        return self.layers[key]  # type: ignore[return-value]

    def drop_other_groups(self, name: str) -> None:
        """Only one model type's layers on the GPU at a time, so a cell's peak GPU memory is
        its own model's: with every earlier layer kept, one layer's buffers (~235 MiB from
        bottomup_segmentation on, on an H200) showed up in every later model's peak. The
        cells run group by group, so nothing dropped here is needed again."""
        stale = [k for k, v in self.layers.items() if k[0] != name and not isinstance(v, str)]
        if not stale:
            return
        for k in stale:
            del self.layers[k]
        gc.collect()
        _free_cuda()

    def frames_for(self, group: Group, layer: InferenceLayer) -> np.ndarray:
        from sleap_infer.bench.suite import bench_frames

        if group.name not in self.frames:
            frames, text = bench_frames(layer, self.config(group), max(BATCHES))
            self.frames[group.name], self.frames_text[group.name] = frames, text
        return self.frames[group.name]

    def run(self, cell: Cell) -> None:
        """Measure one cell; its status says ok, unavailable (why) or failed (why)."""
        from sleap_infer.bench.measure import Measurement, measure_layer, measure_pipelined

        try:
            layer, setup_ms = self.layer(cell)
        except Unavailable as exc:
            failed = str(exc).startswith(FAILED_BUILD)
            cell.status, cell.reason = ("failed" if failed else "unavailable"), str(exc)
            return
        row = Measurement(cell.backend, cell.batch, setup_ms=setup_ms)
        iters = min(self.iters, REALISTIC_ITERS) if cell.group.realistic else self.iters
        try:
            frames = self.frames_for(cell.group, layer)[: cell.batch]
            preds = measure_layer(layer, frames, iters, self.warmup, row)
            # Through the runner as infer predict runs it: on CUDA pinned uploads on a copy
            # stream, postprocessing on its own stream and thread, batches back to back.
            measure_pipelined(layer, frames, iters, row)
        except Exception as exc:  # a broken cell must not end the check: it is the finding
            row.status, row.reason = "failed", f"{type(exc).__name__}: {exc}"
            _free_cuda()
        else:
            self.compare(cell, row, preds)
        cell.row, cell.status, cell.reason = row.to_json(), row.status, row.reason
        cell.row["iters"], cell.row["warmup_iters"] = iters, self.warmup

    def compare(self, cell: Cell, row: Measurement, preds: BatchPredictions) -> None:
        from sleap_infer.bench.measure import box_delta, keypoint_delta, mask_agreement

        key = (cell.group.name, cell.batch)
        if cell.backend == "torch":
            self.refs[key] = preds
            row.delta_px_mean, row.delta_px_max = 0.0, 0.0
            return
        ref = self.refs.get(key)
        if ref is None:
            return
        row.delta_px_mean, row.delta_px_max, row.matched_points = keypoint_delta(ref, preds)
        row.masks_identical = mask_agreement(ref, preds)
        row.box_delta_px = box_delta(ref, preds, in_order=False)

    def release(self) -> None:
        """Drop every layer (GPU memory, engines) between phases."""
        self.layers.clear()
        self.frames.clear()
        gc.collect()
        _free_cuda()


def _has_pyav() -> bool:
    """Fixture videos need PyAV; without it (a bare GPU machine) frames are synthetic."""
    try:
        import av  # noqa: F401
    except ImportError:
        return False
    return True


def _free_cuda() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


@dataclass
class State:
    """Everything the report is made of; written after every cell."""

    args: argparse.Namespace
    out: Path
    started: float
    device: str
    cells: list[Cell]
    system: dict[str, Any] = field(default_factory=dict)
    frames: dict[str, str] = field(default_factory=dict)
    vs: dict[str, Any] = field(default_factory=lambda: {"status": PENDING, "reason": ""})
    finished: bool = False

    def wall_s(self) -> float:
        return time.monotonic() - self.started

    def write(self) -> None:
        payload = {
            "finished": self.finished,
            "device": self.device,
            "quick": self.args.quick,
            "budget_s": self.args.budget_s,
            "wall_s": self.wall_s(),
            "script_wall_s": script_wall(self.args),
            "iters": self.args.iters,
            "warmup_iters": self.args.warmup,
            "realistic": {
                "model_type": REALISTIC_TYPE,
                "unet": REALISTIC_UNET,
                "size": list(REALISTIC_SIZE),
            },
            "system": self.system,
            "frames": self.frames,
            "notes": self.args.note,
            "gpu_tests": junit_summary(self.args.junit),
            "counts": counts(self.cells),
            "cells": [c.to_json() for c in self.cells],
            "vs_sleap_nn": self.vs,
        }
        _write(self.out / "results.json", json.dumps(_clean(payload), indent=2, default=str))
        _write(self.out / "summary.md", render_summary(self, payload))


def _clean(value: Any) -> Any:
    """Strict JSON: NaN (nothing to compare) becomes null, infinities strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else str(value)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def script_wall(args: argparse.Namespace) -> float | None:
    return time.time() - args.script_start if args.script_start else None


def counts(cells: Sequence[Cell]) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in cells:
        key = f"{SKIPPED} ({c.reason})" if c.status == SKIPPED else c.status
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def junit_summary(path: Path | None) -> dict[str, Any] | None:
    """Counts from pytest's ``--junitxml`` file, or None when there is none."""
    if path is None or not path.is_file():
        return None
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        return {"error": f"unreadable: {exc}"}
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    out = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0, "time": 0.0}
    for s in suites:
        for key in out:
            out[key] += float(s.get(key, 0)) if key == "time" else int(s.get(key, 0))
    failed = [
        f"{case.get('classname')}::{case.get('name')}"
        for case in root.iter("testcase")
        if case.find("failure") is not None or case.find("error") is not None
    ]
    return {**out, "failed": failed}


# ---------------------------------------------------------------- the report


def _fmt(value: object, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float | int) else str(value)


def agreement_cell(row: dict[str, Any], backend: str) -> str:
    """How far this row is from torch fp32 on the same frames and batch."""
    if backend == "torch":
        return "ref"
    if row.get("masks_identical") is not None:
        return f"masks {row['masks_identical']:.3f}"
    if row.get("box_delta_px") is not None:
        return f"box {row['box_delta_px']:.2g} px"
    mean, worst = row.get("delta_px_mean"), row.get("delta_px_max")
    if row.get("matched_points") == 0:
        return "no points found by both"
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "-"
    return f"{mean:.3g}/{worst:.3g} px"


def table(cells: Sequence[Cell]) -> list[str]:
    head = [
        "Model",
        "Backend",
        "Batch",
        "Status",
        "FPS",
        "Pipelined FPS",
        "p50 ms",
        "ms/frame",
        "Cold ms",
        "GPU MiB",
        "Δ vs torch fp32",
    ]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---:|---|" + "---:|" * 6 + "---|"]
    for c in cells:
        if c.status == SKIPPED:
            continue
        r = c.row
        status = c.status if c.status == "ok" else f"{c.status}: {_short(c.reason)}"
        cells_ = [
            c.group.name,
            c.backend,
            str(c.batch),
            status,
            _fmt(r.get("fps")),
            _fmt(r.get("pipelined_fps")),
            _fmt(r.get("p50_ms"), 2),
            _fmt(r.get("frame_ms"), 3),
            _fmt(r.get("cold_ms"), 0),
            _fmt(r.get("gpu_peak_mb"), 0),
            agreement_cell(r, c.backend) if c.status == "ok" else "",
        ]
        lines.append("| " + " | ".join(cells_) + " |")
    return lines


def _short(text: str, limit: int = 140) -> str:
    one = " ".join(text.split()).replace("|", "/")
    return one if len(one) <= limit else one[: limit - 1] + "…"


def skipped_lines(cells: Sequence[Cell]) -> list[str]:
    """Skipped cells collapsed per model and reason: which backends x which batches."""
    by: dict[tuple[str, str], dict[str, list[int]]] = {}
    for c in cells:
        if c.status == SKIPPED:
            by.setdefault((c.group.name, c.reason), {}).setdefault(c.backend, []).append(c.batch)
    lines = []
    for (model, reason), backends in by.items():
        per_batches: dict[tuple[int, ...], list[str]] = {}
        for backend, batches in backends.items():
            per_batches.setdefault(tuple(sorted(batches)), []).append(backend)
        what = "; ".join(
            f"{', '.join(names)} x batch {','.join(map(str, b))}"
            for b, names in per_batches.items()
        )
        lines.append(f"- {model}: {what}: **{reason}**")
    return lines


def machine_line(system: dict[str, Any]) -> str:
    v = system.get("versions", {})
    gpus = ", ".join(system.get("gpus", [])) or "no GPU"
    cuda = system.get("cuda_version") or "none"
    ort = v.get("onnxruntime") or v.get("onnxruntime-gpu") or "not installed"
    providers = ", ".join(system.get("ort_providers", [])) or "-"
    trt = system.get("tensorrt") or "not installed"
    return (
        f"{system.get('cpu', '?')} ({system.get('cpu_budget', '?')} cores) + {gpus}; "
        f"torch {v.get('torch', '?')} (CUDA {cuda}), onnxruntime {ort} ({providers}), "
        f"TensorRT {trt}, python {system.get('python', '?')}"
    )


def tests_line(tests: dict[str, Any] | None) -> str:
    if tests is None:
        return "not run (no junit file)"
    if "error" in tests:
        return str(tests["error"])
    passed = tests["tests"] - tests["failures"] - tests["errors"] - tests["skipped"]
    text = (
        f"{passed} passed, {tests['failures']} failed, {tests['errors']} errors, "
        f"{tests['skipped']} skipped in {tests['time']:.0f} s"
    )
    if tests["failed"]:
        text += " — failed: " + ", ".join(tests["failed"][:10])
    return text


def render_summary(state: State, payload: dict[str, Any]) -> str:
    args = state.args
    wall = payload["script_wall_s"]
    lines = [
        "# GPU check" + ("" if state.finished else " (in progress)"),
        "",
        f"- machine: {machine_line(state.system)}",
        f"- device: {state.device}" + ("" if state.device.startswith("cuda") else f" ({NO_CUDA})"),
        f"- bench: budget {args.budget_s:.0f} s, used {payload['wall_s']:.0f} s"
        + (f"; whole script so far {wall:.0f} s" if wall is not None else "")
        + f"; {args.iters} timed + {args.warmup} warmup iterations per cell"
        + ("; --quick" if args.quick else ""),
        "- cells: " + ", ".join(f"{v} {k}" for k, v in payload["counts"].items()),
        f"- GPU tests (pytest -m gpu): {tests_line(payload['gpu_tests'])}",
        f"- realistic network: {REALISTIC_TYPE} UNet filters {REALISTIC_UNET['filters']}, max "
        f"stride {REALISTIC_UNET['max_stride']}, {REALISTIC_SIZE[0]}x{REALISTIC_SIZE[1]} "
        "noise frames, random weights",
        *[f"- note: {n}" for n in args.note],
        "",
        "## Bench",
        "",
        "FPS and latency of `layer.predict` on decoded frames (preprocess + network + "
        "postprocess), as `infer bench`; Pipelined FPS: the same frames through the runner "
        "(pinned uploads, side streams, postprocessing overlapped). Cold ms: the first "
        "call (exports and TensorRT engine builds happen there). Δ vs torch fp32: keypoint "
        "px mean/max, share of masks identical, or largest box corner difference (boxes "
        "paired up per frame), on the "
        "same frames and batch.",
        "",
        *table(state.cells),
        "",
    ]
    if state.frames:
        lines += ["Frames: " + "; ".join(f"{k}: {v}" for k, v in state.frames.items()), ""]
    skipped = skipped_lines(state.cells)
    if skipped:
        lines += ["## Skipped cells", "", *skipped, ""]
    lines += ["## sleap-nn end to end", "", *vs_lines(state.vs), ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- sleap-nn, end to end

# (our variant label, key of the ratio in vs_sleap_nn's JSON, target, what it compares)
TARGETS = (
    ("trt", "vs_tensorrt", 1.5, "ours TensorRT vs sleap-nn TensorRT"),
    ("torch", "vs_torch", 2.0, "ours torch CUDA vs sleap-nn torch CUDA"),
)


def find_sleap_nn(explicit: str | None) -> Path | None:
    """A ``sleap-nn`` executable: ``--sleap-nn-exe`` / ``$SLEAP_NN_EXE``, on PATH, or next
    to this Python when sleap_nn is importable here."""
    import importlib.util

    if explicit:
        path = Path(explicit)
        return path if path.is_file() else None
    found = shutil.which("sleap-nn")
    if found:
        return Path(found)
    beside = Path(sys.executable).parent / "sleap-nn"
    if importlib.util.find_spec("sleap_nn") is not None and beside.is_file():
        return beside
    return None


def target_results(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, per case, from vs_sleap_nn's JSON report."""
    out = []
    for case, c in report.get("cases", {}).items():
        for label, key, target, what in TARGETS:
            ratio = (c.get("ours", {}).get(label) or {}).get(key)
            e2e = ratio.get("e2e") if ratio else None
            out.append(
                {
                    "case": case,
                    "what": what,
                    "target": target,
                    "e2e": e2e,
                    "steady": ratio.get("steady") if ratio else None,
                    "met": None if e2e is None else bool(e2e >= target),
                }
            )
    return out


@dataclass(frozen=True)
class VsRun:
    """What ``vs_sleap_nn.py`` is asked to compare (gpu_check: CUDA, sleap-nn TensorRT)."""

    exe: Path
    device: str = "cuda"
    runtime: str = "tensorrt"
    ours: tuple[str, ...] = ("torch", "trt:--backend trt")
    cases: str = "topdown"
    batch_size: int = 8
    frames: str | None = None

    def command(self, json_path: Path, cache: Path) -> list[str]:
        cmd = [sys.executable, str(HERE / "vs_sleap_nn.py"), "--device", self.device]
        cmd += ["--cases", self.cases, "--batch-size", str(self.batch_size)]
        cmd += ["--sleap-nn-exe", str(self.exe), "--sleap-nn-runtime", self.runtime]
        for variant in self.ours:
            cmd += ["--ours", variant]
        if self.frames:
            cmd += ["--frames", self.frames]
        return [*cmd, "--export-cache", str(cache / "sleap-nn-exports"), "--json", str(json_path)]


def run_vs_sleap_nn(vs: VsRun, timeout_s: float, json_path: Path, cache: Path) -> dict[str, Any]:
    """``vs_sleap_nn.py`` in a subprocess, stopped at ``timeout_s``; its ratios vs targets."""
    cmd = vs.command(json_path, cache)
    print(f"$ {' '.join(cmd)}", flush=True)
    t0 = time.monotonic()
    try:
        returncode, output = run_group(cmd, timeout_s)
    except subprocess.TimeoutExpired:
        return {
            "status": SKIPPED,
            "reason": f"{TIME_BUDGET}: stopped after {timeout_s:.0f} s",
            "command": cmd,
        }
    wall = time.monotonic() - t0
    if returncode != 0 or not json_path.is_file():
        tail = " ".join(output.strip().splitlines()[-3:])
        return {
            "status": "failed",
            "reason": f"exit {returncode}: {_short(tail, 400)}",
            "wall_s": wall,
            "command": cmd,
        }
    report = json.loads(json_path.read_text())
    return {
        "status": "ok",
        "reason": "",
        "wall_s": wall,
        "command": cmd,
        "json": json_path.name,
        "targets": target_results(report),
        "markdown": _markdown_of(output),
    }


def run_group(cmd: list[str], timeout_s: float) -> tuple[int, str]:
    """Run ``cmd`` in its own process group, its output echoed to ours as it comes; at
    ``timeout_s`` (or when this process is stopped) the whole group is killed, sleap-nn's
    and our predict subprocesses too. Returns the exit code and the output."""
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    expired = threading.Event()

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    def on_timeout() -> None:
        expired.set()
        kill()

    timer = threading.Timer(timeout_s, on_timeout)
    timer.start()
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # ends when the group exits or is killed
            print(line, end="", flush=True)
            lines.append(line)
        proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            kill()
            proc.wait()
    if expired.is_set():
        raise subprocess.TimeoutExpired(cmd, timeout_s)
    return proc.returncode, "".join(lines)


def _markdown_of(stdout: str) -> str:
    """The table vs_sleap_nn.py closes its output with."""
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("| case |")), None)
    if start is None:
        return ""
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("wrote ")), None)
    return "\n".join(lines[start:end]).strip()


def vs_lines(vs: dict[str, Any]) -> list[str]:
    if vs.get("status") != "ok":
        return [f"{vs.get('status')}: {vs.get('reason')}"]
    lines = ["Targets (end to end, whole `predict` command, same model, video and batch):", ""]
    for t in vs.get("targets", []):
        if t["e2e"] is None:
            lines.append(f"- {t['case']}: {t['what']}: not measured")
            continue
        verdict = "met" if t["met"] else "NOT met"
        steady = t["steady"]
        steady = "n/a" if steady is None or math.isnan(steady) else f"{steady:.2f}x"
        lines.append(
            f"- {t['case']}: {t['what']}: {t['e2e']:.2f}x e2e (steady {steady}),"
            f" target >= {t['target']:g}x: {verdict}"
        )
    if vs.get("markdown"):
        lines += ["", vs["markdown"]]
    lines += ["", f"(vs_sleap_nn.py took {vs.get('wall_s', 0):.0f} s; its JSON: {vs.get('json')})"]
    return lines


# ---------------------------------------------------------------- the run


def system_summary() -> dict[str, Any]:
    from sleap_infer.bench.suite import machine_info

    info = machine_info()
    try:
        import onnxruntime

        info["ort_providers"] = list(onnxruntime.get_available_providers())
        info["versions"].setdefault("onnxruntime", onnxruntime.__version__)
    except ImportError:
        pass
    try:
        import tensorrt

        info["tensorrt"] = tensorrt.__version__
    except ImportError:
        pass
    return info


def is_gpu(device: str) -> bool:
    """Whether this run gets the GPU plan (the realistic network, fp16, TensorRT)."""
    return device.startswith("cuda")


def resolve_device(spec: str) -> str:
    import torch

    if spec == "auto":
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if spec.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {spec}: torch sees no CUDA device here")
    return spec


def run_cells(
    state: State, bench: Bench, cells: Sequence[Cell], deadline: float, on_done: Callable[[], None]
) -> None:
    """Each pending cell in order, unless its estimate ends past ``deadline``."""
    for cell in cells:
        if cell.status != PENDING:
            continue
        est = bench.estimate(cell)
        cell.estimate_s = round(est, 1)
        left = deadline - time.monotonic()
        if est > left:
            cell.skip(TIME_BUDGET)
            print(f"  {_label(cell)}: skipped, needs ~{est:.0f} s, {left:.0f} s left", flush=True)
            on_done()
            continue
        first = bench.first_of_kind(cell)
        t0 = time.monotonic()
        bench.run(cell)
        cell.elapsed_s = round(time.monotonic() - t0, 2)
        if cell.status != "unavailable":
            bench.learn(cell, first, cell.elapsed_s)
        state.frames.update(bench.frames_text)
        fps = cell.row.get("fps")
        what = f"{fps:.1f} FPS" if cell.status == "ok" and fps else f"{cell.status} {cell.reason}"
        print(f"  {_label(cell)}: {_short(what, 200)} ({cell.elapsed_s:.1f} s)", flush=True)
        on_done()


def _label(cell: Cell) -> str:
    return f"{cell.group.name} {cell.backend} batch {cell.batch}"


def _stop(signum: int, frame: object) -> None:
    raise Stop(f"signal {signum}")


def groups_for(realistic_dir: Path | None) -> list[Group]:
    groups = list(FIXTURE_GROUPS)
    path = str(realistic_dir) if realistic_dir else "(not built: no CUDA)"
    return [Group(REALISTIC, (path,), None, REALISTIC_SIZE, realistic=True), *groups]


def vs_phase(state: State, args: argparse.Namespace, gpu: bool, cache: Path) -> float:
    """Decide whether the sleap-nn comparison runs; the seconds to reserve for it."""
    if args.quick:
        state.vs = {"status": SKIPPED, "reason": "--quick"}
    elif not gpu:
        state.vs = {"status": SKIPPED, "reason": NO_CUDA}
    elif find_fixtures() is None:
        state.vs = {"status": SKIPPED, "reason": "fixtures not found"}
    elif args.sleap_nn_exe_path is None:
        state.vs = {
            "status": SKIPPED,
            "reason": "sleap-nn not available: skipped (set SLEAP_NN_EXE to its executable)",
        }
    else:
        return args.vs_reserve_s
    return 0.0


def cannot_run(args: argparse.Namespace, why: str) -> int:
    """The bench itself does not import here (a bare machine missing a dependency)."""
    out = args.out
    payload = {"finished": True, "error": why, "notes": args.note}
    _write(out / "results.json", json.dumps(payload, indent=2))
    notes = "".join(f"- note: {n}\n" for n in args.note)
    _write(out / "summary.md", f"# GPU check\n\nnot run: {why}\n\n{notes}")
    print(f"gpu check not run: {why}", file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        import sleap_infer.bench.suite  # noqa: F401  (imports PyAV, torch, every layer)
    except ImportError as exc:
        return cannot_run(args, f"cannot import sleap_infer.bench: {exc}")
    device = resolve_device(args.device)
    gpu = is_gpu(device)
    cache = Path(args.cache or os.environ.get("SLEAP_INFER_CACHE") or _default_cache())
    os.environ["SLEAP_INFER_CACHE"] = str(cache)
    fixtures = find_fixtures()
    args.sleap_nn_exe_path = find_sleap_nn(args.sleap_nn_exe or os.environ.get("SLEAP_NN_EXE"))
    if args.iters is None:
        args.iters = 20 if gpu else (2 if args.quick else 3)
    if args.warmup is None:
        args.warmup = 3 if gpu else 1
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        realistic_dir = write_realistic_model(Path(tmp) / REALISTIC) if gpu else None
        first, last = plan(groups_for(realistic_dir))
        cells = first + last
        pre_skip(cells, gpu, args.quick, fixtures)
        state = State(args, args.out, started, device, cells, system=system_summary())
        reserve = vs_phase(state, args, gpu, cache)
        print(f"gpu check: device {device}, budget {args.budget_s:.0f} s, cache {cache}")
        bench = Bench(device, fixtures, args.iters, args.warmup)
        state.write()
        signal.signal(signal.SIGTERM, _stop)
        stopped = False
        try:
            _run_phases(state, bench, first, last, reserve, cache)
        except (Stop, KeyboardInterrupt) as exc:
            print(f"stopped: {exc!r}; writing what was measured", flush=True)
            stopped = True
        finally:
            for c in cells:
                if c.status == PENDING:
                    c.skip(f"{TIME_BUDGET}: the run was stopped before this cell")
            if state.vs.get("status") == PENDING:
                state.vs = {"status": SKIPPED, "reason": f"{TIME_BUDGET}: stopped before it"}
            state.finished = True
            state.write()
    print(f"wrote {args.out / 'summary.md'} and {args.out / 'results.json'}")
    print((args.out / "summary.md").read_text())
    if any(c.status == "failed" for c in cells):
        return 1
    return 3 if stopped else 0


def _run_phases(
    state: State, bench: Bench, first: list[Cell], last: list[Cell], reserve: float, cache: Path
) -> None:
    args = state.args
    deadline = state.started + args.budget_s
    realistic = [c for c in first if c.group.realistic]
    fixtures = [c for c in first if not c.group.realistic]
    print("realistic network", flush=True)
    run_cells(state, bench, realistic, deadline - reserve, state.write)
    bench.release()
    print("fixture models: torch and onnx", flush=True)
    run_cells(state, bench, fixtures, deadline - reserve, state.write)
    bench.release()
    if state.vs.get("status") == PENDING:
        left = deadline - time.monotonic()
        if left < 30:
            state.vs = {"status": SKIPPED, "reason": f"{TIME_BUDGET}: {left:.0f} s left"}
        else:
            print("sleap-nn vs ours, end to end", flush=True)
            device = "cuda" if state.device == "cuda:0" else state.device
            vs = VsRun(
                args.sleap_nn_exe_path,
                device=device,
                cases=args.vs_cases,
                batch_size=args.vs_batch_size,
            )
            state.vs = run_vs_sleap_nn(vs, left, args.out / "vs_sleap_nn.json", cache)
        state.write()
    print("fixture models: TensorRT", flush=True)
    run_cells(state, bench, last, deadline, state.write)
    bench.release()


def _default_cache() -> Path:
    """Outside the output folder (which goes back whole), kept between runs on one machine."""
    return Path(tempfile.gettempdir()) / "sleap-infer-gpu-check-cache"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "gpu-check-out", help="output folder")
    p.add_argument("--device", default="auto", help="auto (cuda:0 if torch sees CUDA), cpu, cuda:N")
    p.add_argument(
        "--budget-s",
        type=float,
        default=420.0,
        help="seconds for all cells and the sleap-nn comparison together (default 420)",
    )
    p.add_argument("--quick", action="store_true", help="three fixture models, few iterations")
    p.add_argument("--iters", type=int, default=None, help="timed iterations (GPU 20, CPU 3)")
    p.add_argument("--warmup", type=int, default=None, help="warmup iterations (GPU 3, CPU 1)")
    p.add_argument("--cache", default=None, help="export / engine cache (default: a temp folder)")
    p.add_argument("--junit", type=Path, default=None, help="pytest -m gpu's junit XML, to count")
    p.add_argument("--note", action="append", default=[], help="a line for the summary")
    p.add_argument(
        "--script-start", type=float, default=None, help="epoch seconds the wrapper started"
    )
    p.add_argument("--sleap-nn-exe", default=None, help="sleap-nn executable ($SLEAP_NN_EXE)")
    p.add_argument("--vs-cases", default="topdown", help="vs_sleap_nn.py --cases")
    p.add_argument("--vs-batch-size", type=int, default=8, help="vs_sleap_nn.py --batch-size")
    p.add_argument(
        "--vs-reserve-s",
        type=float,
        default=180.0,
        help="seconds kept for the sleap-nn comparison out of the budget (default 180: "
        "two tools x two paths x three runs, and two TensorRT builds)",
    )
    return p.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main())
