"""Bottom-up: PAF line scores, sleap-nn's grouping rules, class-map identities, both layers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sleap_infer.layers import BottomUpLayer, BottomUpMultiClassLayer, PredictOptions
from sleap_infer.model.config import parse_config
from sleap_infer.ops.grouping import (
    Connection,
    assemble_instances,
    edge_order,
    group_frame,
    match_edge,
    min_peaks_threshold,
)
from sleap_infer.ops.identity import group_peaks_by_class
from sleap_infer.ops.paf import connection_candidates, max_edge_length, score_candidates

from fakes import FakeBackend, gaussian_maps
from model_factory import config_dict

# Two animals of the fly skeleton (head -> thorax -> tail), in network-input pixels.
ANIMAL_A = [(16.0, 16.0), (32.0, 16.0), (48.0, 16.0)]
ANIMAL_B = [(16.0, 48.0), (32.0, 48.0), (48.0, 48.0)]


def test_edge_order_is_bfs_from_first_root() -> None:
    assert edge_order([(0, 1), (1, 2)]) == [0, 1]
    assert edge_order([(1, 2), (0, 1)]) == [1, 0]  # root 0 first, whatever the listing order
    # A second parent is reached once only, and a second tree never (sleap-nn's quirk).
    assert edge_order([(0, 1), (0, 2), (1, 3), (2, 3)]) == [0, 1, 2]
    assert edge_order([(0, 1), (2, 3)]) == [0]
    assert edge_order([]) == []


def test_assembly_merges_disjoint_instances_only() -> None:
    edges = [(0, 1), (2, 3), (1, 2)]
    conns = {0: [Connection(0, 0, 1.0)], 1: [Connection(0, 0, 1.0)], 2: [Connection(0, 0, 1.0)]}
    owner = assemble_instances(conns, edges, [0, 1, 2])
    assert set(owner.values()) == {0}  # {0,1} and {2,3} joined by the 1-2 connection
    # Overlapping node sets: the destination peak still moves, the instances stay apart.
    edges = [(0, 1), (1, 2), (0, 2)]
    conns = {
        0: [Connection(0, 0, 1.0), Connection(1, 1, 1.0)],
        1: [Connection(0, 0, 1.0), Connection(1, 1, 1.0)],
        2: [Connection(0, 1, 1.0)],
    }
    owner = assemble_instances(conns, edges, [0, 1, 2])
    assert owner[(2, 1)] == 0
    assert owner[(0, 1)] == owner[(1, 1)] == 1
    # Node sets are compared after the destination peak has moved (sleap-nn's order): the
    # second instance then shares no node with the first and is merged into it.
    edges = [(0, 1), (1, 2), (2, 3), (0, 2)]
    conns = {
        0: [Connection(0, 0, 1.0)],
        1: [Connection(0, 0, 1.0)],
        2: [Connection(1, 0, 1.0)],
        3: [Connection(0, 1, 1.0)],
    }
    owner = assemble_instances(conns, edges, [0, 1, 2, 3])
    assert owner == {(0, 0): 0, (1, 0): 0, (2, 0): 0, (2, 1): 0, (3, 0): 0}


def test_match_edge_survives_infeasible_costs() -> None:
    rows, cols = match_edge(np.array([[np.inf, np.inf], [-0.5, np.inf]]))
    assert rows.tolist() == [1] and cols.tolist() == [0]
    rows, cols = match_edge(np.array([[-0.9, -0.2], [-0.8, -0.7]]))
    assert sorted(zip(rows.tolist(), cols.tolist())) == [(0, 0), (1, 1)]
    assert match_edge(np.zeros((0, 3)))[0].size == 0


def test_min_instance_peaks_fraction_or_count() -> None:
    assert min_peaks_threshold(0.5, 5) == 2
    assert min_peaks_threshold(3, 5) == 3
    assert min_peaks_threshold(0, 5) == 0


def _frame_candidates(scores: dict[tuple[int, int, int], float]):
    """Peaks: node n of animal a at index 2n + a; candidates from (edge, src animal, dst animal)."""
    edge, src, dst, val = [], [], [], []
    edges = [(0, 1), (1, 2)]
    for (k, a, b), s in scores.items():
        edge.append(k)
        src.append(2 * edges[k][0] + a)
        dst.append(2 * edges[k][1] + b)
        val.append(s)
    return np.array(edge), np.array(src), np.array(dst), np.array(val, np.float32)


def test_group_frame_builds_two_animals_and_sums_scores() -> None:
    points = np.array([p for n in range(3) for p in (ANIMAL_A[n], ANIMAL_B[n])], np.float32)
    values = np.linspace(0.5, 1.0, 6).astype(np.float32)
    channel = np.repeat(np.arange(3), 2)
    scores = {(k, a, b): (0.9 if a == b else 0.3) for k in range(2) for a in (0, 1) for b in (0, 1)}
    scores[(1, 1, 1)] = 0.2  # B's thorax-tail link is too weak to keep
    cands = _frame_candidates(scores)
    out = group_frame(
        points,
        values,
        channel,
        *cands,
        n_nodes=3,
        edges=[(0, 1), (1, 2)],
        order=[0, 1],
        min_line_scores=0.25,
    )
    assert out.scores.tolist() == pytest.approx([1.8, 0.9])
    np.testing.assert_array_equal(out.points[0], ANIMAL_A)
    np.testing.assert_array_equal(out.points[1, :2], ANIMAL_B[:2])
    assert np.isnan(out.points[1, 2]).all()
    np.testing.assert_allclose(out.peak_values[0], values[[0, 2, 4]])
    # Requiring all three nodes drops the partial animal.
    out = group_frame(
        points,
        values,
        channel,
        *cands,
        n_nodes=3,
        edges=[(0, 1), (1, 2)],
        order=[0, 1],
        min_instance_peaks=3,
    )
    assert len(out.scores) == 1


def test_paf_scores_dot_product_and_length_penalty() -> None:
    pafs = torch.zeros(1, 2, 16, 16)
    pafs[:, 0] = 1.0  # unit vectors along +x everywhere
    points = torch.tensor([[8.0, 16.0], [24.0, 16.0], [8.0, 32.0], [8.0, 16.0]])
    sample = torch.zeros(4, dtype=torch.long)
    cands = connection_candidates(sample, torch.tensor([0, 1, 1, 1]), [(0, 1)])
    assert cands.dst.tolist() == [1, 2, 3]
    # max edge length = 0.25 * max(2, 16, 16) * stride 2 = 8 px; the pairs are 16 px long.
    scores = score_candidates(pafs, points, sample, cands, paf_stride=2)
    assert scores[0].item() == pytest.approx(1.0 + (8 / 16 - 1))  # aligned, penalised
    assert scores[1].item() == pytest.approx(0.0 + (8 / 16 - 1))  # perpendicular
    assert torch.isnan(scores[2])  # zero length
    scores = score_candidates(
        pafs, points, sample, cands, paf_stride=2, max_edge_length_ratio=1.0, dist_penalty_weight=2
    )
    assert scores[:2].tolist() == pytest.approx([1.0, 0.0])
    # The PAF channel count takes part in the max, as in sleap-nn.
    assert max_edge_length(torch.zeros(1, 40, 16, 16), 2, 0.25) == 20.0


def test_candidates_stay_within_a_frame() -> None:
    sample = torch.tensor([0, 0, 1, 1, 1])
    channel = torch.tensor([0, 1, 0, 1, 1])
    cands = connection_candidates(sample, channel, [(0, 1)])
    assert list(zip(cands.src.tolist(), cands.dst.tolist())) == [(0, 1), (2, 3), (2, 4)]


def _bottomup_outputs(b_strength: float = 0.8) -> dict[str, torch.Tensor]:
    # Confmaps at stride 2 and PAFs at stride 4 for a 64x64 network input.
    cms = gaussian_maps((32, 32), [[(x / 2, y / 2) for x, y in ANIMAL_A]])
    cms += gaussian_maps((32, 32), [[(x / 2, y / 2) for x, y in ANIMAL_B]])
    pafs = torch.zeros(1, 4, 16, 16)
    pafs[:, 0::2, :8] = 1.0  # animal A's half: strength 1 along +x
    pafs[:, 0::2, 8:] = b_strength
    return {"MultiInstanceConfmapsHead": cms, "PartAffinityFieldsHead": pafs}


def test_bottomup_layer_groups_animals_and_caps_by_score() -> None:
    # 128x128 frames at input scale 0.5 -> 64x64 network input.
    cfg = parse_config(config_dict("bottomup", preprocessing={"scale": 0.5}))
    backend = FakeBackend(lambda x: _bottomup_outputs())
    layer = BottomUpLayer(cfg, backend, PredictOptions(peak_threshold=0.2, max_edge_length_ratio=1))
    preds = layer.predict(np.zeros((1, 128, 128, 1), np.uint8))
    assert backend.inputs[0].shape == (1, 1, 64, 64)
    assert preds.valid.tolist() == [[True, True]]
    np.testing.assert_allclose(preds.points[0, 0], np.array(ANIMAL_A) * 2, atol=1e-3)
    np.testing.assert_allclose(preds.points[0, 1], np.array(ANIMAL_B) * 2, atol=1e-3)
    np.testing.assert_allclose(preds.instance_scores[0], [2.0, 1.6], atol=1e-5)
    np.testing.assert_allclose(preds.point_scores[0], 1.0, atol=1e-5)

    opts = PredictOptions(peak_threshold=0.2, max_edge_length_ratio=1, max_instances=1)
    backend = FakeBackend(lambda x: _bottomup_outputs(b_strength=1.5))
    preds = BottomUpLayer(cfg, backend, opts).predict(np.zeros((1, 128, 128, 1), np.uint8))
    assert preds.valid.shape == (1, 1)
    np.testing.assert_allclose(preds.points[0, 0], np.array(ANIMAL_B) * 2, atol=1e-3)
    # A strict line-score floor leaves only unconnected peaks: no instances.
    opts = PredictOptions(peak_threshold=0.2, max_edge_length_ratio=1, min_line_scores=2.5)
    preds = BottomUpLayer(cfg, backend, opts).predict(np.zeros((1, 128, 128, 1), np.uint8))
    assert preds.n_instances == 0


def test_class_groups_keep_only_each_peaks_best_class() -> None:
    # Node 0 has two peaks that both prefer class 0: the second is matched to class 1 by the
    # Hungarian step but dropped, because class 1 is not its best.
    probs = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]], np.float32)
    points = np.array([[1, 1], [2, 2], [3, 3]], np.float32)
    values = np.array([0.5, 0.6, 0.7], np.float32)
    groups = group_peaks_by_class(
        probs, points, values, np.zeros(3, np.int64), np.array([0, 0, 1]), 1, 2
    )
    np.testing.assert_array_equal(groups.points[0, 0, 0], [1, 1])
    assert np.isnan(groups.points[0, 1, 0]).all()
    np.testing.assert_array_equal(groups.points[0, 1, 1], [3, 3])
    np.testing.assert_allclose(groups.class_probs[0], [[0.9, np.nan], [np.nan, 0.8]])


def _multiclass_outputs(swap: bool) -> dict[str, torch.Tensor]:
    cms = gaussian_maps((32, 32), [[(x / 2, y / 2) for x, y in ANIMAL_A]]) * 0.9
    cms += gaussian_maps((32, 32), [[(x / 2, y / 2) for x, y in ANIMAL_B]]) * 0.6
    class_maps = torch.zeros(1, 2, 32, 32)
    top, bottom = (1, 0) if swap else (0, 1)
    class_maps[:, top, :16] = 0.95
    class_maps[:, bottom, :16] = 0.05
    class_maps[:, bottom, 16:] = 0.75
    class_maps[:, top, 16:] = 0.25
    return {"MultiInstanceConfmapsHead": cms, "ClassMapsHead": class_maps}


@pytest.mark.parametrize("swap", [False, True])
def test_multiclass_bottomup_slots_are_classes(swap: bool) -> None:
    cfg = parse_config(config_dict("multi_class_bottomup"))
    layer = BottomUpMultiClassLayer(
        cfg, FakeBackend(lambda x: _multiclass_outputs(swap)), PredictOptions(peak_threshold=0.2)
    )
    preds = layer.predict(np.zeros((1, 64, 64, 1), np.uint8))
    a, b = (1, 0) if swap else (0, 1)
    assert preds.class_ids.tolist() == [[0, 1]]
    np.testing.assert_allclose(preds.points[0, a], ANIMAL_A, atol=1e-3)
    np.testing.assert_allclose(preds.points[0, b], ANIMAL_B, atol=1e-3)
    np.testing.assert_allclose(preds.instance_scores[0, [a, b]], [0.9, 0.6], atol=1e-4)
    np.testing.assert_allclose(preds.class_scores[0, [a, b]], [0.95, 0.75], atol=1e-6)
    # Capped at one animal: the best-scoring one stays, in its own class slot.
    opts = PredictOptions(peak_threshold=0.2, max_instances=1)
    layer = BottomUpMultiClassLayer(cfg, FakeBackend(lambda x: _multiclass_outputs(swap)), opts)
    preds = layer.predict(np.zeros((1, 64, 64, 1), np.uint8))
    assert preds.valid[0].tolist() == [a == 0, a == 1]
    assert preds.class_ids[0, a] == a and preds.class_ids[0, b] == -1


def test_paf_scoring_in_chunks_gives_the_same_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    from sleap_infer.ops import paf

    gen = torch.Generator().manual_seed(0)
    pafs = torch.randn(2, 4, 16, 16, generator=gen)
    points = torch.rand(60, 2, generator=gen) * 60
    sample = torch.arange(60) // 30
    cands = connection_candidates(sample, torch.arange(60) % 3, [(0, 1), (1, 2)])
    whole = score_candidates(pafs, points, sample, cands, paf_stride=4)
    monkeypatch.setattr(paf, "CHUNK", 7)
    assert len(cands) == 2 * 2 * 10 * 10 and len(cands) % 7
    assert torch.equal(score_candidates(pafs, points, sample, cands, paf_stride=4), whole)
