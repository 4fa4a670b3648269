"""Top-down segmentation: centroid model + centered-instance segmentation model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sleap_infer.core.errors import UsageError
from sleap_infer.core.options import PredictOptions
from sleap_infer.layers.build import build_layer
from sleap_infer.layers.topdown_segmentation import TopDownSegmentationLayer
from sleap_infer.model.loader import load_model
from sleap_infer.ops.crops import centered_boxes, crop_origin
from sleap_infer.runtimes import backend_maker

from model_factory import config_dict, write_model_dir


def _pair(tmp_path: Path, crop: int = 32) -> list:
    centroid = write_model_dir(tmp_path / "centroid", config_dict("centroid"), seed=1)
    raw = config_dict("centered_instance_segmentation", preprocessing={"crop_size": crop})
    cis = write_model_dir(tmp_path / "cis", raw, seed=2)
    return [load_model(cis), load_model(centroid)]  # either order


def test_masks_are_the_crop_model_output_placed_by_the_integer_crop_corner(
    tmp_path: Path,
) -> None:
    models = _pair(tmp_path)
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 255, (2, 64, 80, 1), dtype=np.uint8)
    # Random weights: take every centroid candidate, and a foreground threshold that splits
    # the crop model's (nearly flat) probabilities.
    probe = build_layer(models, backend_maker("torch", "cpu"), PredictOptions())
    crop = torch.from_numpy(frames[0]).permute(2, 0, 1)[None, :, :32, :32]
    fg = float(probe.instance.backend(probe.instance.crop_input(crop))["SegmentationHead"].median())
    options = PredictOptions(peak_threshold=-1e3, fg_threshold=fg, max_instances=3)
    layer = build_layer(models, backend_maker("torch", "cpu"), options)
    assert isinstance(layer, TopDownSegmentationLayer)
    preds = layer.predict(frames)
    assert preds.masks is not None and len(preds.masks) > 0
    assert preds.valid.size == 0  # masks only, no keypoint instances
    # Recompute every mask by hand: centroid -> integer crop -> instance network.
    x, info = layer.preprocess(frames)
    cents = layer.centroid.find_centroids(layer.centroid.backend(x), info)
    frame_idx, slot = torch.nonzero(cents.valid, as_tuple=True)
    top_left, _ = centered_boxes(cents.points[frame_idx, slot], 32, 32)
    origin = crop_origin(top_left, torch.full(top_left.shape, 32, dtype=torch.long))
    expected = []
    for f, (ox, oy) in zip(frame_idx.tolist(), origin.tolist()):
        padded = torch.nn.functional.pad(torch.from_numpy(frames[f]).permute(2, 0, 1), (32,) * 4)
        crop = padded[:, oy + 32 : oy + 64, ox + 32 : ox + 64][None]
        prob = layer.instance.backend(layer.instance.crop_input(crop))["SegmentationHead"][0, 0]
        mask = (prob > fg).numpy()
        if mask.any():
            score = float((prob * (prob > fg)).sum() / (prob > fg).sum())
            expected.append((f, mask, score, (ox, oy)))
    assert len(expected) == len(preds.masks)
    for k, (f, mask, score, (ox, oy)) in enumerate(expected):
        assert preds.masks.frame[k] == f
        np.testing.assert_array_equal(preds.masks.mask(k), mask)
        assert preds.masks.score[k] == pytest.approx(score, abs=1e-6)
        assert tuple(preds.masks.offset[k]) == (ox, oy)  # no size matcher here: eff = 1
        assert tuple(preds.masks.scale[k]) == (0.5, 0.5)  # head stride 2


def test_crop_model_alone_asks_for_a_centroid_model(tmp_path: Path) -> None:
    raw = config_dict("centered_instance_segmentation")
    cis = load_model(write_model_dir(tmp_path / "cis", raw))
    with pytest.raises(UsageError, match="add a centroid model"):
        build_layer([cis], backend_maker("torch", "cpu"), PredictOptions())


def test_matches_sleap_nn_on_the_fixture(shared: Path) -> None:
    """Every mask of sleap-nn's cis_topdown.slp: bits, scale, offset, score, order."""
    import sleap_io as sio

    models = [
        load_model(shared / "models" / "synthetic_centroid"),
        load_model(shared / "models" / "synthetic_centered_instance_segmentation"),
    ]
    layer = build_layer(models, backend_maker("torch", "cpu"), PredictOptions())
    video = sio.load_slp(str(shared / "videos" / "synthetic_multi.pkg.slp")).videos[0]
    frames = np.stack([video[i] for i in range(len(video))])
    reference = {
        lf.frame_idx: lf.masks for lf in sio.load_slp(str(shared / "reference" / "cis_topdown.slp"))
    }
    compared = 0
    for start in range(0, len(frames), 4):
        preds = layer.predict(frames[start : start + 4])
        for b in range(preds.batch_size):
            ours, theirs = preds.masks.in_frame(b), reference.get(start + b, [])
            assert len(ours) == len(theirs), f"frame {start + b}"
            for k, m in zip(ours, theirs):
                np.testing.assert_array_equal(preds.masks.mask(k), m.data)
                assert tuple(preds.masks.scale[k]) == tuple(np.float32(m.scale))
                assert tuple(preds.masks.offset[k]) == tuple(np.float32(m.offset))
                assert abs(float(preds.masks.score[k]) - m.score) <= 1e-5
                compared += 1
    assert compared == 48
