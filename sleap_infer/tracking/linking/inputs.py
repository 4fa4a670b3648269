"""The compact per-detection arrays identity linking works from.

Linking needs the whole video, so it runs after the last frame; it must not
hold the video's predictions while it does. Each pose is reduced, as it is
read back (from the journal, or from a ``.slp`` being re-tracked), to what
sleap-nn's linker and calibration look at: its frame, track, visible-node
extent, detection score and visible-node count -- 34 bytes a detection
(:data:`BYTES_PER_DETECTION`), never its nodes -- plus, where the poses carry
re-ID vectors, the unit vector (float32, 4 bytes a dimension, and a flag):
the calibration reads every anchor detection's, the linker the gated ones.

Masks (a segmentation model's detections) are linked as sleap-nn links them:
their extent is sleap-io's ``bbox`` of the set pixels, kept in float64 (a
mask's box is ``offset + pixel / scale``, which float32 would round), their
score is the mask's own, and a non-empty mask counts as one visible "node" of
one: fully visible, and sized (the duplicate tests use its box), never a
single-node pose.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sleap_infer.tracking.base import pose_scores

# frame position int32 + track int32 + extent 4 x float32 + score float64 + visible int16
BYTES_PER_DETECTION = 4 + 4 + 16 + 8 + 2
FLUSH_FRAMES = 1024  # frames whose small arrays are joined into one


@dataclass
class LinkInput:
    """One video's detections in output order (frame, then slot), compactly."""

    n_nodes: int = 0
    masks: bool = False  # the detections are masks (:meth:`add_masks`), not poses
    frames: list[int] = field(default_factory=list)  # every processed frame, in order
    _pos: list[np.ndarray] = field(default_factory=list)
    _track: list[np.ndarray] = field(default_factory=list)
    _box: list[np.ndarray] = field(default_factory=list)
    _score: list[np.ndarray] = field(default_factory=list)
    _visible: list[np.ndarray] = field(default_factory=list)
    dim: int = 0  # re-ID vector length, 0: none seen
    _vec: list[np.ndarray] = field(default_factory=list)  # unit float32 rows, per frame
    _has: list[np.ndarray] = field(default_factory=list)
    _vec_from: list[int] = field(default_factory=list)  # the frame each entry is for

    def add_frame(
        self,
        frame_idx: int,
        points: np.ndarray,
        point_scores: np.ndarray | None,
        instance_scores: np.ndarray,
        track_ids: np.ndarray,
        vectors: np.ndarray | None = None,
    ) -> None:
        """One processed frame's poses ``(I, N, 2)``, their track ids (-1: none) and
        re-ID vectors ``(I, D)`` (a NaN, zero or non-finite row: none)."""
        if self.masks:
            raise ValueError("identity linking takes poses or masks from a video, not both")
        pts = np.asarray(points, dtype=np.float32)
        self.n_nodes = max(self.n_nodes, int(pts.shape[1]) if pts.ndim == 3 else 0)
        n = len(pts)
        if pts.ndim != 3:
            pts = pts.reshape(n, 0, 2)
        visible = np.all(np.isfinite(pts), axis=-1)
        lo = np.where(visible[..., None], pts, np.inf).min(axis=1, initial=np.inf)
        hi = np.where(visible[..., None], pts, -np.inf).max(axis=1, initial=-np.inf)
        box = np.concatenate([lo, hi], axis=1).astype(np.float32).reshape(n, 4)
        count = visible.sum(axis=1).astype(np.int16).reshape(n)
        box[count == 0] = np.nan
        scores = pose_scores(pts, point_scores, instance_scores).reshape(n)
        self._append(frame_idx, track_ids, box, scores, count, vectors)

    def add_masks(
        self,
        frame_idx: int,
        boxes: np.ndarray,
        scores: np.ndarray,
        track_ids: np.ndarray,
        vectors: np.ndarray | None = None,
    ) -> None:
        """One processed frame's masks as their ``(I, 4)`` ``xyxy`` extents (a NaN row:
        an empty mask), their own scores (NaN: none, scored 1.0 as sleap-nn's user
        masks are), track ids (-1: none) and re-ID vectors."""
        if self._pos and not self.masks:
            raise ValueError("identity linking takes poses or masks from a video, not both")
        self.masks, self.n_nodes = True, 1
        box = np.asarray(boxes, np.float64).reshape(-1, 4)
        n = len(box)
        count = np.all(np.isfinite(box), axis=1).astype(np.int16)
        box = np.where(count[:, None] > 0, box, np.nan)
        own = np.asarray(scores, np.float64).reshape(n)
        scores = np.clip(np.where(np.isfinite(own), own, 1.0), 0.0, 1.0)
        self._append(frame_idx, track_ids, box, scores, count, vectors)

    def _append(
        self,
        frame_idx: int,
        track_ids: np.ndarray,
        box: np.ndarray,
        scores: np.ndarray,
        count: np.ndarray,
        vectors: np.ndarray | None,
    ) -> None:
        n = len(box)
        self._pos.append(np.full(n, len(self.frames), np.int32))
        self._track.append(np.asarray(track_ids, np.int32).reshape(n))
        self._box.append(box)
        self._score.append(scores)
        self._visible.append(count)
        self.frames.append(int(frame_idx))
        if vectors is not None and np.size(vectors):
            vec = np.asarray(vectors, np.float64).reshape(n, -1)
            if self.dim and vec.shape[1] != self.dim:
                raise ValueError(f"re-ID vectors of length {vec.shape[1]}, not {self.dim}")
            self.dim = vec.shape[1]
            norm = np.linalg.norm(vec, axis=1)
            has = np.isfinite(norm) & (norm > 0)
            unit = np.zeros(vec.shape, np.float32)
            unit[has] = vec[has] / norm[has, None]
            self._vec.append(unit)
            self._has.append(has)
            self._vec_from.append(len(self.frames) - 1)
        if len(self._pos) >= FLUSH_FRAMES:  # bounded per-frame overhead: one array per block
            for parts in (self._pos, self._track, self._box, self._score, self._visible):
                parts[:] = [np.concatenate(parts)]

    def vectors(self, pos: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """``(vectors (D, dim) float32 or None, has (D,))`` aligned with the detections."""
        has = np.zeros(len(pos), bool)
        if not self.dim or not any(h.any() for h in self._has):
            return None, has
        out = np.zeros((len(pos), self.dim), np.float32)
        starts = np.searchsorted(pos, np.asarray(self._vec_from), side="left")
        for s, v, h in zip(starts.tolist(), self._vec, self._has, strict=True):
            out[s : s + len(v)] = v
            has[s : s + len(v)] = h
        return out, has

    def single_and_sized(self, n_visible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per detection, sleap-nn's two node-count facts: a single-node pose (its box
        is a pseudo box), and a detection with an extent (two or more visible nodes, or
        any mask) whose overlap the duplicate and calibration tests may use."""
        if self.masks:
            return np.zeros(len(n_visible), bool), n_visible > 0
        return n_visible == 1, n_visible >= 2

    def arrays(self) -> tuple[np.ndarray, ...]:
        """``(frame_idx, frame_pos, track, box, score, n_visible)``, concatenated (boxes
        float32 for poses, whose nodes are float32 already; float64 for masks)."""

        def cat(parts: list[np.ndarray], dtype: type, shape: tuple[int, ...]) -> np.ndarray:
            return np.concatenate(parts).astype(dtype) if parts else np.zeros(shape, dtype)

        return (
            np.asarray(self.frames, np.int64),
            cat(self._pos, np.int32, (0,)),
            cat(self._track, np.int32, (0,)),
            cat(self._box, np.float64 if self.masks else np.float32, (0, 4)),
            cat(self._score, np.float64, (0,)),
            cat(self._visible, np.int16, (0,)),
        )
