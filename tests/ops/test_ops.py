"""Peak finding, refinement and preprocessing ops, checked against hand-made inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sleap_infer.ops.peaks import (
    find_global_peaks,
    find_local_peaks,
    integral_offsets,
    neighbour_max_split,
    refine_integral,
    refinement_fallbacks,
)
from sleap_infer.ops.preprocess import (
    as_nchw,
    coerce_channels,
    pad_to_stride,
    resize,
    scale_image,
    size_match,
)


def gaussian(h: int, w: int, x: float, y: float, sigma: float = 1.5) -> torch.Tensor:
    yy, xx = torch.meshgrid(torch.arange(h).float(), torch.arange(w).float(), indexing="ij")
    return torch.exp(-((xx - x) ** 2 + (yy - y) ** 2) / (2 * sigma**2))


def test_global_peaks_grid_and_threshold() -> None:
    cms = torch.zeros(2, 3, 20, 30)
    cms[0, 0, 5, 7] = 0.9
    cms[0, 1, 15, 2] = 0.5
    cms[0, 2, 1, 1] = 0.1  # below threshold
    cms[1, 0, 19, 29] = 1.0
    pts, vals = find_global_peaks(cms, threshold=0.2, refine=False)
    assert pts[0, 0].tolist() == [7, 5]
    assert pts[0, 1].tolist() == [2, 15]
    assert torch.isnan(pts[0, 2]).all() and vals[0, 2] == 0
    assert pts[1, 0].tolist() == [29, 19]
    assert vals[0, 0] == pytest.approx(0.9)
    # Exactly at the threshold is kept (sleap-nn drops only values strictly below).
    pts, vals = find_global_peaks(cms, threshold=0.5, refine=False)
    assert pts[0, 1].tolist() == [2, 15]


def test_integral_refinement_recovers_subpixel_centre() -> None:
    # A symmetric blob centred between pixels: the patch mean is the true centre.
    cm = torch.zeros(1, 1, 21, 21)
    cm[0, 0, 10, 10] = 1.0
    cm[0, 0, 10, 11] = 1.0
    cm[0, 0, 9, 10] = 0.5
    pts, _ = find_global_peaks(cm, threshold=0.1, refine=True)
    # x: weights 1 at 10 and 1 at 11 (+0.5 at 10) -> 10 + 1/2.5 ; y: 0.5 at 9 -> 10 - 0.5/2.5
    assert pts[0, 0, 0].item() == pytest.approx(10 + 1 / 2.5)
    assert pts[0, 0, 1].item() == pytest.approx(10 - 0.5 / 2.5)


def test_refinement_zero_pads_at_edges() -> None:
    maps = torch.zeros(1, 8, 8)
    maps[0, 0, 0] = 2.0
    maps[0, 0, 1] = 2.0
    off = refine_integral(maps, torch.tensor([0]), torch.tensor([[0.0, 0.0]]), patch_size=5)
    assert off[0].tolist() == pytest.approx([0.5, 0.0])


# The 5x5 patch around a node-1 peak in frame 470 of centered_pair_small (multi-class
# bottom-up fixture): negative confidences cancel the peak, the sum is -0.025 and
# sleap-nn's patch mean is x - 285 grid px (written as x = -984 px in a 384 px frame).
CANCELLING_PATCH = [
    [-0.2668, 0.0606, 0.1429, 0.1166, 0.0662],
    [-0.5707, -0.0275, 0.3738, 0.1576, 0.1250],
    [-0.7338, -0.1989, 0.5396, 0.1523, 0.1504],
    [-0.6566, -0.2306, 0.3387, 0.1096, 0.1610],
    [-0.1987, -0.0001, 0.1775, 0.0527, 0.1341],
]


def test_refinement_keeps_the_integer_peak_when_the_patch_mean_leaves_the_patch() -> None:
    patch = torch.tensor(CANCELLING_PATCH)
    total = patch.sum()
    raw_dx = float((patch.sum(0) * torch.arange(-2.0, 3.0)).sum() / total)
    assert abs(raw_dx) > 100  # what sleap-nn adds: far outside the 5x5 patch
    assert integral_offsets(patch[None]).tolist() == [[0.0, 0.0]]
    assert refinement_fallbacks(patch[None]).tolist() == [True]
    # Through the map path too: the peak stays on its pixel.
    maps = torch.zeros(1, 9, 9)
    maps[0, 2:7, 1:6] = patch
    pts, vals, *_ = find_local_peaks(maps[None], threshold=0.2, refine=True)
    assert pts.tolist() == [[3.0, 4.0]] and vals.tolist() == pytest.approx([0.5396])


def test_refinement_falls_back_on_a_zero_sum_instead_of_nan() -> None:
    patch = torch.zeros(1, 5, 5)
    patch[0, 2, 2], patch[0, 2, 0] = 1.0, -1.0
    assert integral_offsets(patch).tolist() == [[0.0, 0.0]]


def test_refinement_with_negative_values_inside_the_patch_is_sleap_nns() -> None:
    # Negative pixels that leave the mean inside the patch are not touched.
    patch = torch.zeros(1, 5, 5)
    patch[0, 2, 2], patch[0, 2, 3], patch[0, 2, 0] = 1.0, 0.5, -0.2
    expected_dx = (0.5 * 1 + -0.2 * -2) / 1.3
    assert integral_offsets(patch)[0].tolist() == pytest.approx([expected_dx, 0.0])
    assert refinement_fallbacks(patch).tolist() == [False]
    # Non-negative patches are always inside: the guard never fires on them.
    torch.manual_seed(0)
    assert not refinement_fallbacks(torch.rand(1000, 5, 5)).any()
    assert (integral_offsets(torch.rand(1000, 5, 5)).abs() <= 2).all()


def test_refined_gaussian_peak_is_close_to_truth() -> None:
    cm = gaussian(40, 40, 12.3, 20.6)[None, None]
    grid, _ = find_global_peaks(cm, threshold=0.1, refine=False)
    pts, _ = find_global_peaks(cm, threshold=0.1, refine=True)
    truth = torch.tensor([12.3, 20.6])
    grid_err = (grid[0, 0] - truth).abs()
    refined_err = (pts[0, 0] - truth).abs()
    # Truncating the Gaussian to a 5x5 patch biases towards the grid peak, but refinement
    # still removes well over half of the quantisation error on each axis.
    assert (refined_err < grid_err * 0.5).all(), (grid_err, refined_err)


def test_local_peaks_raster_order_and_strictness() -> None:
    cms = torch.zeros(2, 2, 10, 10)
    cms[0, 1, 2, 3] = 0.8
    cms[0, 0, 2, 7] = 0.6
    cms[0, 0, 6, 1] = 0.9
    cms[1, 0, 4, 3:6] = 0.7  # a 3-wide plateau does not fit a 2x2 block: no peak
    cms[1, 1, 8, 8] = 0.3
    pts, vals, sample, channel = find_local_peaks(cms, threshold=0.5, refine=False)
    # Order: sample, then row, then column, then channel.
    assert sample.tolist() == [0, 0, 0]
    assert pts.tolist() == [[3, 2], [7, 2], [1, 6]]
    assert channel.tolist() == [1, 0, 0]
    assert vals.tolist() == pytest.approx([0.8, 0.6, 0.9])


def test_local_peaks_threshold_is_strict() -> None:
    cms = torch.zeros(1, 1, 5, 5)
    cms[0, 0, 2, 2] = 0.5
    assert find_local_peaks(cms, threshold=0.5, refine=False)[0].shape[0] == 0
    assert find_local_peaks(cms, threshold=0.49, refine=False)[0].shape[0] == 1


def test_neighbour_max_excludes_centre() -> None:
    x = torch.arange(9.0).reshape(1, 1, 3, 3)
    before, after = neighbour_max_split(x)
    assert before[0, 0, 1, 1] == 3 and after[0, 0, 1, 1] == 8  # NW, N, NE, W / E, SW, S, SE
    nm = torch.maximum(before, after)
    assert nm[0, 0, 1, 1] == 8  # centre is 4, neighbours up to 8
    assert nm[0, 0, 2, 2] == 7  # corner: neighbours 4, 5, 7


def test_size_match_scales_and_pads_bottom_right() -> None:
    x = torch.full((1, 1, 100, 200), 200, dtype=torch.uint8)
    out, ratio = size_match(x, 150, 150)
    assert ratio == pytest.approx(0.75)
    assert out.shape == (1, 1, 150, 150)
    assert out[0, 0, :75].min() == 200  # resized content at the top
    assert out[0, 0, 75:].max() == 0  # zero padding below
    same, r = size_match(x, 100, 200)
    assert r == 1.0 and same is x
    up, r = size_match(torch.zeros(1, 1, 50, 50, dtype=torch.uint8), 100, 200)
    assert r == 2.0 and up.shape[-2:] == (100, 200)


def test_scale_truncates_sizes_and_keeps_uint8() -> None:
    x = torch.randint(0, 255, (2, 3, 321, 561), dtype=torch.uint8)
    out = scale_image(x, 0.5)
    assert out.shape == (2, 3, 160, 280) and out.dtype == torch.uint8
    ref = torch.nn.functional.interpolate(
        x.float(), size=(160, 280), mode="bilinear", align_corners=False, antialias=True
    )
    assert (out.float() - ref).abs().max() <= 1.0


def test_float_resize_path_matches_uint8_kernel_closely() -> None:
    x = torch.randint(0, 255, (1, 1, 64, 64), dtype=torch.uint8)
    native = resize(x, (32, 32))
    via_float = resize(x.float(), (32, 32)).round().clamp(0, 255).to(torch.uint8)
    assert (native.int() - via_float.int()).abs().max() <= 1


def test_pad_to_stride() -> None:
    x = torch.ones(1, 1, 17, 32, dtype=torch.uint8)
    out = pad_to_stride(x, 16)
    assert out.shape[-2:] == (32, 32)
    assert out[..., 17:, :].sum() == 0 and out[..., :17, :].min() == 1
    assert pad_to_stride(x, 1) is x


def test_channel_coercion() -> None:
    rgb = torch.tensor([[[[100]], [[200]], [[50]]]], dtype=torch.uint8)
    gray = coerce_channels(rgb, ensure_rgb=False, ensure_grayscale=True)
    expected = math.floor(0.2989 * 100 + 0.587 * 200 + 0.114 * 50)  # truncated, not rounded
    assert gray.shape == (1, 1, 1, 1) and gray.item() == expected
    assert coerce_channels(gray, ensure_rgb=True, ensure_grayscale=False).shape[1] == 3
    assert coerce_channels(rgb, ensure_rgb=True, ensure_grayscale=True) is rgb


def test_as_nchw_accepts_numpy_frames() -> None:
    frames = np.zeros((2, 10, 20, 3), np.uint8)
    frames[1, 3, 4] = [1, 2, 3]
    x = as_nchw(frames)
    assert x.shape == (2, 3, 10, 20)
    assert x[1, :, 3, 4].tolist() == [1, 2, 3]
    assert as_nchw(frames[0]).shape == (1, 3, 10, 20)
