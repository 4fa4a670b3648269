"""``AutoExportBackend``: ``--backend onnx|trt`` without a separate export step.

It satisfies ``ModelBackend`` but defers the export until the first batch,
because only then is the preprocessed input shape known (frame sizes vary
by video when the model has no size matcher). Each new shape resolves its
own export (next to the model, cached, or made now) and its own runtime
session. The layer declares the decoding it needs via ``bind_decode``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from sleap_infer.backends.base import ModelBackend
from sleap_infer.export.cache import ExportRequest, ensure_export
from sleap_infer.export.settings import DEFAULT_OPSET, DecodeSettings
from sleap_infer.model.loader import LoadedModel


class AutoExportBackend:
    """Resolves (or creates) the export for each input shape, then runs it."""

    does_baked_postproc = True

    def __init__(
        self,
        model: LoadedModel,
        runtime: str,
        device: str | torch.device = "auto",
        fp16: bool = False,
        opset: int = DEFAULT_OPSET,
        notify: Callable[[str], None] | None = None,
        **runtime_options: Any,
    ) -> None:
        self.model = model
        self.runtime = runtime
        self.fp16 = fp16
        self.opset = opset
        self.notify = notify
        self.runtime_options = runtime_options
        self.decode = DecodeSettings()
        self._trt_version: str | None = None
        self._gpu: Any = None
        if runtime == "onnx":
            from sleap_infer.backends.onnx_backend import resolve_onnx_device

            self.device = resolve_onnx_device(device)
        elif runtime == "trt":
            from sleap_infer.backends.tensorrt_backend import (
                GpuInfo,
                require_cuda,
                require_tensorrt,
            )

            self._trt_version = require_tensorrt().__version__
            self.device = require_cuda(device)
            self._gpu = GpuInfo.of(self.device)
        else:
            raise ValueError(f"unknown exported runtime {runtime!r}")
        self._backends: dict[tuple[int, ...], ModelBackend] = {}
        self.exports: list[Path] = []
        self.partners: list[Path] = []

    def search_also(self, model_dir: Path) -> None:
        """Look for this model's exports in ``model_dir``'s pair exports too (top-down)."""
        if model_dir not in self.partners:
            self.partners.append(model_dir)

    def bind_decode(self, decode: DecodeSettings) -> None:
        """Called by exported layers: the in-graph decoding their postprocessing relies on."""
        self.decode = decode
        self._backends.clear()

    def _backend_for(self, shape: tuple[int, ...]) -> ModelBackend:
        key = shape if self.runtime == "trt" else shape[1:]
        backend = self._backends.get(key)
        if backend is not None:
            return backend
        request = ExportRequest(
            runtime=self.runtime,
            input_shape=(int(shape[0]), int(shape[1]), int(shape[2]), int(shape[3])),
            decode=self.decode,
            fp16=self.fp16,
            opset=self.opset,
            trt_version=self._trt_version,
            gpu=self._gpu,
        )
        info = ensure_export(self.model, request, str(self.device), self.notify, self.partners)
        if self.runtime == "onnx":
            from sleap_infer.backends.onnx_backend import ONNXBackend

            backend = ONNXBackend(info, self.device, **self.runtime_options)
        else:
            from sleap_infer.backends.tensorrt_backend import TensorRTBackend

            assert info.engine_path is not None
            backend = TensorRTBackend(info.engine_path, self.device)
        self._backends[key] = backend
        self.exports.append(info.path)
        return backend

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return self._backend_for(tuple(x.shape))(x)

    def warmup(self, shape: tuple[int, ...]) -> None:
        self._backend_for(tuple(shape)).warmup(tuple(shape))

    def provenance(self) -> dict[str, Any]:
        return {"runtime": self.runtime, "exports": [str(p) for p in self.exports]}
