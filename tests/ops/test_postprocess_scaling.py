"""The cheaper peak and PAF paths (issue 32) give exactly what the dense formulas give.

``find_local_peaks`` compares only pixels above the threshold with their neighbours and
``score_candidates`` gathers PAF values through flat indices; both must keep sleap-nn's
results bit for bit, including ties, plateaus, map borders and NaN.
"""

from __future__ import annotations

import torch

from sleap_infer.ops import peaks
from sleap_infer.ops.paf import connection_candidates, max_edge_length, score_candidates
from sleap_infer.ops.peaks import find_local_peaks, flat_tops, neighbour_max_split


def dense_local_peaks(cms: torch.Tensor, threshold: float) -> tuple[torch.Tensor, ...]:
    """The dense reference on whole shifted maps: above the 4 neighbours before, ``>=``
    the 4 after, flat tops checked on every pixel; raster order."""
    height, width = cms.shape[-2:]
    before, after = neighbour_max_split(cms)
    padded = torch.nn.functional.pad(cms, (2, 2, 2, 2), value=float("-inf"))
    keep, offsets = flat_tops(
        cms, lambda dy, dx: padded[..., 2 + dy : 2 + dy + height, 2 + dx : 2 + dx + width]
    )
    is_peak = (cms > before) & (cms >= after) & keep & (cms > threshold)
    s, row, col, ch = torch.nonzero(is_peak.permute(0, 2, 3, 1), as_tuple=True)
    return s, ch, row, col, offsets[s, ch, row, col]


def tricky_maps(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    cms = torch.rand(3, 4, 17, 23, generator=g) * 0.3
    cms[0, 0, 0, 0] = 0.9  # corner peak
    cms[0, 1, 16, 10] = 0.9  # border peak
    cms[1, 2, 5, 5] = cms[1, 2, 5, 6] = 0.8  # a flat top of two: one peak at x = 5.5
    cms[1, 1, 9, 3:6] = 0.8  # three in a row: no peak
    cms[2, 3, 8, 8] = float("nan")  # NaN neighbour kills its neighbours' peaks
    cms[2, 3, 7, 7] = 0.95
    cms[2, 0] = 0.0  # an empty map
    return cms


def test_sparse_local_peaks_match_dense_reference() -> None:
    for seed in range(5):
        cms = tricky_maps(seed)
        for threshold in (0.0, 0.1, 0.25, 0.5, 2.0):
            points, values, s, ch = find_local_peaks(cms, threshold, refine=False)
            ref_s, ref_ch, ref_row, ref_col, ref_off = dense_local_peaks(cms, threshold)
            assert torch.equal(s, ref_s) and torch.equal(ch, ref_ch)
            assert torch.equal(points[:, 0], ref_col + ref_off[:, 0])
            assert torch.equal(points[:, 1], ref_row + ref_off[:, 1])
            assert torch.equal(values, cms[ref_s, ref_ch, ref_row, ref_col])


def test_sparse_and_dense_paths_agree(monkeypatch) -> None:
    """Many pixels above the threshold take the dense pass; both passes give the same peaks."""
    cms = tricky_maps(7)
    sparse = find_local_peaks(cms, 0.05)
    monkeypatch.setattr(peaks, "DENSE_FRACTION", 10**9)  # force the dense pass
    dense = find_local_peaks(cms, 0.05)
    for a, b in zip(sparse, dense):
        assert torch.equal(a, b)


def test_no_pixel_above_threshold_gives_empty_peaks() -> None:
    points, values, s, ch = find_local_peaks(torch.zeros(2, 3, 64, 64), 0.2)
    assert points.shape == (0, 2) and values.shape == (0,) and s.dtype == torch.long
    assert ch.dtype == torch.long


def reference_scores(pafs, points, sample, cands, stride, n_points, limit) -> torch.Tensor:
    """The former four-tensor advanced-indexing formula."""
    height, width = pafs.shape[-2:]
    src, dst = points[cands.src], points[cands.dst]
    t = torch.linspace(0, 1, n_points)
    slope = (dst - src) / (1.0 + torch.finfo(torch.float32).eps)
    line = src[:, None, :] + slope[:, None, :] * t[None, :, None]
    grid = torch.round(line / stride).to(torch.long)
    col, row = grid[..., 0].clamp(0, width - 1), grid[..., 1].clamp(0, height - 1)
    frame, channel = sample[cands.src][:, None], 2 * cands.edge[:, None]
    paf_x, paf_y = pafs[frame, channel, row, col], pafs[frame, channel + 1, row, col]
    vec = dst - src
    length = torch.linalg.vector_norm(vec, dim=1)
    unit = vec / length[:, None]
    dots = paf_x * unit[:, None, 0] + paf_y * unit[:, None, 1]
    return dots.mean(dim=1) + torch.clamp(limit / length - 1, max=0)


def test_flat_gather_scores_match_advanced_indexing() -> None:
    g = torch.Generator().manual_seed(0)
    edges = [(0, 1), (1, 2), (0, 3)]
    pafs = torch.randn(3, 2 * len(edges), 20, 30, generator=g)
    n = 40
    sample = torch.sort(torch.randint(0, 3, (n,), generator=g)).values
    channel = torch.randint(0, 4, (n,), generator=g)
    points = torch.rand(n, 2, generator=g) * torch.tensor([70.0, 45.0]) - 5  # some off-map
    points[5] = points[6]  # a zero-length pair gives NaN in both
    cands = connection_candidates(sample, channel, edges)
    got = score_candidates(pafs, points, sample, cands, paf_stride=2, n_points=10)
    limit = max_edge_length(pafs, 2, 0.25)
    want = reference_scores(pafs, points, sample, cands, 2, 10, limit)
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    assert torch.equal(got.nan_to_num(), want.nan_to_num())


def test_sparse_maps_skip_the_full_map_neighbour_pass(monkeypatch) -> None:
    """Empty and sparse maps (a 2048 px frame without animals, a trained model's output)
    never build the eight shifted full-size copies: that pass cost 174 ms a frame."""

    def refuse(cms: torch.Tensor) -> torch.Tensor:
        raise AssertionError("dense neighbour pass on a sparse map")

    monkeypatch.setattr(peaks, "neighbour_max_split", refuse)
    cms = torch.zeros(1, 3, 256, 256)
    assert find_local_peaks(cms, 0.2)[0].shape == (0, 2)
    cms[0, 1, 100, 120] = 0.9
    cms[0, 1, 100, 121] = 0.5
    points, _, _, ch = find_local_peaks(cms, 0.2, refine=False)
    assert points.tolist() == [[120.0, 100.0]] and ch.tolist() == [1]
