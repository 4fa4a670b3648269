"""How close a backend comes to this machine's arithmetic peak, measured, not quoted.

A frames-per-second figure says nothing about headroom: 30 FPS may be 90% of what
the chip can do or 20%. So the bench counts the network's floating-point work per
frame (from the torch network itself, at the benchmark's input shape) and divides
the achieved rate by a *calibration kernel* run on the same machine, in the same
run, with the same threads: a large matrix multiply, the best case of the very
library (oneDNN / MKL on the CPU, cuBLAS on CUDA) the convolutions run on. A
spec-sheet peak (cores x FLOP/cycle x clock) is not used: turbo, shared VMs and
cgroup quotas make it a number this process never sees.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from sleap_infer.bench.measure import Measurement

PRECISIONS = ("fp32", "bf16", "fp16", "int8")
CPU_SIZE = 2048
"""Square GEMM side on the CPU: 17 GFLOP, ~0.1 s on 2 cores, large enough for oneDNN to
reach its steady rate (1024 reached 40% of it on the development machine)."""
CUDA_SIZE = 8192
LOW_PRECISIONS = ("int8", "bf16")  # their peaks must beat fp32's to count as peaks
REPEATS = 5


def count_flops(run: Callable[[], object]) -> int:
    """Floating-point operations torch dispatches while ``run()`` executes (a
    multiply-add counts 2, as torch's :class:`FlopCounterMode` counts convolutions and
    matrix products; elementwise work is not counted, it is not what peaks measure)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        run()
    return int(counter.get_total_flops())


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _operands(precision: str, n: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    if precision == "int8":
        a = torch.randint(-128, 128, (n, n), dtype=torch.int8, generator=gen)
        b = torch.randint(-128, 128, (n, n), dtype=torch.int8, generator=gen)
    else:
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
        a = torch.randn(n, n, generator=gen).to(dtype)
        b = torch.randn(n, n, generator=gen).to(dtype)
    return a.to(device), b.to(device)


def gemm_rate(
    precision: str, device: torch.device, size: int | None = None, repeats: int = REPEATS
) -> float:
    """Best-of-``repeats`` GFLOP/s (GOP/s for int8) of an ``n x n x n`` matrix product in
    ``precision`` on ``device``, with torch's current thread count. Raises
    :class:`RuntimeError` where this torch has no kernel for it (int8 on some builds)."""
    n = size or (CUDA_SIZE if device.type == "cuda" else CPU_SIZE)
    a, b = _operands(precision, n, device)
    if precision == "int8":
        if not hasattr(torch, "_int_mm"):
            raise RuntimeError("this torch has no int8 matrix product (torch._int_mm)")
        product = torch._int_mm
    else:
        product = torch.mm
    with torch.inference_mode():
        product(a, b)  # first call: kernel selection, page faults
        _sync(device)
        best = float("inf")
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            product(a, b)
            _sync(device)
            best = min(best, time.perf_counter() - t0)
    return 2.0 * n**3 / best / 1e9


@dataclass
class PeakCalibration:
    """Measured peaks (GFLOP/s; GOP/s for int8) per ``(device type, precision)``, taken
    lazily the first time a row needs one; ``None`` where no kernel exists (said in
    ``reasons``)."""

    threads: int = 0
    peaks: dict[str, float | None] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def peak(self, device: torch.device, precision: str) -> float | None:
        key = f"{device.type}:{precision}"
        if key not in self.peaks and device.type == "cpu" and precision == "fp16":
            # torch emulates fp16 products on most CPUs (minutes for one 2048 GEMM), and
            # no fp16 row runs there: the backends refuse --fp16 on the CPU.
            self.peaks[key] = None
            self.reasons[key] = "no fp16 kernel measured on the CPU"
        if key not in self.peaks:
            self.threads = torch.get_num_threads()
            try:
                self.peaks[key] = gemm_rate(precision, device)
            except (RuntimeError, TypeError, NotImplementedError) as exc:
                self.peaks[key] = None
                self.reasons[key] = f"{type(exc).__name__}: {exc}".splitlines()[0]
            self._refuse_slow_low_precision(device, precision)
        return self.peaks[key]

    def _refuse_slow_low_precision(self, device: torch.device, precision: str) -> None:
        """A reduced-precision product slower than fp32's is no peak: torch has no fast
        kernel for it on this CPU and runs a reference loop (``torch._int_mm`` ran at
        2 GOP/s beside a 190 GFLOP/s fp32 product on an AMD EPYC VM), and every share
        divided by it would read thousands of percent."""
        key = f"{device.type}:{precision}"
        rate = self.peaks.get(key)
        if precision not in LOW_PRECISIONS or rate is None:
            return
        fp32 = self.peak(device, "fp32")
        if fp32 is not None and rate < fp32:
            self.peaks[key] = None
            self.reasons[key] = (
                f"torch's {precision} product runs at {rate:.0f} GOP/s here, below its fp32"
                f" product ({fp32:.0f} GFLOP/s): no fast {precision} kernel to measure against"
            )

    def remeasure(self) -> None:
        """Measure every peak again and keep the better figure: on a shared machine one
        measurement may fall in a busy moment, and a low peak inflates every share."""
        for key, rate in self.peaks.items():
            if rate is not None:
                device, precision = key.split(":")
                self.peaks[key] = max(rate, gemm_rate(precision, torch.device(device)))

    def to_json(self) -> dict[str, object]:
        return {
            "kernel": "square matrix product (torch.mm; torch._int_mm for int8), best of "
            f"{REPEATS}, n={CPU_SIZE} on cpu and {CUDA_SIZE} on cuda",
            "threads": self.threads,
            "gflops": dict(self.peaks),
            "unavailable": dict(self.reasons),
        }


def row_precision(backend: str) -> str:
    """The arithmetic a bench row (``onnx+int8``, ``torch+bf16``, ``openvino``) runs in."""
    _, _, variant = backend.partition("+")
    return variant if variant in PRECISIONS else "fp32"


def fill_rates(row: Measurement, gflop_per_frame: float | None, peak: float | None) -> None:
    """Set ``row``'s achieved rates and peak shares from its timings (``fps``, the
    ``network`` stage's share) and the work per frame; unknowns stay None."""
    if gflop_per_frame is None or not row.fps:
        return
    row.gflop_per_frame = gflop_per_frame
    row.achieved_gflops = gflop_per_frame * row.fps
    network_share = row.stages.get("network")
    if network_share:
        row.network_gflops = row.achieved_gflops / network_share
    row.peak_gflops = peak
    if peak:
        row.peak_fraction = row.achieved_gflops / peak
        if row.network_gflops is not None:
            row.network_peak_fraction = row.network_gflops / peak
