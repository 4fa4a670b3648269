"""Can each runtime run here, on which device, and if not, why: the checks ``infer system``
reports.

A verdict is the outcome of the call a run makes before it loads anything
(:meth:`~sleap_infer.runtimes.runtime.Runtime.resolve_device`), so its reason
is word for word the error that run would stop with. Optional packages are
probed first, because the backends' own ``require_*`` helpers say "not
installed" for any ``ImportError``, also when the package is installed and a
library it loads is missing: the probe tells the two apart and keeps the
import's own message.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from sleap_infer.backends.openvino_import import import_openvino
from sleap_infer.core.errors import BackendError
from sleap_infer.runtimes import get_runtime

OPTIONAL_MODULES = ("onnxruntime", "tensorrt", "openvino")
EXPORT_MODULES = ("onnx", "onnxscript")
ONNX_HINT = "pip install 'sleap-infer[onnx]'"
TRT_HINT = "pip install 'sleap-infer[tensorrt]', on Linux or Windows with an NVIDIA GPU"
ORT_PROVIDERS = {
    "CPUExecutionProvider": "",
    "CUDAExecutionProvider": "pip install onnxruntime-gpu",
    "TensorrtExecutionProvider": "pip install onnxruntime-gpu, plus the TensorRT libraries",
    "CoreMLExecutionProvider": "the macOS onnxruntime wheel",
    "OpenVINOExecutionProvider": "pip install onnxruntime-openvino",
    "DmlExecutionProvider": "pip install onnxruntime-directml, Windows",
    "ROCMExecutionProvider": "an onnxruntime built for ROCm",
}
"""ONNX Runtime providers named even when absent (where they could run: see
:data:`PROVIDER_PLACES`), with what brings each."""


def _nvidia(cuda: dict[str, Any]) -> bool:
    return bool(cuda.get("available") or cuda.get("driver"))


def _amd_gpu(_cuda: dict[str, Any]) -> bool:
    return os.path.exists("/dev/kfd")  # the ROCm kernel driver's device


def _anywhere(_cuda: dict[str, Any]) -> bool:
    return True


PROVIDER_PLACES: dict[str, tuple[tuple[str, ...], Callable[[dict[str, Any]], bool]]] = {
    "CPUExecutionProvider": (("Linux", "Windows", "Darwin"), _anywhere),
    "CUDAExecutionProvider": (("Linux", "Windows"), _nvidia),
    "TensorrtExecutionProvider": (("Linux", "Windows"), _nvidia),
    "CoreMLExecutionProvider": (("Darwin",), _anywhere),
    "OpenVINOExecutionProvider": (("Linux", "Windows"), _anywhere),
    "DmlExecutionProvider": (("Windows",), _anywhere),
    "ROCMExecutionProvider": (("Linux",), _amd_gpu),
}
"""Where an absent provider could run: its operating systems, and the hardware it needs
(an NVIDIA driver for CUDA and TensorRT, an AMD GPU for ROCm). Listing CoreML, DirectML
or ROCm as "not in this build" on a Linux box without such a GPU only sent people
looking for wheels that cannot help them there."""


def could_run_here(name: str, cuda: dict[str, Any], system: str | None = None) -> bool:
    """Whether provider ``name`` can run on this OS and machine (unknown names: yes)."""
    systems, hardware = PROVIDER_PLACES.get(name, ((), _anywhere))
    if systems and (system or platform.system()) not in systems:
        return False
    return hardware(cuda)


USED_PROVIDERS = ("CPUExecutionProvider", "CUDAExecutionProvider")
"""The providers sleap_infer's onnx backend starts sessions with."""
_GPU_PROVIDERS = ("CUDAExecutionProvider", "TensorrtExecutionProvider")


@dataclass(frozen=True)
class Probe:
    """An optional module: its version when it imports, else why it does not."""

    module: str
    version: str | None = None
    reason: str | None = None  # "not installed" or "installed, but importing it fails: ..."
    handle: Any = None

    @property
    def ok(self) -> bool:
        return self.reason is None

    def why(self, hint: str = "") -> str:
        """``"<module> is not installed (<hint>)"`` and the like."""
        return f"{self.module} is {self.reason}" + (f" ({hint})" if hint else "")


def probe(module: str) -> Probe:
    """Import ``module`` if it is installed; never raises."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return Probe(module, reason="not installed")
    try:
        with warnings.catch_warnings():  # a third party's deprecation is not a broken install
            warnings.simplefilter("ignore")
            # OpenVINO without its converter, whose import phones home (as predict does).
            handle = import_openvino() if module == "openvino" else importlib.import_module(module)
    except Exception as exc:  # a broken install raises anything (OSError for a missing .so)
        first = (str(exc).strip().splitlines() or [""])[0]
        why = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        return Probe(module, reason=f"installed, but importing it fails: {why}")
    version = getattr(handle, "__version__", None)
    return Probe(module, version=None if version is None else str(version), handle=handle)


@dataclass(frozen=True)
class Check:
    """One runtime on one device: available, with what (``detail``) or why not."""

    runtime: str
    device: str
    available: bool
    detail: str


def reason_of(exc: BackendError) -> str:
    """A run's error without its ``--device X:`` lead (the table names the device)."""
    return re.sub(r"^--device [^:]+: ", "", str(exc))


def _resolved(runtime: str, device: str, detail: str) -> Check:
    try:
        get_runtime(runtime).resolve_device(device)
    except BackendError as exc:
        return Check(runtime, device, False, reason_of(exc))
    return Check(runtime, device, True, detail)


def _torch_checks() -> list[Check]:
    cuda = f"CUDA {torch.version.cuda}"
    if torch.cuda.is_available():
        cuda += f", {torch.cuda.device_count()} GPU(s)"
    return [
        _resolved("torch", "cpu", f"torch {torch.__version__}, {torch.get_num_threads()} threads"),
        _resolved("torch", "cuda", cuda),
        _resolved("torch", "mps", "Apple GPU (Metal)"),
    ]


def _onnx_checks(ort: Probe) -> list[Check]:
    if not ort.ok:
        return [Check("onnx", d, False, ort.why(ONNX_HINT)) for d in ("cpu", "cuda")]
    detail = f"onnxruntime {ort.version}"
    cuda = _resolved("onnx", "cuda", detail + ", CUDAExecutionProvider")
    try:
        providers = list(ort.handle.get_available_providers())
    except Exception:  # an onnxruntime too broken to list providers
        providers = []
    lacks_provider = "CUDAExecutionProvider" not in providers
    if not cuda.available and lacks_provider and "CUDA provider" not in cuda.detail:
        # The run stops at torch's CUDA check first; say that onnxruntime would stop it too.
        extra = "; and this onnxruntime has no CUDA provider (pip install onnxruntime-gpu)"
        cuda = Check("onnx", "cuda", False, cuda.detail + extra)
    return [_resolved("onnx", "cpu", detail + ", CPUExecutionProvider"), cuda]


def _trt_check(trt: Probe) -> Check:
    if not trt.ok:
        return Check("trt", "cuda", False, trt.why(TRT_HINT))
    return _resolved("trt", "cuda", f"TensorRT {trt.version}")


def _export_check(probes: dict[str, Probe]) -> Check:
    """``infer export`` (and ``--backend onnx`` exporting on first use) needs both."""
    missing = [probes[m] for m in EXPORT_MODULES if not probes[m].ok]
    if missing:
        return Check("export", "", False, "; ".join(p.why() for p in missing) + f" ({ONNX_HINT})")
    found = ", ".join(f"{m} {probes[m].version}" for m in EXPORT_MODULES)
    return Check("export", "", True, f"ONNX graphs ({found})")


OPENVINO_HINT = "pip install 'sleap-infer[openvino]'"


def _openvino_check(openvino: Probe) -> Check:
    if not openvino.ok:
        return Check("openvino", "cpu", False, openvino.why(OPENVINO_HINT))
    return _resolved("openvino", "cpu", f"OpenVINO {openvino.version}")


def runtime_checks(probes: dict[str, Probe]) -> list[Check]:
    """torch on cpu/cuda/mps, onnx on cpu/cuda, trt on cuda, ONNX export, OpenVINO on cpu."""
    return [
        *_torch_checks(),
        *_onnx_checks(probes["onnxruntime"]),
        _trt_check(probes["tensorrt"]),
        _export_check(probes),
        _openvino_check(probes["openvino"]),
    ]


def _provider_note(name: str, in_build: bool, cuda: dict[str, Any]) -> str:
    if not in_build:
        hint = ORT_PROVIDERS.get(name, "")
        return "not in this build" + (f" ({hint})" if hint else "")
    if name in _GPU_PROVIDERS and not cuda["available"]:
        return f"in this build, but no usable CUDA device: {cuda['reason']}"
    return "in this build"


def provider_facts(
    ort: Probe, cuda: dict[str, Any], system: str | None = None
) -> list[dict[str, Any]]:
    """ONNX Runtime's execution providers: the usual ones that could run on this OS and
    machine (present or not), then any other this build has; empty when onnxruntime does
    not import (its runtime row says why)."""
    if not ort.ok:
        return []
    try:
        present = [str(p) for p in ort.handle.get_available_providers()]
    except Exception:  # see _onnx_checks
        present = []
    usual = [p for p in ORT_PROVIDERS if p in present or could_run_here(p, cuda, system)]
    names = [*usual, *(p for p in present if p not in ORT_PROVIDERS)]
    facts = []
    for name in names:
        in_build = name in present
        facts.append(
            {
                "name": name,
                "in_build": in_build,
                "usable": in_build and (name not in _GPU_PROVIDERS or bool(cuda["available"])),
                "used_by_sleap_infer": name in USED_PROVIDERS,
                "note": _provider_note(name, in_build, cuda),
            }
        )
    return facts
