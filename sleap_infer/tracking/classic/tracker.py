"""sleap-nn's classic tracker, online: same assignments on the same detections.

Per frame: each detection gets its feature; the tracker's memory
(:mod:`~sleap_infer.tracking.classic.candidates`, optionally shifted by optical flow)
gives each track its candidates; a detection's score for a track is its
candidates' scores reduced to one (candidates with no more than
``min_match_points`` support are left out); cost = -score (NaN: infinite);
Hungarian or greedy matching pairs detections with tracks; infinite-cost pairs
are undone where the detection can start a track (:func:`drop_infeasible`);
unpaired detections with enough support start new tracks (ids from 0, score
1.0). A mask-carrier frame without masks is skipped, as sleap-nn skips it.

Differences to sleap-nn, on purpose: a detection that gets no track is kept,
untracked (track -1), where sleap-nn drops it from its output; a matched
track's score keeps float64 until the output's float32. Pre-cull, post-clean
and connect-single-breaks wrap any tracker (:mod:`~sleap_infer.tracking.cleanup`).
``use_kalman``: sleap-nn's Kalman candidate shift replaces the candidates a
frame is scored against (:mod:`~sleap_infer.tracking.classic.kalman_shift`).

``appearance_weight`` > 0 blends re-ID vectors into the geometric score as
sleap-nn's ``_blend_appearance`` does (:func:`blend_appearance`): each entry
keeps its detection's vector beside its geometric feature, the appearance
matrix reduces over the same ``min_match_points``-filtered candidates.

Everything the tracker remembers round-trips through :meth:`state` /
:meth:`load_state` (see :mod:`~sleap_infer.tracking.classic.state`), so a
resumed run continues bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import sleap_infer.tracking.classic.flow as flow
from sleap_infer.tracking.base import MASKS, Assignment, Detections, TrackerState
from sleap_infer.tracking.classic.candidates import Entry, FixedWindow, LocalQueues, Slot, Track
from sleap_infer.tracking.classic.features import (
    Feature,
    embedding_rows,
    mask_area,
    mask_crop,
    pose_feature,
    visible_points,
)
from sleap_infer.tracking.classic.kalman_shift import (
    INIT_FRAME_COUNT,
    RESET_GAP_SIZE,
    TRACK_FEATURES,
    KalmanShift,
)
from sleap_infer.tracking.classic.matching import MATCHERS, drop_infeasible
from sleap_infer.tracking.classic.scoring import (
    appearance_matrix,
    blend_appearance,
    pair_matrix,
    reduce_columns,
)
from sleap_infer.tracking.classic.state import dump_state, restore_state
from sleap_infer.tracking.options import TrackingOptions

Gallery = list[list[tuple[Feature, int]]]  # per track column: (feature, support)


class ClassicTracker:
    """sleap-nn's candidate-window tracker for one video (options already resolved)."""

    def __init__(self, options: TrackingOptions, carrier: str) -> None:
        if None in (options.features, options.scoring, options.candidates, options.window_size):
            raise ValueError("ClassicTracker needs resolved options (see resolve_options)")
        self.options = options
        self.carrier = carrier
        self.needs_images = bool(options.use_flow)
        if self.needs_images:
            flow.require()
        self.window = self._new_window()
        self.images: dict[int, np.ndarray] = {}  # prepared frames the memory refers to (flow)
        self.kalman = self._new_kalman()

    def _new_kalman(self) -> KalmanShift | None:
        o = self.options
        if not o.use_kalman:
            return None
        return KalmanShift(
            o.kf_track_features or TRACK_FEATURES,
            INIT_FRAME_COUNT if o.kf_init_frame_count is None else o.kf_init_frame_count,
            o.kf_node_indices,
            RESET_GAP_SIZE if o.kf_reset_gap_size is None else o.kf_reset_gap_size,
        )

    def _new_window(self) -> FixedWindow | LocalQueues:
        o = self.options
        size = int(o.window_size or 0)
        if o.candidates == "local_queues":
            return LocalQueues(size, o.min_new_track_points, o.max_tracks)
        return FixedWindow(size, o.min_new_track_points)

    @property
    def n_tracks(self) -> int:
        return self.window.next_id

    def step(self, detections: Detections) -> Assignment:
        """Track one frame (frames must come in frame order)."""
        entries = self._entries(detections)
        if self.carrier == MASKS and not entries:
            return _answer(entries)
        slot = Slot(int(detections.frame_idx), entries)
        image = None
        if self.needs_images:
            image = flow.prepare(detections.image, self.options.of_img_scale)
        if self.window.empty:
            self.window.spawn(slot)
        else:
            self._match(slot, image)
        if self.kalman is not None:  # sleap-nn records after the assignment
            self.kalman.observe(self.window)
        if image is not None:
            self.images[slot.frame_idx] = image
            referenced = {e.frame_idx for e in self.window.entries()}
            self.images = {f: img for f, img in self.images.items() if f in referenced}
        return _answer(entries)

    def _entries(self, det: Detections) -> list[Entry]:
        n, kind, frame = len(det), self.options.features, int(det.frame_idx)
        if self.carrier == MASKS:
            masks = det.masks or []
            feats: Sequence[Feature] = (
                embedding_rows(_copy(det.embeddings), n)
                if kind == "embeddings"
                else [mask_crop(m) for m in masks]
            )
            entries = [Entry(frame, mask_area(m), f) for m, f in zip(masks, feats)]
            return self._with_vectors(entries, det)
        points = np.array(det.points, dtype=np.float64, copy=True)
        support = visible_points(points)
        if kind == "embeddings":
            feats = embedding_rows(_copy(det.embeddings), n)
        else:
            assert kind is not None  # the resolved options name the features
            feats = [pose_feature(kind, p) for p in points]
        entries = [Entry(frame, int(s), f, p) for s, f, p in zip(support, feats, points)]
        return self._with_vectors(entries, det)

    def _with_vectors(self, entries: list[Entry], det: Detections) -> list[Entry]:
        """Attach each detection's re-ID vector when blending appearance."""
        if self.options.appearance_weight > 0:
            for entry, vec in zip(entries, embedding_rows(_copy(det.embeddings), len(entries))):
                entry.vector = vec
        return entries

    def _match(self, slot: Slot, image: np.ndarray | None) -> None:
        o = self.options
        tracks = self.window.tracks()
        if self.kalman is not None:
            gallery = self.kalman.candidates(self.window, slot.frame_idx, str(o.features))
        elif image is not None:
            gallery = self._shifted(tracks, image)
        else:
            gallery = self._gallery(tracks)
        scores = self._scores(slot.entries, gallery)
        if o.appearance_weight > 0:
            scores = self._blend(slot.entries, tracks, scores)
        cost = -scores
        cost[np.isnan(cost)] = np.inf
        pairs = MATCHERS[o.matching](cost)
        can_spawn = [e.support > o.min_new_track_points for e in slot.entries]
        pairs = drop_infeasible(pairs, cost, can_spawn, self.window.free_ids())
        self.window.update(slot, [(r, c, -cost[r, c]) for r, c in pairs])

    def _gallery(self, tracks: list[Track]) -> Gallery:
        columns = self.window.candidates_of(tracks)
        return [[(e.feature, e.support) for e in column] for column in columns]

    def _shifted(self, tracks: list[Track], image: np.ndarray) -> Gallery:
        """Candidates moved onto ``image`` by optical flow, grouped as sleap-nn groups them.

        Fixed window: frame by frame, all of a frame's detections (untracked ones feed
        the ``None`` track). Local queues: by frame in the order tracks (by id) first
        refer to it, so a track's candidates come in that order.
        """
        o = self.options
        if isinstance(self.window, FixedWindow):
            ordered = [(s.frame_idx, s.entries) for s in self.window.slots if s.entries]
        else:
            groups: dict[int, list[Entry]] = {}
            for entry in self.window.entries():
                groups.setdefault(entry.frame_idx, []).append(entry)
            ordered = list(groups.items())
        by_track: dict[Track, list[tuple[Feature, int]]] = {}
        for frame_idx, entries in ordered:
            moved = flow.shift(
                [np.asarray(e.points) for e in entries],
                self.images[frame_idx],
                image,
                o.of_img_scale,
                o.of_window_size,
                o.of_max_levels,
            )
            for entry, pts in zip(entries, moved):
                feature = pose_feature(str(o.features), pts)
                by_track.setdefault(entry.track, []).append((feature, entry.support))
        return [by_track.get(t, []) for t in tracks]

    def _scores(self, entries: list[Entry], gallery: Gallery) -> np.ndarray:
        """``(detections, tracks)`` scores; NaN where a track has nothing to compare with."""
        o = self.options
        usable = [[f for f, s in column if s > o.min_match_points] for column in gallery]
        queries = [e.feature for e in entries]
        if o.features == "embeddings" and o.scoring == "cosine_sim":
            return appearance_matrix(queries, usable, o.reduction, o.robust_quantile)  # type: ignore[arg-type]
        flat = [f for column in usable for f in column]
        assert o.oks_stddev is not None  # the resolved options set it
        pairs = pair_matrix(str(o.scoring), queries, flat, o.oks_stddev)
        return reduce_columns(pairs, [len(c) for c in usable], o.reduction, o.robust_quantile)

    def _blend(self, entries: list[Entry], tracks: list[Track], scores: np.ndarray) -> np.ndarray:
        """sleap-nn's appearance blend over the same candidates geometry reduced over."""
        o = self.options
        vectors = [
            [e.vector for e in column if e.support > o.min_match_points]
            for column in self.window.candidates_of(tracks)
        ]
        appearance = appearance_matrix(
            [e.vector for e in entries], vectors, o.reduction, o.robust_quantile
        )
        scale = o.euclidean_scale if o.scoring == "euclidean_dist" else None
        return blend_appearance(scores, appearance, o.appearance_weight, scale)

    def state(self) -> TrackerState:
        state = dump_state(self.options, self.carrier, self.window, self.images)
        if self.kalman is not None:
            meta, arrays = self.kalman.state()
            state.meta["kalman"] = meta
            state.arrays.update(arrays)
        return state

    def load_state(self, state: TrackerState) -> None:
        self.window = self._new_window()
        self.images = restore_state(state, self.options, self.carrier, self.window)
        self.kalman = self._new_kalman()
        if self.kalman is not None:
            self.kalman.load_state(state.meta["kalman"], dict(state.arrays))


def _copy(values: np.ndarray | None) -> np.ndarray | None:
    return None if values is None else np.array(values, dtype=np.float64, copy=True)


def _answer(entries: list[Entry]) -> Assignment:
    ids = np.array([-1 if e.track is None else e.track for e in entries], dtype=np.int64)
    scores = np.array([np.nan if e.track is None else e.score for e in entries], dtype=np.float32)
    return Assignment(track_ids=ids, scores=scores)
