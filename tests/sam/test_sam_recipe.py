"""sleap-nn 0.3.5's SAM prompt recipe: boxes, prompts per mode, candidate pick, overlap rule."""

from __future__ import annotations

import numpy as np
import pytest

from sleap_infer.sam.recipe import (
    anchor,
    clahe_rgb,
    disjointify,
    keypoint_box,
    pick,
    prompt_for,
    visible,
)

NAN = np.nan


def test_keypoint_box_pads_by_the_larger_of_15px_and_60_percent_and_clamps() -> None:
    pts = np.array([[40.0, 50.0], [140.0, 60.0]], np.float32)  # 100 wide, 10 high
    box = keypoint_box(pts, (100, 150))
    # x: 0.6 * 100 = 60 > 15 -> [-20 -> 0, 200 -> 149]; y: 15 -> [35, 75]
    np.testing.assert_array_equal(box, np.array([0.0, 35.0, 149.0, 75.0], np.float32))
    assert box.dtype == np.float32


def test_visible_drops_rows_with_any_non_finite_coordinate() -> None:
    pts = np.array([[1, 2], [NAN, 3], [4, NAN], [5, 6]], np.float32)
    np.testing.assert_array_equal(visible(pts), [[1, 2], [5, 6]])


def test_prompt_modes() -> None:
    pts = np.array([[20, 20], [40, 30], [NAN, NAN]], np.float32)
    pose = prompt_for("pose", pts, (100, 100))
    box = prompt_for("box", pts, (100, 100))
    cen = prompt_for("centroid", pts, (100, 100))
    assert pose is not None and box is not None and cen is not None
    assert pose.points is not None and len(pose.points) == 2  # the NaN node left out
    np.testing.assert_array_equal(pose.box, pose.reject_box)
    assert box.points is None and box.box is not None
    # centroid: one point, the visible keypoints' mean; the box only rejects candidates
    assert cen.box is None
    np.testing.assert_allclose(cen.points, [[30, 25]])
    np.testing.assert_array_equal(cen.reject_box, pose.box)


def test_centroid_anchor_node_when_visible_else_the_mean() -> None:
    pts = np.array([[20, 20], [40, 30], [NAN, NAN]], np.float32)
    np.testing.assert_array_equal(anchor(pts, 1), [40, 30])
    np.testing.assert_array_equal(anchor(pts, 2), [30, 25])  # node 2 not visible
    np.testing.assert_array_equal(anchor(pts, 9), [30, 25])  # out of range


def test_an_instance_without_visible_keypoints_gets_no_prompt() -> None:
    pts = np.full((3, 2), NAN, np.float32)
    assert all(prompt_for(m, pts, (10, 10)) is None for m in ("pose", "centroid", "box"))
    with pytest.raises(ValueError, match="unknown SAM prompt mode"):
        prompt_for("mask", pts, (10, 10))


def test_pick_rejects_candidates_over_1_5x_the_box_then_takes_the_best_score() -> None:
    masks = np.zeros((3, 20, 20), bool)
    masks[0, :, :] = True  # 400 px: the whole arena
    masks[1, :5, :5] = True  # 25 px
    masks[2, :6, :6] = True  # 36 px
    box = np.array([0, 0, 5, 5], np.float32)  # area 25 -> keep <= 37.5
    assert pick(masks, np.array([0.99, 0.5, 0.6]), box) == 2
    # every candidate too large: the smallest
    assert pick(masks, np.array([0.99, 0.5, 0.6]), np.array([0, 0, 1, 1], np.float32)) == 1


def test_disjointify_gives_contested_pixels_to_the_nearest_keypoints() -> None:
    a = np.zeros((1, 10), bool)
    b = np.zeros((1, 10), bool)
    a[0, :7] = True
    b[0, 3:] = True
    out = disjointify([a, b], [np.array([[0, 0]]), np.array([[9, 0]])])
    assert not (out[0] & out[1]).any()
    np.testing.assert_array_equal(np.where(out[0][0])[0], [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(np.where(out[1][0])[0], [5, 6, 7, 8, 9])


def test_clahe_rgb_equalises_and_replicates_channel_0() -> None:
    pytest.importorskip("cv2")
    img = np.zeros((32, 32, 3), np.uint8)
    img[..., 0] = np.tile(np.arange(100, 132, dtype=np.uint8), (32, 1))
    img[..., 1] = 255  # ignored: sleap-nn encodes the first channel
    rgb = clahe_rgb(img)
    assert rgb.shape == (32, 32, 3) and rgb.dtype == np.uint8
    assert (rgb[..., 0] == rgb[..., 2]).all()
    assert np.ptp(rgb[..., 0]) > 31  # stretched
