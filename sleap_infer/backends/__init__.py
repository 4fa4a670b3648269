"""Runtime backends: how a network is executed (torch now; ONNX Runtime, TensorRT later)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sleap_infer.backends.base import ModelBackend, resolve_device
from sleap_infer.backends.torch_backend import TorchBackend
from sleap_infer.errors import BackendError, UsageError
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
    raise BackendError(f"backend {key!r} is not implemented yet")


__all__ = ["BACKENDS", "ModelBackend", "TorchBackend", "backend_factory", "resolve_device"]
