"""The runtime contract every backend (torch, ONNX Runtime, TensorRT) satisfies."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import torch

from sleap_infer.vocab.artifact import ExportInfo
from sleap_infer.vocab.errors import BackendError
from sleap_infer.vocab.options import DecodeSettings


@runtime_checkable
class ModelBackend(Protocol):
    """Runs a network: uint8 ``(B, C, H, W)`` in, named output tensors out.

    ``does_baked_postproc`` is True for exported graphs that already return
    peaks instead of confidence maps, so layers skip host-side peak finding.
    ``provenance`` is what a prediction file records about the backend beyond
    its name and device (the export folders it ran; empty for torch).
    """

    device: torch.device
    does_baked_postproc: bool

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]: ...

    def warmup(self, shape: tuple[int, ...]) -> None: ...

    def provenance(self) -> dict[str, Any]: ...


@runtime_checkable
class GraphBackend(ModelBackend, Protocol):
    """A backend whose graph decodes in-graph: it must be told which decoding the layer
    relies on before the first batch, and refuse (or re-export for) one it cannot serve."""

    def bind_decode(self, decode: DecodeSettings) -> None: ...


def refuse_misfit(export: ExportInfo, decode: DecodeSettings) -> None:
    """One line when a fixed export's baked decoding cannot serve the predict options."""
    why = export.decode_misfit(decode)
    if why is not None:
        raise BackendError(
            f"{export.path}: cannot serve these predict options: {why} "
            "(export again with matching options, or use --backend onnx without an export dir)"
        )


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
        return _cuda_device(device, spec)
    if device.type == "mps":
        if not _mps_available():
            raise BackendError(f"device {spec!r} requested but MPS is not available here")
        return device
    raise BackendError(f"unsupported device {spec!r} (use auto, cpu, cuda, cuda:N or mps)")


def _cuda_device(device: torch.device, spec: object) -> torch.device:
    if not torch.cuda.is_available():
        raise BackendError(f"device {spec!r} requested but CUDA is not available here")
    index = 0 if device.index is None else device.index
    if index >= torch.cuda.device_count():
        raise BackendError(
            f"device {spec!r} requested but only {torch.cuda.device_count()} CUDA device(s)"
        )
    return torch.device("cuda", index)


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())
