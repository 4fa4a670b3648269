"""--mot_param: sleap-nn's keys, types and messages; refusals in one line; hashable options."""

from __future__ import annotations

import json

import pytest

from sleap_infer.core.errors import UsageError
from sleap_infer.tracking.mot_param import parse_one
from sleap_infer.tracking.options import TrackingOptions


@pytest.mark.parametrize(
    ("text", "pair"),
    [
        ("delta_t=5", ("delta_t", 5)),
        (" inertia = 0.25 ", ("inertia", 0.25)),
        ("use_byte=On", ("use_byte", True)),
        ("fuse_score=0", ("fuse_score", False)),
        ("body_size=none", ("body_size", None)),
        ("max_tracks=None", ("max_tracks", None)),
        ("appearance_threshold=AUTO", ("appearance_threshold", "auto")),
        ("appearance_threshold=-0.5", ("appearance_threshold", -0.5)),
        ("kalman=xyah", ("kalman", "xyah")),
        ("preset=paper", ("preset", "paper")),
    ],
)
def test_values_are_coerced_as_sleap_nn_does(text: str, pair: tuple) -> None:
    assert parse_one(text) == pair


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("delta_t", "expected KEY=VALUE"),
        ("foo=1", "unknown MOT parameter 'foo'; valid parameters: ["),
        ("tracker=sort", "unknown MOT parameter 'tracker'"),
        ("delta_t=2.5", "delta_t expects an integer, got '2.5'"),
        ("inertia=fast", "inertia expects a number, got 'fast'"),
        ("use_byte=maybe", "use_byte expects a boolean, got 'maybe'"),
        ("delta_t=none", "delta_t cannot be None"),
        ("min_match_similarity=1.5", "min_match_similarity must be in [0, 1]"),
        ("delta_t=0", "delta_t must be >= 1"),
        ("body_size=-3", "body_size must be > 0"),
        ("kalman=xyz", "kalman must be one of"),
        ("inertia=nan", "inertia expects a finite number"),
    ],
)
def test_a_bad_key_or_value_is_one_usage_line(text: str, message: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_one(text)
    assert str(err.value).startswith(f"--mot_param {text!r}: ")
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(tracker="classic"), "only applies to the MOT trackers"),
        (dict(tracker="infer_bytetrack"), "--tracker infer_bytetrack here does not read"),
        (dict(tracker="sort", mot_param=["inertia=0.3"]), "--tracker sort here does not read"),
        (dict(tracker="botsort", mot_param=["kalman=xyah"]), "does not read it"),
        (dict(tracker="sort", mot_param=["preset=paper"]), "only sleap-nn's 'animal' preset"),
        (dict(tracker="botsort", min_hits=3, mot_param=["min_hits=2"]), "given both"),
        (dict(tracker="sort", mot_param=["track_low_threshold=0.5"]), "is above"),
    ],
)
def test_what_the_tracker_would_not_read_is_refused(options: dict, message: str) -> None:
    options.setdefault("mot_param", ["delta_t=4"])
    with pytest.raises(UsageError, match=message) as err:
        TrackingOptions(**options)
    assert "\n" not in str(err.value)


def test_overrides_stay_hashable_and_serialise_for_the_fingerprint() -> None:
    given = TrackingOptions(
        tracker="ocsort", mot_param=["use_byte=yes", "delta_t=4", "delta_t=5", "min_hits=2"]
    )
    assert given.mot_param == (("delta_t", 5), ("min_hits", 2), ("use_byte", True))
    assert hash(given) == hash(TrackingOptions(tracker="ocsort", mot_param=given.mot_param))
    record = json.loads(json.dumps(given.to_json()))
    assert record["mot_param"] == {"delta_t": 5, "use_byte": True}  # min_hits: its field
    assert record["min_hits"] == 2
    assert TrackingOptions(**record).to_json() == record
    assert TrackingOptions(tracker="ocsort").to_json()["mot_param"] == {}
    assert TrackingOptions(tracker="sort", mot_param=["preset=animal"]).mot_param == (
        ("preset", "animal"),
    )
