"""sleap-nn 0.3.5's MOT trackers' knobs, one frozen config per tracker.

Each config's defaults are sleap-nn's ``"animal"`` preset for that tracker
(``MOTParams.for_tracker(name)``: the paper constants, then sleap-nn's animal
changes), and its fields are exactly the ``MOTParams`` keys that tracker reads
here: ``--mot_param KEY=VALUE`` is legal for a tracker exactly when ``KEY`` is a
field of its config (:mod:`sleap_infer.tracking.mot_param`). A subclass
redeclares only the fields whose preset differs, so each difference from the
shared defaults reads in one place; ``tests/tracking/test_registry.py`` checks
every default against sleap-nn's presets, stored as facts.
"""

from __future__ import annotations

from dataclasses import dataclass

from sleap_infer.tracking.knobs import check, knob, unit

# What one knob does, said once for every config that has it.
_HIGH = "first-stage (high) detection score"
_NEW = "score needed to start a track"
_MATCH = "weakest overlap a first-stage match may have"


@dataclass(frozen=True)
class MotConfig:
    """The knobs every MOT tracker reads (SORT's preset values, less the thresholds)."""

    preset: str = knob("animal", "sleap-nn's preset the defaults come from", choices=("animal",))
    body_size: float | None = knob(None, "animal size in px (None: measured per video)", low=0.0)
    box_padding: float = knob(0.1, "padding on each side of a pose or mask box, of max(w, h)")
    track_buffer: int = knob(30, "frames a lost track waits to be re-found", low=0)
    min_hits: int = knob(3, "matches before a track is confirmed", low=1)
    track_high_threshold: float = unit(0.5, _HIGH)
    track_low_threshold: float = unit(0.1, "lowest score associated at all")
    new_track_threshold: float = unit(0.6, _NEW)
    min_match_similarity: float = unit(0.3, _MATCH)

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True)
class SortConfig(MotConfig):
    """SORT: no score logic in the paper; sleap-nn's animal preset keeps nearly all."""

    track_high_threshold: float = unit(0.1, _HIGH)
    new_track_threshold: float = unit(0.1, _NEW)


@dataclass(frozen=True)
class ByteTrackConfig(MotConfig):
    """ByteTrack: a low-score second stage, an unconfirmed stage, duplicate removal."""

    min_hits: int = knob(2, "matches before a track is confirmed", low=1)
    min_match_similarity: float = unit(0.2, _MATCH)
    low_stage_min_similarity: float = unit(0.5, "weakest match of the low-score stage")
    unconfirmed_min_similarity: float = unit(0.3, "weakest match of an unconfirmed track")
    duplicate_similarity: float = unit(0.85, "tracked-vs-lost overlap that removes a duplicate")
    fuse_score: bool = knob(True, "multiply the similarity by the detection score")


@dataclass(frozen=True)
class BotSortConfig(ByteTrackConfig):
    """BoT-SORT: ByteTrack's stages with stricter scores and an appearance gate."""

    track_high_threshold: float = unit(0.6, _HIGH)
    new_track_threshold: float = unit(0.7, _NEW)
    proximity_threshold: float = unit(0.5, "weakest overlap at which appearance counts")


@dataclass(frozen=True)
class OcSortConfig(MotConfig):
    """OC-SORT: observation-centric momentum, an optional BYTE stage."""

    track_high_threshold: float = unit(0.6, _HIGH)
    delta_t: int = knob(3, "observation lookback (steps) for the velocity direction", low=1)
    inertia: float = knob(0.2, "weight of the observation-centric momentum term")
    use_byte: bool = knob(False, "add BYTE's low-score second stage")


@dataclass(frozen=True)
class DeepOcSortConfig(MotConfig):
    """Deep OC-SORT: OC-SORT's momentum (no BYTE stage in sleap-nn) with re-ID."""

    track_high_threshold: float = unit(0.6, _HIGH)
    delta_t: int = knob(3, "observation lookback (steps) for the velocity direction", low=1)
    inertia: float = knob(0.2, "weight of the observation-centric momentum term")


@dataclass(frozen=True)
class DeepSortConfig(MotConfig):
    """DeepSORT: every kept detection may start a track in sleap-nn's animal preset."""

    new_track_threshold: float = unit(0.1, _NEW)


@dataclass(frozen=True)
class StrongSortConfig(DeepSortConfig):
    """StrongSORT: DeepSORT's preset values for the knobs read here."""
