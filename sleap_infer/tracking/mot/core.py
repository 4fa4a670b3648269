"""The track lifecycle sleap-nn 0.3.5's MOT trackers share, online and saved bit for bit.

Per frame (sleap-nn's ``BaseMOTTracker.track``; without ``prepare`` unless
:meth:`MotCore.prepare` got the whole-video pre-pass of :mod:`.mot_prepare`):

1. Detections become padded boxes (:mod:`~sleap_infer.tracking.common.boxes`),
   with the body size of the poses seen *before* this frame.
2. The clock advances: one step per processed frame when the frames come at a
   regular stride (the commonest gap, once it covers half of them), gaps of
   several strides count several steps; every live track is Kalman-predicted
   that many times, and a track the gap would already have outlived is removed.
3. The subclass associates (:meth:`MotCore.associate`): ``(row, detection,
   similarity)`` triples and the detections that may not start a track.
4. Matched tracks are updated; unmatched confirmed ones become lost.
5. Unmatched detections scoring at least ``new_track_threshold`` start
   tentative tracks; a tentative track confirms once its hit streak (SORT
   family) reaches ``min_hits`` and only then takes the next public id.
6. Tracks unmatched for more than ``track_buffer`` steps are removed.

The answer labels this frame's detections of confirmed tracks with their
public id and the match's similarity. Like sleap-nn, a track that confirms
also labels its tentative detections (spawn: score 1.0; matches: their
similarity): the tracker remembers them as "members" until then, and answers
those of earlier frames as late labels (:mod:`sleap_infer.core.late_tracks`),
which the outputs lay over frames already written.

Everything remembered between frames is the per-track table
(:mod:`~sleap_infer.tracking.mot.tracks`), the tentative tracks' members, a
handful of integers and the recent pose diagonals (the running body size), so
:meth:`MotCore.state` / :meth:`MotCore.load_state` round-trip it exactly.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

from sleap_infer.tracking import mot_param, registry
from sleap_infer.tracking.base import MASKS, Assignment, Detections, LateLabel, TrackerState
from sleap_infer.tracking.common import body_size as body
from sleap_infer.tracking.common import boxes as mb
from sleap_infer.tracking.common.prepare import MotCalibration, detection_scores, normalized
from sleap_infer.tracking.mot.tracks import (
    BoolArray,
    FloatArray,
    IntArray,
    Members,
    TrackColumn,
    TrackTable,
)
from sleap_infer.tracking.options import TrackingOptions

TENTATIVE, CONFIRMED, LOST = 0, 1, 2
STATE_FORMAT = 2  # 2: the tentative tracks' members


@dataclass
class MotParams:
    """A MOT tracker's knobs after sleap-nn's per-tracker preset was applied."""

    track_buffer: int
    min_hits: int
    track_high_threshold: float
    track_low_threshold: float
    new_track_threshold: float
    min_match_similarity: float
    box_padding: float = 0.1
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Frame:
    """One frame's detections as the MOT trackers see them."""

    boxes: np.ndarray  # (I, 4) padded xyxy
    raw: np.ndarray  # (I, 4) unpadded (degenerate: the body-size square)
    centroids: np.ndarray  # (I, 2) raw-box centres
    scores: np.ndarray  # (I,)
    valid: np.ndarray  # (I,) bool: something visible
    frame_idx: int = 0
    keypoints: np.ndarray | None = None  # (I, N, 2) poses, NaN = hidden; None for masks
    n_visible: np.ndarray | None = None  # (I,) visible nodes (masks: 1 if any pixel)
    embeddings: np.ndarray | None = None  # (I, D) float32 unit re-ID vectors (appearance)
    has_embedding: np.ndarray | None = None  # (I,) bool: which rows carry one

    def __len__(self) -> int:
        return int(self.scores.shape[0])


@dataclass
class Association:
    """What :meth:`MotCore.associate` decided for one frame."""

    matches: list[tuple[int, int, float]] = field(default_factory=list)  # (row, det, sim)
    no_spawn: set[int] = field(default_factory=set)
    removed: set[int] = field(default_factory=set)  # rows dropped now (BoT-SORT's duplicates)


class MotCore:
    """Online SORT-family tracker; a subclass supplies :meth:`associate` and its kinds."""

    name: ClassVar[str] = ""
    needs_images = False
    kalman_dim: ClassVar[int] = mb.XYSR_DIM
    tentative_dies_on_miss: ClassVar[bool] = False
    hits_start: ClassVar[int] = 0
    confirm_on_streak: ClassVar[bool] = True
    zero_on_miss: ClassVar[tuple[int, ...]] = ()  # state entries zeroed before predicting a
    # track not matched at the previous step (BoT-SORT: the size velocities)

    # The per-track table's columns, as the tracker's attributes (see TrackColumn).
    mean = TrackColumn[FloatArray]()
    cov = TrackColumn[FloatArray]()
    tid = TrackColumn[IntArray]()
    public_id = TrackColumn[IntArray]()
    status = TrackColumn[IntArray]()
    hits = TrackColumn[IntArray]()
    hit_streak = TrackColumn[IntArray]()
    age = TrackColumn[IntArray]()
    tsu = TrackColumn[IntArray]()
    seen_step = TrackColumn[IntArray]()

    @classmethod
    def from_options(cls, options: TrackingOptions, carrier: str, n_nodes: int) -> MotCore:
        """The tracker ``options`` ask for, with sleap-nn's preset where they are unset."""
        return cls(mot_params(options), carrier, n_nodes)

    def __init__(self, params: MotParams, carrier: str, n_nodes: int) -> None:
        self.params = params
        self.carrier = carrier
        self.similarity = "centroid" if carrier != MASKS and n_nodes == 1 else "iou"
        self.tracks = self.new_tracks()
        self.next_tid = 0
        self.next_public = 0
        self.members = Members.empty()
        self.clock = -1  # step of the latest frame (-1: none yet)
        self.last_frame: int | None = None
        self.delta_counts: dict[int, int] = {}
        self.body = body.RunningBodySize()
        self.last_delta: int | None = None  # frame-index change to this frame
        self.calibration: MotCalibration | None = None  # the whole-video pre-pass, if run

    def prepare(self, calibration: MotCalibration | None) -> None:
        """Take the whole-video pre-pass (sleap-nn's ``prepare()``): from now on scores are
        divided by its normalizer, and its body size, time base and stride are fixed."""
        self.calibration = calibration

    def new_tracks(self) -> TrackTable:
        """An empty table of this tracker's per-track columns (a subclass with memory of its
        own: its :class:`TrackTable` subclass)."""
        return TrackTable.empty(d=self.kalman_dim)

    # --------------------------------------------------------------- kinds
    def initiate(self, box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return mb.xysr_initiate(box)

    def predict(self, mean: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return mb.xysr_predict(mean, cov)

    def update(self, mean: np.ndarray, cov: np.ndarray, box: np.ndarray):
        return mb.xysr_update(mean, cov, box)

    def predicted_boxes(self) -> np.ndarray:
        return mb.xyxy_from_xysr(self.mean)

    def associate(self, frame: Frame) -> Association:
        raise NotImplementedError

    # -------------------------------------------------------------- helpers
    @property
    def n_tracks(self) -> int:
        return self.next_public

    def body_size(self) -> float:
        """``--mot_param body_size``, else the median diagonal of the extents seen so far,
        else :mod:`.mot_body`'s fallbacks."""
        if self.params.extra.get("body_size") is not None:
            return float(self.params.extra["body_size"])
        cal = self.calibration
        if cal is not None and np.isfinite(cal.body_size) and cal.body_size > 0:
            return float(cal.body_size)
        return self.body.size()

    def similarity_to(self, rows: np.ndarray, frame: Frame) -> np.ndarray:
        """``(len(rows), I)`` geometric similarity of the tracks' predictions to the detections."""
        if len(rows) == 0 or len(frame) == 0:
            return np.zeros((len(rows), len(frame)))
        if self.similarity == "centroid":
            sim = mb.centroid_similarity(
                self.mean[rows, :2], frame.centroids, 0.5 * self.body_size()
            )
        else:
            sim = mb.iou(self.predicted_boxes()[rows], frame.boxes)
        sim = np.clip(np.nan_to_num(sim, nan=0.0, posinf=0.0, neginf=0.0), 0.0, 1.0)
        sim[:, ~frame.valid] = 0.0
        return sim

    def _frame(self, det: Detections) -> Frame:
        raw, count = mb.raw_boxes(det, self.carrier)
        boxes, raw = mb.padded_boxes(
            raw, count, self.carrier, self.params.box_padding, self.body_size()
        )
        valid = np.isfinite(raw).all(axis=1)
        scores = detection_scores(det)
        if self.calibration is not None:
            scores = normalized(scores, self.calibration.score_normalizer)
        points = None if self.carrier == MASKS else np.asarray(det.points, np.float64)
        centroids = 0.5 * (raw[:, :2] + raw[:, 2:])
        return Frame(boxes, raw, centroids, scores, valid, int(det.frame_idx), points, count)

    def _observe_body_size(self, det: Detections, frame: Frame, steps: int) -> None:
        """Remember this frame's body-size evidence (see :meth:`body_size`)."""
        new = np.zeros(0)
        if len(frame):
            if self.carrier == MASKS:
                wh = (frame.raw[:, 2:] - frame.raw[:, :2])[frame.valid]
                keep = np.isfinite(wh).all(axis=1) & (wh >= 1.0).all(axis=1)
                new = np.hypot(wh[keep, 0], wh[keep, 1])
            else:
                new = mb.pose_diagonals(det)
        # No extent seen yet (one-node skeletons): spacing and motion, as sleap-nn.
        self.body.observe(
            new,
            (frame.keypoints, frame.raw, frame.valid),
            steps,
            linkable=self.last_delta is None or self.last_delta > 0,
            fixed=self.params.extra.get("body_size") is not None,
        )

    def _keep(self, keep: BoolArray) -> None:
        self.tracks.keep(keep)

    def _steps(self, frame_idx: int) -> int:
        """Steps since the previous frame; the stride is the commonest gap (sleap-nn's rule)."""
        if self.clock < 0:
            self.clock, self.last_frame, self.last_delta = 0, frame_idx, None
            return 0
        delta = frame_idx - int(self.last_frame)  # type: ignore[arg-type]
        self.last_delta = delta
        steps = 1
        cal = self.calibration
        if cal is not None:
            if cal.time_base == "frames" and delta > 0:
                steps = max(1, int(np.rint(delta / cal.frame_step)))
        elif delta > 0:
            self.delta_counts[delta] = self.delta_counts.get(delta, 0) + 1
            stride = min(self.delta_counts, key=lambda d: (-self.delta_counts[d], d))
            if self.delta_counts[stride] >= 0.5 * sum(self.delta_counts.values()):
                steps = max(1, int(np.rint(delta / stride)))
        self.clock += steps
        self.last_frame = frame_idx
        return steps

    def _advance(self, steps: int) -> None:
        if steps == 0 or len(self.tid) == 0:
            return
        gone = self.tsu + steps - 1 > self.params.track_buffer
        if steps > 1 and self.tentative_dies_on_miss:
            gone |= self.status == TENTATIVE
        self._keep(~gone)
        mean, cov = self.mean, self.cov
        for k in range(steps):
            if self.zero_on_miss:
                missed = self.tsu + k > 0
                mean[np.ix_(missed, np.asarray(self.zero_on_miss, np.intp))] = 0.0
            mean, cov = self.predict(mean, cov)
            if k == 0 and steps > 1:
                self.on_gap(mean, cov, self.clock - steps + 1)
        self.mean, self.cov = mean.reshape(-1, self.kalman_dim), cov
        self.tsu = self.tsu + steps
        self.age = self.age + steps
        self.hit_streak = np.where(self.tsu > 1, 0, self.hit_streak)
        if steps > 1:
            self.status = np.where(self.status == CONFIRMED, LOST, self.status)

    def _spawn(self, frame: Frame, j: int) -> None:
        mean, cov = self.initiate(frame.boxes[j])
        self.tracks.append(  # a subclass's own columns start at their fill
            mean=mean,
            cov=cov,
            tid=self.next_tid,
            public_id=-1,
            status=TENTATIVE,
            hits=self.hits_start,
            hit_streak=self.hits_start,
            age=0,
            tsu=0,
            seen_step=self.clock,
        )
        self.next_tid += 1

    def _add_member(self, tid: int, frame_idx: int, j: int, score: float) -> None:
        """Remember a tentative track's detection: labelled if the track confirms."""
        self.members.append(tid=tid, frame=frame_idx, det=j, score=score)

    def _keep_members(self, keep: BoolArray) -> None:
        self.members.keep(keep)

    # ----------------------------------------------------------------- step
    def step(self, det: Detections) -> Assignment:
        frame = self._frame(det)
        steps = self._steps(int(det.frame_idx))
        self._advance(steps)
        self._observe_body_size(det, frame, steps)
        found = self.associate(frame) if len(frame) else Association()
        matched = self._apply_matches(found, frame)
        n_old = len(self.tid)
        keep = self._age_unmatched(found, matched)
        used = {j for j, _ in matched.values()}
        for j in range(len(frame)):
            if j in used or j in found.no_spawn or not frame.valid[j]:
                continue
            if frame.scores[j] >= self.params.new_track_threshold:
                self._spawn(frame, j)
                self._add_member(self.next_tid - 1, frame.frame_idx, j, 1.0)
                self.on_spawn(len(self.tid) - 1, frame, j)
        members = self._confirm_ready()
        ids = np.full(len(frame), -1, np.int64)
        scores = np.full(len(frame), np.nan, np.float32)
        for row, (j, sim) in matched.items():
            if keep[row] and self.status[row] == CONFIRMED:
                ids[j], scores[j] = self.public_id[row], sim
        late: list[LateLabel] = []
        for frame_idx, j, public, score in members:
            if frame_idx != frame.frame_idx:
                late.append((frame_idx, j, public, score))
            elif ids[j] < 0:  # confirmed at its spawn (min_hits 0)
                ids[j], scores[j] = public, score
        keep = np.concatenate([keep, np.ones(len(self.tid) - n_old, bool)])
        self._keep(keep & (self.tsu <= self.params.track_buffer))
        self._keep_members(np.isin(self.members.tid, self.tid[self.status == TENTATIVE]))
        return Assignment(ids, scores, late)

    def _apply_matches(self, found: Association, frame: Frame) -> dict[int, tuple[int, float]]:
        """Update the matched tracks; ``{row: (detection, similarity)}``."""
        matched: dict[int, tuple[int, float]] = {}
        used: set[int] = set()
        for row, j, sim in found.matches:
            if row in matched or j in used or not frame.valid[j]:
                continue
            used.add(j)
            sim = min(max(float(sim), 0.0), 1.0) if math.isfinite(sim) else 0.0  # np.clip's bits
            matched[row] = (j, sim)
            self.correct(row, frame.boxes[j], float(frame.scores[j]))
            self.hits[row] += 1
            self.hit_streak[row] += 1
            self.tsu[row] = 0
            self.seen_step[row] = self.clock
            if self.status[row] == LOST:
                self.status[row] = CONFIRMED
            elif self.status[row] == TENTATIVE:
                self._add_member(int(self.tid[row]), frame.frame_idx, j, sim)
            self.on_match(row, frame, j)
        return matched

    def _age_unmatched(self, found: Association, matched: dict) -> np.ndarray:
        """Unmatched confirmed tracks become lost; which rows survive this frame."""
        keep = np.ones(len(self.tid), bool)
        for row in range(len(self.tid)):
            if row in found.removed:
                keep[row] = False
            if row in matched or row in found.removed:
                continue
            self.on_miss(row)
            if self.status[row] == CONFIRMED:
                self.status[row] = LOST
            elif self.status[row] == TENTATIVE and self.tentative_dies_on_miss:
                keep[row] = False
        return keep

    def _confirm_ready(self) -> list[LateLabel]:
        """Confirm the tentative tracks matched now that reached ``min_hits``; next public id.
        Returns their members as ``(frame, detection, public id, score)``, oldest first."""
        labels: list[LateLabel] = []
        for row in range(len(self.tid)):
            if self.status[row] == TENTATIVE and self.tsu[row] == 0:
                count = self.hit_streak[row] if self.confirm_on_streak else self.hits[row]
                if count >= self.params.min_hits:
                    self.status[row] = CONFIRMED
                    self.public_id[row] = self.next_public
                    self.next_public += 1
                    members = self.members
                    mine = np.flatnonzero(members.tid == self.tid[row])
                    for k in mine.tolist():
                        labels.append(
                            (
                                int(members.frame[k]),
                                int(members.det[k]),
                                int(self.public_id[row]),
                                float(members.score[k]),
                            )
                        )
                    self._keep_members(members.tid != self.tid[row])
        return labels

    # ------------------------------------------------- subclass extensions
    def correct(self, row: int, box: np.ndarray, score: float) -> None:
        """Kalman-update track ``row`` with its matched padded box (``score``: its score)."""
        self.mean[row], self.cov[row] = self.update(self.mean[row], self.cov[row], box)

    def on_gap(self, mean: np.ndarray, cov: np.ndarray, first_step: int) -> None:
        """After a frame gap's first predicted step (``mean``/``cov``: every live track's)."""

    def on_match(self, row: int, frame: Frame, j: int) -> None:
        """A subclass's own per-track memory after a match (OC-SORT's observations)."""

    def on_miss(self, row: int) -> None:
        """A subclass's own per-track memory after a miss."""

    def on_spawn(self, row: int, frame: Frame, j: int) -> None:
        """A subclass's own per-track memory for a new track."""

    # ---------------------------------------------------------------- state
    def state(self) -> TrackerState:
        meta = dict(
            format=STATE_FORMAT,
            tracker=self.name,
            next_tid=self.next_tid,
            next_public=self.next_public,
            clock=self.clock,
            last_frame=self.last_frame,
            delta_counts=[[int(k), int(v)] for k, v in self.delta_counts.items()],
            last_delta=self.last_delta,
            has_prev_geometry=self.body.prev_geometry is not None,
        )
        evidence = self.body.arrays()
        arrays: dict[str, np.ndarray] = {
            k: evidence.pop(k) for k in ("prev_centroids", "prev_extents") if k in evidence
        }
        tracks = self.tracks.arrays()  # the journal's order: the filter, the body size, ...
        arrays |= {"mean": tracks.pop("mean"), "cov": tracks.pop("cov"), **evidence}
        arrays |= tracks | self.members.arrays()  # ... the other columns, the members
        return TrackerState(meta=meta, arrays=arrays)

    def load_state(self, state: TrackerState) -> None:
        meta, arrays = state.meta, state.arrays
        if meta.get("format") != STATE_FORMAT or meta.get("tracker") != self.name:
            raise ValueError(f"saved tracker state is not a {self.name} state of this version")
        self.next_tid, self.next_public = int(meta["next_tid"]), int(meta["next_public"])
        self.clock = int(meta["clock"])
        self.last_frame = None if meta["last_frame"] is None else int(meta["last_frame"])
        self.delta_counts = {int(k): int(v) for k, v in meta["delta_counts"]}
        self.tracks.load(arrays)
        self.body.load(arrays, bool(meta["has_prev_geometry"]))
        self.last_delta = None if meta["last_delta"] is None else int(meta["last_delta"])
        self.members.load(arrays)


class XywhFilter:
    """The ``[cx, cy, w, h]`` Kalman filter of BoT-SORT, DeepSORT, StrongSORT and Deep
    OC-SORT in place of SORT's ``[cx, cy, area, ratio]``: listed before the tracker's
    :class:`MotCore` base, so one definition serves the four."""

    mean: np.ndarray

    def initiate(self, box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return mb.xywh_initiate(box)

    def predict(self, mean: np.ndarray, cov: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return mb.xywh_predict(mean, cov)

    def update(self, mean: np.ndarray, cov: np.ndarray, box: np.ndarray):
        return mb.xywh_update(mean, cov, box)

    def predicted_boxes(self) -> np.ndarray:
        return mb.xyxy_from_xywh(self.mean)


def mot_params(options: TrackingOptions) -> MotParams:
    """``options.tracker``'s config (sleap-nn's preset) under the options' knobs and
    ``--mot_param`` overrides; the config's fields other than the named knobs go to
    ``extra``, so every tracker finds each key it reads."""
    filled = options.with_tracker_defaults()
    given = dict(filled.mot_param)
    given.update({k: getattr(filled, k) for k in mot_param.NAMED})  # filled: never None
    fields = registry.preset(options.tracker)
    config = registry.config_class(options.tracker)(
        **{k: v for k, v in given.items() if k in fields}
    )
    extra = {k: v for k, v in asdict(config).items() if k not in _NAMED}
    extra["appearance_threshold"] = options.appearance_threshold  # the appearance trackers'
    return MotParams(
        track_buffer=int(config.track_buffer),
        min_hits=int(config.min_hits),
        box_padding=float(extra.pop("box_padding")),
        extra=extra,
        **{name: float(getattr(config, name)) for name in _FLOAT_KNOBS},
    )


_FLOAT_KNOBS = (
    "track_high_threshold",
    "track_low_threshold",
    "new_track_threshold",
    "min_match_similarity",
)
_NAMED = (*mot_param.NAMED, "preset")  # MotParams' own fields, and the preset's name
