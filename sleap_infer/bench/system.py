"""What this machine can run: versions, devices, and each runtime's verdict with its reason.

A runtime on a device is judged by the very call ``infer predict --backend X
--device Y`` makes (:meth:`~sleap_infer.runtimes.runtime.Runtime.resolve_device`),
so "yes" here means such a run would start, and "no" carries the message it
would stop with (a CPU-only torch build, no visible GPU, a CPU-only
onnxruntime...). Optional packages are imported in a probe that tells "not
installed" (no module to find) from "installed but broken" (the import raised,
e.g. a missing CUDA library), which one ``ImportError`` line runs together;
warnings while importing are silenced, so a deprecation in a third-party
package is not reported as a broken install. Every failure becomes a reason
string: this module must not crash on a machine without a GPU or extras.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from sleap_infer.backends.threads import cpu_budget
from sleap_infer.bench.runtime_checks import (
    EXPORT_MODULES,
    OPTIONAL_MODULES,
    Probe,
    probe,
    provider_facts,
    reason_of,
    runtime_checks,
)
from sleap_infer.bench.suite import machine_info
from sleap_infer.core.errors import BackendError
from sleap_infer.core.provenance import PREDICTION_PACKAGES, package_versions
from sleap_infer.runtimes import get_runtime


def versions(probes: dict[str, Probe]) -> dict[str, str | None]:
    """sleap_infer, python, torch, the packages that shape predictions or exports, and the
    OS; None for a package that is not installed. Probed modules report their own version
    (the distribution may be onnxruntime-gpu or tensorrt-cu12, not the module's name)."""
    found = package_versions((*PREDICTION_PACKAGES, *EXPORT_MODULES))
    out: dict[str, str | None] = {
        "sleap_infer": found["sleap_infer"],
        "python": sys.version.split()[0],
        "torch": found["torch"],
    }
    for name in (*PREDICTION_PACKAGES, *EXPORT_MODULES, *OPTIONAL_MODULES):
        probed = probes.get(name)
        out[name] = probed.version if probed is not None and probed.ok else found.get(name)
    out["os"] = platform.platform()
    return out


# ------------------------------------------------------------------ devices
PROC_DRIVER = Path("/proc/driver/nvidia/version")


def nvidia_driver(proc: Path = PROC_DRIVER) -> str | None:
    """The NVIDIA kernel driver's version (torch knows only the CUDA it was built for):
    from the kernel module's ``/proc`` file (Linux), else ``nvidia-smi``, else None."""
    try:
        text = proc.read_text()
        match = re.search(r"Kernel Module\s+(?:for \S+\s+)?([\d.]+)", text)
        if match:
            return match[1]
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        done = subprocess.run(
            [smi, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.split()
    return lines[0] if lines else None


def _gpus() -> list[dict[str, Any]]:
    gpus = []
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        gpus.append(
            {
                "index": index,
                "name": props.name,
                "memory_gib": round(props.total_memory / 2**30, 1),
                "compute_capability": f"{props.major}.{props.minor}",
                "multiprocessors": props.multi_processor_count,
            }
        )
    return gpus


def cuda_facts() -> dict[str, Any]:
    facts: dict[str, Any] = {
        "torch_built_for": torch.version.cuda,
        "available": False,
        "reason": None,
        "driver": nvidia_driver(),
        "cudnn": None,
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "gpus": [],
    }
    try:
        get_runtime("torch").resolve_device("cuda")
        facts["gpus"] = _gpus()
        facts["cudnn"] = torch.backends.cudnn.version()
        facts["available"] = True
    except BackendError as exc:
        facts["reason"] = reason_of(exc)
    except RuntimeError as exc:  # a driver that torch finds but cannot talk to
        facts["reason"] = f"torch cannot query the GPUs: {exc}"
    return facts


def mps_facts() -> dict[str, Any]:
    try:
        get_runtime("torch").resolve_device("mps")
    except BackendError as exc:
        return {"available": False, "reason": reason_of(exc)}
    return {"available": True, "reason": None}


def devices() -> dict[str, Any]:
    try:
        machine = machine_info()
    except RuntimeError:  # it names the GPUs: a driver torch cannot talk to raises there
        machine = {"cpu": platform.processor() or "?", "machine": platform.machine()}
    cpu = {
        "name": machine["cpu"],
        "arch": machine["machine"],
        "logical_cores": os.cpu_count(),
        "usable_cores": cpu_budget(),
        "torch_threads": torch.get_num_threads(),
    }
    return {"cpu": cpu, "cuda": cuda_facts(), "mps": mps_facts()}


def system_facts() -> dict[str, Any]:
    """Everything ``infer system`` reports, as plain JSON types."""
    probes = {name: probe(name) for name in (*OPTIONAL_MODULES, *EXPORT_MODULES)}
    device_facts = devices()
    return {
        "versions": versions(probes),
        "devices": device_facts,
        "runtimes": [asdict(check) for check in runtime_checks(probes)],
        "onnxruntime_providers": provider_facts(probes["onnxruntime"], device_facts["cuda"]),
    }
