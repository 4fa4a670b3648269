"""The runtime contract every backend (torch, ONNX Runtime, TensorRT) satisfies."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch

from sleap_infer.errors import BackendError


@runtime_checkable
class ModelBackend(Protocol):
    """Runs a network: uint8 ``(B, C, H, W)`` in, named output tensors out.

    ``does_baked_postproc`` is True for exported graphs that already return
    peaks instead of confidence maps, so layers skip host-side peak finding.
    """

    device: torch.device
    does_baked_postproc: bool

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]: ...

    def warmup(self, shape: tuple[int, ...]) -> None: ...


def resolve_device(spec: str | torch.device | None = "auto") -> torch.device:
    """Turn ``auto|cpu|cuda|cuda:N|mps`` into a device that exists here, or raise."""
    text = "auto" if spec is None else str(spec).strip().lower()
    if text == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda:0")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        device = torch.device(text)
    except RuntimeError as exc:
        raise BackendError(f"unknown device {spec!r} (use auto, cpu, cuda, cuda:N or mps)") from exc
    if device.type == "cpu":
        return device
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise BackendError(f"device {spec!r} requested but CUDA is not available here")
        index = 0 if device.index is None else device.index
        if index >= torch.cuda.device_count():
            raise BackendError(
                f"device {spec!r} requested but only {torch.cuda.device_count()} CUDA device(s)"
            )
        return torch.device("cuda", index)
    if device.type == "mps":
        if not _mps_available():
            raise BackendError(f"device {spec!r} requested but MPS is not available here")
        return device
    raise BackendError(f"unsupported device {spec!r} (use auto, cpu, cuda, cuda:N or mps)")


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())
