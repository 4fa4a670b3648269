"""One benchmark row: cold call, warmup, timed iterations, memory, accuracy vs torch.

Timings are wall-clock per batch around ``layer.predict`` on frames that are
already decoded, so a row measures the model path (preprocess, network,
postprocess) and nothing else; end-to-end throughput with decoding is what
``infer predict`` and ``benchmarks/vs_sleap_nn.py`` report.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.timing import StageTimer
from sleap_infer.layers.base import InferenceLayer
from sleap_infer.ops.assignment import linear_sum_assignment
from sleap_infer.runner import Runner

OK, UNAVAILABLE, FAILED = "ok", "unavailable", "failed"


@dataclass
class Measurement:
    """What one backend x batch size did here (times in ms, memory in MiB)."""

    backend: str
    batch: int
    status: str = OK
    reason: str = ""
    setup_ms: float | None = None  # load + build the layer (and sessions)
    cold_ms: float | None = None  # first call: lazy export/session/kernel selection
    warmup_ms: float | None = None  # the untimed warmup iterations, all together
    p50_ms: float | None = None
    p95_ms: float | None = None
    frame_ms: float | None = None  # mean batch time / batch
    fps: float | None = None
    # Through the runner, as ``infer predict`` runs (batches queued back to back; on CUDA
    # pinned uploads on a copy stream and postprocessing on its own stream and thread).
    pipelined_fps: float | None = None
    peak_rss_mb: float | None = None
    gpu_peak_mb: float | None = None  # torch's CUDA allocator only
    delta_px_mean: float | None = None  # vs the torch backend, same frames and batch
    delta_px_max: float | None = None
    matched_points: int | None = None
    # Segmentation models: share of torch's masks this backend reproduced pixel for pixel.
    masks_identical: float | None = None
    # Box detectors: the largest corner difference (px) from torch's boxes, paired up.
    box_delta_px: float | None = None
    stages: dict[str, float] = field(default_factory=dict)  # share of timed wall time
    # Against this machine's measured peak (see sleap_infer.bench.peak): the torch
    # network's FLOPs per frame at this input, the rate achieved over the whole layer
    # call and over the network stage alone, and those rates as shares of the peak
    # GEMM rate of the row's precision (GOP/s for int8).
    precision: str = "fp32"
    gflop_per_frame: float | None = None
    achieved_gflops: float | None = None
    network_gflops: float | None = None
    peak_gflops: float | None = None
    peak_fraction: float | None = None
    network_peak_fraction: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def reset_peak_rss() -> bool:
    """Reset the kernel's high-water mark for this process (Linux); False where unsupported."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float | None:
    """Peak resident memory since the last reset (Linux), else since process start."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def measure_layer(
    layer: InferenceLayer, frames: np.ndarray, iters: int, warmup_iters: int, row: Measurement
) -> BatchPredictions:
    """Time ``layer.predict(frames)``: one cold call, ``warmup_iters`` untimed, ``iters`` timed.

    Fills in ``row``; returns the predictions of the last call (for the torch comparison).
    """
    device = layer.device
    reset_peak_rss()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    t0 = time.perf_counter()
    preds = layer.predict(frames)
    _sync(device)
    row.cold_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    for _ in range(warmup_iters):
        layer.predict(frames)
    _sync(device)
    row.warmup_ms = (time.perf_counter() - t0) * 1e3
    timer = StageTimer(sync=(lambda: _sync(device)) if device.type != "cpu" else None)
    times = np.empty(max(1, iters))
    for i in range(len(times)):
        t0 = time.perf_counter()
        with timer.activate():
            preds = layer.predict(frames)
        _sync(device)
        times[i] = time.perf_counter() - t0
    batch = int(frames.shape[0])
    row.p50_ms = float(np.percentile(times, 50) * 1e3)
    row.p95_ms = float(np.percentile(times, 95) * 1e3)
    row.frame_ms = float(times.mean() * 1e3 / batch)
    row.fps = float(batch / times.mean())
    total = float(times.sum())
    row.stages = {k: v / total for k, v in sorted(timer.totals.items(), key=lambda kv: -kv[1])}
    row.peak_rss_mb = peak_rss_mb()
    if device.type == "cuda":
        row.gpu_peak_mb = torch.cuda.max_memory_allocated(device) / 2**20
    return preds


def measure_pipelined(
    layer: InferenceLayer, frames: np.ndarray, batches: int, row: Measurement
) -> None:
    """Frames per second through :class:`Runner` for ``batches`` batches of ``frames``
    (already decoded, so decoding is not measured; the layer is already warm)."""
    size = int(frames.shape[0])
    stream = ((i, frames[i % size]) for i in range(max(1, batches) * size))
    # The runner times itself from its first batch to its last prediction handed on (host
    # results: every device's work for them is done).
    row.pipelined_fps = Runner(layer, batch_size=size, warmup=False).run(stream).fps


def keypoint_delta(
    reference: BatchPredictions, other: BatchPredictions
) -> tuple[float, float, int]:
    """Mean and max keypoint distance (px) after matching instances frame by frame.

    Instances are paired with the Hungarian algorithm on mean node distance,
    since backends may list the same animals in a different order. Nodes
    found by only one side are not counted; returns ``(nan, nan, 0)`` when
    nothing could be compared (e.g. noise frames with no animals).
    """
    dists: list[np.ndarray] = []
    for f in range(reference.batch_size):
        a = reference.points[f][reference.valid[f]]
        b = other.points[f][other.valid[f]]
        if not len(a) or not len(b):
            continue
        d = np.linalg.norm(a[:, None] - b[None], axis=-1)  # (Ia, Ib, N)
        both = ~np.isnan(d)
        count = both.sum(axis=-1)
        total = np.where(both, d, 0.0).sum(axis=-1)
        cost = np.where(count > 0, total / np.maximum(count, 1), 1e9)
        rows, cols = linear_sum_assignment(cost)
        pair = d[rows, cols]
        dists.append(pair[~np.isnan(pair)])
    flat = np.concatenate(dists) if dists else np.empty(0)
    if not flat.size:
        return float("nan"), float("nan"), 0
    return float(flat.mean()), float(flat.max()), int(flat.size)


def mask_agreement(reference: BatchPredictions, other: BatchPredictions) -> float | None:
    """Share of the reference's masks that ``other`` reproduced exactly (same frame, same
    position in the frame's order, same grid, geometry and pixels); None without masks."""
    ref, oth = reference.masks, other.masks
    if ref is None or not len(ref):
        return None
    if oth is None:
        return 0.0
    same = 0
    for b in range(reference.batch_size):
        mine, theirs = ref.in_frame(b), oth.in_frame(b)
        for k, j in zip(mine, theirs):
            same += bool(
                np.array_equal(ref.size[k], oth.size[j])
                and np.array_equal(ref.scale[k], oth.scale[j])
                and np.array_equal(ref.offset[k], oth.offset[j])
                and np.array_equal(ref.runs(k), oth.runs(j))
            )
    return same / len(ref)


def box_delta(
    reference: BatchPredictions, other: BatchPredictions, in_order: bool = True
) -> float | None:
    """Largest corner difference (px) between the two runs' boxes, paired in each frame's
    order (``in_order``), or else paired up by distance (Hungarian on the largest corner
    difference); ``inf`` when a frame's box count differs; None without boxes.

    The bench pairs them up: an under-trained detector's near-tied scores (SSD: 1e-7 apart)
    come out reordered by float noise alone, and in order that reads as a ~100 px move
    (seen on an H200, torch CUDA vs CPU, while the paired-up boxes agreed to 1.5e-5 px)."""
    ref, oth = reference.boxes, other.boxes
    if ref is None or not len(ref):
        return None
    if oth is None:
        return float("inf")
    worst = 0.0
    for b in range(reference.batch_size):
        mine, theirs = ref.in_frame(b), oth.in_frame(b)
        if len(mine) != len(theirs):
            return float("inf")
        if not mine:
            continue
        if in_order:
            worst = max(worst, float(np.abs(ref.xyxy[mine] - oth.xyxy[theirs]).max()))
            continue
        cost = np.abs(ref.xyxy[mine][:, None] - oth.xyxy[theirs][None]).max(axis=-1)
        rows, cols = linear_sum_assignment(cost)
        worst = max(worst, float(cost[rows, cols].max()))
    return worst
