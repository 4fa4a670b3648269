"""Per-track appearance memories for the MOT trackers that read re-ID vectors.

:class:`AppearanceTracks` is mixed into a :class:`~sleap_infer.tracking.mot.core.MotCore`
subclass (``botsort``, ``deepsort``, ``strongsort``, ``deepocsort``). It keeps one
:class:`~sleap_infer.tracking.common.appearance_memory.AppearanceMemory` per track row,
seeded by the spawn detection's vector and updated on each match under the
quality gate, and journals them with the rest of the state.

**When appearance decides.** sleap-nn's ``appearance_threshold`` defaults to
``"auto"``: a gate its ``prepare()`` calibrates over the whole video. ``infer
track`` runs that pre-pass (:meth:`AppearanceTracks.prepare`, gates from
:mod:`~sleap_infer.tracking.common.prepare_appearance`): ``auto`` is then the
video's gate where its trials find appearance decisive, and the quality gate's
margin the calibrated ``m_assoc``. Run online (``infer predict -t``, sleap-nn's
class with ``track()`` and no ``prepare()``) ``"auto"`` has no calibration and
appearance stays out of association (the trackers then match on geometry, as
sleap-nn's do); the memories are still kept, and the margin is 0.
``--appearance-threshold COS`` turns it on with that minimum cosine, as in
sleap-nn.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sleap_infer.tracking.base import Detections, TrackerState
from sleap_infer.tracking.common import boxes as mb
from sleap_infer.tracking.common.appearance_memory import (
    AppearanceMemory,
    cosine_matrix,
    frame_vectors,
    passes_quality_gate,
    unit_rows,
)
from sleap_infer.tracking.common.prepare import MotCalibration
from sleap_infer.tracking.common.prepare_appearance import AppearanceCalibration
from sleap_infer.tracking.mot.core import CONFIRMED, LOST, Association, Frame, MotCore
from sleap_infer.tracking.options import appearance_threshold_value

GATE_LOST_MAX_STEPS = 5  # a lost track still counts as a neighbour this many steps
UNCALIBRATED_MARGIN = 0.0  # the quality gate's appearance margin without prepare()


class AppearanceTracks(MotCore):
    """A MOT tracker with an appearance memory per track; subclasses set the memory knobs."""

    ema_alpha: float = 0.8
    gallery_size: int = 30
    adaptive_ema: bool = False
    appearance_statistic: str = "ema"  # which calibrated gate "auto" reads ("gallery_max")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memories: list[AppearanceMemory] = []
        self.embedding_dim: int | None = None  # fixed by the first usable vector
        self.vectors_seen = False
        text = self.params.extra.get("appearance_threshold")
        value = "auto" if text is None else appearance_threshold_value(str(text))
        self.threshold: float | None = None if value == "auto" else float(value)
        self._gate_ctx: dict[str, Any] | None = None

    # ------------------------------------------------------------- gate
    def prepare(self, calibration: MotCalibration | None) -> None:
        """The pre-pass (see :meth:`MotCore.prepare`), with its association gates; it saw
        the whole video, so a vector anywhere in it counts as seen from the start."""
        super().prepare(calibration)
        if calibration is not None and calibration.vectors_seen:
            self.vectors_seen = True

    def _calibrated(self) -> AppearanceCalibration | None:
        return None if self.calibration is None else self.calibration.appearance

    def appearance_gate(self, statistic: str | None = None) -> float | None:
        """Minimum cosine of an appearance match, or None: appearance does not decide.

        None until a vector has been seen; under ``"auto"``, the pre-pass's gate for
        ``statistic`` (default: the tracker's) where it enables appearance, else None.
        """
        if not self.vectors_seen:
            return None
        if self.threshold is not None:
            return self.threshold
        cal = self._calibrated()
        if cal is None or not cal.for_association:
            return None
        kind = statistic or self.appearance_statistic
        gate = cal.ema_cos_gate if kind == "ema" else cal.gallery_cos_gate
        return float(gate) if np.isfinite(gate) else None

    def appearance_margin(self) -> float:
        """The quality gate's and rescue's decisive margin: the pre-pass's ``m_assoc``."""
        cal = self._calibrated()
        if cal is None or not np.isfinite(cal.m_assoc):
            return UNCALIBRATED_MARGIN
        return float(cal.m_assoc)

    def has_memory(self, row: int) -> bool:
        return not self.memories[row].is_empty

    def ema_cos(self, rows: np.ndarray, frame: Frame) -> np.ndarray:
        """``(len(rows), I)`` cosine of each track's EMA to each detection's vector (NaN: none)."""
        n, m = len(rows), len(frame)
        if n == 0 or m == 0 or frame.embeddings is None:
            return np.full((n, m), np.nan)
        dim = frame.embeddings.shape[1]
        emas = np.zeros((n, dim))
        ok = np.zeros(n, bool)
        for i, r in enumerate(rows):
            ema = self.memories[r].ema
            if ema is not None and ema.shape[0] == dim:
                emas[i], ok[i] = ema, True
        assert frame.has_embedding is not None
        return cosine_matrix(emas, ok, frame.embeddings, frame.has_embedding)

    def gallery_cos(self, rows: np.ndarray, frame: Frame) -> np.ndarray:
        """``(len(rows), I)`` best cosine of each detection over each track's gallery."""
        out = np.full((len(rows), len(frame)), np.nan)
        if out.size == 0 or frame.embeddings is None:
            return out
        assert frame.has_embedding is not None
        q = np.flatnonzero(frame.has_embedding)
        units, ok = unit_rows(np.asarray(frame.embeddings[q], np.float64))
        for i, r in enumerate(rows):
            mem = self.memories[r]
            if mem.is_empty or mem.ema.shape[0] != units.shape[1]:
                continue
            out[i, q] = mem.gallery_max_cos(units, ok)
        return out

    def new_memory(self) -> AppearanceMemory:
        return AppearanceMemory(
            self.ema_alpha, self.gallery_size, self.adaptive_ema, self.params.track_high_threshold
        )

    # -------------------------------------------------------- lifecycle
    def _frame(self, det: Detections) -> Frame:
        frame = super()._frame(det)
        frame.embeddings, frame.has_embedding = frame_vectors(
            det.embeddings, len(frame), self.embedding_dim
        )
        if frame.embeddings is not None:
            self.vectors_seen = True
            if self.embedding_dim is None:
                self.embedding_dim = int(frame.embeddings.shape[1])
        return frame

    def _keep(self, keep: np.ndarray) -> None:
        super()._keep(keep)
        self.memories = [m for m, k in zip(self.memories, keep) if k]

    def _spawn(self, frame: Frame, j: int) -> None:
        super()._spawn(frame, j)
        memory = self.new_memory()
        if frame.embeddings is not None and frame.has_embedding[j]:  # type: ignore[index]
            memory.seed(frame.embeddings[j])
        self.memories.append(memory)

    def _apply_matches(self, found: Association, frame: Frame) -> dict[int, tuple[int, float]]:
        self._gate_ctx = self._gate_context(found, frame)
        try:
            return super()._apply_matches(found, frame)
        finally:
            self._gate_ctx = None

    def _gate_context(self, found: Association, frame: Frame) -> dict[str, Any] | None:
        """What the quality gate reads, taken before any track moves (sleap-nn's order)."""
        n = len(self.tid)
        if frame.embeddings is None or not found.matches or n == 0:
            return None
        rows = np.arange(n)
        det_iou = mb.iou(frame.boxes, frame.boxes)
        np.fill_diagonal(det_iou, 0.0)
        lost_near = (self.status == LOST) & (self.tsu <= GATE_LOST_MAX_STEPS)
        return {
            "neighbour": (self.status == CONFIRMED) | lost_near,
            "det_iou": det_iou,
            "trk_iou": mb.iou(self.predicted_boxes(), frame.boxes),
            "geo": self.similarity_to(rows, frame),
            "cos": self.ema_cos(rows, frame),
        }

    def on_match(self, row: int, frame: Frame, j: int) -> None:
        super().on_match(row, frame, j)
        if frame.embeddings is None or not frame.has_embedding[j]:  # type: ignore[index]
            return
        vec = frame.embeddings[j]
        memory = self.memories[row]
        if memory.is_empty:
            memory.seed(vec)
            return
        gated = False
        ctx = self._gate_ctx
        if ctx is not None:
            others = np.arange(len(ctx["neighbour"])) != row
            iou_trk = ctx["trk_iou"][others & ctx["neighbour"], j]
            max_iou = float(max(ctx["det_iou"][j].max(initial=0.0), iou_trk.max(initial=0.0)))
            cos = ctx["cos"][:, j]
            rivals = cos[others & (ctx["geo"][:, j] > 0)]
            rivals = rivals[np.isfinite(rivals)]
            own = cos[row]
            margin = float("inf") if not np.isfinite(own) or not len(rivals) else own - rivals.max()
            assert frame.n_visible is not None
            gated = passes_quality_gate(
                float(frame.scores[j]),
                int(frame.n_visible[j]),
                1 if frame.keypoints is None else max(1, frame.keypoints.shape[1]),
                max_iou,
                float(margin),
                high_threshold=self.params.track_high_threshold,
                min_margin=self.appearance_margin(),
                gallery_len=len(memory.gallery),
            )
        memory.update(vec, score=float(frame.scores[j]), gated=gated)

    # ------------------------------------------------------------ state
    def state(self) -> TrackerState:
        out = super().state()
        dim = self.embedding_dim or 0
        parts = [m.arrays(dim) for m in self.memories]
        out.meta |= {"embedding_dim": self.embedding_dim, "vectors_seen": self.vectors_seen}
        out.arrays |= {
            "app_ema": np.stack([p[0] for p in parts]) if parts else np.zeros((0, dim)),
            "app_gallery": np.concatenate([p[1] for p in parts]) if parts else np.zeros((0, dim)),
            "app_gallery_len": np.array([len(p[1]) for p in parts], np.int64),
            "app_updates": np.array([p[2] for p in parts], np.int64),
        }
        return out

    def load_state(self, state: TrackerState) -> None:
        super().load_state(state)
        meta, arrays = state.meta, state.arrays
        if "app_ema" not in arrays:  # a botsort journal from before it kept memories
            self.embedding_dim, self.vectors_seen = None, False
            self.memories = [self.new_memory() for _ in range(len(self.tid))]
            return
        dim = meta["embedding_dim"]
        self.embedding_dim = None if dim is None else int(dim)
        self.vectors_seen = bool(meta["vectors_seen"])
        width = self.embedding_dim or 0
        emas = np.array(arrays["app_ema"], np.float64).reshape(len(self.tid), width)
        gallery = np.array(arrays["app_gallery"], np.float64)
        gallery = gallery.reshape(gallery.shape[0] if gallery.ndim else 0, width)
        lengths = np.array(arrays["app_gallery_len"], np.int64).reshape(-1)
        updates = np.array(arrays["app_updates"], np.int64).reshape(-1)
        ends = np.cumsum(lengths)
        self.memories = []
        for i in range(len(emas)):
            memory = self.new_memory()
            memory.restore(emas[i], gallery[ends[i] - lengths[i] : ends[i]], int(updates[i]))
            self.memories.append(memory)
        if len(self.memories) != len(self.tid):
            raise ValueError(
                f"saved {self.name} state has {len(emas)} memories for {len(self.tid)} tracks"
            )
