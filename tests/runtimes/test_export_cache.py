"""``--backend onnx``: use the export next to the model, else export once into the cache."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from sleap_infer.backends import TorchBackend
from sleap_infer.backends.onnx_backend import ONNXBackend, resolve_onnx_device
from sleap_infer.core.artifact import METADATA_NAME
from sleap_infer.core.errors import BackendError, ExportError
from sleap_infer.export.exporter import export_model
from sleap_infer.layers import PredictOptions, SingleInstanceLayer, build_layer
from sleap_infer.layers.exported import ExportedSingleInstanceLayer
from sleap_infer.model.loader import load_model
from sleap_infer.runtimes import backend_maker
from sleap_infer.runtimes.auto import AutoExportBackend
from sleap_infer.runtimes.cache import cache_root

from model_factory import config_dict, write_model_dir

SIZED = {"max_height": 48, "max_width": 48}


def _onnx_layer(model, options: PredictOptions, messages: list[str]):
    layer = build_layer([model], backend_maker("onnx", "cpu", notify=messages.append), options)
    assert isinstance(layer, ExportedSingleInstanceLayer)
    assert isinstance(layer.backend, AutoExportBackend)
    return layer


def test_cache_root_follows_the_environment(_export_cache: Path) -> None:
    assert cache_root() == _export_cache


def test_export_next_to_model_is_used_then_cache_for_other_settings(tmp_path: Path) -> None:
    raw = config_dict("single_instance", preprocessing=SIZED)
    model = load_model(write_model_dir(tmp_path / "m", raw))
    export_model(model)  # -> m/exported
    frames = np.random.default_rng(0).integers(0, 256, (2, 40, 60, 1), dtype=np.uint8)
    messages: list[str] = []
    layer = _onnx_layer(model, PredictOptions(peak_threshold=-1e9), messages)
    got = layer.predict(frames)
    assert layer.backend.exports == [model.path / "exported"]
    assert messages == []  # nothing exported
    torch_layer = SingleInstanceLayer(
        model.config, TorchBackend(model.network, "cpu"), PredictOptions(peak_threshold=-1e9)
    )
    np.testing.assert_allclose(got.points, torch_layer.predict(frames).points, atol=0.05)

    # --no-refine does not fit that export: one export into the cache, reused afterwards.
    layer = _onnx_layer(model, PredictOptions(refine=False), messages)
    layer.predict(frames)
    cached = layer.backend.exports[0]
    assert cached.parent == cache_root()
    assert any("exported: it was exported with integral refinement" in m for m in messages)
    assert any(m.startswith("Exporting m to onnx for 2x1x48x48 input") for m in messages)
    messages.clear()
    layer = _onnx_layer(model, PredictOptions(refine=False), messages)
    layer.predict(frames[:1])  # another batch size: the dynamic batch covers it
    assert layer.backend.exports == [cached] and messages == []

    # A damaged cache entry is rebuilt rather than trusted.
    (cached / METADATA_NAME).write_text("{")
    layer = _onnx_layer(model, PredictOptions(refine=False), messages)
    layer.predict(frames)
    assert json.loads((cached / METADATA_NAME).read_text())["model_type"] == "single_instance"
    assert any("Exporting" in m for m in messages)


def test_stale_export_from_another_checkpoint_is_skipped(tmp_path: Path) -> None:
    raw = config_dict("single_instance", preprocessing=SIZED)
    export_model(write_model_dir(tmp_path / "m", raw, seed=0))
    model = load_model(write_model_dir(tmp_path / "m", raw, seed=1))  # retrained in place
    messages: list[str] = []
    layer = _onnx_layer(model, PredictOptions(), messages)
    layer.predict(np.zeros((1, 48, 48, 1), np.uint8))
    assert layer.backend.exports[0].parent == cache_root()
    assert any("exported from a different best.ckpt" in m for m in messages)


def test_each_new_frame_size_gets_its_own_export(tmp_path: Path) -> None:
    model = load_model(write_model_dir(tmp_path / "m", config_dict("single_instance")))
    opts = PredictOptions(peak_threshold=-1e9)
    messages: list[str] = []
    layer = _onnx_layer(model, opts, messages)
    torch_layer = SingleInstanceLayer(model.config, TorchBackend(model.network, "cpu"), opts)
    rng = np.random.default_rng(2)
    for shape in ((1, 32, 32, 1), (1, 40, 56, 1)):
        frames = rng.integers(0, 256, shape, dtype=np.uint8)
        np.testing.assert_allclose(
            layer.predict(frames).points, torch_layer.predict(frames).points, atol=0.05
        )
    assert len(set(layer.backend.exports)) == 2
    assert layer.backend.provenance()["runtime"] == "onnx"


def test_onnx_device_and_session_options(tmp_path: Path) -> None:
    assert resolve_onnx_device("cpu") == torch.device("cpu")
    with pytest.raises(BackendError, match="not mps"):
        resolve_onnx_device("mps")
    if not torch.cuda.is_available():
        with pytest.raises(BackendError, match="CUDA"):
            resolve_onnx_device("cuda:0")
    raw = config_dict("single_instance", preprocessing=SIZED)
    info = export_model(write_model_dir(tmp_path / "m", raw), tmp_path / "exp")
    backend = ONNXBackend(info, "cpu", intra_op_threads=1, graph_optimization="basic")
    assert backend.does_baked_postproc and backend.output_names == [
        "peaks",
        "peak_vals",
        "peak_valid",
    ]
    backend.warmup((1, 1, 48, 48))
    with pytest.raises(BackendError, match="unknown graph optimisation level 'max'"):
        ONNXBackend(info, "cpu", graph_optimization="max")


def test_a_damaged_cache_entry_is_exported_again(tmp_path: Path) -> None:
    raw = config_dict("single_instance", preprocessing=SIZED)
    model = load_model(write_model_dir(tmp_path / "m", raw))
    frames = np.random.default_rng(1).integers(0, 256, (2, 40, 60, 1), dtype=np.uint8)
    first = _onnx_layer(model, PredictOptions(), [])
    want = first.predict(frames)
    cached = first.backend.exports[0]
    onnx_file = cached / "model.onnx"
    onnx_file.write_bytes(onnx_file.read_bytes()[:3000])  # a disk that filled up mid-write
    messages: list[str] = []
    again = _onnx_layer(model, PredictOptions(), messages)
    got = again.predict(frames)
    assert again.backend.exports == [cached]
    assert any(m.startswith(f"cached export {cached} is damaged") for m in messages)
    np.testing.assert_array_equal(got.points, want.points)


def test_a_damaged_export_next_to_the_model_names_the_folder_to_delete(tmp_path: Path) -> None:
    raw = config_dict("single_instance", preprocessing=SIZED)
    model = load_model(write_model_dir(tmp_path / "m", raw))
    export_model(model)
    onnx_file = model.path / "exported" / "model.onnx"
    onnx_file.write_bytes(b"\x00" * 100)
    layer = _onnx_layer(model, PredictOptions(), [])
    frames = np.zeros((2, 40, 60, 1), np.uint8)
    with pytest.raises(
        ExportError, match=r"the export in .*exported is damaged: delete that folder"
    ):
        layer.predict(frames)
