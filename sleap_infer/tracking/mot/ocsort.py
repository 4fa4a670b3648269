"""OC-SORT (Cao et al. 2023), as sleap-nn 0.3.5's ``--tracker ocsort`` runs it.

SORT made robust to occlusion by trusting *observations* over the filter:

* **ORU** (observation-centric re-update): a track's state is frozen at its
  first miss; when it is found again the filter is replayed from there along a
  straight virtual path from its last observation to the new one, so the
  coasting drift of the gap is undone.
* **OCM** (observation-centric momentum): the first stage adds to the IoU a
  bonus for detections lying in the direction the track was moving (its
  observation ``delta_t`` steps back to its latest one), weighted by
  ``inertia`` and the detection's score.
* **OCR** (observation-centric recovery): high-score detections left over are
  matched against the remaining tracks' *last observations* instead of their
  predictions, which finds an animal that stopped or turned while unseen.

Per frame: detections scoring above ``track_high_threshold`` are the only ones
matched or starting tracks. Stage 1 pools every live track (tentative,
confirmed and lost) against them; a pair is admissible at
``min_match_similarity`` of IoU, taken as it is when the admissible pairs are
one to one, else by maximizing ``IoU + OCM`` over the matrix. Then OCR. The
lifecycle is SORT's (:mod:`~sleap_infer.tracking.mot.sort`).

With ``--mot_param use_byte=true`` (sleap-nn's BYTE stage, off by default),
the tracks still free after stage 1 are matched, before OCR, to the low-score
detections (above ``track_low_threshold``, at most the high one) on their
predictions, admissible at ``min_match_similarity``; those never start tracks.

Defaults are sleap-nn's: ``track_high_threshold`` and ``new_track_threshold``
0.6, ``min_hits`` 3, ``min_match_similarity`` 0.3, ``track_buffer`` 30,
``delta_t`` 3, ``inertia`` 0.2, ``use_byte`` off (``--mot_param`` sets the last three).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sleap_infer.tracking.common import boxes as mb
from sleap_infer.tracking.mot.core import Association, Frame, MotCore, MotParams
from sleap_infer.tracking.mot.tracks import FloatArray, TrackColumn, TrackTable, column

DELTA_T = 3  # steps back the motion direction is measured from
INERTIA = 0.2  # weight of the momentum term
HISTORY = 2 * DELTA_T + 1  # observations remembered per track (at the default delta_t)
_D = mb.XYSR_DIM


@dataclass
class OcSortTracks(TrackTable):
    """OC-SORT's per-track memory; ``empty(d=..., history=...)``: the filter's dimension and
    the observations remembered (``2 * delta_t + 1``)."""

    last_obs: FloatArray = column(4, fill=np.nan)  # latest matched padded box (not the spawn's)
    velocity: FloatArray = column(2, fill=np.nan)  # unit (dy, dx) of the latest motion direction
    obs_steps: FloatArray = column("history", fill=-1.0)  # steps of the observations, oldest first
    obs_boxes: FloatArray = column("history", 4, fill=np.nan)
    frozen_step: FloatArray = column(fill=-1.0)  # step the state was frozen at (-1: not frozen)
    frozen_mean: FloatArray = column("d", fill=np.nan)
    frozen_cov: FloatArray = column("d", "d", fill=np.nan)


class OcSortTracker(MotCore):
    """OC-SORT; see the module docstring."""

    name = "ocsort"
    tracks: OcSortTracks
    last_obs = TrackColumn[FloatArray]()
    velocity = TrackColumn[FloatArray]()
    obs_steps = TrackColumn[FloatArray]()
    obs_boxes = TrackColumn[FloatArray]()
    frozen_step = TrackColumn[FloatArray]()
    frozen_mean = TrackColumn[FloatArray]()
    frozen_cov = TrackColumn[FloatArray]()

    def __init__(self, params: MotParams, carrier: str, n_nodes: int) -> None:
        self.delta_t = int(params.extra.get("delta_t", DELTA_T))
        self.inertia = float(params.extra.get("inertia", INERTIA))
        self.use_byte = bool(params.extra.get("use_byte", False))
        super().__init__(params, carrier, n_nodes)

    def new_tracks(self) -> OcSortTracks:
        """The memory of ``2 * delta_t + 1`` observations, on the tracker's filter (Deep
        OC-SORT: xywh)."""
        return OcSortTracks.empty(d=self.kalman_dim, history=2 * self.delta_t + 1)

    # ------------------------------------------------------- association
    def associate(self, frame: Frame) -> Association:
        p = self.params
        usable = frame.valid & np.isfinite(frame.scores)
        high = usable & (frame.scores > p.track_high_threshold)
        low = usable & (frame.scores > p.track_low_threshold) & ~high
        out = Association(no_spawn={int(j) for j in np.flatnonzero(~high)})
        hi = np.flatnonzero(high)
        rows = np.arange(len(self.tid))
        if len(rows) == 0 or (len(hi) == 0 and not self.use_byte):
            return out
        sim_all = self.similarity_to(rows, frame)
        free_rows, free_hi = rows, np.arange(len(hi))
        if len(hi):
            sim = sim_all[:, hi]
            valid, score = self.first_stage(rows, frame, hi, sim)
            pairs = mb.one_to_one(valid)
            if pairs is None:
                pairs = mb.assign_masked(score, valid)
            out.matches = [(int(rows[r]), int(hi[c]), float(sim[r, c])) for r, c in pairs]
            free_rows = np.setdiff1d(rows, [r for r, _ in pairs])
            free_hi = np.setdiff1d(np.arange(len(hi)), [c for _, c in pairs])
        lo = np.flatnonzero(low)
        if self.use_byte and len(free_rows) and len(lo):  # BYTE, before OCR
            sim = sim_all[np.ix_(free_rows, lo)]
            pairs = mb.assign_masked(sim, sim >= p.min_match_similarity)
            out.matches += [(int(free_rows[r]), int(lo[c]), float(sim[r, c])) for r, c in pairs]
            free_rows = np.setdiff1d(free_rows, [free_rows[r] for r, _ in pairs])
        if len(free_rows) and len(free_hi):
            sim = self._last_observation_similarity(free_rows, frame)[:, hi[free_hi]]
            for r, c in mb.assign_masked(sim, sim >= p.min_match_similarity):
                out.matches.append((int(free_rows[r]), int(hi[free_hi[c]]), float(sim[r, c])))
        return out

    def first_stage(
        self, rows: np.ndarray, frame: Frame, cols: np.ndarray, sim: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Stage 1's ``(admissible, objective)``: geometry alone, and ``IoU + OCM``."""
        return sim >= self.params.min_match_similarity, sim + self._momentum(frame, cols)

    def _previous_observation(self, row: int) -> np.ndarray:
        """The oldest observation within ``delta_t`` steps, else the latest (NaN: none)."""
        for dt in range(self.delta_t, 0, -1):
            hit = np.flatnonzero(self.obs_steps[row] == self.clock - dt)
            if len(hit):
                return self.obs_boxes[row, hit[0]]
        return self.last_obs[row]

    def _momentum(self, frame: Frame, cols: np.ndarray) -> np.ndarray:
        """``(tracks, cols)`` OCM: ``inertia * (pi/2 - angle) / pi * score`` per pair."""
        n = len(self.tid)
        prev = np.array([self._previous_observation(r) for r in range(n)]).reshape(n, 4)
        has_dir = np.isfinite(self.velocity).all(axis=1) & np.isfinite(prev).all(axis=1)
        dirs = np.where(has_dir[:, None], self.velocity, 0.0)
        prev = np.where(np.isfinite(prev), prev, 0.0)
        d = mb.centres(frame.boxes[cols])[None] - mb.centres(prev)[:, None]
        to_det = mb.unit_directions(d[..., 1], d[..., 0])
        cos = np.clip((dirs[:, None, :] * to_det).sum(axis=-1), -1.0, 1.0)
        term = (np.pi / 2.0 - np.abs(np.arccos(cos))) / np.pi
        scores = np.where(np.isfinite(frame.scores[cols]), frame.scores[cols], 0.0)
        return self.inertia * term * has_dir[:, None] * scores[None, :]

    def _last_observation_similarity(self, rows: np.ndarray, frame: Frame) -> np.ndarray:
        boxes = self.last_obs[rows]
        if self.similarity == "centroid":
            scale = 0.5 * self.body_size()
            sim = mb.centroid_similarity(mb.centres(boxes), frame.centroids, scale)
        else:
            sim = mb.iou(boxes, frame.boxes)
        sim = np.clip(np.nan_to_num(sim, nan=0.0, posinf=0.0, neginf=0.0), 0.0, 1.0)
        sim[:, ~frame.valid] = 0.0
        return sim

    # ------------------------------------------------------------ memory
    def correct(self, row: int, box: np.ndarray, score: float) -> None:
        """ORU: replay a frozen track along the virtual path, then the real update."""
        mean, cov = self.mean[row], self.cov[row]
        if self.frozen_step[row] >= 0 and np.isfinite(self.last_obs[row]).all():
            seen = int(self.seen_step[row])
            mean, cov = self._replay(row, self.clock - seen, int(self.frozen_step[row]) - seen, box)
        self.frozen_step[row] = -1.0
        self.frozen_mean[row], self.frozen_cov[row] = np.nan, np.nan
        self.mean[row], self.cov[row] = self.update(mean, cov, box)

    def _replay(self, row: int, n_gap: int, frozen: int, box: np.ndarray):
        """The frozen state updated once per gap step with virtual observations (sleap-nn's ORU)."""
        n_gap = max(n_gap, 1)
        frozen = min(max(frozen, 0), n_gap)
        mean, cov = self.frozen_mean[row].copy(), self.frozen_cov[row].copy()
        start, end = _cxcywh(self.last_obs[row]), _cxcywh(box)
        if frozen == 0:
            mean, cov = self._predict_one(mean, cov)
        first = max(frozen, 1)
        for j in range(first, n_gap + 1):
            if j > first:
                mean, cov = self._predict_one(mean, cov)
            frac = j / n_gap
            c = (1.0 - frac) * start + frac * end
            virtual = box if j == n_gap else np.concatenate([c[:2] - c[2:] / 2, c[:2] + c[2:] / 2])
            mean, cov = self.update(mean, cov, virtual)
        return mean, cov

    def _predict_one(self, mean: np.ndarray, cov: np.ndarray):
        m, c = self.predict(mean[None], cov[None])
        return m[0], c[0]

    def on_match(self, row: int, frame: Frame, j: int) -> None:
        box = frame.boxes[j]
        if np.isfinite(self.last_obs[row]).all():
            previous = self._previous_observation(row)
            d = mb.centres(box) - mb.centres(previous)
            self.velocity[row] = mb.unit_directions(d[1], d[0])
        steps, boxes = self.obs_steps[row], self.obs_boxes[row]  # views: edited in place
        k = int((steps >= 0).sum())
        if k == steps.shape[0]:  # full: forget the oldest
            steps[:-1], boxes[:-1] = steps[1:].copy(), boxes[1:].copy()
            k -= 1
        steps[k], boxes[k] = self.clock, box
        self.last_obs[row] = box

    def on_miss(self, row: int) -> None:
        """First miss since an observation: freeze the predicted state for ORU."""
        if (
            self.frozen_step[row] < 0
            and np.isfinite(self.last_obs[row]).all()
            and self.tsu[row] > 0
        ):
            self.frozen_step[row] = self.clock
            self.frozen_mean[row], self.frozen_cov[row] = self.mean[row], self.cov[row]

    def on_gap(self, mean: np.ndarray, cov: np.ndarray, first_step: int) -> None:
        """A gap's first empty step is a first miss for tracks matched just before it."""
        for i in range(len(self.tid)):
            if self.tsu[i] == 0 and self.frozen_step[i] < 0 and np.isfinite(self.last_obs[i]).all():
                self.frozen_step[i] = first_step
                self.frozen_mean[i], self.frozen_cov[i] = mean[i], cov[i]


def _cxcywh(box: np.ndarray) -> np.ndarray:
    """``[cx, cy, w, h]`` of a box, sides at least 1 px (the virtual path's coordinates)."""
    w, h = max(box[2] - box[0], mb.MIN_SIDE), max(box[3] - box[1], mb.MIN_SIDE)
    return np.array([0.5 * (box[0] + box[2]), 0.5 * (box[1] + box[3]), w, h])
