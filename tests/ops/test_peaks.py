"""Flat-topped peaks (issue 50 item 1): every peak path agrees with sleap-nn 0.3.5.

The expected numbers were produced by sleap-nn 0.3.5's own ``find_local_peaks`` /
``find_global_peaks`` on these maps (``sleap_nn_peaks_reference.py``); the last test
re-runs it when its bench venv is present.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch

from sleap_infer.export.graph_ops import local_peak_candidates, refined_points
from sleap_infer.ops import peaks
from sleap_infer.ops.peaks import find_global_peaks, find_local_peaks

BENCH_PYTHON = Path("/work/main/.bench-venv/sleap-nn/bin/python")
REFERENCE = Path(__file__).with_name("sleap_nn_peaks_reference.py")


def issue_map() -> torch.Tensor:
    """The issue's 12x12 map: background 0.1, flat tops at 0.9, a strict maximum at 0.8."""
    m = torch.full((12, 12), 0.1)
    m[1, 1] = m[1, 2] = 0.9  # a pair
    m[2, 9] = 0.8  # a strict maximum
    m[5, 1] = m[5, 2] = m[6, 1] = 0.9  # an L of 3
    m[9:11, 5:7] = 0.9  # a 2x2 block
    return m[None, None]


ISSUE_ROUGH = [[1.5, 1.0], [9.0, 2.0], [4 / 3, 16 / 3], [5.5, 9.5]]
# sleap-nn refines around the floored point: the pair's left pixel, the L's corner.
ISSUE_REFINED = [[1.5, 1.25], [9.0, 2.0], [1.4090908765792847, 5.181818008422852]]
ISSUE_REFINED += [[5.280701637268066, 9.280701637268066]]


def sigmoid_centroid_map() -> torch.Tensor:
    """A confident sigmoid head: logits 20 and 18 side by side both give exactly 1.0."""
    logits = torch.full((1, 1, 16, 16), -10.0)
    logits[0, 0, 7, 7], logits[0, 0, 7, 8] = 20.0, 18.0
    return torch.sigmoid(logits)


def as_f32(points: list[list[float]]) -> torch.Tensor:
    return torch.tensor(points, dtype=torch.float32)


@pytest.mark.parametrize("dense", [False, True])
def test_flat_tops_are_peaks_at_their_mean(monkeypatch: pytest.MonkeyPatch, dense: bool) -> None:
    if dense:
        monkeypatch.setattr(peaks, "DENSE_FRACTION", 10**9)
    points, values, sample, channel = find_local_peaks(issue_map(), 0.2, refine=False)
    assert torch.equal(points, as_f32(ISSUE_ROUGH))
    assert values.tolist() == pytest.approx([0.9, 0.8, 0.9, 0.9])
    assert sample.tolist() == [0] * 4 and channel.tolist() == [0] * 4
    refined = find_local_peaks(issue_map(), 0.2, refine=True)[0]
    assert torch.equal(refined, as_f32(ISSUE_REFINED))


def test_saturated_sigmoid_centroid_is_found() -> None:
    cms = sigmoid_centroid_map()
    assert cms[0, 0, 7, 7] == cms[0, 0, 7, 8] == 1.0
    assert find_local_peaks(cms, 0.2, refine=False)[0].tolist() == [[7.5, 7.0]]
    assert find_local_peaks(cms, 0.2, refine=True)[0].tolist() == [[7.499716281890869, 7.0]]


def test_wide_or_overshadowed_flat_tops_give_no_peak() -> None:
    cms = torch.zeros(1, 1, 12, 12)
    cms[0, 0, 2, 2:5] = 0.9  # three in a row: does not fit a 2x2 block
    cms[0, 0, 7, 7] = cms[0, 0, 7, 8] = 0.6  # a pair next to a higher pixel
    cms[0, 0, 8, 9] = 0.7
    points = find_local_peaks(cms, 0.2, refine=False)[0]
    assert points.tolist() == [[9.0, 8.0]]


def test_global_peaks_take_the_first_column_and_row_of_a_flat_top() -> None:
    points, values = find_global_peaks(issue_map(), 0.2, refine=False)
    assert points.tolist() == [[[1.0, 1.0]]] and values[0].tolist() == pytest.approx([0.9])
    points, _ = find_global_peaks(issue_map(), 0.2, refine=True)
    assert points.tolist() == [[[1.5, 1.25]]]


@pytest.mark.parametrize("refine", [False, True])
def test_exported_graph_peaks_equal_the_host_on_flat_tops(refine: bool) -> None:
    cms = torch.cat([issue_map(), sigmoid_centroid_map()[..., 2:14, 2:14]])
    slots = local_peak_candidates(cms, k=8)
    points = refined_points(cms, slots.x, slots.y, refine, 5)
    ref_points, ref_values, sample, _ = find_local_peaks(cms, 0.2, refine=refine)
    for b in range(2):
        keep = slots.values[b, 0] > 0.2
        assert torch.equal(points[b, 0][keep], ref_points[sample == b])
        assert torch.equal(slots.values[b, 0][keep], ref_values[sample == b])
    # Empty slots stay at (0, 0), though the flat background gives pixel (0, 0) an offset.
    assert torch.equal(slots.x[0, 0, 4:], torch.zeros(4))


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equal, NaN where the other has NaN."""
    return torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(-1), b.nan_to_num(-1))


def tied_maps() -> torch.Tensor:
    """Five levels only, so ties, flat tops of every shape, wide tops and leaks abound."""
    g = torch.Generator().manual_seed(0)
    maps = torch.randint(0, 5, (3, 4, 20, 24), generator=g).float() / 4
    maps[0, 0, 3, 3] = float("nan")
    return maps


@pytest.mark.skipif(not BENCH_PYTHON.exists(), reason="sleap-nn bench venv absent")
def test_every_path_equals_sleap_nn_on_tied_maps(tmp_path: Path) -> None:
    maps = tied_maps()
    torch.save(maps, tmp_path / "maps.pt")
    subprocess.run(
        [str(BENCH_PYTHON), str(REFERENCE), str(tmp_path / "maps.pt"), str(tmp_path / "ref.pt")],
        check=True,
        timeout=300,
    )
    ref = torch.load(tmp_path / "ref.pt")
    for threshold in (0.1, 0.6):
        for refinement in (None, "integral"):
            refine = refinement is not None
            want = ref[("local", threshold, refinement)]
            for fraction in (1, 10**9):  # the sparse, then the dense pass
                peaks.DENSE_FRACTION = fraction
                try:
                    got = find_local_peaks(maps, threshold, refine, guard=False)
                finally:
                    peaks.DENSE_FRACTION = 8
                assert same(got[0], want[0]) and same(got[1], want[1])
                assert got[2].tolist() == want[2].tolist() == sorted(want[2].tolist())
                assert got[3].tolist() == want[3].tolist()
            got_g = find_global_peaks(maps, threshold, refine, guard=False)
            want_g = ref[("global", threshold, refinement)]
            assert same(got_g[0], want_g[0]) and same(got_g[1], want_g[1])
            if threshold == 0.1:  # the graph has no NaN-free way to mark it; skip that map
                clean = maps.nan_to_num(0.0)
                slots = local_peak_candidates(clean, k=480)
                graph = refined_points(clean, slots.x, slots.y, refine, 5, guard=False)
                host = find_local_peaks(clean, threshold, refine, guard=False)
                for b in range(3):
                    for c in range(4):
                        keep = slots.values[b, c] > threshold
                        mine = (host[2] == b) & (host[3] == c)
                        assert torch.equal(graph[b, c][keep], host[0][mine])


def cancelling_map() -> torch.Tensor:
    """A 9x9 map whose peak's 5x5 patch nearly cancels: frame 470 of the multi-class
    bottom-up fixture (``CANCELLING_PATCH`` in test_ops.py), sum -0.025."""
    maps = torch.zeros(1, 1, 9, 9)
    maps[0, 0, 2:7, 1:6] = torch.tensor(
        [
            [-0.2668, 0.0606, 0.1429, 0.1166, 0.0662],
            [-0.5707, -0.0275, 0.3738, 0.1576, 0.1250],
            [-0.7338, -0.1989, 0.5396, 0.1523, 0.1504],
            [-0.6566, -0.2306, 0.3387, 0.1096, 0.1610],
            [-0.1987, -0.0001, 0.1775, 0.0527, 0.1341],
        ]
    )
    return maps


def test_refine_like_sleap_nn_drops_the_guard_on_every_path() -> None:
    """Issue 50 item 3: the default keeps the pixel; ``guard=False`` is sleap-nn's wild point."""
    maps = cancelling_map()
    patch = maps[0, 0, 2:7, 1:6]
    wild = [3 + float((patch.sum(0) * torch.arange(-2.0, 3.0)).sum() / patch.sum())]
    wild += [4 + float((patch.sum(1) * torch.arange(-2.0, 3.0)).sum() / patch.sum())]
    assert abs(wild[0]) > 100  # far outside the patch and the map
    assert find_local_peaks(maps, 0.2)[0].tolist() == [[3.0, 4.0]]
    unguarded = find_local_peaks(maps, 0.2, guard=False)[0]
    assert unguarded[0].tolist() == pytest.approx(wild, rel=1e-4)
    assert find_global_peaks(maps, 0.2)[0].tolist() == [[[3.0, 4.0]]]
    assert find_global_peaks(maps, 0.2, guard=False)[0][0, 0].tolist() == pytest.approx(
        wild, rel=1e-4
    )
    slots = local_peak_candidates(maps, k=4)
    graph = refined_points(maps, slots.x, slots.y, True, 5, guard=False)[0, 0, 0]
    assert torch.equal(graph, unguarded[0])
    guarded = refined_points(maps, slots.x, slots.y, True, 5)[0, 0, 0]
    assert guarded.tolist() == [3.0, 4.0]
