"""infer's ByteTrack variant's knobs, with ByteTrack's published defaults.

Zhang et al. 2022's reference implementation: ``track_thresh`` 0.5, a low
stage from 0.1, ``new_track_thresh`` 0.6 (``track_thresh + 0.1``), a 30-frame
buffer, and a first-stage IoU of at least 0.2 (``match_thresh`` 0.8 as a cost).
The same names as sleap-nn's MOT knobs, so ``--track-high-threshold`` and
``--mot_param track_buffer=60`` mean one thing for every tracker.
"""

from __future__ import annotations

from dataclasses import dataclass

from sleap_infer.tracking.knobs import check, knob, unit


@dataclass(frozen=True)
class InferByteTrackConfig:
    """ByteTrack's published defaults."""

    track_buffer: int = knob(30, "frames a lost track waits to be re-found", low=0)
    track_high_threshold: float = unit(0.5, "first-stage (high) detection score")
    track_low_threshold: float = unit(0.1, "lowest score associated at all")
    new_track_threshold: float = unit(0.6, "score needed to start a track")

    def __post_init__(self) -> None:
        check(self)
