"""Bottom-up grouping equals sleap-nn 0.3.5's on crowded frames (issue 50, gap b).

A mixed model at ``--peak_threshold 0.05`` once gave 76 of 106 instances equal to
sleap-nn's; the suspect was grouping. Fed the same peaks and PAFs, ours and sleap-nn's
``PAFScorer`` (line scores, Hungarian matching, assembly, min_line_scores,
min_instance_peaks) give the same instances, point for point, on crowded random frames:
chains, stars, skeletons with second parents and several roots, up to 8 peaks a node.
The stored case below is one of them (sleap-nn's output saved); the last test reruns
sleap-nn's own code on every case when its bench venv exists
(``sleap_nn_grouping_reference.py``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from sleap_infer.ops.grouping import edge_order, group_frame
from sleap_infer.ops.paf import connection_candidates, score_candidates

BENCH_PYTHON = Path("/work/main/.bench-venv/sleap-nn/bin/python")
REFERENCE = Path(__file__).with_name("sleap_nn_grouping_reference.py")


def _edges(rng: np.random.Generator, n_nodes: int) -> list[tuple[int, int]]:
    kind = int(rng.integers(0, 4))
    if kind == 0:  # chain
        return [(i, i + 1) for i in range(n_nodes - 1)]
    if kind == 1:  # star
        return [(0, i) for i in range(1, n_nodes)]
    if kind == 2:  # random tree
        return [(int(rng.integers(0, i)), i) for i in range(1, n_nodes)]
    # random DAG: second parents, several roots, edges listed in any order
    perm = rng.permutation(n_nodes)
    pairs: set[tuple[int, int]] = set()
    for _ in range(int(rng.integers(1, 2 * n_nodes))):
        a, b = sorted(rng.choice(n_nodes, 2, replace=False))
        pairs.add((int(perm[a]), int(perm[b])))
    return sorted(pairs, key=lambda _: rng.random())


def crowded_cases(n: int = 100, seed: int = 50) -> list[dict[str, Any]]:
    """Random frames with many peaks per node; peaks within a node in raster order."""
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(n):
        n_nodes = int(rng.integers(2, 6))
        edges = _edges(rng, n_nodes)
        size, stride = int(rng.choice([24, 48])), int(rng.choice([1, 2, 4]))
        pafs = rng.normal(0, 0.5, (1, 2 * len(edges), size, size)).astype(np.float32)
        points, channel = [], []
        for node in range(n_nodes):
            k = int(rng.integers(0, 9))
            grid = rng.integers(0, size * stride // 2, (k, 2)) * 2
            sub = rng.choice([0.0, 0.25, 0.5], (k, 2))
            pts = (grid + sub).astype(np.float32)
            points.append(pts[np.lexsort((pts[:, 0], pts[:, 1]))])
            channel += [node] * k
        cases.append(
            {
                "pafs": torch.from_numpy(pafs),
                "points": torch.from_numpy(np.concatenate(points)),
                "values": torch.from_numpy(rng.uniform(0.1, 1, len(channel)).astype(np.float32)),
                "channel": torch.tensor(channel, dtype=torch.long),
                "n_nodes": n_nodes,
                "edges": edges,
                "paf_stride": stride,
                "min_line_scores": float(rng.choice([0.25, 0.0, -1.0])),
                "min_instance_peaks": [0, 0, 2, 3, 0.5, 0.7][int(rng.integers(0, 6))],
            }
        )
    return cases


def ours(case: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Our batched scoring and host grouping, as ``BottomUpLayer`` runs them."""
    sample = torch.zeros(len(case["channel"]), dtype=torch.long)
    cands = connection_candidates(sample, case["channel"], case["edges"])
    scores = score_candidates(case["pafs"], case["points"], sample, cands, case["paf_stride"])
    res = group_frame(
        case["points"].numpy(),
        case["values"].numpy(),
        case["channel"].numpy(),
        cands.edge.numpy(),
        cands.src.numpy(),
        cands.dst.numpy(),
        scores.numpy(),
        case["n_nodes"],
        case["edges"],
        edge_order(case["edges"]),
        case["min_line_scores"],
        case["min_instance_peaks"],
    )
    return res.points, res.scores


# Case 96: skeleton [(4, 1), (4, 2), (4, 0), (2, 0), (3, 1)] (second parents, two roots);
# sleap-nn 0.3.5's seven instances and their scores, saved from its PAFScorer.
STORED_CASE = 96
nan = float("nan")
STORED_POINTS = [
    [[4.5, 0.25], [8.25, 4.25], [nan, nan], [nan, nan], [6.5, 0.0]],
    [[16.0, 14.0], [4.0, 16.25], [12.0, 22.25], [nan, nan], [6.5, 18.5]],
    [[14.25, 16.5], [8.5, 14.25], [14.5, 20.0], [nan, nan], [14.25, 20.25]],
    [[16.25, 8.25], [nan, nan], [12.0, 14.5], [nan, nan], [22.5, 10.25]],
    [[22.25, 12.25], [nan, nan], [20.5, 20.0], [nan, nan], [22.25, 14.25]],
    [[4.5, 14.5], [nan, nan], [4.25, 22.25], [nan, nan], [0.25, 16.25]],
    [[2.5, 6.5], [nan, nan], [nan, nan], [nan, nan], [0.0, 10.25]],
]
STORED_SCORES = [
    0.6881663799285889,
    -0.10160180181264877,
    0.918796956539154,
    -0.4719959795475006,
    -0.07934892177581787,
    -0.007661730051040649,
    0.15316303074359894,
]


def test_stored_crowded_case_groups_as_sleap_nn() -> None:
    points, scores = ours(crowded_cases()[STORED_CASE])
    np.testing.assert_array_equal(points, np.array(STORED_POINTS, np.float32))
    np.testing.assert_allclose(scores, np.array(STORED_SCORES, np.float32), atol=1e-6)


@pytest.mark.skipif(not BENCH_PYTHON.exists(), reason="sleap-nn bench venv absent")
def test_every_crowded_case_groups_as_sleap_nn(tmp_path: Path) -> None:
    cases = crowded_cases()
    torch.save(cases, tmp_path / "cases.pt")
    res = subprocess.run(
        [str(BENCH_PYTHON), str(REFERENCE), str(tmp_path / "cases.pt"), str(tmp_path / "out.pt")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    theirs = torch.load(tmp_path / "out.pt")
    instances = 0
    for i, (case, (their_points, their_scores)) in enumerate(zip(cases, theirs, strict=True)):
        points, scores = ours(case)
        np.testing.assert_array_equal(points, their_points.numpy(), err_msg=f"case {i}")
        np.testing.assert_allclose(scores, their_scores.numpy(), atol=1e-6, err_msg=f"case {i}")
        instances += len(points)
    assert instances > 100  # crowded enough to exercise merges and ties
