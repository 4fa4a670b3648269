"""The runtime contract every backend (torch, ONNX Runtime, TensorRT) satisfies."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from sleap_infer.core.artifact import ExportInfo
from sleap_infer.core.errors import BackendError, NonFiniteOutputError
from sleap_infer.core.options import DecodeSettings


@runtime_checkable
class ModelBackend(Protocol):
    """Runs a network: uint8 ``(B, C, H, W)`` in, named output tensors out.

    ``does_baked_postproc`` is True for exported graphs that already return
    peaks instead of confidence maps, so layers skip host-side peak finding.
    ``provenance`` is what a prediction file records about the backend beyond
    its name and device (the export folders it ran; empty for torch).

    Optional, read with ``getattr``: ``host_threads`` (int) on a backend whose runtime
    runs the network in its own CPU thread pool (ONNX Runtime, OpenVINO on the CPU):
    the torch threads the layer's host-side work should use beside it.
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


def host_input(x: torch.Tensor) -> np.ndarray:
    """The batch as one C-contiguous numpy array for a runtime's CPU session.

    Copied by numpy, on the calling thread, not by torch's ``contiguous()``: a torch copy
    of a batch this size splits over torch's OpenMP pool, whose worker then spins for
    milliseconds after it, on the cores the runtime is about to run the network on. On a
    2-vCPU machine that spin was 0.4 of the 6.8 CPU seconds of a 300-frame RGB
    single-instance run on OpenVINO (``perf``), whose wall went from 5.04 s to 4.55 s
    (``benchmarks/ab_predict.py``, with this and the start-up cuts of the same change).
    A one-channel batch is contiguous already, and neither copies.
    """
    return np.ascontiguousarray(x.detach().cpu().numpy())


def _checked(name: str, decoded: bool) -> bool:
    """Which outputs must be finite. Raw maps: all. A graph that decodes in-graph: the
    values it read off the maps (``*_vals``, ``class_probs``); its geometry may hold NaN
    by design (PAF line scores of empty or coincident peak slots divide 0 by 0)."""
    return not decoded or name.endswith("_vals") or name == "class_probs"


def _looks_finite(value: torch.Tensor, decoded: bool) -> torch.Tensor:
    """One cheap reduction, True when ``value`` holds no NaN or Inf (no false negatives).

    Raw maps: the sum (NaN or Inf anywhere makes it non-finite; a float32 overflow of
    finite values only sends the batch to the exact check). Decoded graphs: the maximum,
    which ``-inf`` empty slots never raise and NaN or ``+inf`` always spoil.
    """
    if decoded:
        return value.amax() < float("inf")
    return torch.isfinite(value.sum())


def _finite(value: torch.Tensor, decoded: bool) -> bool:
    """The exact element-wise check, run only when the cheap one fails."""
    return bool(((value < float("inf")) if decoded else torch.isfinite(value)).all())


def check_finite(
    outputs: dict[str, torch.Tensor], decoded: bool = False
) -> dict[str, torch.Tensor]:
    """``outputs`` unchanged, or :class:`NonFiniteOutputError` when one holds NaN or Inf.

    One reduction per floating output, on the outputs' device, and one host sync for all
    of them: next to the network, nothing (a sum costs what a copy of the maps costs).
    Raw maps must be finite everywhere; of a graph that decodes in-graph (``decoded``)
    only the peak values and class probabilities are checked, and as it marks its empty
    peak slots with ``-inf``, only NaN and ``+inf`` count there.
    """
    floats = {
        k: v
        for k, v in outputs.items()
        if v.is_floating_point() and v.numel() and _checked(k, decoded)
    }
    if not floats:
        return outputs
    checks = [_looks_finite(v, decoded) for v in floats.values()]
    device = checks[0].device
    if bool(torch.stack([c.to(device) for c in checks]).all()):
        return outputs
    bad = [name for name, value in floats.items() if not _finite(value, decoded)]
    if bad:
        raise NonFiniteOutputError(f"the network returned NaN or Inf (output {bad[0]!r})")
    return outputs  # finite values whose sum overflowed


def check_export_input(export: ExportInfo, x: torch.Tensor) -> None:
    """One clear line when a batch does not fit an export's traced input (dtype, shape)."""
    if x.dtype != torch.uint8:
        raise BackendError(f"exported graphs take uint8 input, got {x.dtype}")
    why = export.misfit(tuple(x.shape))
    if why is not None:
        raise BackendError(
            f"{export.path}: cannot run this export: {why}; export again with "
            "infer export --input-size HxW (or let --backend onnx export on first use)"
        )


def refuse_misfit(export: ExportInfo, decode: DecodeSettings) -> None:
    """One line when a fixed export's baked decoding cannot serve the predict options."""
    why = export.decode_misfit(decode)
    if why is not None:
        raise BackendError(
            f"{export.path}: cannot serve these predict options: {why} "
            "(export again with matching options, or use --backend onnx without an export dir)"
        )


def resolve_device(spec: str | torch.device | None = "auto") -> torch.device:
    """Turn ``auto|cpu|cuda|cuda:N|mps`` into a device that exists here, or raise.

    A device this machine lacks says why (a CPU-only torch build, no visible GPU,
    too few GPUs) and what to do, since "CUDA is not available" alone sends users
    to check drivers when ``pip`` simply installed the CPU wheel.
    """
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
        raise BackendError(
            f"--device {spec!r}: unknown device (use auto, cpu, cuda, cuda:N or mps)"
        ) from exc
    if device.type == "cpu":
        return device
    if device.type == "cuda":
        return _cuda_device(device, text)
    if device.type == "mps":
        _check_mps(text)
        return device
    raise BackendError(
        f"--device {spec!r}: unsupported device (use auto, cpu, cuda, cuda:N or mps)"
    )


def _cuda_device(device: torch.device, text: str) -> torch.device:
    build = torch.__version__
    if torch.version.cuda is None:
        raise BackendError(
            f"--device {text}: CUDA is not available: this torch build ({build}) has no CUDA "
            "support; install a CUDA build of torch (https://pytorch.org/get-started/locally/) "
            "or use --device cpu"
        )
    if not torch.cuda.is_available():
        raise BackendError(
            f"--device {text}: CUDA is not available: torch {build} (built for CUDA "
            f"{torch.version.cuda}) sees no GPU; check nvidia-smi and CUDA_VISIBLE_DEVICES, "
            "or use --device cpu"
        )
    index = 0 if device.index is None else device.index
    count = torch.cuda.device_count()
    if index >= count:
        raise BackendError(
            f"--device {text}: only {count} CUDA device(s) here (cuda:0 to cuda:{count - 1})"
        )
    return torch.device("cuda", index)


def _check_mps(text: str) -> None:
    mps = getattr(torch.backends, "mps", None)
    if mps is None or not mps.is_built():
        raise BackendError(
            f"--device {text}: this torch build ({torch.__version__}) has no MPS support "
            "(MPS needs torch for macOS on Apple silicon); use --device cpu"
        )
    if not mps.is_available():
        raise BackendError(
            f"--device {text}: MPS is not available on this machine (it needs macOS 12.3 or "
            "newer on Apple silicon); use --device cpu"
        )


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())
