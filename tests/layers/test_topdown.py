"""Top-down: crop geometry, the two-stage coordinate ladder, identities, the dispatcher."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sleap_infer.core.errors import ConfigError, UsageError
from sleap_infer.layers import (
    CenteredInstanceLayer,
    CentroidLayer,
    MultiClassCenteredInstanceLayer,
    PredictOptions,
    TopDownLayer,
    TopDownMultiClassLayer,
    build_layer,
)
from sleap_infer.model.config import parse_config
from sleap_infer.model.loader import load_model
from sleap_infer.ops.crops import (
    centered_boxes,
    crop_origin,
    first_box_extent,
    gather_crops,
    zero_beyond_extent,
)
from sleap_infer.runtimes import backend_maker

from conftest import pipeline
from fakes import FakeBackend, gaussian_maps
from model_factory import config_dict, write_model_dir

CROP_NODES = [(3.0, 4.0), (8.0, 8.0), (12.0, 5.0)]  # crop confmap grid (stride 2)


def test_boxes_follow_sleap_nn_geometry() -> None:
    top_left, extent = centered_boxes(torch.tensor([[20.0, 24.0], [-1.7, 7.6]]), 32, 32)
    torch.testing.assert_close(top_left, torch.tensor([[4.5, 8.5], [-17.2, -7.9]]))
    assert extent.tolist() == [[32, 32], [32, 32]]
    # Pixels start at trunc(top_left + 16) - 16: the floor, except far outside (-17, not -18).
    assert crop_origin(top_left, extent).tolist() == [[4, 8], [-17, -8]]
    # Float corners that land just under the nominal size give sleap-nn's short crop.
    _, short = centered_boxes(torch.tensor([[123.73151397705078, 182.94032287597656]]), 96, 96)
    assert short.tolist() == [[95, 96]]


def test_gather_crops_pads_outside_and_uses_first_box_extent() -> None:
    images = torch.arange(2 * 10 * 10, dtype=torch.int32).reshape(2, 1, 10, 10)
    origin = torch.tensor([[-2, -1], [6, 7], [0, 0]])
    sample = torch.tensor([0, 0, 1])
    crops = gather_crops(images, sample, origin, 4, 4)
    assert crops.shape == (3, 1, 4, 4)
    assert crops[0, 0, 0].tolist() == [0, 0, 0, 0]  # row -1 is outside
    assert crops[0, 0, 1].tolist() == [0, 0, 0, 1]  # columns -2, -1 outside
    assert crops[1, 0, 3].tolist() == [0, 0, 0, 0]  # row 10 is outside
    assert crops[1, 0, 0].tolist() == [76, 77, 78, 79]
    assert torch.equal(crops[2, 0], images[1, 0, :4, :4])
    # Frame 0's first box is one column short: both its crops lose their last column.
    extent = first_box_extent(torch.tensor([[3, 4], [4, 4], [4, 4]]), sample)
    assert extent.tolist() == [[3, 4], [3, 4], [4, 4]]
    masked = zero_beyond_extent(crops, extent)
    assert masked[:2, ..., 3].abs().sum() == 0
    assert torch.equal(masked[:2, ..., :3], crops[:2, ..., :3])
    assert torch.equal(masked[2], crops[2])


def _topdown(
    centroid_grid: list[list[tuple[float, float]]],
    preprocessing: dict | None = None,
    options: PredictOptions | None = None,
    class_vectors: torch.Tensor | None = None,
) -> tuple[TopDownLayer, FakeBackend]:
    """Centroid model at stride 2; centered model returns the same crop peaks for every crop."""
    opts = options or PredictOptions(peak_threshold=0.1)
    c_cfg = parse_config(config_dict("centroid", preprocessing=preprocessing))
    h = 64 if preprocessing is None else preprocessing["max_height"]
    maps = gaussian_maps((h // 2, h // 2), centroid_grid)
    centroid = CentroidLayer(c_cfg, FakeBackend(lambda x: {"CentroidConfmapsHead": maps}), opts)

    def instance_outputs(x: torch.Tensor) -> dict[str, torch.Tensor]:
        cms = gaussian_maps((16, 16), [CROP_NODES] * x.shape[0])
        out = {"CenteredInstanceConfmapsHead": cms}
        if class_vectors is not None:
            out["ClassVectorsHead"] = class_vectors[: x.shape[0]]
        return out

    fake = FakeBackend(instance_outputs)
    kind = "multi_class_topdown" if class_vectors is not None else "centered_instance"
    i_cfg = parse_config(config_dict(kind))  # crop_size 32, stride 2
    cls = MultiClassCenteredInstanceLayer if class_vectors is not None else CenteredInstanceLayer
    instance = cls(i_cfg, fake, opts)
    top = TopDownMultiClassLayer if class_vectors is not None else TopDownLayer
    return top(centroid, instance, opts), fake


def test_topdown_ladder_through_size_matcher() -> None:
    # 128x128 frames are size-matched to 64x64 (x0.5); centroids at grid (10, 12), (20, 8).
    pre = {"max_height": 64, "max_width": 64}
    layer, fake = _topdown([[(10.0, 12.0), (20.0, 8.0)]], preprocessing=pre)
    preds = layer.predict(np.zeros((1, 128, 128, 1), np.uint8))
    assert fake.inputs[0].shape == (2, 1, 32, 32)  # one 32x32 crop per centroid
    centroids = np.array([[40.0, 16.0], [20.0, 24.0]])  # size-matched pixels, raster order
    top_left = centroids - 16 + 0.5
    expected = (np.array(CROP_NODES)[None] * 2 + top_left[:, None]) / 0.5
    np.testing.assert_allclose(preds.points[0], expected, atol=1e-4)
    np.testing.assert_allclose(preds.extras["centroids"][0], centroids / 0.5, atol=1e-4)
    np.testing.assert_allclose(preds.instance_scores[0], [1.0, 1.0], atol=1e-5)  # centroid value
    np.testing.assert_allclose(preds.point_scores[0], 1.0, atol=1e-5)
    assert preds.valid.tolist() == [[True, True]]
    assert preds.class_ids is None


def test_crops_come_from_the_frame_and_batch_is_padded() -> None:
    layer, fake = _topdown([[(10.0, 12.0)], [(20.0, 8.0)], [(5.0, 5.0)]])
    frames = np.zeros((3, 64, 64, 1), np.uint8)
    frames[0, 30, 25] = 255  # 1st centroid at (20, 24): crop origin (4, 8)
    frames[2, 0, 0] = 77  # 3rd centroid at (10, 10): crop origin (-6, -6)
    preds = layer.predict(frames)
    crops = fake.inputs[0]
    assert crops.shape == (3, 1, 32, 32)  # 3 crops, padded to a multiple of 3 frames
    assert crops[0, 0, 22, 21] == 255 and int(crops[0].sum()) == 255
    assert crops[2, 0, 6, 6] == 77
    assert preds.valid.tolist() == [[True], [True], [True]]

    layer, fake = _topdown([[(10.0, 12.0), (20.0, 8.0)], [(20.0, 20.0)]])
    preds = layer.predict(np.zeros((2, 64, 64, 1), np.uint8))
    assert fake.inputs[0].shape[0] == 4  # 3 crops padded to 4 (two frames)
    assert preds.valid.tolist() == [[True, True], [True, False]]
    assert np.isnan(preds.points[1, 1]).all()


def test_topdown_options_reach_both_stages() -> None:
    opts = PredictOptions(peak_threshold=0.1, max_instances=1, refine=False)
    layer, fake = _topdown([[(10.0, 12.0), (20.0, 8.0)]], options=opts)
    preds = layer.predict(np.zeros((1, 64, 64, 1), np.uint8))
    assert preds.valid.shape == (1, 1) and fake.inputs[0].shape[0] == 1
    # No refinement: keypoints sit on the stride-2 grid plus the .5 crop offset.
    assert np.allclose(((preds.points[0, 0] - 0.5) / 2) % 1, 0)
    # Stage 1 alone can be made stricter.
    opts = PredictOptions(peak_threshold=0.1, centroid_peak_threshold=1.5)
    layer, fake = _topdown([[(10.0, 12.0)]], options=opts)
    preds = layer.predict(np.zeros((1, 64, 64, 1), np.uint8))
    assert preds.n_instances == 0 and not fake.inputs
    # Stage 2 threshold: nodes below it are missing, an instance with none is dropped.
    layer, _ = _topdown(
        [[(10.0, 12.0)]], options=PredictOptions(peak_threshold=1.5, centroid_peak_threshold=0.1)
    )
    preds = layer.predict(np.zeros((1, 64, 64, 1), np.uint8))
    assert preds.valid.tolist() == [[False]] and np.isnan(preds.points).all()


def test_multiclass_topdown_assigns_classes_per_frame() -> None:
    vectors = torch.tensor([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.5, 0.5]])
    layer, _ = _topdown([[(10.0, 12.0), (20.0, 8.0)], [(20.0, 20.0)]], class_vectors=vectors)
    preds = layer.predict(np.zeros((2, 64, 64, 1), np.uint8))
    # Frame 0: both crops prefer class 0; the Hungarian match gives the second one class 1.
    assert preds.class_ids.tolist() == [[0, 1], [1, -1]]
    np.testing.assert_allclose(preds.class_scores[0], [0.9, 0.2])
    np.testing.assert_allclose(preds.class_scores[1, 0], 0.7)
    assert np.isnan(preds.class_scores[1, 1])


def test_crop_size_is_required() -> None:
    cfg = parse_config(config_dict("centered_instance", preprocessing={"crop_size": None}))
    layer = CenteredInstanceLayer(cfg, FakeBackend(lambda x: {}))
    with pytest.raises(ConfigError, match="crop_size"):
        _ = layer.crop_size


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    kinds = ["centroid", "centered_instance", "multi_class_topdown", "bottomup"]
    return {k: write_model_dir(root / k, config_dict(k)) for k in kinds}


def _build(dirs: dict[str, Path], *kinds: str):
    models = [load_model(dirs[k]) for k in kinds]
    return build_layer(models, backend_maker("torch", "cpu"), PredictOptions())


def test_dispatcher_pairs_models_in_either_order(model_dirs: dict[str, Path]) -> None:
    for kinds in [("centroid", "centered_instance"), ("centered_instance", "centroid")]:
        layer = _build(model_dirs, *kinds)
        assert type(layer) is TopDownLayer
        assert layer.centroid.model_type == "centroid"
        assert layer.instance.model_type == "centered_instance"
    layer = _build(model_dirs, "multi_class_topdown", "centroid")
    assert type(layer) is TopDownMultiClassLayer
    assert layer.config.class_names == ("female", "male")
    # Random weights still run end to end and keep the shapes consistent.
    preds = layer.predict(np.random.default_rng(0).integers(0, 255, (2, 64, 64, 1), np.uint8))
    assert preds.points.shape[:2] == preds.valid.shape == preds.class_ids.shape


@pytest.mark.parametrize(
    ("kinds", "message"),
    [
        (("centered_instance",), "add a centroid model"),
        (("multi_class_topdown",), "add a centroid model"),
        (("centroid", "bottomup"), "cannot combine"),
        (("centroid", "centroid"), "cannot combine"),
        (("centroid", "centered_instance", "multi_class_topdown"), "cannot combine"),
    ],
)
def test_dispatcher_rejects_unusable_sets(
    model_dirs: dict[str, Path], kinds: tuple[str, ...], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        _build(model_dirs, *kinds)


def test_predictor_takes_skeleton_and_classes_from_the_instance_model(
    model_dirs: dict[str, Path],
) -> None:
    for order in [("centroid", "multi_class_topdown"), ("multi_class_topdown", "centroid")]:
        pipe = pipeline([model_dirs[k] for k in order], device="cpu")
        assert pipe.primary.model_type == "multi_class_topdown"
        assert pipe.primary.config.class_names == ("female", "male")


def test_dispatcher_names_the_model_without_crop_size(
    model_dirs: dict[str, Path], tmp_path: Path
) -> None:
    raw = config_dict("centered_instance", preprocessing={"crop_size": None})
    bad = write_model_dir(tmp_path / "no_crop", raw)
    models = [load_model(model_dirs["centroid"]), load_model(bad)]
    with pytest.raises(ConfigError, match=r"no_crop: training_config.yaml has no .*crop_size"):
        build_layer(models, backend_maker("torch", "cpu"), PredictOptions())
