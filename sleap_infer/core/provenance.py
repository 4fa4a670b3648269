"""What produced a prediction file (or an export): versions, machine, model, settings."""

from __future__ import annotations

import functools
import platform
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import metadata
from typing import Any

import torch

import sleap_infer

PREDICTION_PACKAGES = ("sleap-io", "av", "numpy", "onnxruntime", "tensorrt")
"""The packages besides torch that affect predictions."""


@functools.cache
def installed_version(name: str) -> str | None:
    """``name``'s installed version, or None; looked up once per process.

    Every output file records the versions, and each lookup scans the installed
    distributions (about 20 ms a video in a 20-video run): what is installed does
    not change while a run goes on.
    """
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def package_versions(names: Sequence[str] = PREDICTION_PACKAGES) -> dict[str, str]:
    """sleap_infer's and torch's versions plus those of ``names`` (missing ones omitted)."""
    out = {"sleap_infer": sleap_infer.__version__, "torch": torch.__version__}
    for name in names:
        version = installed_version(name)
        if version is not None:
            out[name] = version
    return out


def system_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "torch_threads": torch.get_num_threads(),
        "cuda_available": torch.cuda.is_available(),
    }
    if torch.cuda.is_available():
        info["cuda_version"] = torch.version.cuda
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
