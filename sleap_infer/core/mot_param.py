"""``--mot_param KEY=VALUE``: sleap-nn 0.3.5's ``MOTParams`` overrides, parsed and checked.

sleap-nn lets any field of its ``MOTParams`` be overridden from the command line
(``parse_mot_param``: the value is coerced to the field's type, ``true``/``false``
for flags, ``none`` only for the optional ones). Every key and type it accepts
is accepted here, in one line per mistake with sleap-nn's wording. Unlike
sleap-nn, which lets a tracker ignore a key it never reads, a key the chosen
tracker does not read here is refused: it would change nothing, silently.

The overrides stay a tuple of ``(key, value)`` pairs, sorted by key with the
last of a repeated key kept (sleap-nn builds a dict), so the options stay
hashable and read the same in a journal's fingerprint.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from sleap_infer.core.errors import UsageError

MotParam = tuple[tuple[str, Any], ...]

# sleap-nn 0.3.5 MOTParams' fields (less ``tracker``) with their class defaults: the
# default's type is the value's type (``None``: an optional number, below). These are
# not the values a tracker runs with: ``MOTParams.for_tracker`` lays each tracker's
# preset over them, and the trackers carry those presets themselves (e.g. ``fuse_score``
# is False here and in every preset but ByteTrack's and BoT-SORT's, whose "paper" and
# "animal" presets set it True: :mod:`sleap_infer.tracking.mot_byte`).
FIELDS: dict[str, Any] = dict(
    preset="animal",
    similarity="auto",
    body_size=None,
    oks_stddev=0.1,
    box_padding=0.1,
    score_mode="auto",
    normalize_scores=False,
    kalman="auto",
    time_base="auto",
    track_buffer=30,
    min_hits=3,
    track_high_threshold=0.5,
    track_low_threshold=0.1,
    new_track_threshold=0.6,
    min_match_similarity=0.3,
    low_stage_min_similarity=0.5,
    unconfirmed_min_similarity=0.3,
    duplicate_similarity=0.85,
    fuse_score=False,
    appearance_threshold="auto",
    proximity_threshold=0.5,
    ema_alpha=0.8,
    adaptive_ema=False,
    gallery_size=30,
    gallery_budget=100,
    mc_lambda=0.98,
    nsa=False,
    delta_t=3,
    inertia=0.2,
    use_byte=False,
    w_assoc_emb=0.75,
    aw_param=0.5,
    aw_off=False,
    rescue=True,
    rescue_min_similarity=0.15,
    link_tracklets=False,
    max_tracks=None,
    link_swap_correction=True,
    link_spatial_gate_frames=300,
)
_OPTIONAL_INTS = ("max_tracks",)
_OPTIONAL_FLOATS = ("body_size",)
_CHOICES = {
    "preset": ("animal", "paper"),
    "similarity": ("auto", "iou", "oks", "centroid"),
    "score_mode": ("auto", "instance", "none"),
    "kalman": ("auto", "xywh", "xyah", "xysr"),
    "time_base": ("auto", "frames", "steps"),
}
_UNIT = (
    "track_high_threshold",
    "track_low_threshold",
    "new_track_threshold",
    "min_match_similarity",
    "low_stage_min_similarity",
    "unconfirmed_min_similarity",
    "duplicate_similarity",
    "proximity_threshold",
    "ema_alpha",
    "mc_lambda",
    "rescue_min_similarity",
)
_AT_LEAST = {
    "track_buffer": 0,
    "min_hits": 1,
    "delta_t": 1,
    "gallery_size": 1,
    "gallery_budget": 1,
    "max_tracks": 1,
}

# Keys that are also options of their own (``--min_hits``): given both ways is refused.
NAMED = (
    "track_buffer",
    "min_hits",
    "track_high_threshold",
    "track_low_threshold",
    "new_track_threshold",
    "min_match_similarity",
)
# What each of our MOT trackers reads; ``preset`` only as ``animal`` (its defaults).
_COMMON = ("preset", "body_size", "box_padding", *NAMED)
# ByteTrack's stage caps and score fusion (read by bytetrack and botsort, its subclass).
_BYTE = (
    *_COMMON,
    "low_stage_min_similarity",
    "unconfirmed_min_similarity",
    "duplicate_similarity",
    "fuse_score",
)
READ_BY: dict[str, tuple[str, ...]] = {
    "sort": _COMMON,
    "deepsort": _COMMON,
    "strongsort": _COMMON,
    "deepocsort": (*_COMMON, "delta_t", "inertia"),  # sleap-nn: no BYTE stage
    "ocsort": (*_COMMON, "delta_t", "inertia", "use_byte"),
    "bytetrack": _BYTE,
    "botsort": (*_BYTE, "proximity_threshold"),  # ByteTrack's stages plus appearance
}


def _fail(text: str, why: str) -> UsageError:
    return UsageError(f"--mot_param {text!r}: {why}")


def _number(key: str, raw: str, kind: type) -> int | float:
    try:
        value = kind(raw)
    except ValueError:
        noun = "an integer" if kind is int else "a number"
        raise ValueError(f"{key} expects {noun}, got {raw!r}.") from None
    if not math.isfinite(value):
        raise ValueError(f"{key} expects a finite number, got {raw!r}.")
    return value


def _coerce(key: str, raw: str) -> Any:
    """sleap-nn's ``parse_mot_param`` coercion for a known ``key`` (ValueError: bad value)."""
    default = FIELDS[key]
    lowered = raw.lower()
    if key in _CHOICES:
        if raw not in _CHOICES[key]:
            raise ValueError(f"{key} must be one of {list(_CHOICES[key])}, got {raw!r}.")
        return raw
    if key == "appearance_threshold":
        if lowered.strip() == "auto":
            return "auto"
        value = _number(key, raw, float)
        if not -1.0 <= value <= 1.0:
            raise ValueError(f"{key} must be 'auto' or a cosine in [-1, 1], got {value!r}.")
        return value
    if lowered == "none":
        if key not in _OPTIONAL_INTS + _OPTIONAL_FLOATS:
            raise ValueError(f"{key} cannot be None.")
        return None
    if isinstance(default, bool):
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ValueError(f"{key} expects a boolean, got {raw!r}.")
    if key in _OPTIONAL_FLOATS:
        value = _number(key, raw, float)
        if value <= 0:
            raise ValueError(f"{key} must be > 0 (or None), got {value!r}.")
        return value
    value = _number(key, raw, int if key in _OPTIONAL_INTS or isinstance(default, int) else float)
    if key in _UNIT and not 0.0 <= value <= 1.0:
        raise ValueError(f"{key} must be in [0, 1], got {value!r}.")
    if key in _AT_LEAST and value < _AT_LEAST[key]:
        raise ValueError(f"{key} must be >= {_AT_LEAST[key]}, got {value}.")
    return value


def parse_one(text: str) -> tuple[str, Any]:
    """One ``KEY=VALUE`` as ``(key, value)``; a one-line :class:`UsageError` otherwise."""
    if "=" not in text:
        raise _fail(text, f"expected KEY=VALUE, got {text!r}.")
    key, raw = (part.strip() for part in text.split("=", 1))
    if key not in FIELDS:
        raise _fail(text, f"unknown MOT parameter {key!r}; valid parameters: {sorted(FIELDS)}.")
    try:
        return key, _coerce(key, raw)
    except ValueError as e:
        raise _fail(text, str(e)) from None


def _pairs(given: Any) -> list[tuple[str, Any]]:
    """``given`` (``KEY=VALUE`` texts, a mapping, or pairs) as checked ``(key, value)`` pairs."""
    if isinstance(given, str):
        given = [given]
    items: Iterable[Any] = given.items() if isinstance(given, Mapping) else given
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(parse_one(item))
        else:
            key, value = item
            text = f"{key}={'none' if value is None else value}"
            out.append(parse_one(text))
    return out


def normalize(given: Any, tracker: str, named: Mapping[str, Any]) -> MotParam:
    """The checked overrides for ``tracker`` as sorted pairs (``named``: the tracker options
    given as options of their own, by field name; unset ones are None)."""
    if not given:
        return ()
    values = dict(_pairs(given))
    read = READ_BY.get(tracker)
    if read is None:
        mot = ", ".join(READ_BY)
        raise UsageError(
            f"--mot_param only applies to the MOT trackers; pass --tracker ({mot}) or drop it"
        )
    for key, value in values.items():
        if key not in read:
            raise UsageError(
                f"--mot_param {key}: --tracker {tracker} here does not read it (it reads"
                f" {', '.join(read)})"
            )
        if key == "preset" and value != "animal":
            raise UsageError(
                f"--mot_param preset={value}: only sleap-nn's 'animal' preset is ported"
            )
        if key in NAMED and named.get(key) is not None:
            raise UsageError(
                f"MOT parameter {key!r} given both as an option and in --mot_param; give it once"
            )
    return tuple(sorted(values.items()))


def lookup(pairs: MotParam, key: str, default: Any) -> Any:
    """``key``'s override in ``pairs``, else ``default``."""
    for name, value in pairs:
        if name == key:
            return value
    return default
