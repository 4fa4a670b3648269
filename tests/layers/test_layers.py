"""Layers: preprocessing chain, coordinate ladder, and parity with sleap-nn's outputs."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from sleap_infer.backends import TorchBackend
from sleap_infer.core.errors import UsageError
from sleap_infer.layers import CentroidLayer, PredictOptions, SingleInstanceLayer, base, build_layer
from sleap_infer.model.config import parse_config
from sleap_infer.model.loader import load_model
from sleap_infer.runtimes import backend_maker

from conftest import fixture_model
from fakes import FakeBackend, gaussian_maps
from model_factory import config_dict


def test_single_instance_ladder_through_sizematch_and_scale() -> None:
    # 200x400 frames -> sizematch to 100x100 (x0.25, pad) -> scale 0.5 -> 50x50 -> pad to 56
    raw = config_dict(
        "single_instance", preprocessing={"max_height": 100, "max_width": 100, "scale": 0.5}
    )
    cfg = parse_config(raw)  # output stride 2, max stride 8
    grid = [[(5.0, 7.0), (10.0, 3.0), (20.0, 11.0)]]
    backend = FakeBackend(lambda x: {"SingleInstanceConfmapsHead": gaussian_maps((28, 28), grid)})
    layer = SingleInstanceLayer(cfg, backend, PredictOptions(peak_threshold=0.1))
    frames = np.zeros((1, 200, 400, 1), np.uint8)
    preds = layer.predict(frames)
    assert backend.inputs[0].shape == (1, 1, 56, 56)
    assert backend.inputs[0].dtype == torch.uint8
    # grid * stride / scale / eff_scale = grid * 2 / 0.5 / 0.25
    expected = np.array(grid[0]) * 16
    np.testing.assert_allclose(preds.points[0, 0], expected, atol=1e-4)
    assert preds.valid.tolist() == [[True]]
    assert preds.instance_scores[0, 0] == pytest.approx(3.0, abs=1e-5)  # sum of node peaks


def test_single_instance_below_threshold_drops_instance() -> None:
    cfg = parse_config(config_dict("single_instance"))
    backend = FakeBackend(lambda x: {"SingleInstanceConfmapsHead": torch.zeros(2, 3, 8, 8)})
    preds = SingleInstanceLayer(cfg, backend).predict(np.zeros((2, 16, 16, 1), np.uint8))
    assert preds.valid.tolist() == [[False], [False]]
    assert np.isnan(preds.points).all()


def test_host_work_runs_on_the_backends_host_threads_and_torch_is_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Beside a runtime with its own CPU pool (ONNX Runtime, OpenVINO) the layer's own torch
    # work, the network call's included, runs on backend.host_threads; torch's pool is put
    # back afterwards.
    cfg = parse_config(config_dict("single_instance"))
    seen: list[tuple[str, int]] = []

    def network(x: torch.Tensor, side: int = 8) -> dict[str, torch.Tensor]:
        seen.append(("network", torch.get_num_threads()))
        return {"SingleInstanceConfmapsHead": torch.zeros(2, 3, side, side)}

    backend = FakeBackend(network)
    layer = SingleInstanceLayer(cfg, backend)
    real_pre, real_post, real_finite = layer.preprocess, layer.postprocess, base.check_finite

    def pre(frames: np.ndarray, **kw: object) -> object:
        seen.append(("preprocess", torch.get_num_threads()))
        return real_pre(frames, **kw)

    def post(outputs: dict, info: object) -> object:
        seen.append(("postprocess", torch.get_num_threads()))
        return real_post(outputs, info)

    def finite(outputs: dict, decoded: bool) -> dict:
        seen.append(("finite check", torch.get_num_threads()))
        return real_finite(outputs, decoded)

    monkeypatch.setattr(layer, "preprocess", pre)
    monkeypatch.setattr(layer, "postprocess", post)
    monkeypatch.setattr(base, "check_finite", finite)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        frames = np.zeros((2, 16, 16, 1), np.uint8)
        layer.predict(frames)  # no host_threads: torch's pool as it is
        backend.host_threads = 1
        layer.predict(frames)
        layer.start(frames)()
        # Large work keeps the whole pool: frames of 2 x 1100 x 1000 (over 2^21 elements);
        # their small outputs still go to one thread.
        layer.predict(np.zeros((2, 1100, 1000, 1), np.uint8))
        # ... and large outputs (raw maps of big frames): 2 x 3 x 600 x 600 elements.
        backend.make = lambda x: network(x, side=600)
        layer.predict(frames)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    # The finite check of the network's outputs is host work too. The network's call is
    # not: torch's pool size is process-wide, and a postprocessing thread's large work
    # would run on one thread for as long as the network runs.
    beside_pool = [("preprocess", 1), ("network", 2), ("finite check", 1), ("postprocess", 1)]
    large_frames = [("preprocess", 2), ("network", 2), ("finite check", 1), ("postprocess", 1)]
    large_maps = [("preprocess", 1), ("network", 2), ("finite check", 2), ("postprocess", 2)]
    assert seen == [
        ("preprocess", 2),
        ("network", 2),
        ("finite check", 2),
        ("postprocess", 2),
        *beside_pool,
        *beside_pool,
        *large_frames,
        *large_maps,
    ]


def test_centroid_max_instances_keeps_strongest_in_value_order() -> None:
    cfg = parse_config(config_dict("centroid"))
    maps = torch.zeros(2, 1, 16, 16)
    maps[0, 0, 2, 2] = 0.5
    maps[0, 0, 5, 9] = 0.9
    maps[0, 0, 12, 4] = 0.7
    maps[1, 0, 3, 3] = 0.6
    backend = FakeBackend(lambda x: {"CentroidConfmapsHead": maps})
    opts = PredictOptions(peak_threshold=0.2, refine=False, max_instances=2)
    preds = CentroidLayer(cfg, backend, opts).predict(np.zeros((2, 32, 32, 1), np.uint8))
    # Frame 0 overflows: top-2 by value, descending. Frame 1: one centroid + a padded slot.
    assert preds.instance_scores[0].tolist() == pytest.approx([0.9, 0.7])
    anchor = cfg.anchor_index
    np.testing.assert_allclose(preds.points[0, :, anchor], [[18, 10], [8, 24]])
    assert preds.valid.tolist() == [[True, True], [True, False]]
    assert np.isnan(preds.points[0, :, 0]).all()  # only the anchor node carries the centroid
    # Without a cap, raster order is kept.
    opts = PredictOptions(peak_threshold=0.2, refine=False)
    preds = CentroidLayer(cfg, backend, opts).predict(np.zeros((2, 32, 32, 1), np.uint8))
    assert preds.instance_scores[0].tolist() == pytest.approx([0.5, 0.9, 0.7])


def test_build_layer_rejects_non_pairs(tmp_path: Path) -> None:
    from model_factory import write_model_dir

    a = load_model(write_model_dir(tmp_path / "a", config_dict("single_instance")))
    b = load_model(write_model_dir(tmp_path / "b", config_dict("single_instance")))
    with pytest.raises(UsageError, match="cannot combine"):
        build_layer([a, b], backend_maker("torch", "cpu"), PredictOptions())


def _parity_batches(shared: Path, name: str) -> list[dict]:
    with open(shared / "parity" / f"{name}.pkl", "rb") as fh:
        return pickle.load(fh)


def test_single_instance_parity_with_sleap_nn(shared: Path) -> None:
    model = load_model(fixture_model(shared, "single_instance"))
    layer = SingleInstanceLayer(
        model.config, TorchBackend(model.network, "cpu"), PredictOptions(peak_threshold=0.3)
    )
    worst_px = worst_score = 0.0
    for batch in _parity_batches(shared, "single_instance"):
        x = torch.from_numpy(batch["image"][:, 0])  # stored preprocessed uint8 input
        preds = layer.run_preprocessed(x, layer.info_for_input(x))
        ref = batch["pred_instance_peaks"]
        assert np.array_equal(np.isnan(preds.points[:, 0]), np.isnan(ref))
        worst_px = max(worst_px, float(np.nanmax(np.abs(preds.points[:, 0] - ref))))
        worst_score = max(
            worst_score, float(np.abs(preds.point_scores[:, 0] - batch["pred_peak_values"]).max())
        )
    assert worst_px <= 1e-3
    assert worst_score <= 1e-4


def test_centroid_parity_with_sleap_nn(shared: Path) -> None:
    model = load_model(fixture_model(shared, "centroid"))
    layer = CentroidLayer(model.config, TorchBackend(model.network, "cpu"), PredictOptions())
    for batch in _parity_batches(shared, "topdown"):
        x = torch.from_numpy(batch["image"][:1])  # one frame per golden batch
        preds = layer.run_preprocessed(x, layer.info_for_input(x))
        got = preds.extras["centroids"][0][preds.valid[0]]
        np.testing.assert_allclose(got, batch["pred_centroids"], atol=1e-3)
        np.testing.assert_allclose(
            preds.instance_scores[0][preds.valid[0]], batch["centroid_val"], atol=1e-4
        )
