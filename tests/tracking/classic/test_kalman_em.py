"""Our Kalman EM against pykalman's (sleap-nn's dependency), and its own invariants.

pykalman is not a dependency: the comparison runs where it is importable, e.g. with
``SLEAP_INFER_PYKALMAN_PATH`` naming a folder that holds ``pykalman`` (and ``skbase``).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from sleap_infer.tracking.classic.kalman_em import constant_velocity, pinv

EM_VARS = ["transition_covariance", "observation_covariance", "initial_state_covariance"]


def _pykalman():
    extra = os.environ.get("SLEAP_INFER_PYKALMAN_PATH")
    if extra and extra not in sys.path:
        sys.path.append(extra)
    return pytest.importorskip("pykalman")


def _sequence(seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Noisy constant-velocity tracks of 1-3 points with missing values, and a seed state."""
    rng = np.random.default_rng(seed)
    n_points = 1 if seed % 3 else int(rng.integers(2, 4))
    n = int(rng.integers(3, 25))
    start, vel = rng.uniform(0, 300, 2 * n_points), rng.uniform(-6, 6, 2 * n_points)
    noise = rng.normal(0, rng.uniform(0.1, 5), (n, 2 * n_points))
    rows = start + np.arange(n)[:, None] * vel + noise
    rows[rng.random(rows.shape) < 0.15] = np.nan
    rows[0] = np.nan_to_num(rows[0], nan=100.0)
    rows[1] = np.nan_to_num(rows[1], nan=101.0)  # two observed rows at least
    seed_state = np.zeros(4 * n_points)
    seed_state[0::4], seed_state[2::4] = rows[0, 0::2], rows[0, 1::2]
    seed_state[1::4], seed_state[3::4] = rng.uniform(-3, 3, (2, n_points))
    return rows, seed_state, n_points


@pytest.mark.parametrize("seed", range(60))
def test_em_filter_and_update_match_pykalman(seed: int) -> None:
    pykalman = _pykalman()
    rows, seed_state, n_points = _sequence(seed)
    ours = constant_velocity(n_points, seed_state)
    kf = pykalman.KalmanFilter(
        transition_matrices=ours.transition.tolist(),
        observation_matrices=ours.observation.tolist(),
        initial_state_mean=seed_state.tolist(),
    )
    obs = np.ma.masked_invalid(rows)
    kf = kf.em(obs, n_iter=20, em_vars=EM_VARS)
    means, covs = kf.filter(obs)
    ours.em(rows, n_iter=20)
    our_means, our_covs = ours.filter(rows)
    pairs = [
        (ours.transition_cov, kf.transition_covariance),
        (ours.observation_cov, kf.observation_covariance),
        (ours.initial_cov, kf.initial_state_covariance),
        (our_means, means),
        (our_covs, covs),
    ]
    mean, cov, our_mean, our_cov = means[-1], covs[-1], our_means[-1], our_covs[-1]
    for z in (rows[0] + 1.0, None, rows[1]):
        mean, cov = kf.filter_update(
            mean, cov, observation=np.ma.masked if z is None else np.ma.masked_invalid(z)
        )
        our_mean, our_cov = ours.filter_update(our_mean, our_cov, z)
        pairs += [(our_mean, mean), (our_cov, cov)]
    for got, want in pairs:
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-8)


def test_a_row_with_a_missing_value_is_skipped_whole() -> None:
    model = constant_velocity(1, np.array([0.0, 1.0, 0.0, 1.0]))
    mean, cov = np.array([0.0, 1.0, 0.0, 1.0]), np.eye(4)
    predicted = model.filter_update(mean, cov, None)
    for z in (np.array([np.nan, 5.0]), np.array([5.0, np.nan])):
        got = model.filter_update(mean, cov, z)
        assert all(np.array_equal(a, b) for a, b in zip(got, predicted))
    moved = model.filter_update(mean, cov, np.array([5.0, 5.0]))
    assert moved[0][0] > predicted[0][0]


def test_pinv_is_a_pseudo_inverse_also_when_singular() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 4))
    np.testing.assert_allclose(pinv(a), np.linalg.pinv(a), atol=1e-12)
    singular = np.outer([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(pinv(singular), np.linalg.pinv(singular), atol=1e-12)


def test_em_learns_small_noise_on_a_clean_straight_path() -> None:
    t = np.arange(12, dtype=float)
    rows = np.stack([10 + 2 * t, 50 - 3 * t], axis=1)
    model = constant_velocity(1, np.array([10.0, 2.0, 50.0, -3.0])).em(rows, n_iter=20)
    means, _ = model.filter(rows)
    np.testing.assert_allclose(means[-1][[0, 2]], rows[-1], atol=1e-3)
    np.testing.assert_allclose(means[-1][[1, 3]], [2.0, -3.0], atol=1e-3)
