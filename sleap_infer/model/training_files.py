"""What training left in a model folder besides the weights: the loss log and eval metrics.

Three generations write these files under different names, all read here:

* ``training_log.csv``: sleap-nn (``epoch,train_loss,val_loss,learning_rate,...``)
  and SLEAP 1.x's Keras ``CSVLogger`` (``epoch,loss,lr,val_loss,...``);
* metrics: sleap-nn >= 0.1 ``metrics.{split}.{i}.npz`` plus a ``.json`` sibling,
  sleap-nn < 0.1 ``{split}_{i}_pred_metrics.npz``, SLEAP 1.x ``metrics.{split}.npz``.
  sleap-nn nests its numbers (``voc_metrics["oks_voc.mAP"]``); SLEAP 1.x keeps
  one flat dict (``"oks_voc.mAP"``, ``"dist.avg"``, ``"oks.mOKS"``).

Every ``.npz`` holds one pickled dict. A JSON sibling is read instead when there
is one; otherwise the pickle is read with the checkpoint loader's allow-list
(numpy arrays, scalars and plain containers), so a model folder cannot run code
by way of its metrics file.
"""

from __future__ import annotations

import csv
import json
import math
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from sleap_infer.evaluation.report import HEADLINE, to_json_safe
from sleap_infer.model.checkpoint import _AllowListUnpickler  # the one allow-list, reused

LOG_NAME = "training_log.csv"
_METRICS_FILE = re.compile(
    r"metrics\.(?P<split>[A-Za-z]+)(?:\.(?P<index>\d+))?\.(?P<ext>json|npz)"
    r"|(?P<old_split>[A-Za-z]+)_(?P<old_index>\d+)_pred_metrics\.(?P<old_ext>npz)"
)
_FLAT_PREFIX = {
    "mOKS": "oks.",
    "voc_metrics": "",
    "distance_metrics": "dist.",
    "pck_metrics": "pck.",
    "visibility_metrics": "vis.",
}
"""SLEAP 1.x's flat key for a sleap-nn ``(section, key)``: prefix + key."""


def training_files(model_dir: Path) -> dict[str, Any]:
    """``{"log": summary or None, "metrics": [one entry per split]}`` of ``model_dir``."""
    log = model_dir / LOG_NAME
    return {
        "log": summarize_log(log) if log.is_file() else None,
        "metrics": [read_metrics(path) for path in metrics_files(model_dir)],
    }


# ----------------------------------------------------------------- the loss log
def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _epoch(row: dict[str, str], position: int) -> int:
    value = _number(row.get("epoch"))
    return position if value is None else int(value)


def summarize_log(path: Path) -> dict[str, Any]:
    """Epochs logged, the best validation loss and its epoch, and the last row's losses."""
    try:
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        return {"file": path.name, "error": f"unreadable ({exc})"}
    columns = list(rows[0]) if rows else []
    train_key = next((k for k in ("train_loss", "loss") if k in columns), None)
    rate_key = next((k for k in ("learning_rate", "lr") if k in columns), None)
    scored = [(i, _number(r.get("val_loss"))) for i, r in enumerate(rows)]
    scored = [(i, v) for i, v in scored if v is not None]
    best = min(scored, key=lambda iv: iv[1], default=None)
    last = rows[-1] if rows else {}
    return {
        "file": path.name,
        "epochs": len(rows),
        "columns": columns,
        "best_val_loss": None if best is None else best[1],
        "best_epoch": None if best is None else _epoch(rows[best[0]], best[0]),
        "last_train_loss": _number(last.get(train_key)) if train_key else None,
        "last_val_loss": _number(last.get("val_loss")),
        "last_learning_rate": _number(last.get(rate_key)) if rate_key else None,
    }


# ------------------------------------------------------------------ the metrics
def _split_of(path: Path) -> tuple[str, int, str] | None:
    match = _METRICS_FILE.fullmatch(path.name)
    if match is None:
        return None
    split = match["split"] or match["old_split"]
    index = match["index"] or match["old_index"] or "0"
    return split, int(index), match["ext"] or match["old_ext"]


def metrics_files(model_dir: Path) -> list[Path]:
    """One file per split and dataset index, the JSON sibling preferred over its ``.npz``."""
    chosen: dict[tuple[str, int], Path] = {}
    for path in sorted(model_dir.glob("*metrics*")):
        found = _split_of(path)
        if found is None or not path.is_file():
            continue
        split, index, ext = found
        if (split, index) not in chosen or ext == "json":
            chosen[(split, index)] = path
    return [chosen[key] for key in sorted(chosen)]


def _unpickle_member(path: Path, member: str) -> Any:
    """An object array of an ``.npz`` through the allow-list (``np.load`` would run any)."""
    with zipfile.ZipFile(path) as archive, archive.open(f"{member}.npy") as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            np.lib.format.read_array_header_1_0(fh)
        else:
            np.lib.format.read_array_header_2_0(fh)
        value = _AllowListUnpickler(fh).load()
    return value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value


def load_npz(path: Path) -> dict[str, Any]:
    """Every array of an ``.npz``; a lone pickled ``metrics`` dict is unwrapped."""
    out: dict[str, Any] = {}
    with np.load(path, allow_pickle=False) as data:
        for key in data.files:
            try:
                out[key] = data[key]
            except ValueError:  # an object array: pickled
                out[key] = _unpickle_member(path, key)
    inner = out.get("metrics")
    return inner if len(out) == 1 and isinstance(inner, dict) else out


def _lookup(metrics: dict[str, Any], section: str, key: str) -> Any:
    block = metrics.get(section)
    if isinstance(block, dict) and key in block:
        return block[key]
    if section == "mOKS" and isinstance(block, (int, float, np.generic)):
        return block
    return metrics.get(_FLAT_PREFIX.get(section, "") + key)


def headline_numbers(metrics: dict[str, Any]) -> dict[str, float | None]:
    """``infer eval``'s headline numbers found in ``metrics`` (either layout); NaN -> None."""
    out: dict[str, float | None] = {}
    for label, section, key, _unit in HEADLINE:
        value = _lookup(metrics, section, key)
        if isinstance(value, np.ndarray) and value.size == 1:
            value = value.reshape(()).item()
        if isinstance(value, (int, float, np.generic)) and not isinstance(value, bool):
            out[label] = to_json_safe(float(value))
    return out


def read_metrics(path: Path) -> dict[str, Any]:
    """One metrics file: its split, dataset index and headline numbers (or why not)."""
    split, index, ext = _split_of(path) or ("?", 0, path.suffix)
    entry: dict[str, Any] = {"file": path.name, "split": split, "dataset": index}
    try:
        metrics = json.loads(path.read_text()) if ext == "json" else load_npz(path)
    except Exception as exc:  # zip, pickle, numpy and json all raise their own types
        entry["error"] = f"unreadable ({type(exc).__name__}: {exc})"
        return entry
    entry["headline"] = headline_numbers(metrics) if isinstance(metrics, dict) else {}
    return entry
