"""benchmarks/hota.py against cases small enough to work out by hand (and TrackEval, if present)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

HOTA_PY = Path(__file__).resolve().parents[1] / "benchmarks" / "hota.py"


@pytest.fixture(scope="module")
def hota_module():
    spec = importlib.util.spec_from_file_location("bench_hota", HOTA_PY)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def ids(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_perfect_tracking_scores_one(hota_module):
    frames = [(ids(0, 1), ids(7, 9), np.eye(2)) for _ in range(3)]
    assert hota_module.hota(frames) == pytest.approx(
        {"hota": 1.0, "deta": 1.0, "assa": 1.0, "loca": 1.0}
    )


def test_identity_swap_halfway(hota_module):
    """Two animals, found exactly; the tracker swaps their ids in frame 2 of 2.

    Every alpha: TP = 4, FN = FP = 0, so DetA = 1. Each (animal, track) pair
    is matched once; each animal and each track is present twice, so each TP's
    association IoU is 1 / (2 + 2 - 1) = 1/3: AssA = 1/3, HOTA = sqrt(1/3).
    """
    frames = [(ids(0, 1), ids(10, 11), np.eye(2)), (ids(0, 1), ids(11, 10), np.eye(2))]
    out = hota_module.hota(frames)
    assert out["deta"] == pytest.approx(1.0)
    assert out["assa"] == pytest.approx(1 / 3)
    assert out["hota"] == pytest.approx(np.sqrt(1 / 3))


def test_localisation_threshold(hota_module):
    """One animal, one frame, 10 px off with max_dist 20: sim = 0.5.

    It matches at the 10 alphas 0.05..0.50 (HOTA 1 each) and not at the 9 above
    (TP 0, FN 1, FP 1: HOTA 0), so HOTA = DetA = AssA = 10/19; LocA is 0.5 where
    matched and TrackEval's 1e-10 / 1e-10 = 1 where not: (10 * 0.5 + 9) / 19.
    """
    sim = hota_module.centroid_similarity(np.array([[0.0, 0.0]]), np.array([[6.0, 8.0]]), 20.0)
    assert sim.shape == (1, 1) and sim[0, 0] == pytest.approx(0.5)
    out = hota_module.hota([(ids(0), ids(3), sim)])
    assert out["hota"] == pytest.approx(10 / 19)
    assert out["deta"] == pytest.approx(10 / 19)
    assert out["assa"] == pytest.approx(10 / 19)
    assert out["loca"] == pytest.approx((10 * 0.5 + 9) / 19)


def test_misses_and_false_tracks(hota_module):
    """Frame 1: one animal, tracked exactly. Frame 2: the animal is missed and
    a stray track (id 5) is far away (sim 0). Every alpha: TP 1, FN 1, FP 1,
    so DetA = 1/3; the one TP's pair (animal 0, track 4) shares 1 frame, the
    animal has 2 and the track 1: AssA = 1 / (2 + 1 - 1) = 1/2."""
    frames = [(ids(0), ids(4), np.ones((1, 1))), (ids(0), ids(5), np.zeros((1, 1)))]
    out = hota_module.hota(frames)
    assert out["deta"] == pytest.approx(1 / 3)
    assert out["assa"] == pytest.approx(1 / 2)
    assert out["hota"] == pytest.approx(np.sqrt(1 / 6))


def test_empty_frames_count_misses_and_strays(hota_module):
    frames = [(ids(0), ids(), np.zeros((1, 0))), (ids(), ids(2), np.zeros((0, 1)))]
    out = hota_module.hota(frames)
    assert out["hota"] == 0.0
    assert out["deta"] == 0.0


def test_matches_trackeval(hota_module):
    """Same numbers as TrackEval's own HOTA on a random sequence (when it is importable)."""
    trackeval = pytest.importorskip("trackeval")
    rng = np.random.default_rng(3)
    frames = []
    for _ in range(40):
        g = rng.permutation(6)[: rng.integers(0, 6)]
        t = rng.permutation(9)[: rng.integers(0, 7)]
        sim = rng.uniform(0, 1, (len(g), len(t))) * (rng.random((len(g), len(t))) < 0.5)
        frames.append((g, t, sim))
    gt_ids, n_gt = hota_module._dense([f[0] for f in frames])
    tr_ids, n_tr = hota_module._dense([f[1] for f in frames])
    data = {
        "num_timesteps": len(frames),
        "num_gt_ids": n_gt,
        "num_tracker_ids": n_tr,
        "num_gt_dets": sum(len(g) for g in gt_ids),
        "num_tracker_dets": sum(len(t) for t in tr_ids),
        "gt_ids": gt_ids,
        "tracker_ids": tr_ids,
        "similarity_scores": [f[2] for f in frames],
    }
    theirs = trackeval.metrics.HOTA().eval_sequence(data)
    ours = hota_module.hota(frames)
    for key, name in (("hota", "HOTA"), ("deta", "DetA"), ("assa", "AssA"), ("loca", "LocA")):
        assert ours[key] == pytest.approx(float(np.mean(theirs[name])))
