"""A tracker state as a resumed run gets it back from the journal, for the trackers' tests."""

from __future__ import annotations

import json

import numpy as np

from sleap_infer.tracking.base import TrackerState


def through_json(state: TrackerState) -> TrackerState:
    """What the journal does to a state: JSON meta, raw array bytes."""
    meta = json.loads(json.dumps(state.meta))
    arrays = {
        k: np.frombuffer(v.tobytes(), dtype=v.dtype).reshape(v.shape)
        for k, v in state.arrays.items()
    }
    return TrackerState(meta=meta, arrays=arrays)
