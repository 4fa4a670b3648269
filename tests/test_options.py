"""The shared peak options (threshold, refinement, patch size) reach every model type."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

from sleap_infer.layers import (
    BottomUpLayer,
    BottomUpMultiClassLayer,
    CenteredInstanceLayer,
    CentroidLayer,
    InferenceLayer,
    PredictOptions,
    SingleInstanceLayer,
    TopDownLayer,
)
from sleap_infer.model.config import parse_config

from fakes import FakeBackend, gaussian_maps
from model_factory import config_dict

# Off-grid peak positions (confmap grid units, stride 2): refinement must move them.
NODES = [(6.3, 8.4), (14.6, 8.4), (22.2, 8.4)]


def _maps(n: int, centres: list[tuple[float, float]]) -> torch.Tensor:
    return gaussian_maps((32, 32), [centres] * n, sigma=1.5)


def _single(opts: PredictOptions) -> InferenceLayer:
    cfg = parse_config(config_dict("single_instance"))
    return SingleInstanceLayer(
        cfg, FakeBackend(lambda x: {"SingleInstanceConfmapsHead": _maps(len(x), NODES)}), opts
    )


def _centroid(opts: PredictOptions) -> InferenceLayer:
    cfg = parse_config(config_dict("centroid"))
    return CentroidLayer(
        cfg, FakeBackend(lambda x: {"CentroidConfmapsHead": _maps(len(x), NODES[:1])}), opts
    )


def _bottomup(opts: PredictOptions) -> InferenceLayer:
    cfg = parse_config(config_dict("bottomup"))

    def outputs(x: torch.Tensor) -> dict[str, torch.Tensor]:
        pafs = torch.zeros(len(x), 4, 16, 16)
        pafs[:, 0::2] = 1.0
        return {"MultiInstanceConfmapsHead": _maps(len(x), NODES), "PartAffinityFieldsHead": pafs}

    return BottomUpLayer(cfg, FakeBackend(outputs), opts)


def _multiclass_bottomup(opts: PredictOptions) -> InferenceLayer:
    cfg = parse_config(config_dict("multi_class_bottomup"))

    def outputs(x: torch.Tensor) -> dict[str, torch.Tensor]:
        classes = torch.tensor([0.8, 0.2]).view(1, 2, 1, 1).expand(len(x), 2, 32, 32)
        return {"MultiInstanceConfmapsHead": _maps(len(x), NODES), "ClassMapsHead": classes}

    return BottomUpMultiClassLayer(cfg, FakeBackend(outputs), opts)


def _topdown(opts: PredictOptions) -> InferenceLayer:
    c_cfg = parse_config(config_dict("centroid"))
    centroid = CentroidLayer(
        c_cfg, FakeBackend(lambda x: {"CentroidConfmapsHead": _maps(len(x), [(15.0, 15.0)])}), opts
    )
    i_cfg = parse_config(config_dict("centered_instance"))
    crop_nodes = [(x - 4, y - 2) for x, y in NODES]  # inside the 16x16 crop grid
    instance = CenteredInstanceLayer(
        i_cfg,
        FakeBackend(
            lambda x: {
                "CenteredInstanceConfmapsHead": gaussian_maps((16, 16), [crop_nodes] * len(x), 1.5)
            }
        ),
        opts,
    )
    return TopDownLayer(centroid, instance, opts)


BUILDERS: dict[str, tuple[Callable[[PredictOptions], InferenceLayer], float]] = {
    # name: (builder, offset of the stride-2 grid in output pixels)
    "single_instance": (_single, 0.0),
    "centroid": (_centroid, 0.0),
    "bottomup": (_bottomup, 0.0),
    "multi_class_bottomup": (_multiclass_bottomup, 0.0),
    "topdown": (_topdown, 0.5),  # crop top-left = centroid - 16 + 0.5
}


def _coords(layer: InferenceLayer) -> np.ndarray:
    preds = layer.predict(np.zeros((2, 64, 64, 1), np.uint8))
    assert preds.valid.any()
    pts = preds.points[preds.valid]
    return pts[~np.isnan(pts)]


def _on_grid(values: np.ndarray, offset: float) -> bool:
    return bool(np.allclose(((values - offset) / 2) % 1, 0, atol=1e-4))


@pytest.mark.parametrize("name", list(BUILDERS))
def test_refinement_options(name: str) -> None:
    build, offset = BUILDERS[name]
    refined = _coords(build(PredictOptions(peak_threshold=0.2)))
    assert not _on_grid(refined, offset)
    assert _on_grid(_coords(build(PredictOptions(peak_threshold=0.2, refine=False))), offset)
    # A 1-pixel patch has no neighbours to pull the peak: same as no refinement.
    single = _coords(build(PredictOptions(peak_threshold=0.2, integral_patch_size=1)))
    assert _on_grid(single, offset)
    wider = _coords(build(PredictOptions(peak_threshold=0.2, integral_patch_size=7)))
    assert not np.allclose(wider, refined)


@pytest.mark.parametrize("name", list(BUILDERS))
def test_peak_threshold_above_every_peak_finds_nothing(name: str) -> None:
    build, _ = BUILDERS[name]
    preds = build(PredictOptions(peak_threshold=1.01)).predict(np.zeros((2, 64, 64, 1), np.uint8))
    assert preds.n_instances == 0
