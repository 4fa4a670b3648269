"""Helpers for tests that compare our streamed ``.slp`` tables with ``sio.save_slp``'s."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import JournalWriter


def write_journal(path: Path, batches: list[BatchPredictions]) -> Path:
    with JournalWriter(path, header={"fingerprint": {}}) as w:
        for b in batches:
            w.write_batch(b)
    return path


def datasets(path: Path) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as f:
        for name in dataset_names(f):
            out[name] = f[name][()]
    return out


def dataset_names(f: h5py.File) -> list[str]:
    """Every dataset's path (``visititems`` stops at a callback's first non-None return)."""
    names: list[str] = []
    f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return names


def format_id(path: Path) -> float:
    with h5py.File(path, "r") as f:
        return float(f["metadata"].attrs["format_id"])


def assert_same_datasets(ref: Path, got: Path) -> None:
    a, b = datasets(ref), datasets(got)
    assert sorted(a) == sorted(b)
    for name, table in a.items():
        if name == "metadata" or name.endswith("_json"):
            continue  # same writer (sleap-io) for both
        assert table.shape == b[name].shape, name
        if table.dtype.names is None:
            assert table.dtype == b[name].dtype, name
            assert np.array_equal(table, b[name], equal_nan=table.dtype.kind == "f"), name
            continue
        assert table.dtype == b[name].dtype, name
        for field in table.dtype.names:
            nan_ok = table[field].dtype.kind == "f"
            assert np.array_equal(table[field], b[name][field], equal_nan=nan_ok), (name, field)
    assert format_id(ref) == format_id(got)


# ------------------------------------------------- memory runs in a child process
def rss_mb() -> float:
    """Resident memory now (not the peak, which imports and warm-ups already set)."""
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def run_memory_child(test_file: str, folder: Path, frames: int) -> dict[str, float]:
    """Run ``test_file``'s ``measure_memory`` in a fresh interpreter (its own RSS), and
    return the numbers it printed as JSON on its last line. The child gets the helpers
    it imports (``tests/``, the test files sit in its subfolders) and the package from
    this checkout, installed or not, as the parent does."""
    here = Path(__file__).resolve().parent
    paths = [str(here), str(here.parent), os.environ.get("PYTHONPATH")]
    path = os.pathsep.join(p for p in paths if p)
    run = subprocess.run(
        [sys.executable, test_file, "memory", str(folder), str(frames)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": path},
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def memory_numbers(
    folder: Path, base: float, samples: list[float], journal_peak: float, seconds: float
) -> dict[str, float]:
    """The figures every memory run reports: files written, RSS baseline, peaks, growth."""
    return {
        "journal_mb": (folder / "run.partial").stat().st_size / 2**20,
        "slp_mb": (folder / "run.slp").stat().st_size / 2**20,
        "base_rss_mb": base,
        "journal_peak_rss_mb": journal_peak,
        "peak_rss_mb": max(samples),
        "growth_mb": max(samples) - base,
        "process_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "seconds": seconds,
    }
