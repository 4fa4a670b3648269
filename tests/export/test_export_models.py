"""Exported top-down, bottom-up and multi-class models agree with the torch backend.

The real sleap-nn fixtures run on their stored, preprocessed parity inputs
through ``build_layer`` with the torch backend and with ``--backend onnx``
(exports are made on first use into the session's cache, so each fixture
model is exported once per test session). Keypoints must agree to 2e-3 px,
scores to 1e-4, instance counts, order and identities exactly.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.layers import PredictOptions, build_layer
from sleap_infer.layers.exported import (
    ExportedBottomUpLayer,
    ExportedBottomUpMultiClassLayer,
    ExportedCenteredInstanceLayer,
    ExportedCentroidLayer,
    PeakOverflowWarning,
)
from sleap_infer.model.loader import load_model
from sleap_infer.runtimes import backend_maker

from conftest import fixture_model

# Measured: 3e-5 px (top-down, bottom-up), 2.3e-4 (multi-class top-down, every peak kept),
# 9.8e-4 (multi-class bottom-up at 0.05: faint peaks whose patches nearly cancel out amplify
# float noise). Crops are always full size (sleap-nn 0.3.5), so a centroid one float ulp
# away between runtimes no longer flips a crop to 95 px (which moved keypoints by 5e-3 px).
PX = 2e-3
SCORE = 1e-4


def _golden(shared: Path, name: str) -> list[dict]:
    with open(shared / "parity" / f"{name}.pkl", "rb") as fh:
        return pickle.load(fh)


def _layers(shared: Path, model_types: list[str], options: PredictOptions):
    models = [load_model(fixture_model(shared, t)) for t in model_types]
    ref = build_layer(models, backend_maker("torch", "cpu"), options)
    got = build_layer(models, backend_maker("onnx", "cpu"), options)
    return ref, got


def _max_abs(a: np.ndarray, b: np.ndarray) -> float:
    assert np.array_equal(np.isnan(a), np.isnan(b))
    diff = np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))
    return float(np.nanmax(diff)) if np.isfinite(diff).any() else 0.0


def _compare(ref: BatchPredictions, got: BatchPredictions, worst: dict[str, float]) -> None:
    """Same instances in the same slots; keypoint and score gaps go into ``worst``."""
    np.testing.assert_array_equal(got.valid, ref.valid)
    worst["px"] = max(worst["px"], _max_abs(got.points, ref.points))
    worst["score"] = max(
        worst["score"],
        _max_abs(got.point_scores, ref.point_scores),
        _max_abs(got.instance_scores, ref.instance_scores),
    )
    worst["found"] += int(np.isfinite(got.points).all(axis=-1).sum())
    if ref.class_ids is not None:
        assert got.class_ids is not None and got.class_scores is not None
        np.testing.assert_array_equal(got.class_ids, ref.class_ids)
        worst["score"] = max(worst["score"], _max_abs(got.class_scores, ref.class_scores))


def _new_worst() -> dict[str, float]:
    return {"px": 0.0, "score": 0.0, "found": 0}


@pytest.mark.parametrize(
    ("golden", "instance_type", "options"),
    [
        ("topdown", "centered_instance", PredictOptions(peak_threshold=0.03, max_instances=6)),
        ("topdown", "centered_instance", PredictOptions()),
        # The multi-class instance model is barely trained (peaks < 0.06): keep every peak.
        (
            "multiclass_topdown",
            "multi_class_topdown",
            PredictOptions(peak_threshold=-1.0, centroid_peak_threshold=0.2),
        ),
    ],
    ids=["topdown-golden-options", "topdown-defaults", "multiclass-topdown"],
)
def test_topdown_onnx_matches_torch(
    shared: Path, golden: str, instance_type: str, options: PredictOptions
) -> None:
    ref_layer, layer = _layers(shared, ["centroid", instance_type], options)
    assert isinstance(layer.centroid, ExportedCentroidLayer)
    assert isinstance(layer.instance, ExportedCenteredInstanceLayer)
    worst = _new_worst()
    for batch in _golden(shared, golden):
        x = torch.from_numpy(batch["image"][:1])
        ref = ref_layer.run_preprocessed(x, ref_layer.info_for_input(x, source=x))
        got = layer.run_preprocessed(x, layer.info_for_input(x, source=x))
        _compare(ref, got, worst)
        assert got.valid.sum() == len(batch["centroid_val"])  # the goldens' animals
    assert worst["found"] >= 16  # every golden frame has two animals with found nodes
    assert worst["px"] <= PX and worst["score"] <= SCORE
    two_graphs = {p.parent for p in layer.centroid.backend.exports + layer.instance.backend.exports}
    assert len(layer.centroid.backend.exports) == len(layer.instance.backend.exports) == 1
    assert len(two_graphs) == 1  # both in the session's export cache


@pytest.mark.parametrize("threshold", [0.05, 0.2])
def test_bottomup_onnx_matches_torch(shared: Path, threshold: float) -> None:
    ref_layer, layer = _layers(shared, ["bottomup"], PredictOptions(peak_threshold=threshold))
    assert isinstance(layer, ExportedBottomUpLayer)
    worst = _new_worst()
    for batch in _golden(shared, "bottomup"):
        x = torch.from_numpy(batch["image"][:, 0])
        ref = ref_layer.run_preprocessed(x, ref_layer.info_for_input(x))
        got = layer.run_preprocessed(x, layer.info_for_input(x))
        _compare(ref, got, worst)
        if threshold == 0.05:  # the goldens' threshold: sleap-nn's instances too
            counts = [len(p) for p in batch["pred_instance_peaks"]]
            assert got.valid.sum(axis=1).tolist() == counts
    assert worst["found"] >= 10
    assert worst["px"] <= PX and worst["score"] <= SCORE
    assert layer.overflow_frames == 0


@pytest.mark.parametrize("threshold", [0.05, 0.2])
def test_multiclass_bottomup_onnx_matches_torch(shared: Path, threshold: float) -> None:
    options = PredictOptions(peak_threshold=threshold)
    ref_layer, layer = _layers(shared, ["multi_class_bottomup"], options)
    assert isinstance(layer, ExportedBottomUpMultiClassLayer)
    worst = _new_worst()
    for batch in _golden(shared, "multiclass_bottomup"):
        x = torch.from_numpy(batch["image"][:, 0])
        ref = ref_layer.run_preprocessed(x, ref_layer.info_for_input(x))
        got = layer.run_preprocessed(x, layer.info_for_input(x))
        _compare(ref, got, worst)
        np.testing.assert_allclose(
            got.extras["node_class_probs"], ref.extras["node_class_probs"], atol=SCORE
        )
    assert worst["found"] >= 10
    assert worst["px"] <= PX and worst["score"] <= SCORE


def test_too_many_peaks_for_the_export_is_a_warning(shared: Path) -> None:
    """At threshold 0.01 this barely trained model has ~200 peaks of a node: over K = 64."""
    options = PredictOptions(peak_threshold=0.01)
    _, layer = _layers(shared, ["bottomup"], options)
    x = torch.from_numpy(_golden(shared, "bottomup")[0]["image"][:, 0])
    with pytest.warns(PeakOverflowWarning, match=r"bottomup export: A, B had more than 64"):
        layer.run_preprocessed(x, layer.info_for_input(x))
    assert layer.overflow_frames == x.shape[0]
    layer.run_preprocessed(x, layer.info_for_input(x))  # warned once; still counted
    assert layer.overflow_frames == 2 * x.shape[0]
