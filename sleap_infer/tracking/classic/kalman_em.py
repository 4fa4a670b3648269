"""A linear-Gaussian Kalman filter fitted by EM, with pykalman's numerics, in numpy.

sleap-nn's ``KalmanShiftTracker`` fits one ``pykalman.KalmanFilter`` per track
(``em(obs, n_iter=20, em_vars=[transition_covariance, observation_covariance,
initial_state_covariance])``), then runs ``filter`` and ``filter_update``. pykalman
is not a dependency here; this module does the same arithmetic in the same
order (pykalman 0.11 ``standard.py``: ``_filter``, ``_smooth``, ``_smooth_pair``
and the M-step formulas of ``_em``), so a fit agrees to round-off (checked
against pykalman to 1e-8 in ``tests/tracking/test_kalman_em.py`` when pykalman
is importable).

Facts carried over:

* an observation row with any missing value is skipped entirely (pykalman's
  masked rows), both in filtering and in the M-step sums;
* the gain uses the pseudo-inverse of the innovation covariance, the smoother
  gain that of the predicted covariance;
* unset covariances start at the identity; the transition and observation
  matrices, offsets (zero) and the initial mean stay as given;
* M-step order: observation covariance (given observation matrix), transition
  covariance (given transition matrix), initial covariance around the given
  initial mean.

Missing values are NaN here (pykalman takes a masked array).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

EM_VARS = ("transition_covariance", "observation_covariance", "initial_state_covariance")


def _eye(n: int) -> np.ndarray:
    return np.eye(n)


def pinv(a: np.ndarray) -> np.ndarray:
    """``scipy.linalg.pinv`` as pykalman calls it (default tolerances), in numpy.

    Like scipy, a non-finite input raises ValueError. Not ``np.linalg.pinv``: that
    rounds differently (``vt.T @ (s⁻¹ uᵀ)`` against
    scipy's ``(u s⁻¹ @ vh)ᵀ``), and EM on a near-singular window amplifies the
    last bits into visible differences after 20 iterations.
    """
    if not np.isfinite(a).all():  # scipy's check_finite: sleap-nn then drops the fit
        raise ValueError("array must not contain infs or NaNs")
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    cutoff = max(a.shape) * np.finfo(np.float64).eps * (s[0] if s.size else 0.0)
    rank = int(np.sum(s > cutoff))
    u = u[:, :rank] / s[:rank]
    return (u @ vh[:rank]).T


@dataclass
class KalmanModel:
    """A time-invariant model: ``x' = F x + w``, ``z = H x + v`` (offsets zero)."""

    transition: np.ndarray  # F, (S, S)
    observation: np.ndarray  # H, (O, S)
    initial_mean: np.ndarray  # (S,)
    transition_cov: np.ndarray = field(default_factory=lambda: np.zeros(0))  # Q
    observation_cov: np.ndarray = field(default_factory=lambda: np.zeros(0))  # R
    initial_cov: np.ndarray = field(default_factory=lambda: np.zeros(0))  # P0

    def __post_init__(self) -> None:
        self.transition = np.asarray(self.transition, np.float64)
        self.observation = np.asarray(self.observation, np.float64)
        self.initial_mean = np.asarray(self.initial_mean, np.float64)
        s, o = self.transition.shape[0], self.observation.shape[0]
        if self.transition_cov.size == 0:
            self.transition_cov = _eye(s)
        if self.observation_cov.size == 0:
            self.observation_cov = _eye(o)
        if self.initial_cov.size == 0:
            self.initial_cov = _eye(s)

    # ---------------------------------------------------------------- steps
    def predict(self, mean: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """pykalman ``_filter_predict`` (zero offset)."""
        f = self.transition
        return f.dot(mean) + 0.0, f.dot(cov.dot(f.T)) + self.transition_cov

    def correct(
        self, mean: np.ndarray, cov: np.ndarray, z: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """pykalman ``_filter_correct``: gain, mean, covariance; ``z`` None or any NaN: skip."""
        h = self.observation
        if z is None or np.isnan(z).any():
            return np.zeros((cov.shape[0], h.shape[0])), mean, cov
        predicted_obs = h.dot(mean) + 0.0
        innovation_cov = h.dot(cov.dot(h.T)) + self.observation_cov
        gain = cov.dot(h.T.dot(pinv(innovation_cov)))
        new_mean = mean + gain.dot(z - predicted_obs)
        new_cov = cov - gain.dot(h.dot(cov))
        return gain, new_mean, new_cov

    def filter_update(
        self, mean: np.ndarray, cov: np.ndarray, z: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """pykalman ``KalmanFilter.filter_update``: predict one step, then correct by ``z``."""
        predicted_mean, predicted_cov = self.predict(mean, cov)
        _, new_mean, new_cov = self.correct(predicted_mean, predicted_cov, z)
        return new_mean, new_cov

    # ----------------------------------------------------------- sequences
    def _filter(self, obs: np.ndarray):
        n, s = obs.shape[0], self.initial_mean.shape[0]
        pred_m, pred_c = np.zeros((n, s)), np.zeros((n, s, s))
        filt_m, filt_c = np.zeros((n, s)), np.zeros((n, s, s))
        for t in range(n):
            if t == 0:
                pred_m[t], pred_c[t] = self.initial_mean, self.initial_cov
            else:
                pred_m[t], pred_c[t] = self.predict(filt_m[t - 1], filt_c[t - 1])
            _, filt_m[t], filt_c[t] = self.correct(pred_m[t], pred_c[t], obs[t])
        return pred_m, pred_c, filt_m, filt_c

    def filter(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """pykalman ``KalmanFilter.filter``: the filtered means and covariances."""
        _, _, means, covs = self._filter(_rows(obs))
        return means, covs

    def _smooth(self, pred_m, pred_c, filt_m, filt_c):
        n, s = filt_m.shape
        sm_m, sm_c = np.zeros((n, s)), np.zeros((n, s, s))
        gains = np.zeros((max(n - 1, 0), s, s))
        sm_m[-1], sm_c[-1] = filt_m[-1], filt_c[-1]
        f = self.transition
        for t in reversed(range(n - 1)):
            gain = filt_c[t].dot(f.T.dot(pinv(pred_c[t + 1])))
            sm_m[t] = filt_m[t] + gain.dot(sm_m[t + 1] - pred_m[t + 1])
            sm_c[t] = filt_c[t] + gain.dot((sm_c[t + 1] - pred_c[t + 1]).dot(gain.T))
            gains[t] = gain
        return sm_m, sm_c, gains

    def em(self, obs: np.ndarray, n_iter: int = 10) -> KalmanModel:
        """pykalman ``em(obs, n_iter, em_vars=EM_VARS)``: this model, fitted in place."""
        z = _rows(obs)
        seen = ~np.isnan(z).any(axis=1)
        f, h = self.transition, self.observation
        for _ in range(n_iter):
            pred_m, pred_c, filt_m, filt_c = self._filter(z)
            sm_m, sm_c, gains = self._smooth(pred_m, pred_c, filt_m, filt_c)
            n, s = sm_m.shape
            pair = np.zeros((n, s, s))
            for t in range(1, n):
                pair[t] = sm_c[t].dot(gains[t - 1].T)
            # observation covariance
            res = np.zeros((h.shape[0], h.shape[0]))
            n_obs = 0
            for t in range(n):
                if seen[t]:
                    err = z[t] - h.dot(sm_m[t]) - 0.0
                    res += np.outer(err, err) + h.dot(sm_c[t].dot(h.T))
                    n_obs += 1
            observation_cov = (1.0 / n_obs) * res if n_obs > 0 else res
            # transition covariance
            res = np.zeros((s, s))
            for t in range(n - 1):
                err = sm_m[t + 1] - f.dot(sm_m[t]) - 0.0
                vt1t_a = pair[t + 1].dot(f.T)
                res += (
                    np.outer(err, err) + f.dot(sm_c[t].dot(f.T)) + sm_c[t + 1] - vt1t_a - vt1t_a.T
                )
            transition_cov = (1.0 / (n - 1)) * res if n > 1 else res
            # initial state covariance, around the (fixed) initial mean
            x0, mu = sm_m[0], self.initial_mean
            x0_x0 = sm_c[0] + np.outer(x0, x0)
            initial_cov = x0_x0 - np.outer(mu, x0) - np.outer(x0, mu) + np.outer(mu, mu)
            self.observation_cov, self.transition_cov = observation_cov, transition_cov
            self.initial_cov = initial_cov
        return self


def _rows(obs: np.ndarray) -> np.ndarray:
    """Observations as ``(T, O)`` float64 (pykalman's ``_parse_observations``)."""
    z = np.atleast_2d(np.asarray(obs, np.float64))
    if z.shape[0] == 1 and z.shape[1] > 1:
        z = z.T
    return z


def constant_velocity(n_points: int, initial_mean: np.ndarray) -> KalmanModel:
    """sleap-nn's ``_build_matrices``: per point ``[x, vx, y, vy]``, observed ``[x, y]``."""
    s, o = 4 * n_points, 2 * n_points
    f, h = np.zeros((s, s)), np.zeros((o, s))
    for p in range(n_points):
        b = 4 * p
        f[b, b] = f[b, b + 1] = f[b + 1, b + 1] = 1.0
        f[b + 2, b + 2] = f[b + 2, b + 3] = f[b + 3, b + 3] = 1.0
        h[2 * p, b] = 1.0
        h[2 * p + 1, b + 2] = 1.0
    return KalmanModel(f, h, np.asarray(initial_mean, np.float64))
