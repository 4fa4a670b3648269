"""SORT (Bewley et al. 2016), as sleap-nn 0.3.5's ``--tracker sort`` runs it.

One Kalman box filter per track (``[cx, cy, area, ratio]``) and one Hungarian
assignment per frame on geometric similarity: the IoU of the predicted and
detected padded boxes (a one-node skeleton: a Gaussian of the centre distance,
scale half the body size). Every live track, tentative, confirmed or lost,
competes in the one pool. Per frame:

1. Detections scoring at or below ``track_low_threshold`` are ignored: never
   matched, never a new track (SORT has no score logic of its own; the
   reference leaves filtering to its caller).
2. A pair is admissible at ``min_match_similarity`` or more. If the admissible
   pairs are already one to one they are taken as they are, else Hungarian on
   ``1 - similarity`` decides among them.
3. The lifecycle is :class:`~sleap_infer.tracking.mot.core.MotCore`'s with
   SORT's settings: a new track's first detection does not count, it confirms
   after ``min_hits`` more consecutive matches, survives misses while tentative,
   and any track is dropped after more than ``track_buffer`` missed steps.

Defaults are sleap-nn's "animal" preset: ``track_buffer`` 30, ``min_hits`` 3,
``min_match_similarity`` 0.3, ``track_low_threshold`` and
``new_track_threshold`` 0.1.
"""

from __future__ import annotations

import numpy as np

from sleap_infer.tracking.common import boxes as mb
from sleap_infer.tracking.mot.core import Association, Frame, MotCore


class SortTracker(MotCore):
    """SORT; see the module docstring."""

    name = "sort"

    def associate(self, frame: Frame) -> Association:
        p = self.params
        ignored = frame.scores <= p.track_low_threshold
        out = Association(no_spawn={int(j) for j in np.flatnonzero(ignored)})
        candidates = np.flatnonzero(frame.valid & ~ignored)
        rows = np.arange(len(self.tid))
        if len(rows) == 0 or len(candidates) == 0:
            return out
        sim = self.similarity_to(rows, frame)[:, candidates]
        valid = sim >= p.min_match_similarity
        pairs = mb.one_to_one(valid)
        if pairs is None:
            cost = np.where(valid, 1.0 - sim, np.inf)
            pairs = mb.assign_capped(cost, 1.0 - p.min_match_similarity)
        out.matches = [(r, int(candidates[c]), float(sim[r, c])) for r, c in pairs]
        return out
