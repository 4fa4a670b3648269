"""Exports of every multi-animal type with self-built random models (no shared fixtures).

Random weights give nearly flat maps full of local maxima (one every few
pixels) whose levels differ by channel, so no threshold picks a few peaks of
every node. Instead every maximum counts (threshold -1e9): bottom-up runs on
small frames (8 x 12 maps, ~20 maxima per node, under the 64 slots), top-down
caps the centroids with ``max_instances``. The exported path must give the
torch path's instances in the same slots, keypoints within 0.05 px.
Also: too many peaks for the slots, and top-down pair exports (one folder, two
graphs) and their reuse.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sleap_infer.core.artifact import PIPELINE_NAME
from sleap_infer.core.errors import UsageError
from sleap_infer.export.exporter import export_model
from sleap_infer.export.pipeline import export_topdown
from sleap_infer.export.settings import ExportSettings
from sleap_infer.layers import PredictOptions, build_layer
from sleap_infer.layers.exported import PeakOverflowWarning
from sleap_infer.model.checkpoint import load_state_dict, save_checkpoint
from sleap_infer.model.loader import LoadedModel, load_model
from sleap_infer.runtimes import backend_maker

from model_factory import config_dict, write_model_dir

PX = 0.05
ALL_PEAKS = -1e9
FRAMES = np.random.default_rng(7).integers(0, 256, (2, 48, 64, 1), dtype=np.uint8)
SMALL_FRAMES = FRAMES[:, :16, :24]


def _model(tmp_path: Path, model_type: str, seed: int = 0) -> LoadedModel:
    return load_model(write_model_dir(tmp_path / model_type, config_dict(model_type), seed=seed))


def _both(
    models: list[LoadedModel],
    options: PredictOptions,
    frames: np.ndarray = FRAMES,
    messages: list[str] | None = None,
):
    torch_layer = build_layer(models, backend_maker("torch", "cpu"), options)
    notify = messages.append if messages is not None else None
    onnx_layer = build_layer(models, backend_maker("onnx", "cpu", notify=notify), options)
    return torch_layer.predict(frames), onnx_layer.predict(frames), onnx_layer


def _same(ref, got) -> None:
    np.testing.assert_array_equal(got.valid, ref.valid)
    assert np.array_equal(np.isnan(got.points), np.isnan(ref.points))
    np.testing.assert_allclose(got.points, ref.points, atol=PX)
    np.testing.assert_allclose(got.point_scores, ref.point_scores, atol=1e-4)
    np.testing.assert_allclose(got.instance_scores, ref.instance_scores, atol=1e-4)


def test_random_bottomup(tmp_path: Path) -> None:
    model = _model(tmp_path, "bottomup")
    options = PredictOptions(peak_threshold=ALL_PEAKS, min_line_scores=-1e9)
    ref, got, layer = _both([model], options, SMALL_FRAMES)
    assert ref.valid.sum() >= 8 and np.isfinite(ref.points).all(axis=-1).sum() >= 24
    _same(ref, got)
    assert layer.overflow_frames == 0


def test_random_multiclass_bottomup(tmp_path: Path) -> None:
    model = _model(tmp_path, "multi_class_bottomup")
    ref, got, _ = _both([model], PredictOptions(peak_threshold=ALL_PEAKS), SMALL_FRAMES)
    assert ref.valid.sum() >= 2  # random class maps may favour one class everywhere
    _same(ref, got)
    np.testing.assert_array_equal(got.class_ids, ref.class_ids)
    np.testing.assert_allclose(got.class_scores, ref.class_scores, atol=1e-5)


@pytest.mark.parametrize("instance_type", ["centered_instance", "multi_class_topdown"])
def test_random_topdown(tmp_path: Path, instance_type: str) -> None:
    centroid = _model(tmp_path, "centroid", seed=2)
    instance = _model(tmp_path, instance_type, seed=4)
    options = PredictOptions(peak_threshold=ALL_PEAKS, max_instances=3)
    ref, got, layer = _both([instance, centroid], options)
    assert ref.valid.sum() == 6 and np.isfinite(ref.points).all(axis=-1)[ref.valid].all()
    _same(ref, got)
    if instance_type == "multi_class_topdown":
        np.testing.assert_array_equal(got.class_ids, ref.class_ids)
        assert set(got.class_ids[got.valid].tolist()) <= {-1, 0, 1}
    assert len(layer.instance.backend.exports) == 1  # the crops' own graph


def test_bottomup_with_more_peaks_than_slots_warns_and_counts(tmp_path: Path) -> None:
    """Every local maximum of a random 48x64 map (~300 per node) against K = 64 slots."""
    model = _model(tmp_path, "bottomup")
    options = PredictOptions(peak_threshold=ALL_PEAKS, min_line_scores=-1e9)
    layer = build_layer([model], backend_maker("onnx", "cpu"), options)
    frames = np.random.default_rng(8).integers(0, 256, (2, 96, 128, 1), dtype=np.uint8)
    with pytest.warns(PeakOverflowWarning, match=r"bottomup export: head, thorax, tail had more"):
        preds = layer.predict(frames)
    assert layer.overflow_frames == 2
    # What is kept is the strongest 64 of each node, grouped as usual.
    assert np.isfinite(preds.points).all(axis=-1).sum(axis=(1, 2)).max() <= 3 * 64
    assert preds.valid.sum() >= 2


def test_pair_export_is_one_folder_with_two_graphs_and_is_reused(tmp_path: Path) -> None:
    centroid = _model(tmp_path, "centroid", seed=2)
    instance = _model(tmp_path, "centered_instance", seed=4)
    folder, stage1, stage2 = export_topdown(
        [instance, centroid], settings=ExportSettings(frame_size=(48, 64))
    )
    assert folder == centroid.path / "exported_topdown"
    assert (stage1.path, stage2.path) == (folder / "centroid", folder / "centered_instance")
    manifest = json.loads((folder / PIPELINE_NAME).read_text())
    assert manifest["pipeline"] == "topdown" and manifest["crop_size"] == 32
    assert [(s["role"], s["dir"]) for s in manifest["stages"]] == [
        ("centroid", "centroid"),
        ("instance", "centered_instance"),
    ]
    assert stage1.input_shape == ["batch", 1, 48, 64]
    assert stage2.input_shape == ["batch", 1, 32, 32]  # the crop, dynamic batch
    assert stage2.data["pipeline"] == {"name": "topdown", "role": "instance"}
    # predict --backend onnx finds both stages there: nothing is exported.
    options = PredictOptions(peak_threshold=ALL_PEAKS, max_instances=3)
    messages: list[str] = []
    ref, got, layer = _both([centroid, instance], options, messages=messages)
    _same(ref, got)
    assert layer.centroid.backend.exports == [stage1.path]
    assert layer.instance.backend.exports == [stage2.path]
    assert messages == []
    # Exporting again replaces the pair folder (it is recognised as an export).
    export_topdown([centroid, instance], settings=ExportSettings(frame_size=(48, 64)))


def test_pair_export_rejects_other_combinations_and_input_size_for_crops(tmp_path: Path) -> None:
    centroid = _model(tmp_path, "centroid")
    bottomup = _model(tmp_path, "bottomup")
    with pytest.raises(UsageError, match="cannot export models of types centroid, bottomup"):
        export_topdown([centroid, bottomup])
    instance = _model(tmp_path, "centered_instance")
    with pytest.raises(UsageError, match="traced at its crop size, 32x32"):
        export_model(instance, settings=ExportSettings(frame_size=(48, 64)))
    info = export_model(instance)
    assert info.input_shape == ["batch", 1, 32, 32] and info.output_names[:2] == [
        "peaks",
        "peak_vals",
    ]


def test_faint_class_maps_keep_torch_values(tmp_path: Path) -> None:
    """Logits near -40: ONNX Runtime's own Sigmoid returns 0 there, torch ~1e-18."""
    path = write_model_dir(tmp_path / "mc", config_dict("multi_class_bottomup"))
    state = load_state_dict(path / "best.ckpt")
    state["head_layers.1.ClassMapsHead.0.bias"] -= 40.0
    save_checkpoint(path / "best.ckpt", state)
    ref, got, _ = _both([load_model(path)], PredictOptions(peak_threshold=ALL_PEAKS), SMALL_FRAMES)
    ref_probs, probs = ref.extras["node_class_probs"], got.extras["node_class_probs"]
    assert np.nanmax(ref_probs) < 1e-12 and np.nanmin(ref_probs) > 0
    np.testing.assert_allclose(probs, ref_probs, rtol=1e-5)
    np.testing.assert_array_equal(got.class_ids, ref.class_ids)
    _same(ref, got)
