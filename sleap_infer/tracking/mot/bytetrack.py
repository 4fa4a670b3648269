"""ByteTrack (Zhang et al. 2022), as sleap-nn 0.3.5's ``--tracker bytetrack`` runs online.

sleap-nn's ``ByteTracker`` on :class:`~sleap_infer.tracking.mot.core.MotCore`,
with its "animal" preset: a ``[cx, cy, w, h]`` Kalman filter (the preset trades
the paper's ``[cx, cy, aspect, h]``, whose aspect velocity inflates a turning
animal's box). Per frame, with the similarity of a track's prediction and a
detection being the IoU of their padded boxes or, for poses, the IoU of boxes
over only the nodes both show (whichever is larger):

1. **Stage 1**: confirmed and lost tracks vs detections scoring above
   ``track_high_threshold``, Hungarian on ``1 - similarity * score``, at most
   ``1 - min_match_similarity``.
2. **Stage 2**: the tracks left that were matched at the previous frame vs the
   detections between ``track_low_threshold`` and the high one, on
   ``1 - similarity``, at most 0.5.
3. **Stage 3**: tentative tracks vs the high-score detections left, as stage 1
   but at most 0.7 of cost.
4. **Duplicates**: a lost track whose predicted box overlaps (IoU > 0.85) a
   matched or would-be new detection is removed, or that detection's track (or
   new track) is, whichever has the shorter history.
5. High-score detections left at ``new_track_threshold`` or more start
   tentative tracks, which die at their first miss and confirm at their
   ``min_hits``-th match. A lost track stops changing height (its height
   velocity is zeroed) and is dropped after more than ``track_buffer`` missed
   frames.

Defaults are sleap-nn's: ``min_hits`` 2, ``track_high_threshold`` 0.5,
``track_low_threshold`` 0.1, ``new_track_threshold`` 0.6, ``min_match_similarity``
0.2, ``track_buffer`` 30. BoT-SORT (:mod:`~sleap_infer.tracking.mot.botsort`) is this
tracker plus an appearance memory that lowers stage 1 and 3 costs, as in sleap-nn,
where ``BoTSORTTracker`` subclasses ``ByteTracker``. infer's own ByteTrack variant,
which tracks the crowded and stop-and-go scenes better, is ``--tracker infer_bytetrack``
(:mod:`~sleap_infer.tracking.infer_bytetrack.tracker`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from sleap_infer.tracking.common import boxes as mb
from sleap_infer.tracking.mot.core import (
    CONFIRMED,
    TENTATIVE,
    Association,
    Frame,
    MotCore,
    MotParams,
    XywhFilter,
)
from sleap_infer.tracking.mot.tracks import FloatArray, TrackColumn, TrackTable, column

LOW_STAGE_MIN_SIMILARITY = 0.5
UNCONFIRMED_MIN_SIMILARITY = 0.3
DUPLICATE_SIMILARITY = 0.85


@dataclass
class ByteTrackTracks(TrackTable):
    """ByteTrack's per-track memory; ``empty(d=..., nodes=...)``: the filter's dimension and
    the skeleton's nodes (at least 1)."""

    last_kp: FloatArray = column("nodes", 2, fill=np.nan)  # latest matched pose
    kf_centre: FloatArray = column(2, fill=np.nan)  # filter centre right after that match
    start_frame: FloatArray = column(fill=-1.0)  # frame index of the first detection
    match_frame: FloatArray = column(fill=-1.0)  # ... of the latest match


class ByteTrackTracker(XywhFilter, MotCore):
    """sleap-nn's ByteTrack; see the module docstring."""

    name = "bytetrack"
    kalman_dim = mb.XYWH_DIM
    tentative_dies_on_miss = True
    hits_start = 1
    confirm_on_streak = False
    zero_on_miss: ClassVar[tuple[int, ...]] = (7,)  # the height velocity (sleap-nn: size_velocity)
    tracks: ByteTrackTracks
    last_kp = TrackColumn[FloatArray]()
    kf_centre = TrackColumn[FloatArray]()
    start_frame = TrackColumn[FloatArray]()
    match_frame = TrackColumn[FloatArray]()

    def __init__(self, params: MotParams, carrier: str, n_nodes: int) -> None:
        self.pose_nodes = max(int(n_nodes), 1)
        extra = params.extra  # --mot_param overrides of the stage caps and score fusion
        self.low_stage_min = float(extra.get("low_stage_min_similarity", LOW_STAGE_MIN_SIMILARITY))
        self.unconfirmed_min = float(
            extra.get("unconfirmed_min_similarity", UNCONFIRMED_MIN_SIMILARITY)
        )
        self.duplicate_min = float(extra.get("duplicate_similarity", DUPLICATE_SIMILARITY))
        self.fuse_score = bool(extra.get("fuse_score", True))
        super().__init__(params, carrier, n_nodes)

    def new_tracks(self) -> ByteTrackTracks:
        return ByteTrackTracks.empty(d=self.kalman_dim, nodes=self.pose_nodes)

    # ------------------------------------------------------------ memory
    def _remember(self, row: int, frame: Frame, j: int) -> None:
        if frame.keypoints is not None:
            kp: FloatArray = np.full(self.last_kp.shape[1:], np.nan)
            n = min(kp.shape[0], frame.keypoints.shape[1])
            kp[:n] = frame.keypoints[j, :n]
            self.last_kp[row] = kp
        self.kf_centre[row] = self.mean[row, :2]
        self.match_frame[row] = frame.frame_idx

    def on_match(self, row: int, frame: Frame, j: int) -> None:
        super().on_match(row, frame, j)  # BoT-SORT: the appearance memory's gated update
        self._remember(row, frame, j)

    def on_spawn(self, row: int, frame: Frame, j: int) -> None:
        self._remember(row, frame, j)
        self.start_frame[row] = frame.frame_idx

    # ------------------------------------------------------- association
    def similarity_to(self, rows: np.ndarray, frame: Frame) -> np.ndarray:
        sim = super().similarity_to(rows, frame)
        if sim.size == 0 or frame.keypoints is None or self.similarity != "iou":
            return sim
        shift = self.mean[rows, :2] - self.kf_centre[rows]
        predicted = self.last_kp[rows] + shift[:, None, :]
        k = max(predicted.shape[1], frame.keypoints.shape[1])
        predicted, det = _pad(predicted, k), _pad(frame.keypoints, k)
        min_side = mb.MIN_BOX_FRACTION * self.body_size()
        shared = mb.shared_node_iou(predicted, det, self.params.box_padding, min_side)
        sim = np.clip(np.nan_to_num(np.fmax(sim, shared), nan=0.0), 0.0, 1.0)
        sim[:, ~frame.valid] = 0.0
        return sim

    def associate(self, frame: Frame) -> Association:
        p = self.params
        s = frame.scores
        high = frame.valid & (s > p.track_high_threshold)
        low = frame.valid & (s > p.track_low_threshold) & (s < p.track_high_threshold)
        spawnable = high & (s >= p.new_track_threshold)
        out = Association(no_spawn={int(j) for j in np.flatnonzero(~spawnable)})
        rows = np.arange(len(self.tid))
        if len(rows) == 0:
            return out
        sim = self.similarity_to(rows, frame)
        pool = rows[self.status != TENTATIVE]
        left_pool, left_high = self._stage(
            pool, np.flatnonzero(high), sim, frame, 1.0 - p.min_match_similarity, True, out
        )
        tracked = left_pool[self.status[left_pool] == CONFIRMED]
        self._stage(tracked, np.flatnonzero(low), sim, frame, 1.0 - self.low_stage_min, False, out)
        tentative = rows[self.status == TENTATIVE]
        _, left_high = self._stage(
            tentative, left_high, sim, frame, 1.0 - self.unconfirmed_min, True, out
        )
        self._remove_duplicates(frame, left_high, spawnable, out)
        return out

    def _stage(self, rows, cols, sim, frame: Frame, max_cost: float, high: bool, out):
        """One Hungarian stage; appends its matches, returns the rows and columns left.
        ``high``: a stage on high-score detections (1 and 3), whose cost is fused with the
        score (and, in BoT-SORT, with appearance); stage 2's is ``1 - similarity``."""
        if len(rows) == 0 or len(cols) == 0:
            return rows, cols
        sub = sim[np.ix_(rows, cols)]
        cost = self._high_cost(rows, cols, sub, frame) if high else 1.0 - sub
        pairs = mb.assign_capped(cost, max_cost)
        out.matches += [(int(rows[r]), int(cols[c]), float(sub[r, c])) for r, c in pairs]
        taken_r, taken_c = {r for r, _ in pairs}, {c for _, c in pairs}
        left_r = np.array([r for i, r in enumerate(rows) if i not in taken_r], np.int64)
        left_c = np.array([c for i, c in enumerate(cols) if i not in taken_c], np.int64)
        return left_r, left_c

    def _high_cost(
        self, rows: np.ndarray, cols: np.ndarray, sub: np.ndarray, frame: Frame
    ) -> np.ndarray:
        """Stages 1 and 3: ``1 - similarity * score`` (``fuse_score``), else ``1 - sim``."""
        return 1.0 - (sub * frame.scores[cols][None, :] if self.fuse_score else sub)

    def _remove_duplicates(self, frame: Frame, left_high, spawnable, out: Association) -> None:
        """A lost track and a matched or new detection on one spot: the shorter history goes."""
        matched = {r for r, _, _ in out.matches}
        lost = [
            r
            for r in range(len(self.tid))
            if self.status[r] != TENTATIVE
            and r not in matched
            and self.tsu[r] <= self.params.track_buffer
        ]
        if not lost:
            return
        tracked = [(r, j, frame.frame_idx - int(self.start_frame[r])) for r, j, _ in out.matches]
        tracked += [(-1, int(j), 0) for j in left_high if spawnable[j]]
        if not tracked:
            return
        boxes = self.predicted_boxes()[lost]
        dup = mb.iou(boxes, frame.boxes[[j for _, j, _ in tracked]])
        for q, k in np.argwhere(dup > self.duplicate_min):
            lost_history = int(self.match_frame[lost[q]]) - int(self.start_frame[lost[q]])
            if tracked[k][2] > lost_history:
                out.removed.add(lost[q])
            else:
                out.no_spawn.add(tracked[k][1])
                if tracked[k][0] >= 0:
                    out.removed.add(tracked[k][0])
        out.matches = [m for m in out.matches if m[0] not in out.removed]


def _pad(kp: np.ndarray, k: int) -> np.ndarray:
    if kp.shape[1] >= k:
        return kp
    out = np.full((kp.shape[0], k, 2), np.nan)
    out[:, : kp.shape[1]] = kp
    return out
