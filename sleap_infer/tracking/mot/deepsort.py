"""DeepSORT (Wojke et al. 2017) and StrongSORT (Du et al. 2023), as sleap-nn 0.3.5 runs them.

Both add re-ID appearance to SORT, on a ``[cx, cy, w, h]`` Kalman filter
(sleap-nn's "animal" preset: a turning animal breaks the pedestrian ``xyah``
filter's slowly varying aspect ratio). Per frame, after every track is
predicted:

1. Detections scoring at or below ``track_low_threshold`` are ignored: never
   matched, never a new track.
2. **Appearance stage** over the confirmed and lost tracks whose memory holds a
   vector. A pair outside the Kalman gate (squared Mahalanobis distance of the
   box *centre* above 5.9915, chi-square 95 % with 2 degrees of freedom) is
   forbidden.

   * DeepSORT: the *matching cascade*. Tracks updated one step ago are assigned
     first, then those missed once, and so on up to ``track_buffer``, each level
     taking what the earlier ones left. The cost is ``1 - max cosine`` of the
     detection to the track's gallery of recent vectors (1 for a detection
     without a vector), capped at ``1 - threshold``.
   * StrongSORT: one global assignment on ``0.98 * (1 - cosine to the EMA) +
     0.02 * d^2`` (``d^2``: the Mahalanobis distance; forbidden pairs' cosine
     term is 1e5 before the blend), capped at ``1 - threshold + 0.05``. Its
     filter is NSA: a detection's score shrinks its measurement noise.

3. **Geometric stage**: tentative tracks plus the appearance stage's leftovers
   updated one step ago, on ``1 - similarity`` (IoU of padded boxes; a one-node
   skeleton: a Gaussian of the centre distance), capped at ``1 -
   min_match_similarity``.
4. Lifecycle: a new track has one hit, dies at its first miss while tentative,
   confirms at its ``min_hits``-th match, and is dropped after more than
   ``track_buffer`` missed steps.

When appearance cannot decide -- no vector seen yet, or the threshold is
``auto`` and uncalibrated (online, or a pre-pass that found appearance not decisive) (see
:mod:`~sleap_infer.tracking.mot.appearance`) -- the appearance stage is skipped
and the geometric stage takes every confirmed track as well, exactly as
sleap-nn's class degrades; so does a confirmed track whose memory is empty.

Defaults (sleap-nn's "animal" preset): ``min_hits`` 3, ``track_high_threshold``
0.5 (the quality gate's minimum score), ``track_low_threshold`` and
``new_track_threshold`` 0.1, ``min_match_similarity`` 0.3, ``track_buffer`` 30;
memories: EMA momentum 0.8, 30 vectors of gallery.
"""

from __future__ import annotations

import numpy as np

from sleap_infer.tracking.common import boxes as mb
from sleap_infer.tracking.mot.appearance import AppearanceTracks
from sleap_infer.tracking.mot.core import (
    CONFIRMED,
    LOST,
    TENTATIVE,
    Association,
    Frame,
    XywhFilter,
)

INFEASIBLE = 1e5  # cost of a pair outside the Kalman gate
MC_LAMBDA = 0.98  # StrongSORT: weight of appearance against motion in the blended cost
MC_ALLOWANCE = 0.05  # StrongSORT: cost cap raised by this for the motion term


class DeepSortTracker(XywhFilter, AppearanceTracks):
    """DeepSORT; see the module docstring."""

    name = "deepsort"
    appearance_statistic = "gallery_max"
    kalman_dim = mb.XYWH_DIM
    tentative_dies_on_miss = True
    hits_start = 1
    confirm_on_streak = False

    # ------------------------------------------------------- association
    def associate(self, frame: Frame) -> Association:
        p = self.params
        ignored = frame.scores <= p.track_low_threshold
        out = Association(no_spawn={int(j) for j in np.flatnonzero(ignored)})
        cols = np.flatnonzero(frame.valid & ~ignored)
        n = len(self.tid)
        if n == 0 or len(cols) == 0:
            return out
        sim = self.similarity_to(np.arange(n), frame)[:, cols]
        free = np.ones(len(cols), bool)
        rows = np.arange(n)
        tentative = rows[self.status == TENTATIVE]
        confirmed = rows[(self.status == CONFIRMED) | (self.status == LOST)]
        gate = self.appearance_gate()
        if gate is None:
            pool, coasting = np.zeros(0, np.int64), confirmed
        else:
            remembers = np.array([self.has_memory(int(r)) for r in confirmed], bool)
            pool, coasting = confirmed[remembers], confirmed[~remembers]
        matched = (
            self.match_appearance(pool, frame, cols, gate, free)
            if gate is not None and len(pool)  # a pool only where appearance decides
            else []
        )
        taken = {r for r, _ in matched}
        geo_pool = np.sort(
            np.concatenate(
                [
                    tentative,
                    [r for r in pool if r not in taken and self.tsu[r] == 1],
                    coasting[self.tsu[coasting] <= p.track_buffer],
                ]
            ).astype(np.int64)
        )
        free_idx = np.flatnonzero(free)
        if len(geo_pool) and len(free_idx):
            sub = sim[np.ix_(geo_pool, free_idx)]
            cost = np.where(sub >= p.min_match_similarity, 1.0 - sub, np.inf)
            for r, c in mb.assign_capped(cost, 1.0 - p.min_match_similarity):
                matched.append((int(geo_pool[r]), int(free_idx[c])))
                free[free_idx[c]] = False
        out.matches = [(r, int(cols[c]), float(sim[r, c])) for r, c in matched]
        return out

    def match_appearance(
        self, pool: np.ndarray, frame: Frame, cols: np.ndarray, gate: float, free: np.ndarray
    ) -> list[tuple[int, int]]:
        """The matching cascade: ``(row, candidate)`` pairs; ``free`` is updated in place."""
        cos = self.gallery_cos(pool, frame)[:, cols]
        cost = np.where(np.isfinite(cos), 1.0 - cos, 1.0)
        cost[self.centre_distances(pool, frame, cols) > mb.CHI2_95_2DOF] = INFEASIBLE
        tsu = self.tsu[pool]
        matches: list[tuple[int, int]] = []
        for level in np.unique(tsu):
            if not 1 <= level <= self.params.track_buffer:
                continue
            free_idx = np.flatnonzero(free)
            if len(free_idx) == 0:
                break
            at = np.flatnonzero(tsu == level)
            for r, c in mb.assign_capped(cost[np.ix_(at, free_idx)], 1.0 - gate):
                matches.append((int(pool[at[r]]), int(free_idx[c])))
                free[free_idx[c]] = False
        return matches

    def centre_distances(self, rows: np.ndarray, frame: Frame, cols: np.ndarray) -> np.ndarray:
        return mb.xywh_centre_distances(self.mean[rows], self.cov[rows], frame.boxes[cols])


class StrongSortTracker(DeepSortTracker):
    """StrongSORT; see the module docstring."""

    name = "strongsort"
    appearance_statistic = "ema"

    def correct(self, row: int, box: np.ndarray, score: float) -> None:
        """NSA Kalman update: the detection's score scales the measurement noise."""
        self.mean[row], self.cov[row] = mb.xywh_update(self.mean[row], self.cov[row], box, score)

    def match_appearance(
        self, pool: np.ndarray, frame: Frame, cols: np.ndarray, gate: float, free: np.ndarray
    ) -> list[tuple[int, int]]:
        """One assignment on the motion-blended cost; ``free`` is updated in place."""
        free_idx = np.flatnonzero(free)
        if len(free_idx) == 0:
            return []
        sub = cols[free_idx]
        cos = self.ema_cos(pool, frame)[:, sub]
        d_app = np.where(np.isfinite(cos), 1.0 - cos, 1.0)
        d2 = self.centre_distances(pool, frame, sub)
        d2 = np.where(np.isfinite(d2), d2, INFEASIBLE)
        d_app[d2 > mb.CHI2_95_2DOF] = INFEASIBLE
        cost = MC_LAMBDA * d_app + (1.0 - MC_LAMBDA) * d2
        matches = []
        for r, c in mb.assign_capped(cost, 1.0 - gate + MC_ALLOWANCE):
            matches.append((int(pool[r]), int(free_idx[c])))
            free[free_idx[c]] = False
        return matches
