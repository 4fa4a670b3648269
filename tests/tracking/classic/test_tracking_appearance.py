"""The classic tracker's appearance blend: sleap-nn's formula, its refusals, its state."""

from __future__ import annotations

import numpy as np
import pytest

from sleap_infer.core.errors import UsageError
from sleap_infer.tracking import POSES, Detections, make_tracker
from sleap_infer.tracking.classic.scoring import blend_appearance
from sleap_infer.tracking.classic.tracker import ClassicTracker
from sleap_infer.tracking.options import TrackingOptions


def dots(frame: int, xs: list[float], vectors: list[list[float]] | None) -> Detections:
    """One-node poses at ``(x, 0)`` with their re-ID vectors (None: a row of NaN)."""
    points = np.array([[[x, 0.0]] for x in xs]).reshape(-1, 1, 2)
    emb = None
    if vectors is not None:
        emb = np.array([[np.nan, np.nan] if v is None else v for v in vectors], np.float64)
    return Detections(frame, points, np.ones(len(xs)), embeddings=emb)


def blended(**kw: object) -> ClassicTracker:
    options = TrackingOptions(appearance_weight=0.5, euclidean_scale=10.0, **kw)  # type: ignore[arg-type]
    t = make_tracker(options, POSES, 1, has_embeddings=True)
    assert isinstance(t, ClassicTracker)
    return t


def test_the_blend_is_sleap_nns_formula_on_a_hand_computed_case() -> None:
    # Track 0 at x=0 with vector (1, 0); track 1 at x=10 with (0, 1). The new
    # detection at x=4 carries (0, 1). Geometry: exp(-4/10) = 0.67032 to track 0,
    # exp(-6/10) = 0.54881 to track 1. Appearance: cosine 0 and 1. Blend w=0.5:
    # 0.33516 vs 0.77441, so appearance wins track 1 though geometry prefers 0.
    t = blended()
    t.step(dots(0, [0.0, 10.0], [[1.0, 0.0], [0.0, 1.0]]))
    out = t.step(dots(1, [4.0], [[0.0, 1.0]]))
    assert out.track_ids.tolist() == [1]
    expected = 0.5 * np.exp(-6 / 10) + 0.5 * 1.0
    assert out.scores[0] == np.float32(expected)
    # Geometry alone (weight 0) takes the nearer track.
    alone = make_tracker(TrackingOptions(), POSES, 1, has_embeddings=False)
    alone.step(dots(0, [0.0, 10.0], None))
    assert alone.step(dots(1, [4.0], None)).track_ids.tolist() == [0]


def test_a_pair_without_a_vector_keeps_its_geometry() -> None:
    geometry = np.array([[-4.0, -6.0], [np.nan, -2.0]])
    appearance = np.array([[np.nan, 1.0], [0.5, 0.2]])
    out = blend_appearance(geometry, appearance, 0.25, 10.0)
    sim = np.exp(geometry / 10.0)
    assert out[0, 0] == sim[0, 0]  # no appearance: geometry, mapped
    assert out[0, 1] == 0.75 * sim[0, 1] + 0.25 * 1.0
    assert np.isnan(out[1, 0])  # geometry rejected it: stays rejected
    assert out[1, 1] == 0.75 * sim[1, 1] + 0.25 * 0.2


def test_oks_is_blended_unmapped() -> None:
    out = blend_appearance(np.array([[0.8]]), np.array([[0.2]]), 0.5, None)
    assert out[0, 0] == 0.5


def test_vectors_on_the_detections_stay_a_cue_not_the_feature() -> None:
    t = blended()
    assert t.options.features == "centroids" and t.options.scoring == "euclidean_dist"


@pytest.mark.parametrize(
    ("kw", "n_nodes", "vectors", "message"),
    [
        ({"appearance_weight": 1.5}, 4, True, "must be in"),
        ({"appearance_weight": 0.5, "features": "embeddings"}, 4, True, "appearance only"),
        ({"appearance_weight": 0.5, "use_flow": True}, 4, True, "--use-flow"),
        ({"appearance_weight": 0.5, "tracker": "bytetrack"}, 4, True, "classic tracker"),
        ({"appearance_weight": 0.5}, 4, False, "no detection carries"),
        ({"appearance_weight": 0.5}, 1, True, "--euclidean-scale"),
        ({"appearance_weight": 0.5, "scoring": "cosine_sim"}, 4, True, "bounded"),
        ({"euclidean_scale": -1.0}, 4, True, "must be > 0"),
        ({"appearance_threshold": "auto"}, 4, True, "appearance trackers"),
        ({"appearance_threshold": "2"}, 4, True, "cosine in"),
    ],
)
def test_a_blend_that_would_be_inert_or_meaningless_is_one_usage_line(
    kw: dict[str, object], n_nodes: int, vectors: bool, message: str
) -> None:
    with pytest.raises(UsageError, match=message) as err:
        make_tracker(TrackingOptions(**kw), POSES, n_nodes, vectors)  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


def test_the_fingerprint_holds_every_option_and_round_trips() -> None:
    """``to_json`` (a journal fingerprint's tracking part) records every field, the unset
    appearance options too, so no option can change a resumed run unseen."""
    fields = set(TrackingOptions().to_json())
    assert {"appearance_weight", "euclidean_scale", "appearance_threshold", "use_kalman"} <= fields
    set_ = TrackingOptions(appearance_weight=0.2, euclidean_scale=3.0)
    assert set_.to_json()["appearance_weight"] == 0.2
    # to_json records the tracker's own thresholds where they were left unset.
    assert TrackingOptions(**set_.to_json()) == set_.with_tracker_defaults()
    plain = TrackingOptions()
    assert TrackingOptions(**plain.to_json()) == plain.with_tracker_defaults()
