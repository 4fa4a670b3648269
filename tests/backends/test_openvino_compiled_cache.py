"""OpenVINO's compiled model is kept between runs: the second run reads it, the same answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sleap_infer.core.options import PredictOptions
from sleap_infer.layers import build_layer
from sleap_infer.model.loader import load_model
from sleap_infer.runtimes import backend_maker
from sleap_infer.runtimes import cache as export_cache
from sleap_infer.runtimes.cache import COMPILED_CACHE, compiled_cache_dir

from conftest import SYNTHETIC_MODEL

pytest.importorskip("openvino")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")


def _backend_of(layer: object) -> object:
    (backend,) = layer.backend._backends.values()  # type: ignore[attr-defined]
    return backend


def _run(frames: np.ndarray) -> tuple[np.ndarray, object]:
    maker = backend_maker("openvino", "cpu")
    layer = build_layer([load_model(SYNTHETIC_MODEL)], maker, PredictOptions())
    return layer.predict(frames).points, _backend_of(layer)


def _blobs(root: Path) -> list[Path]:
    return sorted((root / COMPILED_CACHE).glob("*.blob"))


def test_second_run_reads_the_first_runs_compiled_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"  # its own: the session's cache holds other tests' blobs
    monkeypatch.setenv("SLEAP_INFER_CACHE", str(cache))
    frames = np.random.default_rng(0).integers(0, 255, (4, 160, 160, 1), dtype=np.uint8)
    first, _ = _run(frames)
    stored = _blobs(cache)
    assert len(stored) == 1, "the first compile (the run's batch) is stored"
    mtimes = [p.stat().st_mtime_ns for p in stored]

    again, backend = _run(frames)
    assert _blobs(cache) == stored, "read back, not compiled into a new blob"
    assert [p.stat().st_mtime_ns for p in stored] == mtimes
    np.testing.assert_array_equal(again, first)

    # A damaged blob (a full disk, a killed run) is compiled again, not an error.
    for blob in stored:
        blob.chmod(0o600)
        blob.write_bytes(b"not a compiled model")
    damaged, _ = _run(frames)
    np.testing.assert_array_equal(damaged, first)

    # Another shape in the same run (a short last batch) compiles without being stored:
    # one blob per export and batch size, not one per top-down crop count.
    backend(torch.zeros((1, 1, 160, 160), dtype=torch.uint8))  # type: ignore[operator]
    assert _blobs(cache) == stored


def test_unwritable_cache_compiles_without_storing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    monkeypatch.setenv("SLEAP_INFER_CACHE", str(not_a_folder / "cache"))
    assert compiled_cache_dir() is None


def test_the_compiled_cache_is_tried_once_per_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One probe file per folder and process, however many backends a run opens.
    monkeypatch.setenv("SLEAP_INFER_CACHE", str(tmp_path / "cache"))
    probes: list[Path] = []
    real = export_cache._unwritable

    def counted(root: Path) -> str | None:
        probes.append(root)
        return real(root)

    monkeypatch.setattr(export_cache, "_unwritable", counted)
    folder = tmp_path / "cache" / COMPILED_CACHE
    assert [compiled_cache_dir() for _ in range(3)] == [folder] * 3
    assert probes == [folder]
    monkeypatch.setenv("SLEAP_INFER_CACHE", str(tmp_path / "other"))
    assert compiled_cache_dir() == tmp_path / "other" / COMPILED_CACHE
    assert len(probes) == 2
