"""The metrics as people and programs read them: headline numbers, and a JSON file.

The JSON data has the layout of the ``.json`` sibling sleap-nn writes next to its
metrics ``.npz`` (arrays as lists, NaN/inf as ``null``, the per-pair
``pck_metrics.pcks`` cube left out), so a script reading one reads the other. The
``.npz`` is sleap-nn's own (one pickled ``metrics`` dict): scripts written for
``sleap-nn eval -s`` load ours unchanged.
"""

from __future__ import annotations

import math
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from sleap_infer.core.leftovers import write_atomically

Row = tuple[str, str, str, str]
# (label, section, key, unit): the numbers sleap-nn's eval logs, in its order.
HEADLINE: tuple[Row, ...] = (
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
# Centroid mode (``detection_metrics``) and bbox mode (flat ``bbox_*`` keys, section
# ``""``): the numbers sleap-nn logs for them.
CENTROID_HEADLINE: tuple[Row, ...] = (
    ("Precision", "detection_metrics", "precision", ""),
    ("Recall", "detection_metrics", "recall", ""),
    ("F1", "detection_metrics", "f1", ""),
    ("Average distance", "distance_metrics", "avg", "px"),
    ("Distance p50", "distance_metrics", "p50", "px"),
    ("Distance p90", "distance_metrics", "p90", "px"),
    ("Distance p95", "distance_metrics", "p95", "px"),
    ("Distance p99", "distance_metrics", "p99", "px"),
)
BBOX_HEADLINE: tuple[Row, ...] = (
    ("Box mAP @[.5:.95]", "", "bbox_mAP", ""),
    ("Box AP50", "", "bbox_AP50", ""),
    ("Box AP75", "", "bbox_AP75", ""),
    ("Box AR @[.5:.95]", "", "bbox_AR", ""),
    ("Best-F1 score threshold (IoU 0.5)", "", "bbox_f1_threshold", ""),
    ("Precision @IoU0.5", "", "bbox_precision", ""),
    ("Recall @IoU0.5", "", "bbox_recall", ""),
    ("F1 @IoU0.5", "", "bbox_f1", ""),
    ("Mean IoU @IoU0.5", "", "bbox_mean_iou", ""),
)
_LEFT_OUT = {"pck_metrics": ("pcks",)}  # large, per pair; sleap-nn's JSON drops it too


def headline(metrics: dict[str, Any]) -> list[tuple[str, float, str]]:
    """``(label, value, unit)`` for each headline number (NaN when undefined), those of
    the mode the metrics come from."""
    rows = HEADLINE
    if "bbox_mAP" in metrics:
        rows = BBOX_HEADLINE
    elif "detection_metrics" in metrics:
        rows = CENTROID_HEADLINE
    return [
        (label, float((metrics[section] if section else metrics)[key]), unit)
        for label, section, key, unit in rows
    ]


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


# --------------------------------------------------------------------- sleap-nn's .npz
NPZ_SCHEMA = "sleap_infer.eval_metrics_npz/1"  # beside ``metrics``: marks the file as ours
_OURS_ONLY = ("counts",)  # our block, not in sleap-nn's dict


def npz_paths(given: Path) -> tuple[Path, Path]:
    """Where ``-s/--npz PATH`` writes: ``PATH`` (``.npz`` appended when it lacks it, as
    numpy does for sleap-nn) and the ``.json`` sibling sleap-nn writes beside it
    (``PATH`` with its suffix replaced: ``m.npz`` -> ``m.json``)."""
    npz = given if given.name.endswith(".npz") else given.with_name(given.name + ".npz")
    return npz, given.with_suffix(".json")


def is_our_npz(path: Path) -> bool:
    """Whether ``path`` is a metrics ``.npz`` this tool wrote (read without unpickling)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return "schema" in data.files and str(data["schema"]) == NPZ_SCHEMA
    except (OSError, ValueError, zipfile.BadZipFile):
        return False


def write_npz(path: Path, metrics: dict[str, Any], failure: str, overwrite: bool) -> None:
    """``metrics`` as sleap-nn 0.3.5's ``eval -s`` saves them: ``np.savez_compressed(path,
    metrics=<the dict>)``, so ``np.load(path, allow_pickle=True)["metrics"].item()`` gives
    its dict (same blocks, keys, array shapes and dtypes; our ``counts`` left out). A
    ``schema`` entry beside it lets a rerun know the file as ours and replace it.

    Written atomically (temporary sibling, fsync, rename); a file that is not ours and
    appeared meanwhile is kept unless ``overwrite`` (``failure`` starts the error line).
    """
    data = {k: v for k, v in metrics.items() if k not in _OURS_ONLY}

    def save(f: BinaryIO) -> None:
        np.savez_compressed(f, metrics=np.array(data, dtype=object), schema=NPZ_SCHEMA)

    write_atomically(path, save, failure, None if overwrite else is_our_npz)
