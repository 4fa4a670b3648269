"""Runtime backends: how a network is executed (torch, ONNX Runtime, TensorRT)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from sleap_infer.backends.base import ModelBackend, resolve_device
from sleap_infer.backends.torch_backend import TorchBackend
from sleap_infer.errors import UsageError
from sleap_infer.model.loader import LoadedModel

BACKENDS = ("torch", "onnx", "trt")


def backend_factory(
    name: str, device: str = "auto", **options: Any
) -> Callable[[LoadedModel], ModelBackend]:
    """A function building backend ``name`` for a loaded model on ``device``."""
    key = name.strip().lower()
    if key not in BACKENDS:
        raise UsageError(f"unknown backend {name!r} (choose from {', '.join(BACKENDS)})")
    if key == "torch":
        resolved = resolve_device(device)

        def make(model: LoadedModel) -> ModelBackend:
            return TorchBackend(model.network, resolved, **options)

        return make
    return _exported_factory(key, device, **options)


def _exported_factory(
    runtime: str, device: str, **options: Any
) -> Callable[[LoadedModel], ModelBackend]:
    """onnx/trt: backends that export on first use (see ``sleap_infer.export.auto``).

    Device and runtime availability are checked now, so a machine without
    CUDA or TensorRT fails before any model is exported.
    """
    from sleap_infer.export.auto import AutoExportBackend

    if runtime == "onnx":
        from sleap_infer.backends.onnx_backend import resolve_onnx_device

        resolved: str | torch.device = resolve_onnx_device(device)
    else:
        from sleap_infer.backends.tensorrt_backend import require_cuda, require_tensorrt

        require_tensorrt()
        resolved = require_cuda(device)

    def make(model: LoadedModel) -> ModelBackend:
        return AutoExportBackend(model, runtime, resolved, **options)

    return make


__all__ = ["BACKENDS", "ModelBackend", "TorchBackend", "backend_factory", "resolve_device"]
