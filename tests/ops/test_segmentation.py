"""Segmentation decoding: hand-made maps with known answers, then parity with sleap-nn 0.3.5."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from sleap_infer.core.errors import UsageError
from sleap_infer.core.options import PredictOptions
from sleap_infer.layers.build import build_layer
from sleap_infer.layers.preprocessing import PreprocInfo
from sleap_infer.layers.segmentation import (
    BottomUpSegmentationLayer,
    CenteredInstanceMaskLayer,
    CropMasks,
    SemanticSegmentationLayer,
    pack_crop_masks,
)
from sleap_infer.model.config import parse_config
from sleap_infer.model.loader import load_model
from sleap_infer.ops.crops import gather_crops
from sleap_infer.ops.seg_group import (
    CenterPeaks,
    GridInstance,
    assign_pixels,
    find_center_peaks,
    group_instances,
)
from sleap_infer.ops.seg_masks import (
    clean_mask,
    ellipse_kernel,
    mask_to_original,
    mask_to_stride,
    open_close,
    stride_area_floor,
    valid_grid_size,
)
from sleap_infer.ops.seg_merge import (
    greedy_groups,
    merge_edges,
    merge_instances,
    multicut_groups,
)
from sleap_infer.runtimes import backend_maker

from fakes import FakeBackend
from model_factory import config_dict


def _peaks(hm: np.ndarray, threshold: float = 0.2, kernel: int = 3, cap: int | None = None):
    """(x, y) points and values of one frame's center peaks."""
    (p,) = find_center_peaks(
        torch.tensor(hm, dtype=torch.float32)[None, None], threshold, kernel, cap
    )
    return p.points.tolist(), p.values.tolist()


def _info(b: int, original: tuple[int, int], eff: float = 1.0, scale: float = 1.0) -> PreprocInfo:
    return PreprocInfo(np.full(b, eff), scale, original_size=original)


def _same(values: np.ndarray, expected: object) -> bool:
    """Exactly ``expected`` in the array's own dtype (MaskSet geometry may be float32 or 64)."""
    return np.array_equal(values, np.asarray(expected, dtype=values.dtype))


# ------------------------------------------------------------------ center peaks
def test_plateau_collapses_to_its_first_pixel() -> None:
    hm = np.zeros((8, 8), np.float32)
    hm[2:4, 3:5] = 0.7  # a 2x2 flat top: a strict NMS would find nothing
    hm[6, 6] = 0.5
    points, values = _peaks(hm)
    assert points == [[3.0, 2.0], [6.0, 6.0]]
    assert values == pytest.approx([0.7, 0.5])


def test_components_are_4_connected_and_keep_their_maximum() -> None:
    hm = np.zeros((8, 8), np.float32)
    hm[1, 1], hm[2, 2] = 0.5, 0.6  # diagonal neighbours: two components
    hm[5, 1], hm[5, 2] = 0.5, 0.6  # side by side: one component, its max wins
    points, values = _peaks(hm, kernel=1)  # kernel 1: every pixel above threshold is a candidate
    assert points == [[1.0, 1.0], [2.0, 2.0], [2.0, 5.0]]
    assert values == pytest.approx([0.5, 0.6, 0.6])
    # With the default 3x3 window the weaker diagonal pixel is suppressed.
    assert _peaks(hm)[0] == [[2.0, 2.0], [2.0, 5.0]]


def test_threshold_is_strict_and_borders_pad_with_minus_infinity() -> None:
    hm = np.zeros((6, 6), np.float32)
    hm[0, 0] = 0.3  # corner: the padding never beats it
    hm[4, 4] = 0.2  # equal to the threshold: dropped
    points, values = _peaks(hm, threshold=0.2)
    assert points == [[0.0, 0.0]]
    assert values == pytest.approx([0.3])
    hm[:] = -1.0  # a negative map: padding with zeros would suppress every border pixel
    hm[0, 3] = -0.5
    assert _peaks(hm, threshold=-0.6)[0] == [[3.0, 0.0]]


def test_max_instances_keeps_the_strongest_in_value_order() -> None:
    hm = np.zeros((8, 12), np.float32)
    hm[1, 1], hm[1, 6], hm[5, 3] = 0.3, 0.9, 0.5
    assert _peaks(hm)[1] == pytest.approx([0.3, 0.9, 0.5])  # raster order
    points, values = _peaks(hm, cap=2)
    assert values == pytest.approx([0.9, 0.5])
    assert points == [[6.0, 1.0], [3.0, 5.0]]
    assert _peaks(hm, cap=3)[1] == pytest.approx([0.3, 0.9, 0.5])  # not over the cap: no reorder


# ------------------------------------------------------------------- grouping
def _centers(*xy: tuple[float, float], values: list[float] | None = None) -> CenterPeaks:
    vals = values or [1.0] * len(xy)
    return CenterPeaks(torch.tensor(xy, dtype=torch.float32), torch.tensor(vals))


def test_pixels_go_to_the_nearest_predicted_center() -> None:
    fg = torch.ones(4, 6, dtype=torch.bool)
    offsets = torch.zeros(2, 4, 6)
    centers = _centers((1, 1), (4, 1))
    label = assign_pixels(fg, offsets, centers, stride=2)
    assert label.tolist() == [[0, 0, 0, 1, 1, 1]] * 4
    # An offset pointing pixel (x=5, y=0) at center 0's input pixel (1*2+1, 1*2+1) = (3, 3).
    offsets[0, 0, 5] = 3.0 - (5 * 2 + 1)
    offsets[1, 0, 5] = 3.0 - (0 * 2 + 1)
    assert assign_pixels(fg, offsets, centers, stride=2)[0, 5] == 0
    # Equidistant: the first center wins.
    tie = assign_pixels(fg, torch.zeros(2, 4, 6), _centers((1, 1), (3, 1)), stride=2)
    assert tie[:, 2].tolist() == [0, 0, 0, 0]
    # Background stays unassigned.
    fg[2:, :] = False
    assert (assign_pixels(fg, offsets, centers, stride=2)[2:] == -1).all()


def test_instances_carry_half_cell_centers_and_peak_scores() -> None:
    fg = torch.zeros(4, 8, dtype=torch.bool)
    fg[:, :3] = True
    centers = _centers((1, 1), (6, 2), values=[1.27, 0.4])  # the second gets no pixel
    (inst,) = group_instances(fg, torch.zeros(2, 4, 8), centers, stride=4)
    assert inst.center == (6.0, 6.0)  # 1 * 4 + 4/2
    assert inst.score == pytest.approx(1.27)
    assert inst.mask.tolist() == fg.numpy().tolist()


def test_distance_gate_drops_stray_pixels() -> None:
    fg = torch.zeros(5, 12, dtype=torch.bool)
    fg[1:4, 1:4] = True  # 9 pixels around the center
    fg[2, 9] = True  # a stray, 7 cells away, predicting itself as center
    centers = _centers((2, 2))
    offsets = torch.zeros(2, 5, 12)
    assert (assign_pixels(fg, offsets, centers, stride=1) == 0).sum() == 10
    # alpha 1: radius sqrt(10 / pi) = 1.78 cells, then sqrt(9 / pi) = 1.69: the block stays.
    gated = assign_pixels(fg, offsets, centers, stride=1, gate_alpha=1.0)
    block = fg.clone()
    block[2, 9] = False
    assert (gated == 0).tolist() == block.tolist()
    # A tight gate keeps only pixels within alpha * sqrt(area / pi): here the center alone.
    tight = assign_pixels(fg, offsets, centers, stride=1, gate_alpha=0.3, gate_iters=1)
    assert torch.nonzero(tight == 0).tolist() == [[2, 2]]


# ---------------------------------------------------------------- mask cleanup
def test_ellipse_kernel_matches_opencv() -> None:
    # cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2r+1, 2r+1)) for r = 1, 2, 3.
    assert ellipse_kernel(1).astype(int).tolist() == [[0, 1, 0], [1, 1, 1], [0, 1, 0]]
    assert ellipse_kernel(2).astype(int).tolist() == [
        [0, 0, 1, 0, 0],
        [1, 1, 1, 1, 1],
        [1, 1, 1, 1, 1],
        [1, 1, 1, 1, 1],
        [0, 0, 1, 0, 0],
    ]
    assert ellipse_kernel(3).astype(int).tolist() == [
        [0, 0, 0, 1, 0, 0, 0],
        [0, 1, 1, 1, 1, 1, 0],
        [1, 1, 1, 1, 1, 1, 1],
        [1, 1, 1, 1, 1, 1, 1],
        [1, 1, 1, 1, 1, 1, 1],
        [0, 1, 1, 1, 1, 1, 0],
        [0, 0, 0, 1, 0, 0, 0],
    ]
    k4 = ellipse_kernel(4).astype(int)  # row 1: 4 + rint(sqrt(7)) = 4 +- 3
    assert k4[1].tolist() == [0, 1, 1, 1, 1, 1, 1, 1, 0]
    assert k4[0].tolist() == [0, 0, 0, 0, 1, 0, 0, 0, 0]


def test_open_close_uses_opencv_borders() -> None:
    assert open_close(np.ones((5, 5), bool), 1).all()  # the frame edge does not erode a mask
    m = np.zeros((11, 11), bool)
    m[3:8, 3:8] = True
    m[0, 10] = True  # a speck: opened away
    # Opening with the cross cuts the square's four corners; closing adds nothing back.
    expected = np.zeros((11, 11), bool)
    expected[3:8, 3:8] = True
    for y, x in [(3, 3), (3, 7), (7, 3), (7, 7)]:
        expected[y, x] = False
    assert open_close(m, 1).tolist() == expected.tolist()
    # OpenCV's quirk: closing counts the outside as set when eroding, so a mask one
    # pixel off the frame edge grows up to it (column 0 here), but not on the far side.
    band = np.zeros((6, 6), bool)
    band[:, 1:4] = True
    grown = np.zeros((6, 6), bool)
    grown[:, :4] = True
    assert open_close(band, 1).tolist() == grown.tolist()


def test_cleanup_keeps_largest_component_and_fills_holes() -> None:
    m = np.zeros((8, 10), bool)
    m[1:5, 1:5] = True  # 16 pixels with a hole
    m[2:4, 2:4] = False
    m[6, 6:9] = True  # 3 pixels
    m[4, 5] = False
    out = clean_mask(m)
    expected = np.zeros((8, 10), bool)
    expected[1:5, 1:5] = True
    assert out.tolist() == expected.tolist()
    tie = np.zeros((5, 7), bool)
    tie[0, 0:2] = True
    tie[3, 4:6] = True
    assert np.argwhere(clean_mask(tie)).tolist() == [[0, 0], [0, 1]]  # first component wins
    assert not clean_mask(np.zeros((4, 4), bool), radius=1).any()


# ------------------------------------------------------------------- packaging
def test_valid_grid_rounds_where_the_resize_floored() -> None:
    # 105 px at scale 0.75: the network saw int(78.75) = 78 rows, but packaging counts
    # round(78.75) = 79 -> ceil(79 / 2) = 40 cells where the floor would give 39.
    assert valid_grid_size((48, 48), (105, 107), 0.75, 2) == (40, 40)  # 107: round(80.25)
    assert valid_grid_size((39, 48), (105, 107), 0.75, 2) == (39, 40)  # never past the grid
    # Python's round: 110 * 0.75 = 82.5 -> 82 (half to even) -> 41 cells, not 42.
    assert valid_grid_size((48, 48), (110, 110), 0.75, 2) == (41, 41)
    cut, (sx, sy) = mask_to_stride(np.ones((48, 48), bool), (105, 107), 0.75, 2)
    assert cut.shape == (40, 40)
    assert (sx, sy) == (40 / 107, 40 / 105)  # valid / original, not scale / stride
    # Without the frame size the whole grid is kept at 1 / stride.
    assert mask_to_stride(np.ones((5, 6), bool), None, 0.75, 4)[1] == (0.25, 0.25)
    assert valid_grid_size((10, 10), (3, 3), 0.1, 4) == (1, 1)  # never below one cell


def test_min_mask_area_floor_in_stride_cells() -> None:
    assert stride_area_floor(50, 0.5, 0.5) == 13  # ceil(12.5)
    assert stride_area_floor(0, 0.5, 0.5) == 1  # off: only empty masks go
    assert stride_area_floor(1, 0.25, 0.25) == 1
    assert stride_area_floor(100, 40 / 105, 41 / 107) == math.ceil(100 * 40 / 105 * 41 / 107)


def test_full_resolution_masks_resize_nearest() -> None:
    grid = np.zeros((2, 2), bool)
    grid[0, 0] = True
    # 6x6 frame at scale 0.5: 3x3 network pixels padded to 4x4; back to 6x6 by nearest.
    out = mask_to_original(grid, (4, 4), (6, 6), 0.5)
    expected = np.zeros((6, 6), bool)
    expected[:4, :4] = True
    assert out.tolist() == expected.tolist()
    assert mask_to_original(grid, (4, 4), None, 1.0).sum() == 4  # stride upsample only


# ----------------------------------------------------------------- fragment merge
def _two_halves(valley: bool) -> tuple[list[GridInstance], np.ndarray, np.ndarray]:
    """A 4x6-cell body split down the middle; centers at cells (1, 1) and (4, 1), stride 2."""
    left = np.zeros((4, 8), bool)
    left[:, :3] = True
    right = np.zeros((4, 8), bool)
    right[:, 3:6] = True
    heat = np.full((4, 8), 0.9, np.float32)
    offsets = np.zeros((2, 4, 8), np.float32)
    ys, xs = np.mgrid[:4, :8]
    if valley:  # heat drops between the centers; each half points at its own center
        heat[:, 2:4] = 0.0
        target = np.where(xs < 3, 3.0, 9.0)
    else:  # one ridge; every pixel points at the body's middle
        target = np.full(xs.shape, 6.0)
    offsets[0] = target - (xs * 2 + 1)
    offsets[1] = 3.0 - (ys * 2 + 1)
    insts = [GridInstance(left, (3.0, 3.0), 0.9), GridInstance(right, (9.0, 3.0), 0.95)]
    return insts, heat, offsets


@pytest.mark.parametrize("method", ["greedy", "multicut"])
def test_merge_joins_fragments_of_one_body(method: str) -> None:
    insts, heat, offsets = _two_halves(valley=False)
    # contact (4 + 4) / 12 saturates the gate; ridge 1 and agreement 1.
    assert merge_edges(insts, heat, offsets, 2) == {(0, 1): pytest.approx(1.0)}
    (merged,) = merge_instances(insts, heat, offsets, 2, method=method)
    assert merged.mask.tolist() == (insts[0].mask | insts[1].mask).tolist()
    assert (merged.center, merged.score) == ((9.0, 3.0), 0.95)  # the best-scoring member's


@pytest.mark.parametrize("method", ["greedy", "multicut"])
def test_merge_keeps_two_animals_across_a_valley(method: str) -> None:
    insts, heat, offsets = _two_halves(valley=True)
    # ridge 0; the predicted centers sit 6 px apart with no spread: agree = exp(-36 / 32).
    edges = merge_edges(insts, heat, offsets, 2)
    assert edges == {(0, 1): pytest.approx(0.25 * math.exp(-36 / 32) / 1.25)}
    out = merge_instances(insts, heat, offsets, 2, method=method)
    assert [o.score for o in out] == [0.9, 0.95]
    assert [o.mask.tolist() for o in out] == [i.mask.tolist() for i in insts]


def test_greedy_merges_by_mean_affinity_per_threshold() -> None:
    edges = {(0, 1): 0.9, (0, 2): 0.5, (1, 2): 0.3}
    # 0-1 join at 0.85; the group's edge to 2 is then the mean 0.4.
    assert greedy_groups(3, edges, (0.85, 0.6, 0.4)) == [[0, 1, 2]]
    assert greedy_groups(3, edges, (0.85, 0.6, 0.45)) == [[0, 1], [2]]
    assert greedy_groups(3, {}, (0.4,)) == [[0], [1], [2]]


def test_multicut_sums_parallel_costs() -> None:
    edges = {(0, 1): 0.9, (0, 2): 0.6, (1, 2): 0.2}
    # logit(0.9) > 0 joins 0-1; logit(0.6) + logit(0.2) = 0.405 - 1.386 < 0 keeps 2 apart.
    assert multicut_groups(3, edges) == [[0, 1], [2]]
    assert multicut_groups(3, {(0, 2): 0.7, (1, 2): 0.7}) == [[0, 1, 2]]


# -------------------------------------------------------------------- layers
def _bottomup_outputs() -> dict[str, torch.Tensor]:
    """Two frames on an 8x8 grid (16x16 input, stride 2): two blobs in frame 0, none in 1."""
    fg = torch.zeros(2, 1, 8, 8)
    fg[0, 0, 1:4, 1:5] = 0.9  # 12 cells
    fg[0, 0, 6:8, 4:7] = 0.8  # 6 cells
    heat = torch.zeros(2, 1, 8, 8)
    heat[0, 0, 2, 2] = 1.27
    heat[0, 0, 6, 5] = 0.6
    heat[1, 0, 4, 4] = 0.9  # a center without foreground
    return {
        "SegmentationHead": fg,
        "InstanceCenterHead": heat,
        "CenterOffsetHead": torch.zeros(2, 2, 8, 8),
    }


def _bottomup_layer(**options: object) -> BottomUpSegmentationLayer:
    cfg = parse_config(config_dict("bottomup_segmentation"))
    out = _bottomup_outputs()
    return BottomUpSegmentationLayer(cfg, FakeBackend(lambda x: out), PredictOptions(**options))


def test_bottomup_layer_packs_stride_masks() -> None:
    layer = _bottomup_layer()
    preds = layer.postprocess(_bottomup_outputs(), _info(2, (16, 16)))
    ms = preds.masks
    assert preds.valid.shape == (2, 0) and ms is not None
    assert ms.frame.tolist() == [0, 0]
    assert ms.score.tolist() == pytest.approx([1.27, 0.6])
    assert ms.scale.tolist() == [[0.5, 0.5], [0.5, 0.5]]
    assert ms.offset.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    fg = _bottomup_outputs()["SegmentationHead"][0, 0].numpy()
    assert ms.mask(0).tolist() == ((fg > 0.5) & (np.arange(8)[:, None] < 4)).tolist()
    assert ms.areas().tolist() == [12, 6]
    # min_mask_area 25 original px = ceil(6.25) = 7 cells: the 6-cell mask goes.
    small = _bottomup_layer(min_mask_area=25).postprocess(_bottomup_outputs(), _info(2, (16, 16)))
    assert small.masks is not None and small.masks.score.tolist() == pytest.approx([1.27])
    # Capped to one instance: the stronger center.
    one = _bottomup_layer(max_instances=1).postprocess(_bottomup_outputs(), _info(2, (16, 16)))
    assert one.masks is not None and one.masks.areas().tolist() == [18]


def test_bottomup_layer_cuts_masks_to_the_frame() -> None:
    # A 13x15 frame padded to 16x16: round(13) / 2 -> 7 rows, 15 / 2 -> 8 columns.
    preds = _bottomup_layer().postprocess(_bottomup_outputs(), _info(2, (13, 15)))
    ms = preds.masks
    assert ms is not None and ms.size.tolist() == [[7, 8], [7, 8]]
    assert _same(ms.scale, [[8 / 15, 7 / 13]] * 2)
    assert ms.areas().tolist() == [12, 3]  # the bottom row of the small blob is padding
    # A size-matcher factor enters through float32 (how sleap-nn keeps it).
    eff = 0.7
    info = _info(2, (20, 20), eff=eff)
    s = float(np.float32(eff))
    cut = _bottomup_layer().postprocess(_bottomup_outputs(), info).masks
    assert cut is not None and cut.size.tolist()[0] == [math.ceil(round(20 * s) / 2)] * 2


def test_bottomup_layer_full_resolution() -> None:
    layer = _bottomup_layer(full_res_masks=True, min_mask_area=25)
    ms = layer.postprocess(_bottomup_outputs(), _info(2, (16, 16))).masks
    assert ms is not None
    assert ms.size.tolist() == [[16, 16]]  # the 6-cell mask (24 px < 25) went
    assert ms.scale.tolist() == [[1.0, 1.0]]
    assert ms.areas().tolist() == [48]
    expected = np.zeros((16, 16), bool)
    expected[2:8, 2:10] = True
    assert ms.mask(0).tolist() == expected.tolist()


def test_bottomup_layer_cleanup_and_merge_run() -> None:
    out = _bottomup_outputs()
    out["SegmentationHead"][0, 0, 2, 2] = 0.1  # a hole under the big center
    layer = _bottomup_layer(mask_cleanup=True)
    ms = layer.postprocess(out, _info(2, (16, 16))).masks
    assert ms is not None and ms.areas().tolist() == [12, 6]  # the hole is filled again
    # The two blobs do not touch: merging leaves them apart.
    merged = _bottomup_layer(merge_fragments=True).postprocess(out, _info(2, (16, 16))).masks
    assert merged is not None and merged.areas().tolist() == [11, 6]


def test_semantic_layer_one_mask_scored_by_mean_probability() -> None:
    cfg = parse_config(config_dict("semantic_segmentation"))
    prob = torch.zeros(2, 1, 8, 8)
    prob[0, 0, 1:3, 1:3] = torch.tensor([[0.6, 0.7], [0.8, 0.9]])
    prob[0, 0, 6, 6] = 0.55  # disconnected: same mask
    prob[1, 0] = 0.5  # not above the threshold: no mask
    layer = SemanticSegmentationLayer(cfg, FakeBackend(lambda x: {}), PredictOptions())
    ms = layer.postprocess({"SegmentationHead": prob}, _info(2, (16, 16))).masks
    assert ms is not None and ms.frame.tolist() == [0]
    # torch's float32 mean, as sleap-nn (numpy sums in another order: 0.71 vs 0.71000004).
    assert ms.score[0] == torch.tensor([0.6, 0.7, 0.8, 0.9, 0.55]).mean().item()
    assert ms.score[0] == pytest.approx(0.71)
    assert ms.areas().tolist() == [5]
    assert ms.scale.tolist() == [[0.5, 0.5]]


def _cis_layer(backend: FakeBackend, **options: object) -> CenteredInstanceMaskLayer:
    cfg = parse_config(config_dict("centered_instance_segmentation"))
    return CenteredInstanceMaskLayer(cfg, backend, PredictOptions(**options))


def test_crop_masks_score_by_mean_probability() -> None:
    prob = torch.zeros(3, 1, 16, 16)
    prob[0, 0, 4:6, 4:6] = torch.tensor([[0.6, 0.8], [1.0, 0.4]])  # 0.4 is background
    prob[2, 0, 0, 0] = 0.75
    backend = FakeBackend(lambda x: {"SegmentationHead": prob})
    layer = _cis_layer(backend)
    res = layer.run_crops(torch.zeros(3, 1, 32, 32, dtype=torch.uint8))
    assert backend.inputs[0].shape == (3, 1, 32, 32)
    assert res.masks.shape == (3, 16, 16)
    assert res.masks.sum(dim=(1, 2)).tolist() == [3, 0, 1]
    assert res.scores.tolist() == pytest.approx([0.8, 0.0, 0.75])
    with pytest.raises(UsageError, match="centroid model"):
        layer.postprocess({"SegmentationHead": prob}, _info(3, (32, 32)))


def test_crop_masks_are_placed_by_top_left_and_eff_scale() -> None:
    masks = np.zeros((3, 4, 4), bool)
    masks[0, 0, 0] = masks[0, 3, 3] = True
    masks[2, 1:3, 1:3] = True
    ms = pack_crop_masks(
        masks,
        np.float32([0.9, 0.0, 0.7]),
        frame=np.array([0, 0, 1]),
        top_left=np.array([[10, -4], [0, 0], [3, 5]]),
        eff_scale=np.array([0.5, 0.5, 0.3]),
        input_scale=0.5,
        stride=2,
    )
    assert ms.frame.tolist() == [0, 1]  # the empty crop is dropped, order kept
    eff = float(np.float32(0.3))  # sleap-nn's float32 size-matcher factor, divided in float64
    assert _same(ms.offset, [[20.0, -8.0], [3 / eff, 5 / eff]])
    assert _same(ms.scale, [[0.125, 0.125], [eff * 0.5 / 2] * 2])
    assert ms.score.tolist() == pytest.approx([0.9, 0.7])
    assert ms.mask(0).tolist() == masks[0].tolist()  # whole crop grid, not clipped
    # The layer method: this model's input scale (1) and stride (2); batch padding ignored.
    layer = _cis_layer(FakeBackend(lambda x: {}))
    res = CropMasks(torch.from_numpy(masks), torch.tensor([0.9, 0.0, 0.7, 0.1]))
    placed = layer.package_crop_masks(
        res, torch.tensor([0, 0]), torch.tensor([[10, -4], [0, 0]]), np.ones(2)
    )
    assert placed.offset.tolist() == [[10.0, -4.0]]
    assert placed.scale.tolist() == [[0.5, 0.5]]


# ------------------------------------------------------------ sleap-nn parity
def _fixture_frames(shared: Path) -> np.ndarray:
    import sleap_io as sio

    path = shared / "videos" / "synthetic_multi.pkg.slp"
    if not path.exists():
        pytest.skip(f"{path} not found")
    video = sio.load_slp(str(path)).videos[0]
    return np.stack([video[i] for i in range(len(video))])


def _reference(shared: Path, name: str) -> dict[int, list]:
    import sleap_io as sio

    path = shared / "reference" / name
    if not path.exists():
        pytest.skip(f"{path} not found")
    return {lf.frame_idx: list(lf.masks) for lf in sio.load_slp(str(path))}


def _compare(ms, frame: int, batch_row: int, refs: list) -> tuple[int, float]:
    """Assert one frame's masks equal sleap-nn's; return (masks, max score difference)."""
    ours = ms.in_frame(batch_row)
    assert len(ours) == len(refs), f"frame {frame}: {len(ours)} masks, sleap-nn {len(refs)}"
    worst = 0.0
    for k, ref in zip(ours, refs):
        mask = ms.mask(k)
        assert mask.shape == ref.data.shape, f"frame {frame} mask {k}"
        if not (mask == ref.data).all():
            iou = (mask & ref.data).sum() / max(1, (mask | ref.data).sum())
            pytest.fail(
                f"frame {frame} mask {k}: {int((mask != ref.data).sum())} px differ, IoU {iou}"
            )
        assert _same(np.float32(ms.scale[k]), ref.scale)  # the .slp stores float32
        assert _same(np.float32(ms.offset[k]), ref.offset)
        worst = max(worst, abs(float(ms.score[k]) - ref.score))
    return len(ours), worst


@pytest.mark.parametrize(
    ("model", "reference", "options"),
    [
        ("synthetic_bottomup_segmentation", "bottomup_segmentation.slp", {}),
        (
            "synthetic_bottomup_segmentation",
            "bottomup_segmentation_fullres_cleanup.slp",
            {"full_res_masks": True, "mask_cleanup": True, "min_mask_area": 50},
        ),
        ("synthetic_semantic_segmentation", "semantic_segmentation.slp", {}),
    ],
)
def test_parity_with_sleap_nn(shared: Path, model: str, reference: str, options: dict) -> None:
    model_dir = shared / "models" / model
    if not model_dir.is_dir():
        pytest.skip(f"{model_dir} not found")
    frames = _fixture_frames(shared)
    refs = _reference(shared, reference)
    layer = build_layer(
        [load_model(model_dir)], backend_maker("torch", "cpu"), PredictOptions(**options)
    )
    total, worst = 0, 0.0
    for start in range(0, len(frames), 4):
        ms = layer.predict(frames[start : start + 4]).masks
        assert ms is not None
        for row in range(len(frames[start : start + 4])):
            n, diff = _compare(ms, start + row, row, refs.get(start + row, []))
            total, worst = total + n, max(worst, diff)
    assert total == sum(len(v) for v in refs.values()) > 0
    assert worst <= 1e-5


def test_crop_mask_parity_with_sleap_nn(shared: Path) -> None:
    """Stage 2 alone: crops cut at sleap-nn's own crop corners (its offsets, eff 1)."""
    model_dir = shared / "models" / "synthetic_centered_instance_segmentation"
    if not model_dir.is_dir():
        pytest.skip(f"{model_dir} not found")
    frames = torch.from_numpy(_fixture_frames(shared)).permute(0, 3, 1, 2).contiguous()
    refs = _reference(shared, "cis_topdown.slp")
    frame = torch.tensor([f for f in sorted(refs) for _ in refs[f]])
    masks = [m for f in sorted(refs) for m in refs[f]]
    top_left = torch.tensor(np.array([m.offset for m in masks])).round().long()
    model = load_model(model_dir)
    layer = CenteredInstanceMaskLayer(model.config, backend_maker("torch", "cpu")(model))
    crop = layer.crop_size
    result = layer.run_crops(gather_crops(frames, frame, top_left, crop, crop))
    ms = layer.package_crop_masks(result, frame, top_left, np.ones(len(frame)))
    assert len(ms) == len(masks) == 48
    worst = 0.0
    for k, ref in enumerate(masks):
        assert (ms.mask(k) == ref.data).all()
        assert _same(np.float32(ms.scale[k]), ref.scale)  # the .slp stores float32
        assert _same(np.float32(ms.offset[k]), ref.offset)
        worst = max(worst, abs(float(ms.score[k]) - ref.score))
    assert worst <= 1e-5
