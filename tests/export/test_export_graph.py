"""In-graph peak and scoring ops (static shapes) agree with the host ops they replace."""

from __future__ import annotations

import pytest
import torch

from sleap_infer.export.graph_ops import gather_patches, local_peak_candidates, refined_points
from sleap_infer.export.graph_scoring import paf_line_scores, sample_maps_at
from sleap_infer.ops.identity import sample_class_maps
from sleap_infer.ops.paf import connection_candidates, max_edge_length, score_candidates
from sleap_infer.ops.peaks import find_global_peaks, find_local_peaks, global_peak_indices

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
    x, y, values, dropped = local_peak_candidates(cms, k=14 * 16)
    assert torch.isneginf(dropped).all()  # every maximum fits
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
    x, y, values, dropped = local_peak_candidates(cms, k=2)
    # The two strongest, re-sorted by position: (5,5) comes before (8,1) in raster order.
    assert values[0, 0].tolist() == pytest.approx([0.9, 0.6])
    assert x[0, 0].tolist() == [5, 1] and y[0, 0].tolist() == [5, 8]
    assert dropped[0, 0].item() == pytest.approx(0.3)  # the one left out
    x, y, values, dropped = local_peak_candidates(cms, k=5)
    assert torch.isneginf(values[0, 0, 3:]).all() and torch.isneginf(dropped).all()
    assert values[0, 0, :3].tolist() == pytest.approx([0.3, 0.9, 0.6])
    # Empty slots sit at a fixed place, so every runtime returns the same arrays.
    assert x[0, 0, 3:].tolist() == [0, 0] and y[0, 0, 3:].tolist() == [0, 0]


def test_all_pairs_line_scores_equal_the_host_scores_of_those_pairs() -> None:
    torch.manual_seed(2)
    edges = [(0, 1), (1, 2), (0, 2)]
    pafs = torch.randn(2, 2 * len(edges), 9, 11)
    points = torch.rand(2, 3, 4, 2) * torch.tensor([44.0, 36.0])  # (B, N, K, 2) input px
    points[1, 2, 3] = points[1, 0, 1]  # one zero-length pair: NaN on both sides
    got = paf_line_scores(pafs, points, edges, 4, 10, max_edge_length(pafs, 4, 0.25), 1.0)
    assert got.shape == (2, 3, 4, 4)
    # The host scores a flat list: peak p = (b, n, k) in that order.
    flat = points.reshape(-1, 2)
    sample = torch.arange(2).repeat_interleave(12)
    channel = torch.arange(3).repeat_interleave(4).repeat(2)
    cands = connection_candidates(sample, channel, edges)
    ref = score_candidates(pafs, flat, sample, cands, paf_stride=4)
    slot = torch.arange(24) % 4
    mine = got[sample[cands.src], cands.edge, slot[cands.src], slot[cands.dst]]
    assert len(cands) == 2 * 3 * 16 and int(torch.isnan(ref).sum()) == 1
    torch.testing.assert_close(mine, ref, equal_nan=True, atol=1e-6, rtol=0)


def test_class_maps_at_slots_equal_the_host_sampling() -> None:
    torch.manual_seed(3)
    maps = torch.rand(2, 3, 7, 9)
    points = torch.rand(2, 2, 5, 2) * 12 - 1  # some outside the map: clamped
    points[0, 1, 4] = float("nan")  # an empty slot's position never becomes a wild index
    got = sample_maps_at(maps, points)
    assert got.shape == (2, 2, 5, 3) and torch.isfinite(got).all()
    keep = torch.isfinite(points).all(dim=-1)
    sample = torch.arange(2)[:, None, None].expand(2, 2, 5)[keep]
    torch.testing.assert_close(got[keep], sample_class_maps(maps, points[keep], sample))
