"""Runtimes: which backend a run uses, and exports found or made on first use.

Sits above :mod:`sleap_infer.export` (it exports when no export fits) and
below the predictor. :func:`backend_maker` is the entry point: a runtime
name and a device in, a :class:`~sleap_infer.layers.build.BackendMaker` out.
"""

from __future__ import annotations

from sleap_infer.runtimes.runtime import (
    RUNTIME_NAMES,
    RUNTIMES,
    EngineTarget,
    ExportedRuntime,
    Runtime,
    backend_maker,
    get_runtime,
)

__all__ = [
    "RUNTIMES",
    "RUNTIME_NAMES",
    "EngineTarget",
    "ExportedRuntime",
    "Runtime",
    "backend_maker",
    "get_runtime",
]
