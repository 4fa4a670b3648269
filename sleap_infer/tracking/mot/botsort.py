"""BoT-SORT (Aharon et al. 2022), as sleap-nn 0.3.5's ``--tracker botsort`` runs online.

sleap-nn's ``ByteTracker`` association (:mod:`~sleap_infer.tracking.mot.bytetrack`:
three stages by score, then the tracked-vs-lost duplicate removal), as sleap-nn's
``BoTSORTTracker`` subclasses it; a lost track stops changing width and height.

Appearance (re-ID vectors, when the detections carry them): each track keeps an
EMA of its vectors (momentum 0.8, quality-gated updates:
:class:`~sleap_infer.tracking.mot.appearance.AppearanceTracks`), and stages 1 and
3 lower a cell's cost to ``min(d_geo, (1 - cos) / 2) + 1e-3 * d_geo`` where the
appearance is decisive: the detection lies inside the geometric gate
(similarity >= ``proximity_threshold``, 0.5), its cosine to the track's EMA
clears the gate, and it is the top cosine of its row and column by the margin.
The gate is ``--appearance-threshold``, or under "auto" the one ``infer track``'s
whole-video pre-pass calibrates (sleap-nn's ``prepare()``); online, without that
pre-pass, "auto" leaves appearance out and the tracker is geometric, as sleap-nn's
class is. Defaults are sleap-nn's: ``min_hits`` 2,
``track_high_threshold`` 0.6, ``track_low_threshold`` 0.1,
``new_track_threshold`` 0.7, ``min_match_similarity`` 0.2, ``track_buffer`` 30.
"""

from __future__ import annotations

import numpy as np

from sleap_infer.tracking.mot.appearance import AppearanceTracks
from sleap_infer.tracking.mot.bytetrack import ByteTrackTracker
from sleap_infer.tracking.mot.core import Frame, MotParams
from sleap_infer.tracking.mot.deepocsort import decisive_cells

PROXIMITY_THRESHOLD = 0.5  # weakest geometric similarity at which appearance may count
# Weight of the geometric cost added where appearance sets the cost, so that pairs that
# look equally alike are ordered by geometry (sleap-nn's GEOMETRY_TIE_BREAK).
GEOMETRY_TIE_BREAK = 1e-3


class BotSortTracker(ByteTrackTracker, AppearanceTracks):
    """BoT-SORT; see the module docstring."""

    name = "botsort"
    zero_on_miss = (6, 7)  # the width and height velocities

    def __init__(self, params: MotParams, carrier: str, n_nodes: int) -> None:
        self.proximity = float(params.extra.get("proximity_threshold", PROXIMITY_THRESHOLD))
        super().__init__(params, carrier, n_nodes)

    def _high_cost(
        self, rows: np.ndarray, cols: np.ndarray, sub: np.ndarray, frame: Frame
    ) -> np.ndarray:
        """Stages 1 and 3: ByteTrack's cost, lowered where the appearance is decisive
        (sleap-nn's ``BoTSORTTracker._fused_cost``)."""
        d_geo = super()._high_cost(rows, cols, sub, frame)
        gate = self.appearance_gate("ema")
        if gate is None or frame.embeddings is None:
            return d_geo
        cos = self.ema_cos(rows, frame)[:, cols]
        in_gate = np.isfinite(cos) & (cos >= gate) & (sub >= self.proximity)
        if not in_gate.any():
            return d_geo
        decisive = decisive_cells(cos, in_gate, max(self.appearance_margin(), 0.0))
        d_emb = np.where(decisive, 0.5 * (1.0 - np.nan_to_num(cos)), 1.0)
        return np.where(decisive, np.minimum(d_geo, d_emb) + GEOMETRY_TIE_BREAK * d_geo, d_geo)
