"""Kalman candidate shift for the classic tracker (``--use-kalman``), as sleap-nn 0.3.5 does it.

sleap-nn's ``KalmanShiftTracker`` replaces only the candidates a frame is scored
against; matching is the classic tracker's. Per frame:

1. **Warm-up**: while fewer than ``kf_init_frame_count`` frames have been
   matched (frames with a non-empty memory), candidates are the plain window's.
   Every frame, after matching, each track's newest remembered detection is
   appended to that track's observation history (``None``, the fixed window's
   untracked column, has one too, as in sleap-nn).
2. **Fit**: at the end of warm-up, one constant-velocity Kalman filter per track
   on its centroid (``[cx, vcx, cy, vcy]``; ``kf_track_features keypoints``: one per
   selected node) over its latest contiguous observations, by 20 EM iterations
   of the noise covariances (:mod:`~sleap_infer.tracking.classic.kalman_em`, pykalman's
   numerics). Seeds: first finite position, first one-frame step (capped).
3. **Then**, before scoring: tracks unseen for more than ``kf_reset_gap_size``
   frames drop their filter; each filter is corrected by the observations since
   its last correction, coasting over gaps, rejecting one farther than the gate
   (``max(40, 8 x median step)`` px) from the prediction; tracks without a filter
   get one once ``kf_init_frame_count`` contiguous fresh observations exist. A
   track with a filter is scored against ONE candidate: its last pose translated
   by half the predicted centroid displacement (keypoints mode: per node);
   velocities are capped at ``max(15, 3 x median step)`` px per frame.

The constants ``kf_prediction_blend`` 0.5, the gate and the caps are sleap-nn's
defaults, not offered on its command line, so not here. Everything is plain
arrays and numbers: :meth:`KalmanShift.state` / :meth:`KalmanShift.load_state`
round-trip it exactly.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from sleap_infer.tracking.classic.candidates import Entry, FixedWindow, LocalQueues, Track
from sleap_infer.tracking.classic.features import Feature, pose_feature
from sleap_infer.tracking.classic.kalman_em import KalmanModel, constant_velocity

PREDICTION_BLEND = 0.5
GATE_STEP_MULT = 8.0
MIN_GATE_PX = 40.0
VELOCITY_CAP_MULT = 3.0
MIN_VELOCITY_CAP_PX = 15.0
EM_ITERATIONS = 20
INIT_FRAME_COUNT = 10  # sleap-nn's defaults of the options
RESET_GAP_SIZE = 5
TRACK_FEATURES = "centroid"

Window = FixedWindow | LocalQueues
Gallery = list[list[tuple[Feature, int]]]


@dataclass
class Observation:
    """A track's newest remembered detection, as recorded after a frame."""

    frame_idx: int
    points: np.ndarray  # (N, 2) float64 source pose
    support: int  # its visible points (the min_match_points filter reads them)


@dataclass
class TrackFilter:
    """One track's fitted model and where it stands."""

    model: KalmanModel
    mean: np.ndarray
    cov: np.ndarray
    last_corrected: int
    last_seen: int  # last frame with an accepted observation
    median_step: float


def _quiet_nanmean(values: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        return np.nanmean(values, axis=0)


class KalmanShift:
    """sleap-nn's Kalman candidate shift; see the module docstring."""

    def __init__(
        self,
        track_features: str = TRACK_FEATURES,
        init_frame_count: int = INIT_FRAME_COUNT,
        node_indices: tuple[int, ...] | None = None,
        reset_gap_size: int = RESET_GAP_SIZE,
    ) -> None:
        self.track_features = track_features
        self.init_frame_count = int(init_frame_count)
        self.node_indices = None if node_indices is None else [int(i) for i in node_indices]
        self.reset_gap_size = int(reset_gap_size)
        self.filters: dict[Track, TrackFilter] = {}
        self.history: dict[Track, list[Observation]] = {}
        self.reset_frame: dict[Track, int] = {}
        self.resolved: list[int] | None = None
        self.n_nodes: int | None = None
        self.frames_seen = 0
        self.initialized = False

    # ------------------------------------------------------------ geometry
    def _n_points(self) -> int:
        if self.track_features == "keypoints":
            return max(1, len(self.resolved or []))
        return 1

    def _centroid(self, keypoints: np.ndarray) -> np.ndarray:
        """Centroid of the tracked nodes; NaN when fewer than half are visible."""
        pts = np.asarray(keypoints)[self.resolved or [], :]
        visible = int((~np.isnan(pts).any(axis=1)).sum())
        if visible == 0 or visible * 2 < pts.shape[0]:
            return np.array([np.nan, np.nan])
        return _quiet_nanmean(pts)

    def _tracked_points(self, keypoints: np.ndarray) -> np.ndarray:
        if self.track_features == "keypoints":
            return np.asarray(keypoints, dtype=float)[self.resolved or [], :]
        return self._centroid(keypoints).reshape(1, 2)

    @staticmethod
    def _predicted_centroid(mean: np.ndarray) -> np.ndarray:
        return _quiet_nanmean(np.asarray(mean)[::2].reshape(-1, 2))

    @staticmethod
    def _cap(mean: np.ndarray, cap: float) -> np.ndarray:
        mean = np.asarray(mean, dtype=float).copy()
        mean[1::2] = np.clip(mean[1::2], -cap, cap)
        return mean

    def _median_step(self, window: list[Observation]) -> float:
        valid = [
            (h.frame_idx, self._centroid(h.points))
            for h in window
            if not np.isnan(self._centroid(h.points)).any()
        ]
        if len(valid) < 2:
            return 0.0
        span = valid[-1][0] - valid[0][0]
        if span <= 0:
            return 0.0
        return float(np.linalg.norm(valid[-1][1] - valid[0][1])) / span

    @staticmethod
    def _velocity_cap(step: float) -> float:
        return max(MIN_VELOCITY_CAP_PX, VELOCITY_CAP_MULT * step)

    @staticmethod
    def _gate(step: float) -> float:
        return max(MIN_GATE_PX, GATE_STEP_MULT * step)

    # ------------------------------------------------------------- fitting
    def _fresh_window(self, track: Track) -> list[Observation]:
        """The longest contiguous (frame step 1) suffix of the history after the last reset."""
        reset = self.reset_frame.get(track, -1)
        fresh = [h for h in self.history.get(track, []) if h.frame_idx > reset]
        if not fresh:
            return []
        window = [fresh[-1]]
        for h in reversed(fresh[:-1]):
            if window[0].frame_idx - h.frame_idx != 1:
                break
            window.insert(0, h)
        return window

    def _fit(self, track: Track) -> bool:
        window = self._fresh_window(track)
        if len(window) < 3:
            return False
        window = window[-self.init_frame_count :]
        n_points = self._n_points()
        rows = np.asarray([self._tracked_points(h.points).flatten() for h in window], float)
        step = self._median_step(window)
        cap = self._velocity_cap(step)
        if int(np.sum(~np.isnan(rows).all(axis=1))) < 2:
            return False
        first, seed_vel = np.full(2 * n_points, np.nan), np.zeros(2 * n_points)
        for c in range(2 * n_points):
            finite_t = np.where(~np.isnan(rows[:, c]))[0]
            if len(finite_t) == 0:
                continue
            first[c] = rows[finite_t[0], c]
            for t in finite_t:
                if t + 1 < len(rows) and not np.isnan(rows[t + 1, c]):
                    seed_vel[c] = np.clip(rows[t + 1, c] - rows[t, c], -cap, cap)
                    break
        if np.isnan(first).all():
            return False
        if np.isnan(first).any():
            fx = np.nanmean(first[0::2]) if not np.isnan(first[0::2]).all() else 0.0
            fy = np.nanmean(first[1::2]) if not np.isnan(first[1::2]).all() else 0.0
            first[0::2] = np.where(np.isnan(first[0::2]), fx, first[0::2])
            first[1::2] = np.where(np.isnan(first[1::2]), fy, first[1::2])
        seed = np.zeros(4 * n_points)
        seed[0::4], seed[1::4] = first[0::2], seed_vel[0::2]
        seed[2::4], seed[3::4] = first[1::2], seed_vel[1::2]
        try:
            model = constant_velocity(n_points, seed).em(rows, n_iter=EM_ITERATIONS)
            means, covs = model.filter(rows)
        except (np.linalg.LinAlgError, ValueError):  # sleap-nn: a failed fit, no filter
            return False
        last = window[-1].frame_idx
        self.filters[track] = TrackFilter(
            model, self._cap(means[-1], cap), covs[-1], last, last, step
        )
        return True

    # ---------------------------------------------------------- per frame
    def observe(self, window: Window) -> None:
        """After a frame: each track's newest remembered detection joins its history."""
        for track in window.tracks():
            entries = window.candidates(track)
            if not entries:
                continue
            newest = max(entries, key=lambda e: e.frame_idx)
            history = self.history.setdefault(track, [])
            if history and history[-1].frame_idx >= newest.frame_idx:
                continue
            points = np.asarray(newest.points, dtype=np.float64)
            history.append(Observation(newest.frame_idx, points, int(newest.support)))
            if self.n_nodes is None:
                self.n_nodes = int(points.shape[0])

    def candidates(self, window: Window, frame_idx: int, features: str) -> Gallery:
        """The gallery the classic tracker scores this frame against (tracks in window order)."""
        tracks = window.tracks()
        if not self.initialized:
            self.frames_seen += 1
            if self.frames_seen >= self.init_frame_count:
                self._initialize()
            if not self.initialized:
                return [_plain(column) for column in window.candidates_of(tracks)]
        self._reset_stale(frame_idx)
        self._correct()
        if self.resolved:
            for track in tracks:
                if track not in self.filters and len(self._fresh_window(track)) >= (
                    self.init_frame_count
                ):
                    self._fit(track)
        return [self._candidate(window, t, frame_idx, features) for t in tracks]

    def _initialize(self) -> None:
        if self.node_indices is not None:
            self.resolved = [i for i in self.node_indices if i < (self.n_nodes or 0)]
        else:
            self.resolved = list(range(self.n_nodes)) if self.n_nodes else []
        self.initialized = True
        if self.resolved:
            for track in list(self.history):
                self._fit(track)

    def _reset_stale(self, frame_idx: int) -> None:
        for track in [
            t for t, f in self.filters.items() if frame_idx - f.last_seen > self.reset_gap_size
        ]:
            del self.filters[track]
            self.reset_frame[track] = frame_idx

    def _correct(self) -> None:
        for track, f in self.filters.items():
            cap, gate = self._velocity_cap(f.median_step), self._gate(f.median_step)
            for h in [h for h in self.history.get(track, []) if h.frame_idx > f.last_corrected]:
                mean, cov = f.mean, f.cov
                try:
                    for _ in range(max(0, h.frame_idx - f.last_corrected - 1)):
                        mean, cov = f.model.filter_update(mean, cov)
                        mean = self._cap(mean, cap)
                    pred_mean, pred_cov = f.model.filter_update(mean, cov)
                    pred, seen = self._predicted_centroid(pred_mean), self._centroid(h.points)
                    gated_out = (
                        not np.isnan(pred).any()
                        and not np.isnan(seen).any()
                        and float(np.linalg.norm(pred - seen)) > gate
                    )
                    if gated_out:
                        mean, cov = pred_mean, pred_cov
                    else:
                        z = self._tracked_points(h.points).flatten().astype(float)
                        mean, cov = f.model.filter_update(mean, cov, z)
                except (np.linalg.LinAlgError, ValueError):
                    break
                f.mean, f.cov = self._cap(mean, cap), cov
                f.last_corrected = h.frame_idx
                if not gated_out:
                    f.last_seen = h.frame_idx

    def _candidate(
        self, window: Window, track: Track, frame_idx: int, features: str
    ) -> list[tuple[Feature, int]]:
        f, history = self.filters.get(track), self.history.get(track)
        if f is None or not history:
            return _plain(window.candidates(track))
        cap = self._velocity_cap(f.median_step)
        mean, cov = f.mean, f.cov
        try:
            for _ in range(max(1, frame_idx - f.last_corrected)):
                mean, cov = f.model.filter_update(mean, cov)
                mean = self._cap(mean, cap)
        except (np.linalg.LinAlgError, ValueError):
            return _plain(window.candidates(track))
        ref = history[-1]
        last = np.asarray(ref.points, dtype=float)
        pred_centroid, last_centroid = self._predicted_centroid(mean), self._centroid(last)
        if np.isnan(pred_centroid).any() or np.isnan(last_centroid).any():
            points = last
        elif self.track_features == "keypoints":
            points = self._per_node(mean, last)
        else:
            points = last + PREDICTION_BLEND * (pred_centroid - last_centroid)
        return [(pose_feature(features, points), ref.support)]

    def _per_node(self, mean: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Keypoints mode: tracked nodes blended toward their prediction, others moved along."""
        idx = self.resolved or []
        predicted = np.asarray(mean)[::2].reshape(-1, 2)
        disp = predicted - last[idx]
        blended = last[idx] + PREDICTION_BLEND * disp
        blended = np.where(np.isnan(blended), predicted, blended)
        points = last.copy()
        points[idx] = blended
        mean_disp = _quiet_nanmean(disp)
        if not np.isnan(mean_disp).any():
            others = np.ones(int(self.n_nodes or last.shape[0]), dtype=bool)
            others[idx] = False
            points[others] = last[others] + PREDICTION_BLEND * mean_disp
        return points

    # ---------------------------------------------------------------- state
    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """``(meta, arrays)``; track ``None`` is saved as -1."""
        hist = [(t, h) for t, hs in self.history.items() for h in hs]
        n = self.n_nodes or 0
        meta = {
            "frames_seen": self.frames_seen,
            "initialized": self.initialized,
            "n_nodes": self.n_nodes,
            "resolved": self.resolved,
            "history_tracks": [_key(t) for t in self.history],
            "reset_frame": [[_key(t), int(f)] for t, f in self.reset_frame.items()],
        }
        arrays = {
            "kf_hist_track": np.array([_key(t) for t, _ in hist], np.int64),
            "kf_hist_frame": np.array([h.frame_idx for _, h in hist], np.int64),
            "kf_hist_support": np.array([h.support for _, h in hist], np.int64),
            "kf_hist_points": np.stack([h.points for _, h in hist]).astype(np.float64)
            if hist
            else np.zeros((0, n, 2)),
        }
        filters = list(self.filters.items())
        s = 4 * self._n_points() if self.resolved else 4
        arrays |= {
            "kf_track": np.array([_key(t) for t, _ in filters], np.int64),
            "kf_ints": np.array(
                [[f.last_corrected, f.last_seen] for _, f in filters], np.int64
            ).reshape(-1, 2),
            "kf_step": np.array([f.median_step for _, f in filters], np.float64),
            "kf_mean": np.array([f.mean for _, f in filters], np.float64).reshape(-1, s),
            "kf_cov": np.array([f.cov for _, f in filters], np.float64).reshape(-1, s, s),
            "kf_q": np.array([f.model.transition_cov for _, f in filters]).reshape(-1, s, s),
            "kf_r": np.array([f.model.observation_cov for _, f in filters]).reshape(
                -1, s // 2, s // 2
            ),
        }
        return meta, arrays

    def load_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.frames_seen = int(meta["frames_seen"])
        self.initialized = bool(meta["initialized"])
        self.n_nodes = None if meta["n_nodes"] is None else int(meta["n_nodes"])
        self.resolved = None if meta["resolved"] is None else [int(i) for i in meta["resolved"]]
        self.reset_frame = {_track(k): int(f) for k, f in meta["reset_frame"]}
        self.history = {_track(k): [] for k in meta["history_tracks"]}
        points = np.array(arrays["kf_hist_points"], np.float64)
        for i, key in enumerate(arrays["kf_hist_track"].tolist()):
            self.history[_track(key)].append(
                Observation(
                    int(arrays["kf_hist_frame"][i]),
                    points[i].copy(),
                    int(arrays["kf_hist_support"][i]),
                )
            )
        self.filters = {}
        n_points = self._n_points()
        for i, key in enumerate(arrays["kf_track"].tolist()):
            model = constant_velocity(n_points, np.zeros(4 * n_points))
            model.transition_cov = np.array(arrays["kf_q"][i], np.float64)
            model.observation_cov = np.array(arrays["kf_r"][i], np.float64)
            last_corrected, last_seen = (int(v) for v in arrays["kf_ints"][i])
            self.filters[_track(key)] = TrackFilter(
                model,
                np.array(arrays["kf_mean"][i], np.float64),
                np.array(arrays["kf_cov"][i], np.float64),
                last_corrected,
                last_seen,
                float(arrays["kf_step"][i]),
            )


def _plain(entries: list[Entry]) -> list[tuple[Feature, int]]:
    return [(e.feature, e.support) for e in entries]


def _key(track: Track) -> int:
    return -1 if track is None else int(track)


def _track(key: int) -> Track:
    return None if int(key) < 0 else int(key)
