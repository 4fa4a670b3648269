"""In-graph peak ops (static shapes) agree with the host ops they replace."""

from __future__ import annotations

import pytest
import torch

from sleap_infer.export.graph_ops import (
    gather_patches,
    global_peak_indices,
    local_peak_candidates,
    refined_points,
)
from sleap_infer.ops.peaks import find_global_peaks, find_local_peaks

from fakes import gaussian_maps


def test_global_peaks_and_refinement_match_host() -> None:
    torch.manual_seed(0)
    cms = torch.rand(2, 3, 12, 17)
    x, y, values = global_peak_indices(cms)
    got = refined_points(cms, x[..., None], y[..., None], True, 5)[:, :, 0]
    ref, ref_values = find_global_peaks(cms, threshold=float("-inf"), refine=True, patch_size=5)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=0)
    torch.testing.assert_close(values, ref_values)


def test_patches_are_zero_outside_the_map() -> None:
    cms = torch.arange(1, 17, dtype=torch.float32).reshape(1, 1, 4, 4)
    patch = gather_patches(cms, torch.tensor([[[0]]]), torch.tensor([[[0]]]), 3)[0, 0, 0]
    assert patch.tolist() == [[0, 0, 0], [0, 1, 2], [0, 5, 6]]


def test_local_candidates_are_the_host_peaks_in_raster_order() -> None:
    torch.manual_seed(1)
    centres = [[(3.2, 4.0), (10.0, 2.5)], [(7.7, 9.1), (1.0, 1.0)]]
    cms = gaussian_maps((14, 16), centres) * 0.8 + torch.rand(2, 2, 14, 16) * 0.05
    x, y, values = local_peak_candidates(cms, k=14 * 16)
    points = refined_points(cms, x, y, True, 5)
    ref_pts, ref_vals, sample, channel = find_local_peaks(cms, float("-inf"), True, 5)
    for b in range(2):
        for c in range(2):
            keep = torch.isfinite(values[b, c])
            mine = (sample == b) & (channel == c)
            assert int(keep.sum()) == int(mine.sum()) > 2
            torch.testing.assert_close(values[b, c][keep], ref_vals[mine])
            torch.testing.assert_close(points[b, c][keep], ref_pts[mine], atol=1e-5, rtol=0)


def test_local_candidates_keep_the_strongest_k_and_pad_with_minus_inf() -> None:
    cms = torch.zeros(1, 1, 10, 10)
    cms[0, 0, 1, 8] = 0.3
    cms[0, 0, 5, 5] = 0.9
    cms[0, 0, 8, 1] = 0.6
    x, y, values = local_peak_candidates(cms, k=2)
    # The two strongest, re-sorted by position: (5,5) comes before (8,1) in raster order.
    assert values[0, 0].tolist() == pytest.approx([0.9, 0.6])
    assert x[0, 0].tolist() == [5, 1] and y[0, 0].tolist() == [5, 8]
    _, _, values = local_peak_candidates(cms, k=5)
    assert torch.isinf(values[0, 0, 3:]).all() and (values[0, 0, 3:] < 0).all()
    assert values[0, 0, :3].tolist() == pytest.approx([0.3, 0.9, 0.6])
