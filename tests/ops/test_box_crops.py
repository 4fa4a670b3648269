"""Box-scaled crops (``crop_mode: bbox``): window geometry, resampling, the way back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sleap_infer.core.errors import ConfigError, UsageError
from sleap_infer.core.options import PredictOptions
from sleap_infer.layers.build import build_layer
from sleap_infer.layers.topdown import TopDownLayer
from sleap_infer.model.loader import LoadedModel, load_model
from sleap_infer.ops.box_crops import (
    BoxCropSpec,
    box_windows,
    crop_windows,
    cut_box_crops,
    letterbox,
    points_from_crop,
    points_to_crop,
)
from sleap_infer.runtimes import backend_maker

from model_factory import config_dict, write_box_detector, write_model_dir

BOX_CROP = {"crop_size": 32, "crop_mode": "bbox", "crop_bbox_aspect": "square"}


def test_spec_is_read_from_the_saved_preprocessing() -> None:
    assert BoxCropSpec.from_raw(config_dict("centered_instance")) is None
    raw = config_dict("centered_instance", preprocessing={"crop_mode": "bbox"})
    assert BoxCropSpec.from_raw(raw) == BoxCropSpec("square", 0.1, None)
    raw = config_dict(
        "centered_instance",
        preprocessing={
            "crop_mode": "bbox",
            "crop_bbox_aspect": "stretch",
            "crop_bbox_padding": 0.0,
            "crop_bbox_min_size": 12,
        },
    )
    assert BoxCropSpec.from_raw(raw) == BoxCropSpec("stretch", 0.0, 12.0)
    with pytest.raises(ValueError, match="crop_bbox_aspect"):
        BoxCropSpec.from_raw(
            config_dict("centered_instance", preprocessing={**BOX_CROP, "crop_bbox_aspect": "fit"})
        )


def test_square_window_is_the_padded_longest_side_around_the_centre() -> None:
    # 20 x 10 box, padding 0.1 -> 4 px margin in total per axis: 24 x 14, square side 24.
    windows, scales, keep = box_windows(torch.tensor([[10.0, 20.0, 30.0, 30.0]]), 48, "square", 0.1)
    np.testing.assert_allclose(windows[0], [20.5 - 12, 25.5 - 12, 20.5 + 12, 25.5 + 12])
    np.testing.assert_allclose(scales[0], [2.0, 2.0])
    np.testing.assert_allclose(keep[0], [24.0, 14.0])  # half of 48 x 28 crop pixels
    lb, _, _ = box_windows(torch.tensor([[10.0, 20.0, 30.0, 30.0]]), 48, "letterbox", 0.1)
    np.testing.assert_allclose(lb, windows)


def test_stretch_window_scales_each_axis_on_its_own() -> None:
    windows, scales, keep = box_windows(
        torch.tensor([[10.0, 20.0, 30.0, 30.0]]), 48, "stretch", 0.1
    )
    np.testing.assert_allclose(windows[0], [20.5 - 12, 25.5 - 7, 20.5 + 12, 25.5 + 7])
    np.testing.assert_allclose(scales[0], [2.0, 48 / 14], rtol=1e-6)
    np.testing.assert_allclose(keep[0], [24.0, 24.0])


def test_padding_zero_and_the_minimum_size_floor() -> None:
    windows, scales, keep = box_windows(torch.tensor([[0.0, 0.0, 8.0, 4.0]]), 16, "square", 0.0)
    np.testing.assert_allclose(windows[0], [0.5, -1.5, 8.5, 6.5])
    np.testing.assert_allclose(scales[0], [2.0, 2.0])
    # Floor 32: the window grows, the kept (letterbox) region stays the box's share.
    windows, scales, keep = box_windows(torch.tensor([[0.0, 0.0, 8.0, 4.0]]), 16, "square", 0.0, 32)
    np.testing.assert_allclose(windows[0], [4.5 - 16, 2.5 - 16, 4.5 + 16, 2.5 + 16])
    np.testing.assert_allclose(scales[0], [0.5, 0.5])
    np.testing.assert_allclose(keep[0], [2.0, 1.0])
    # A degenerate box still gets a 1 px window.
    windows, _, _ = box_windows(torch.tensor([[5.0, 5.0, 5.0, 5.0]]), 16, "stretch", 0.1)
    np.testing.assert_allclose(windows[0], [5.0, 5.0, 6.0, 6.0])


def test_resampling_a_linear_ramp_reads_it_at_the_output_pixel_centres() -> None:
    # value = x + 100 y at pixel centre (x, y): bilinear sampling is exact on a ramp.
    h, w = 40, 50
    ys, xs = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    image = (xs + 100.0 * ys).float()[None, None]
    box = torch.tensor([[10.0, 12.0, 22.0, 20.0]])
    windows, scales, _ = box_windows(box, 24, "square", 0.0)  # side 12: 2 crop px per frame px
    crops = crop_windows(image, windows, torch.tensor([0]), 24)
    i = torch.arange(24, dtype=torch.float32)
    # Output pixel i sits at keypoint coordinate X1 + (i + 0.5) / 2 - 0.5 (X1 = 10.5).
    frame_x = 10.5 + (i + 0.5) / 2 - 0.5
    frame_y = 10.5 + (i + 0.5) / 2 - 0.5
    expected = frame_x[None, :] + 100 * frame_y[:, None]
    torch.testing.assert_close(crops[0, 0], expected, atol=1e-3, rtol=0)
    assert float(crops[0, 0, 0, 0]) == pytest.approx(10.25 + 1025.0, abs=1e-3)
    # The crop-pixel map is points_to_crop: frame point (13, 17) lands at crop (6, 14).
    p = points_to_crop(torch.tensor([[[13.0, 17.0]]]), windows, scales)
    np.testing.assert_allclose(p[0, 0], [5.5, 13.5])


def test_an_overhanging_window_fades_to_zero_outside_the_frame() -> None:
    image = torch.full((1, 1, 10, 10), 100.0)
    windows = torch.tensor([[-2.0, 0.0, 6.0, 8.0]])  # 1 frame px per crop px, 2 columns outside
    crops = crop_windows(image, windows, torch.tensor([0]), 8)
    np.testing.assert_allclose(crops[0, 0, :, :2], 0.0)
    np.testing.assert_allclose(crops[0, 0, :, 2:], 100.0)
    # Half a pixel outside: the first column is half covered.
    crops = crop_windows(image, torch.tensor([[-0.5, 0.0, 7.5, 8.0]]), torch.tensor([0]), 8)
    np.testing.assert_allclose(crops[0, 0, :, 0], 50.0)


def test_crops_of_several_frames_come_back_in_their_order() -> None:
    rng = np.random.default_rng(0)
    images = torch.as_tensor(rng.integers(0, 255, (3, 2, 30, 40)), dtype=torch.float32)
    boxes = torch.tensor(
        [[3.0, 4, 20, 25], [10, 2, 30, 12], [0, 0, 39, 29], [5, 5, 9, 9], [12, 8, 22, 28]]
    )
    frame = torch.tensor([2, 0, 2, 1, 0])
    windows, _, _ = box_windows(boxes, 16, "stretch", 0.1)
    together = crop_windows(images, windows, frame, 16)
    for k in range(5):
        alone = crop_windows(
            images[frame[k] : frame[k] + 1], windows[k : k + 1], torch.tensor([0]), 16
        )
        torch.testing.assert_close(together[k], alone[0])


def test_letterbox_keeps_only_the_padded_box() -> None:
    crops = torch.ones((1, 1, 8, 8))
    kept = letterbox(crops, torch.tensor([[4.0, 2.0]]))
    np.testing.assert_array_equal(kept[0, 0].sum(dim=1).numpy(), [0, 0, 8, 8, 8, 8, 0, 0])
    spec = BoxCropSpec("letterbox", 0.0)
    image = torch.full((1, 1, 40, 40), 200, dtype=torch.uint8)
    crops, _, _ = cut_box_crops(
        image, torch.tensor([[10.0, 15.0, 30.0, 25.0]]), torch.tensor([0]), 20, spec
    )
    assert crops.dtype == torch.uint8
    # 20 x 10 box in a 20-px square: rows 5..14 kept.
    np.testing.assert_array_equal(crops[0, 0, :, 10].numpy(), [0] * 5 + [200] * 10 + [0] * 5)


@pytest.mark.parametrize("aspect", ["square", "letterbox", "stretch"])
def test_points_from_crop_inverts_the_crop_mapping(aspect: str) -> None:
    rng = np.random.default_rng(1)
    lo = rng.uniform(-20, 200, (6, 2))
    boxes = torch.as_tensor(
        np.concatenate([lo, lo + rng.uniform(0.5, 80, (6, 2))], 1), dtype=torch.float32
    )
    windows, scales, _ = box_windows(boxes, 64, aspect, 0.15, 10)
    points = torch.as_tensor(rng.uniform(-50, 300, (6, 5, 2)), dtype=torch.float32)
    back = points_from_crop(points_to_crop(points, windows, scales), windows, scales)
    assert float((back - points).abs().max()) < 1e-4


def _box_model(folder: Path) -> LoadedModel:
    return load_model(write_box_detector(folder))


@pytest.mark.parametrize("aspect", ["square", "letterbox"])
def test_keypoints_come_back_through_the_box_window(tmp_path: Path, aspect: str) -> None:
    box = _box_model(tmp_path / "box")
    pre = {**BOX_CROP, "crop_bbox_aspect": aspect, "crop_bbox_padding": 0.1}
    crop = load_model(
        write_model_dir(
            tmp_path / "ci", config_dict("centered_instance", preprocessing=pre), seed=5
        )
    )
    options = PredictOptions(peak_threshold=0.0, max_instances=3)
    maker = backend_maker("torch", "cpu")
    layer = build_layer([box, crop], maker, options)
    assert isinstance(layer, TopDownLayer) and layer.box_crop is not None
    frames = np.random.default_rng(1).integers(0, 255, (2, 64, 64, 1), dtype=np.uint8)
    preds = layer.predict(frames)
    assert preds.boxes is not None and len(preds.boxes) > 0
    boxes = build_layer([box], maker, options).predict(frames).boxes
    np.testing.assert_array_equal(preds.boxes.xyxy, boxes.xyxy)
    # By hand: resize each box's window to the crop, pose it, map back through the window.
    xyxy = torch.as_tensor(boxes.xyxy, dtype=torch.float32)
    windows, scales, keep = box_windows(xyxy, 32, aspect, 0.1)
    source = torch.as_tensor(frames).permute(0, 3, 1, 2).contiguous()
    crops = crop_windows(source, windows, torch.as_tensor(boxes.frame, dtype=torch.long), 32)
    if aspect == "letterbox":
        crops = letterbox(crops, keep)
    crops = crops.round().clamp(0, 255).to(torch.uint8)
    peaks = layer.instance.run_crops(crops)
    expected = points_from_crop(peaks.points, windows, scales).numpy()
    for b in range(2):
        mine = boxes.in_frame(b)
        got = preds.points[b][: len(mine)]
        np.testing.assert_allclose(got, expected[mine], atol=1e-4)
        centres = np.stack(
            [boxes.xyxy[mine][:, [0, 2]].mean(1), boxes.xyxy[mine][:, [1, 3]].mean(1)], 1
        )
        np.testing.assert_allclose(preds.extras["centroids"][b][: len(mine)], centres, atol=1e-4)
    # Fixed-size crops around the same centres give other keypoints.
    fixed = config_dict("centered_instance", preprocessing={"crop_size": 32})
    plain = load_model(write_model_dir(tmp_path / "fixed", fixed, seed=5))
    other = build_layer([box, plain], maker, options).predict(frames)
    assert not np.allclose(other.points[preds.valid], preds.points[preds.valid], equal_nan=True)


def test_a_box_crop_model_needs_a_box_detector(tmp_path: Path) -> None:
    cent = load_model(write_model_dir(tmp_path / "c", config_dict("centroid"), seed=1))
    crop = load_model(
        write_model_dir(tmp_path / "ci", config_dict("centered_instance", preprocessing=BOX_CROP))
    )
    with pytest.raises(UsageError, match="bbox_centernet or bbox_ssd"):
        build_layer([cent, crop], backend_maker("torch", "cpu"), PredictOptions())


def test_box_crops_are_refused_for_instance_segmentation(tmp_path: Path) -> None:
    box = _box_model(tmp_path / "box")
    raw = config_dict("centered_instance_segmentation", preprocessing=BOX_CROP)
    crop = load_model(write_model_dir(tmp_path / "cis", raw))
    with pytest.raises(ConfigError, match="centered_instance and multi_class_topdown"):
        build_layer([box, crop], backend_maker("torch", "cpu"), PredictOptions())
