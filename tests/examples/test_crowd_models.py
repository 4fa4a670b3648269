"""The crowd models: the shipped trained ones find every animal, the random ones find none.

benchmarks/scale.py's animal rows only mean something if the shipped models
(examples/models/crowd_*) put their peaks on the animals; its frame-size rows rely on
random-weight models whose zeroed heads let no noise peak reach the decoders.
"""

from __future__ import annotations

from pathlib import Path

import crowd  # examples/synthetic/crowd.py
import crowd_models  # examples/synthetic/crowd_models.py
import numpy as np
import pytest
import yaml

import sleap_infer
from sleap_infer.model.loader import load_model

from conftest import EXAMPLES
from model_factory import config_dict

MODELS = EXAMPLES / "models"
PAIRS = {
    "bottomup": [MODELS / "crowd_bottomup"],
    "topdown": [MODELS / "crowd_centroid", MODELS / "crowd_centered_instance"],
}


def _frames(n_animals: int) -> tuple[np.ndarray, np.ndarray]:
    scene = crowd.crowd(n_animals, n_frames=2, size=512, seed=5)
    return np.stack(crowd.frames(scene, seed=5))[..., None], scene.keypoints()


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_shipped_model_finds_every_animal_within_a_pixel_or_two(kind: str) -> None:
    frames, truth = _frames(30)
    pred = sleap_infer.load(*PAIRS[kind], device="cpu").predict(frames)
    for f in range(len(frames)):
        found = pred.points[f][pred.valid[f]]
        assert len(found) == 30
        # each true animal's nearest prediction, mean over its 3 nodes
        gaps = np.linalg.norm(found[None] - truth[f][:, None], axis=-1).mean(axis=-1)
        assert np.median(gaps.min(axis=1)) < 1.5
        assert gaps.min(axis=1).max() < 4.0


@pytest.mark.parametrize("kind", ["single_instance", "bottomup", "centroid"])
def test_random_model_has_zero_heads_and_finds_nothing(tmp_path: Path, kind: str) -> None:
    template = config_dict(kind)
    path = crowd_models.write_model(tmp_path / kind, template, kind, filters=4, max_stride=16)
    assert (path / "best.ckpt").is_file() and (path / "training_config.yaml").is_file()
    models = [path]
    if kind == "centroid":
        other = crowd_models.write_model(
            tmp_path / "ci",
            config_dict("centered_instance"),
            "centered_instance",
            filters=4,
            max_stride=16,
        )
        models.append(other)
    frames, _ = _frames(4)
    pred = sleap_infer.load(*models, device="cpu").predict(frames)
    assert not pred.valid.any() or np.isnan(pred.points[pred.valid]).all()


def test_convnext_tiny_random_model_loads_as_sleap_nn_writes_it(tmp_path: Path) -> None:
    """The frame-size rows' ConvNeXt-tiny: sleap-nn's backbone block, strict load, no peaks."""
    path = crowd_models.write_model(
        tmp_path / "cnx",
        config_dict("single_instance"),
        "single_instance",
        **crowd_models.CONVNEXT_TINY,
    )
    raw = yaml.safe_load((path / "training_config.yaml").read_text())
    backbone = raw["model_config"]["backbone_config"]
    assert backbone["unet"] is None and backbone["convnext"]["model_type"] == "tiny"
    model = load_model(path)  # strict=True: every checkpoint key is a ConvNeXt-tiny key
    assert any(name.startswith("backbone.enc") for name, _ in model.network.named_parameters())
    assert raw["model_config"]["total_params"] > 25_000_000  # ConvNeXt-tiny's encoder alone: 28 M
    frames, _ = _frames(2)
    pred = sleap_infer.load(path, device="cpu").predict(frames[:, :256, :256])
    assert not pred.valid.any() or np.isnan(pred.points[pred.valid]).all()
