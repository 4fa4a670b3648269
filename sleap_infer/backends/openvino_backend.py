"""OpenVINO execution of an exported ONNX graph, on the CPU.

It reads the very ``model.onnx`` that ONNX Runtime runs (same exports, same
cache), so the two differ only in kernels. Two quirks decide its settings:

* OpenVINO's CPU plugin silently runs float32 graphs in bfloat16 on CPUs that
  support it (AVX512-BF16, AMX): the "f32" model comes back with keypoints a
  few tenths of a pixel off. Precision is therefore always set explicitly:
  ``f32`` unless the user asked for ``--bf16``.
* A graph compiled for a dynamic batch runs slower than one compiled for the
  exact shape, so each input shape gets its own compiled model (a handful per
  run: the batch size, a short last batch, top-down's varying crop counts).

Compiling is start-up time: 0.1-0.3 s a model on 2 cores, paid before the first
batch, which on a 300-frame run is what decides whether OpenVINO beats torch at
all. With ``compiled_cache`` (a folder), the first shape compiled (warmup's, the
run's batch) is stored there by OpenVINO's own model cache and read back by the
next run: about half the compile (multi-class bottom-up 0.25 -> 0.13 s,
``benchmarks/openvino_compile_cache.py``). Only that
one shape is cached, so the folder grows by one blob per export and batch size,
not by every top-down crop count a long video meets. OpenVINO keys the blob by
the graph, its weights, the device and these settings, so one folder serves every
export; a blob it cannot read is compiled again.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch

from sleap_infer.backends.base import check_export_input, host_input, refuse_misfit
from sleap_infer.backends.openvino_import import import_openvino
from sleap_infer.backends.threads import HOST_THREADS_BESIDE_POOL, cpu_budget
from sleap_infer.core.artifact import ExportInfo
from sleap_infer.core.errors import BackendError, ExportError
from sleap_infer.core.options import DecodeSettings

MAX_COMPILED_SHAPES = 16
"""Compiled models kept per backend; beyond this the oldest is dropped (top-down crop
counts can take many values over a long video)."""


def require_openvino() -> ModuleType:
    """OpenVINO, imported without its model converter (:mod:`.openvino_import`)."""
    try:
        openvino = import_openvino()
    except ImportError as exc:
        raise BackendError(
            "the openvino backend needs OpenVINO: pip install 'sleap-infer[openvino]'"
        ) from exc
    return openvino


def resolve_openvino_device(spec: str | torch.device = "auto") -> torch.device:
    """OpenVINO runs here on the CPU only (its GPU plugin targets Intel GPUs).

    Whether it is installed is looked up, not imported: importing OpenVINO (0.2-0.3 s on
    2 cores) would be paid by layers built and never run (a pipeline loaded to describe
    its models, an ``auto`` run that falls back). :class:`OpenVINOBackend` imports it when
    a batch first needs it.
    """
    if importlib.util.find_spec("openvino") is None:
        require_openvino()  # the one-line error, naming the extra
    text = str(spec).strip().lower()
    if text not in ("auto", "cpu"):
        raise BackendError(
            f"--device {text}: the openvino backend runs on cpu only "
            "(use --backend onnx or trt for cuda, torch for mps)"
        )
    return torch.device("cpu")


class OpenVINOBackend:
    """Runs an export's ``model.onnx`` with OpenVINO; outputs are float32 torch tensors.

    ``precision``: ``f32`` (default, torch-equal within rounding) or ``bf16`` (opt-in,
    about 2x faster on CPUs with AVX512-BF16 or AMX, not exact).
    """

    def __init__(
        self,
        export: ExportInfo,
        device: str | torch.device = "cpu",
        precision: str = "f32",
        threads: int = 0,
        compiled_cache: Path | None = None,
    ) -> None:
        ov = require_openvino()
        self.device = resolve_openvino_device(device)
        if precision not in ("f32", "bf16"):
            raise BackendError(f"openvino precision must be f32 or bf16, not {precision!r}")
        self.export = export
        self.precision = precision
        self.does_baked_postproc = not export.raw_maps
        self.host_threads = HOST_THREADS_BESIDE_POOL
        export.check_graph()
        self.onnx_path = str(export.onnx_path)
        self.core = ov.Core()
        self.config = {
            "INFERENCE_PRECISION_HINT": precision,
            "INFERENCE_NUM_THREADS": threads or cpu_budget(),
            "PERFORMANCE_HINT": "LATENCY",
        }
        try:
            self.model = self.core.read_model(self.onnx_path)
        except Exception as exc:  # OpenVINO raises plain RuntimeErrors with long texts
            raise ExportError(f"{self.onnx_path}: OpenVINO cannot read it ({exc})") from exc
        self.input_name = self.model.inputs[0].get_any_name()
        self.output_names = [o.get_any_name() for o in self.model.outputs]
        self._compiled: dict[tuple[int, ...], Any] = {}
        self._cache_next = compiled_cache  # used by the first compile only, then None

    def bind_decode(self, decode: DecodeSettings) -> None:
        refuse_misfit(self.export, decode)

    def provenance(self) -> dict[str, Any]:
        return {
            "runtime": "openvino",
            "precision": self.precision,
            "exports": [str(self.export.path)],
        }

    def _compiled_for(self, shape: tuple[int, ...]) -> Any:
        compiled = self._compiled.get(shape)
        if compiled is not None:
            return compiled
        model = self.model.clone()
        model.reshape({self.input_name: list(shape)})
        config = dict(self.config)
        if self._cache_next is not None:
            config["CACHE_DIR"] = str(self._cache_next)
            self._cache_next = None
        try:
            compiled = self.core.compile_model(model, "CPU", config)
        except Exception as exc:
            raise BackendError(f"{self.onnx_path}: OpenVINO cannot compile it ({exc})") from exc
        if len(self._compiled) >= MAX_COMPILED_SHAPES:
            self._compiled.pop(next(iter(self._compiled)))
        self._compiled[shape] = compiled
        return compiled

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        check_export_input(self.export, x)
        compiled = self._compiled_for(tuple(int(d) for d in x.shape))
        result = compiled(host_input(x))
        # Copies: the request's output buffers are reused by its next call.
        return {
            name: torch.from_numpy(np.array(result[i], copy=True))
            for i, name in enumerate(self.output_names)
        }

    def warmup(self, shape: tuple[int, ...]) -> None:
        self(torch.zeros(shape, dtype=torch.uint8))
