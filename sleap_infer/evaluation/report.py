"""The metrics as people and programs read them: headline numbers, and a JSON file.

The JSON data has the layout of the ``.json`` sibling sleap-nn writes next to its
metrics ``.npz`` (arrays as lists, NaN/inf as ``null``, the per-pair
``pck_metrics.pcks`` cube left out), so a script reading one reads the other.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# (label, section, key, unit): the numbers sleap-nn's eval logs, in its order.
HEADLINE = (
    ("mOKS", "mOKS", "mOKS", ""),
    ("mAP (OKS VOC)", "voc_metrics", "oks_voc.mAP", ""),
    ("mAR (OKS VOC)", "voc_metrics", "oks_voc.mAR", ""),
    ("Average distance", "distance_metrics", "avg", "px"),
    ("Distance p50", "distance_metrics", "p50", "px"),
    ("Distance p95", "distance_metrics", "p95", "px"),
    ("Distance p99", "distance_metrics", "p99", "px"),
    ("mPCK", "pck_metrics", "mPCK", ""),
    ("PCK@5px", "pck_metrics", "PCK@5", ""),
    ("PCK@10px", "pck_metrics", "PCK@10", ""),
    ("Visibility precision", "visibility_metrics", "precision", ""),
    ("Visibility recall", "visibility_metrics", "recall", ""),
)
_LEFT_OUT = {"pck_metrics": ("pcks",)}  # large, per pair; sleap-nn's JSON drops it too


def headline(metrics: dict[str, Any]) -> list[tuple[str, float, str]]:
    """``(label, value, unit)`` for each headline number (NaN when undefined)."""
    return [(label, float(metrics[section][key]), unit) for label, section, key, unit in HEADLINE]


def to_json_safe(value: Any) -> Any:
    """Plain JSON types: arrays -> lists, numpy scalars -> Python, non-finite -> None."""
    if isinstance(value, np.ndarray):
        return to_json_safe(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): to_json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_safe(v) for v in value]
    return value


def metrics_json(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` as sleap-nn's metrics ``.json`` holds them (the CLI writes it atomically)."""
    data = to_json_safe(metrics)
    for section, keys in _LEFT_OUT.items():
        for key in keys:
            data.get(section, {}).pop(key, None)
    return data
