"""Hungarian matching with SciPy's solver, loaded on first use and on its own.

``scipy.optimize`` takes about half a second to import (it pulls in
``scipy.sparse``, ``scipy.linalg``, ``scipy.special``, ...), all for one C
function: ``linear_sum_assignment`` lives in the compiled module
``scipy/optimize/_lsap``, which needs only numpy. That module is loaded
straight from its file, without running ``scipy.optimize/__init__.py``; it is
the very function ``scipy.optimize.linear_sum_assignment`` names, so results
are identical. Should the file not be where this SciPy keeps it (another
layout), the ordinary import is used instead. Single-instance and centroid
runs never match anything, so they load neither.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

_solver: Callable[[np.ndarray], Any] | None = None


def _load_lsap() -> Callable[[np.ndarray], Any] | None:
    """``scipy.optimize._lsap.linear_sum_assignment`` without importing ``scipy.optimize``."""
    spec = importlib.util.find_spec("scipy")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / "optimize" / f"_lsap{suffix}"
            if not path.is_file():
                continue
            found = importlib.util.spec_from_file_location("scipy.optimize._lsap", path)
            if found is None or found.loader is None:
                return None
            module = importlib.util.module_from_spec(found)
            found.loader.exec_module(module)
            return getattr(module, "linear_sum_assignment", None)
    return None


def _solve() -> Callable[[np.ndarray], Any]:
    global _solver
    if _solver is None:
        try:
            _solver = _load_lsap()
        except Exception:  # an unexpected layout or loader: fall back to the public import
            _solver = None
        if _solver is None:
            from scipy.optimize import linear_sum_assignment

            _solver = linear_sum_assignment
    return _solver


def linear_sum_assignment(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimum-cost matching of rows to columns (``scipy.optimize.linear_sum_assignment``)."""
    rows, cols = _solve()(cost)
    return rows, cols
