"""``--int8``: quantise an export on the inputs of the run itself, then switch to it.

Static int8 needs calibration data, and the only inputs that describe the
user's animals, arena and lighting are the ones this run is about to
predict. So the backend runs the float32 graph on the first network inputs
(frames, or crops for a top-down second stage) while recording them, quantises
(:mod:`sleap_infer.export.quantize`), and runs int8 from then on. Those first
inputs keep their float32 results.

How many: :data:`CALIBRATION_SAMPLES` small inputs, but large ones only until they
hold :data:`CALIBRATION_PIXELS` pixels (at least :data:`MIN_CALIBRATION_SAMPLES`):
8 frames at 512 px. The quantiser runs the float graph once more over every
recorded input, so on a UNet-32 at 512 px 32 frames took 5.2 s and 8 took 1.6 s,
with the keypoints as close to float32's (0.058 and 0.063 px mean over 300 frames
of 30 animals; 4 frames 0.063): min/max ranges settle within a few frames of a
whole arena. Crops (64 px) still take 32.

The quirk: layer warmups push all-zero batches through the same call, and a
short last batch is padded with zero frames. Black images would squash the
activation ranges, so inputs whose pixels are all zero are not recorded.

The quantised graph is cached next to the export cache, keyed by the float
graph's bytes and a hash of the calibration inputs: the same video gives the
same first inputs, so a rerun skips the quantiser (a few seconds).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from sleap_infer.core.artifact import (
    METADATA_NAME,
    ONNX_NAME,
    ExportInfo,
    read_export,
    write_metadata,
)
from sleap_infer.core.errors import ExportError
from sleap_infer.core.files import file_sha256
from sleap_infer.export.exporter import staged_directory
from sleap_infer.export.quantize import calibration_digest, quantize_int8
from sleap_infer.runtimes.cache import cache_root
from sleap_infer.runtimes.contract import ExportTarget, Notify

if TYPE_CHECKING:
    from sleap_infer.backends.base import ModelBackend

CALIBRATION_SAMPLES = 32
"""Network inputs recorded before quantising, at most (ONNX Runtime's min/max calibration
settles well before this on the fixture and synthetic models)."""
CALIBRATION_PIXELS = 1 << 21
"""Large inputs are recorded until they hold this many pixels (8 frames of 512 x 512)."""
MIN_CALIBRATION_SAMPLES = 4


def calibration_count(sample_shape: tuple[int, ...], most: int = CALIBRATION_SAMPLES) -> int:
    """How many inputs of ``sample_shape`` (``(C, H, W)``) to record: ``most``, or fewer
    when they are large (see the module docstring)."""
    pixels = max(int(sample_shape[-1]) * int(sample_shape[-2]), 1)
    return min(most, max(MIN_CALIBRATION_SAMPLES, -(-CALIBRATION_PIXELS // pixels)))


INT8_LAYOUT = 1


def int8_export(
    info: ExportInfo, samples: list[np.ndarray], input_name: str, notify: Notify | None = None
) -> ExportInfo:
    """The int8 copy of export ``info`` calibrated on ``samples``: cached, or made now."""
    digest = calibration_digest(samples)
    target = cache_root() / f"int8-{file_sha256(info.onnx_path)[:20]}-{digest}"
    if (target / METADATA_NAME).is_file():
        try:
            return read_export(target)
        except ExportError:
            pass  # damaged: quantise again below
    if notify is not None:
        notify(
            f"Quantising {info.path.name} to int8, calibrated on the first {len(samples)} "
            f"inputs of this run (cached in {target})"
        )
    with staged_directory(target) as staging:
        t0 = time.perf_counter()
        nodes = quantize_int8(info.onnx_path, staging / ONNX_NAME, samples, input_name)
        data = dict(info.data)
        data["files"] = {"onnx": ONNX_NAME}
        data["onnx_sha256"] = file_sha256(staging / ONNX_NAME)  # the int8 graph's, not its source's
        data["precision"] = "int8"
        data["int8"] = {
            "layout": INT8_LAYOUT,
            "source_export": str(info.path),
            "calibration_samples": len(samples),
            "calibration_sha256": digest,
            "quantised_nodes": nodes,
            "seconds": round(time.perf_counter() - t0, 2),
        }
        write_metadata(staging, data)
    return read_export(target)


class CalibratingInt8Backend:
    """Float32 on the first inputs (recorded), int8 after; see the module docstring."""

    def __init__(
        self,
        info: ExportInfo,
        runtime: ExportTarget,
        device: torch.device,
        notify: Notify | None = None,
        samples: int = CALIBRATION_SAMPLES,
        **options: Any,
    ) -> None:
        self.info = info
        self.runtime = runtime
        self.device = device
        self.notify = notify
        self.wanted = samples
        self.options = options
        self.float_backend: ModelBackend = runtime.open(info, device, **options)
        self.does_baked_postproc = self.float_backend.does_baked_postproc
        self.host_threads = getattr(self.float_backend, "host_threads", None)
        self.recorded: list[np.ndarray] = []
        self.int8_backend: ModelBackend | None = None
        self.int8_info: ExportInfo | None = None

    @property
    def calibrated(self) -> bool:
        return self.int8_backend is not None

    def _input_name(self) -> str:
        name = getattr(self.float_backend, "input_name", None)
        return str(name) if name else "image"

    def _record(self, x: torch.Tensor) -> None:
        wanted = calibration_count(tuple(x.shape[1:]), self.wanted)
        for sample in x.cpu().numpy():
            if len(self.recorded) >= wanted:
                break
            if sample.any():  # all-zero: a warmup batch or padding, not a frame
                self.recorded.append(sample.copy())
        if len(self.recorded) >= wanted:
            self._switch()

    def _switch(self) -> None:
        self.int8_info = int8_export(self.info, self.recorded, self._input_name(), self.notify)
        self.int8_backend = self.runtime.open(self.int8_info, self.device, **self.options)
        self.recorded = []

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        if self.int8_backend is not None:
            return self.int8_backend(x)
        out = self.float_backend(x)
        self._record(x)
        return out

    def warmup(self, shape: tuple[int, ...]) -> None:
        (self.int8_backend or self.float_backend).warmup(shape)

    def provenance(self) -> dict[str, Any]:
        info = self.int8_info or self.info
        out: dict[str, Any] = {"runtime": self.runtime.name, "exports": [str(info.path)]}
        out["precision"] = "int8" if self.calibrated else "float32 (not yet calibrated)"
        return out
