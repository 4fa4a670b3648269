"""The fast paths in ``tracking/classic/scoring.py`` give sleap-nn's bits, checked against the
plain formulas they replace (one pair, one row at a time)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from sleap_infer.tracking.classic.scoring import nanmean_rows, oks_matrix, reduce, stack_poses


def oks_one_pair(gt: np.ndarray, pr: np.ndarray, stddev: float) -> float:
    """sleap-nn's ``compute_oks`` for one ``(N, 2)`` pose against one, written plainly."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        area = np.prod(np.nanmax(gt, axis=0) - np.nanmin(gt, axis=0))
        spread = (2 * np.full(len(gt), stddev)) ** 2
        norm = spread * (2 * (area + np.spacing(1)))
        distance = ((gt - pr) ** 2).sum(axis=-1)
        distance[np.any(np.isnan(pr), axis=-1)] = np.inf
        ks = np.exp(-(distance / norm))
        missing = np.any(np.isnan(gt), axis=-1)
        ks = np.where(missing, 0.0, ks)
        return float(np.sum(ks) / np.sum((~missing).astype("float32")))


def random_poses(rng: np.random.Generator, n: int, nodes: int, spread: float) -> np.ndarray:
    centres = rng.uniform(0, 1000, (n, 1, 2))
    poses = centres + rng.normal(0, spread, (n, nodes, 2))
    poses[rng.random(poses.shape[:2]) < rng.choice([0.0, 0.1, 0.6])] = np.nan
    return poses


@pytest.mark.parametrize("nodes", [1, 2, 5, 7, 8, 13])
def test_oks_matrix_has_the_bits_of_one_pair_at_a_time(nodes: int) -> None:
    rng = np.random.default_rng(nodes)
    for trial in range(15):
        gt = random_poses(rng, int(rng.integers(1, 12)), nodes, 20.0)
        # Candidates near some queries (exponents that matter) and far (underflow to 0).
        near = gt[rng.integers(0, len(gt), 20)] + rng.normal(
            0, rng.choice([0.5, 5.0]), (20, nodes, 2)
        )
        pr = np.concatenate([near, random_poses(rng, 15, nodes, 20.0)])
        if trial % 5 == 0:
            gt[0] = np.nan  # a query with nothing visible: all zeros, 0/0 -> NaN
        stddev = float(rng.choice([0.025, 0.1, 0.0]))
        got = oks_matrix(gt, pr, stddev)
        want = np.array([[oks_one_pair(g, p, stddev) for p in pr] for g in gt])
        assert got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


def test_oks_matrix_of_far_apart_animals_is_exactly_zero() -> None:
    pose = np.array([[0.0, 0.0], [10.0, 2.0], [20.0, 0.0]])
    far = oks_matrix(pose[None], pose[None] + 500.0, 0.025)
    assert far[0, 0] == 0.0 and not np.signbit(far[0, 0])


def test_nanmean_rows_has_numpys_bits() -> None:
    rng = np.random.default_rng(0)
    for _ in range(500):
        shape = tuple(int(k) for k in rng.integers(0, 10, int(rng.integers(1, 4))))
        values = rng.normal(0, 1, shape) * rng.choice([1.0, 1e-9, 1e9], shape)
        values[rng.random(shape) < rng.choice([0.0, 0.1, 0.5, 1.0])] = np.nan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            want = np.nanmean(values, axis=-1)
        got = nanmean_rows(values)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got).view(np.int64), want.view(np.int64))


def test_reduce_takes_numpys_path_where_the_fast_one_does_not_apply() -> None:
    values = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, np.nan]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the all-NaN row must not warn either way
        got = reduce(values, "mean", 0.5, axis=1)
        assert got.dtype == np.float32  # numpy keeps float32; the fast path is float64 only
        assert got[0] == 1.5 and np.isnan(got[1])
        strided = np.arange(12.0).reshape(3, 4)[:, ::2]
        np.testing.assert_array_equal(reduce(strided, "mean", 0.5, axis=1), [1.0, 5.0, 9.0])


def test_stack_poses_is_numpy_stack() -> None:
    poses = [np.arange(10.0).reshape(5, 2) + i for i in range(4)]
    stacked = stack_poses([p.astype(np.float32) if i == 1 else p for i, p in enumerate(poses)])
    assert stacked.dtype == np.float64
    np.testing.assert_array_equal(stacked, np.stack(poses))
    with pytest.raises(ValueError, match="same shape"):
        stack_poses([np.zeros((5, 2)), np.zeros((4, 2))])
