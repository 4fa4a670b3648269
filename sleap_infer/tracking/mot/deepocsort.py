"""Deep OC-SORT (Maggiolino et al. 2023), as sleap-nn 0.3.5's ``--tracker deepocsort`` runs it.

OC-SORT (:mod:`~sleap_infer.tracking.mot.ocsort`: ORU, OCM, OCR; high-score
detections only, no BYTE stage) on a ``[cx, cy, w, h]`` Kalman filter whose
size velocities stop while a track is unmatched, plus appearance:

* each track keeps a score-adaptive EMA of its re-ID vectors (momentum 0.95; a
  detection at ``track_high_threshold`` does not move it), updated under the
  quality gate (:mod:`~sleap_infer.tracking.common.appearance_memory`);
* stage 1 maximises ``IoU + OCM + W * cos`` where ``cos`` is the detection's
  cosine to the track's EMA (0 without a vector, or where the boxes do not
  overlap) and ``W`` Deep OC-SORT's adaptive weight: 0.75 plus half the row's
  and the column's top-1/top-2 cosine margins, each capped at 0.5. A pair
  that is the only admissible one of its row and column never loses score to
  appearance (a negative term is clamped to 0 there);
* the *rescue*: a pair under ``min_match_similarity`` but at IoU 0.15 or more
  becomes admissible when its cosine clears the threshold and is the strict
  best of its row and column among the plausible pairs.

sleap-nn standardises ``cos`` with the median true and rival cosines its
``prepare()`` measures over the whole video (so do we in ``infer track``); online
(no ``prepare()``) it uses the raw cosine, and so do we. With the default
threshold ``auto`` and no pre-pass nothing is calibrated, so appearance is off
and the tracker is OC-SORT on the ``[cx, cy, w, h]`` filter (the memories are
still kept); ``--appearance-threshold COS`` turns the term and the rescue on.

Defaults (sleap-nn's "animal" preset): ``min_hits`` 3, ``track_high_threshold``
and ``new_track_threshold`` 0.6, ``min_match_similarity`` 0.3,
``track_buffer`` 30, ``delta_t`` 3, ``inertia`` 0.2.
"""

from __future__ import annotations

import numpy as np

from sleap_infer.tracking.common import boxes as mb
from sleap_infer.tracking.mot.appearance import AppearanceTracks
from sleap_infer.tracking.mot.core import Frame, XywhFilter
from sleap_infer.tracking.mot.ocsort import OcSortTracker

W_ASSOC_EMB = 0.75  # base weight of the appearance term
AW_PARAM = 0.5  # cap of each adaptive-weight margin bonus
RESCUE_MIN_SIMILARITY = 0.15  # weakest geometry appearance may rescue
MIN_APPEARANCE_SPREAD = 1e-6  # narrower true/rival cosine spread: the raw cosine instead
_D = mb.XYWH_DIM


class DeepOcSortTracker(XywhFilter, AppearanceTracks, OcSortTracker):
    """Deep OC-SORT; see the module docstring."""

    name = "deepocsort"
    kalman_dim = _D
    zero_on_miss = (6, 7)
    ema_alpha = 0.95
    adaptive_ema = True

    def first_stage(
        self, rows: np.ndarray, frame: Frame, cols: np.ndarray, sim: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """OC-SORT's admissibility and objective, with the rescue and the appearance term."""
        valid, score = super().first_stage(rows, frame, cols, sim)
        gate = self.appearance_gate()
        if gate is None:
            return valid, score
        cos = self.ema_cos(rows, frame)[:, cols]
        if not np.isfinite(cos).any():
            return valid, score
        valid = valid | self._rescue(cos, sim, gate)
        appearance = self._term(cos)
        appearance[sim <= 0.0] = 0.0
        if appearance.any():
            term = adaptive_weight(appearance) * appearance
            lone = (
                valid
                & (valid.sum(axis=1, keepdims=True) == 1)
                & (valid.sum(axis=0, keepdims=True) == 1)
            )
            score = score + np.where(lone, np.maximum(term, 0.0), term)
        return valid, score

    def _term(self, cos: np.ndarray) -> np.ndarray:
        """Stage 1's appearance values: the standardised ``E' = clip(2 (cos - mu_neg) /
        (mu_pos - mu_neg) - 1, 0, 1)`` with the pre-pass's spread, else the raw cosine."""
        cal = self._calibrated()
        ok = np.isfinite(cos)
        if cal is not None and np.isfinite(cal.mu_pos) and np.isfinite(cal.mu_neg):
            width = cal.mu_pos - cal.mu_neg
            if width >= MIN_APPEARANCE_SPREAD:
                out = np.zeros(cos.shape)
                out[ok] = np.clip(2.0 * (cos[ok] - cal.mu_neg) / width - 1.0, 0.0, 1.0)
                return out
        return np.where(ok, np.clip(np.nan_to_num(cos), -1.0, 1.0), 0.0)

    def _rescue(self, cos: np.ndarray, sim: np.ndarray, gate: float) -> np.ndarray:
        floor = min(RESCUE_MIN_SIMILARITY, self.params.min_match_similarity)
        plausible = (sim >= floor) & np.isfinite(cos)
        if cos.size == 0 or not plausible.any():
            return np.zeros(cos.shape, bool)
        decisive = decisive_cells(cos, plausible, self.appearance_margin())
        return decisive & (sim >= RESCUE_MIN_SIMILARITY) & (cos >= gate)


def _top2_margin(x: np.ndarray) -> np.ndarray:
    """Top-1 minus top-2 over the finite entries of each row (one entry: inf; none: NaN)."""
    finite = np.isfinite(x)
    count = finite.sum(axis=-1)
    if x.shape[-1] == 0:
        return np.full(x.shape[:-1], np.nan)
    filled = np.sort(np.where(finite, x, -np.inf), axis=-1)
    top1 = filled[..., -1]
    top2 = filled[..., -2] if x.shape[-1] >= 2 else np.full_like(top1, -np.inf)
    margin = np.full(x.shape[:-1], np.nan)
    margin[count == 1] = np.inf
    two = count >= 2
    margin[two] = top1[two] - top2[two]
    return margin


def adaptive_weight(e: np.ndarray) -> np.ndarray:
    """Deep OC-SORT's per-pair weight: 0.75 plus half of each capped row/column margin."""
    w = np.full(e.shape, W_ASSOC_EMB)
    if e.shape[0] < 2 or e.shape[1] < 2:
        return w
    rows, cols = _top2_margin(e), _top2_margin(e.T)
    rows = 0.5 * np.minimum(np.where(np.isfinite(rows), rows, 0.0), AW_PARAM)
    cols = 0.5 * np.minimum(np.where(np.isfinite(cols), cols, 0.0), AW_PARAM)
    return w + rows[:, None] + cols[None, :]


def decisive_cells(cos: np.ndarray, admissible: np.ndarray, margin: float = 0.0) -> np.ndarray:
    """Cells whose cosine is the strict best of their row and column among ``admissible``."""
    admissible = admissible & np.isfinite(cos)
    if cos.size == 0 or not admissible.any():
        return np.zeros(cos.shape, bool)
    masked = np.where(admissible, cos, np.nan)
    row_margin, col_margin = _top2_margin(masked), _top2_margin(masked.T)
    filled = np.where(admissible, cos, -np.inf)
    top = (filled >= filled.max(axis=1, keepdims=True)) & (
        filled >= filled.max(axis=0, keepdims=True)
    )
    row_margin = np.nan_to_num(row_margin, nan=0.0)
    col_margin = np.nan_to_num(col_margin, nan=0.0)
    row_ok = (row_margin > 0.0) & (row_margin >= margin)
    col_ok = (col_margin > 0.0) & (col_margin >= margin)
    return admissible & top & row_ok[:, None] & col_ok[None, :]
