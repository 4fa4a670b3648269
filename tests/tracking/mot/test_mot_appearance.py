"""The appearance MOT trackers (botsort, deepsort, strongsort, deepocsort): re-ID vectors
decide identities when a threshold turns them on, memories are quality-gated, no vectors is
refused (botsort: tracked on geometry)."""

from __future__ import annotations

import numpy as np
import pytest

from sleap_infer.core.errors import UsageError
from sleap_infer.tracking import POSES, Detections, make_tracker, resolve_options
from sleap_infer.tracking.common.appearance_memory import (
    AppearanceMemory,
    frame_vectors,
    passes_quality_gate,
)
from sleap_infer.tracking.mot.core import mot_params
from sleap_infer.tracking.options import TrackingOptions

APPEARANCE = ("deepsort", "strongsort", "deepocsort")
READERS = ("botsort", *APPEARANCE)  # every tracker that reads the vectors
SHAPE = np.array([[0.0, 0.0], [14.0, 3.0], [26.0, -2.0], [8.0, 9.0]])
LOOK_A, LOOK_B = np.eye(8)[0], np.eye(8)[1]


def _swap_scene(threshold: str | None, name: str) -> list[list[int]]:
    """Two animals 2 px apart trade places at frame 8; detection 0 always looks like A."""
    options = TrackingOptions(tracker=name, appearance_threshold=threshold)
    tracker = make_tracker(options, POSES, 4, has_embeddings=True)
    ids = []
    for f in range(14):
        ya, yb = (50.0, 52.0) if f < 8 else (52.0, 50.0)
        pts = np.stack([SHAPE + np.array([100.0, ya]), SHAPE + np.array([100.0, yb])])
        det = Detections(f, pts, np.array([0.9, 0.9]), embeddings=np.stack([LOOK_A, LOOK_B]))
        ids.append(tracker.step(det).track_ids.tolist())
    return ids


@pytest.mark.parametrize("name", READERS)
def test_distinct_looks_keep_identities_when_geometry_swaps(name: str) -> None:
    """With a threshold the vectors win over the closer box; under 'auto' (nothing is
    calibrated online, as sleap-nn's class without prepare()) geometry decides. BoT-SORT
    too: without its appearance cost, ``infer track`` (whose pre-pass turns "auto" on)
    split the synthetic crossing scene into 13 tracks where sleap-nn kept 7
    (tracking_parity "botsort: mot knobs", 1,199 detections)."""
    looked = _swap_scene("0.5", name)
    assert looked[6] == [0, 1] and all(ids == [0, 1] for ids in looked[8:])
    geometric = _swap_scene(None, name)
    assert geometric[6] == [0, 1] and all(ids == [1, 0] for ids in geometric[8:])


def test_presets_are_sleap_nns_animal_defaults() -> None:
    ds, ss, doc = (mot_params(TrackingOptions(tracker=n)) for n in APPEARANCE)
    for p in (ds, ss):
        assert (p.min_hits, p.min_match_similarity, p.track_buffer) == (3, 0.3, 30)
        assert (p.track_high_threshold, p.track_low_threshold, p.new_track_threshold) == (
            0.5,
            0.1,
            0.1,
        )
    assert (doc.track_high_threshold, doc.new_track_threshold, doc.min_hits) == (0.6, 0.6, 3)


@pytest.mark.parametrize("name", APPEARANCE)
def test_no_vectors_is_a_one_line_usage_error(name: str) -> None:
    with pytest.raises(UsageError, match=f"^--tracker {name} associates by appearance") as err:
        resolve_options(TrackingOptions(tracker=name), POSES, 4, has_embeddings=False)
    assert "\n" not in str(err.value)
    resolve_options(TrackingOptions(tracker=name), POSES, 4, has_embeddings=True)


def test_botsort_without_vectors_tracks_on_geometry() -> None:
    """sleap-nn's class warns and associates on geometry; ours runs too (no refusal)."""
    resolve_options(TrackingOptions(tracker="botsort"), POSES, 4, has_embeddings=False)


def test_appearance_threshold_is_taken_by_the_trackers_that_read_vectors() -> None:
    for name in READERS:
        assert TrackingOptions(tracker=name, appearance_threshold="0.7").tracker == name
        TrackingOptions(tracker=name, appearance_threshold="auto")
    with pytest.raises(UsageError, match="'1.5'"):
        TrackingOptions(tracker="deepsort", appearance_threshold="1.5")
    with pytest.raises(UsageError, match="only applies to the appearance trackers"):
        TrackingOptions(tracker="ocsort", appearance_threshold="0.7")


def test_a_frame_without_usable_vectors_reads_as_none() -> None:
    vectors = np.array([[np.nan, 1.0], [0.0, 0.0], [3.0, 4.0]])
    emb, has = frame_vectors(vectors, 3, None)
    assert has.tolist() == [False, False, True] and emb is not None
    assert emb.dtype == np.float32 and np.allclose(emb[2], [0.6, 0.8]) and not emb[0].any()
    assert frame_vectors(vectors[:2], 2, None)[0] is None
    assert frame_vectors(vectors, 3, 5)[1].tolist() == [False, False, False]  # other dim


def test_memory_absorbs_gated_vectors_only_and_keeps_its_gallery_bounded() -> None:
    memory = AppearanceMemory(ema_alpha=0.8, gallery_size=3)
    memory.update(np.array([0.0, 2.0]))  # empty: seeded whatever the gate says
    assert np.allclose(memory.ema, [0.0, 1.0]) and len(memory.gallery) == 1
    memory.update(np.array([1.0, 0.0]), gated=False)
    assert np.allclose(memory.ema, [0.0, 1.0]) and len(memory.gallery) == 1
    memory.update(np.array([1.0, 0.0]))
    mixed = np.array([0.2, 0.8]) / np.hypot(0.2, 0.8)
    assert np.allclose(memory.ema, mixed) and memory.n_updates == 2
    for _ in range(4):
        memory.update(np.array([1.0, 1.0]))
    assert len(memory.gallery) == 3
    rows = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert np.allclose(
        memory.gallery_max_cos(rows, np.array([True, False])), [2**-0.5, np.nan], equal_nan=True
    )


def test_adaptive_ema_does_not_move_for_a_detection_at_the_score_floor() -> None:
    memory = AppearanceMemory(ema_alpha=0.95, gallery_size=30, adaptive=True, score_floor=0.6)
    assert memory.momentum(0.6) == 1.0 and memory.momentum(0.3) == 1.0
    assert memory.momentum(1.0) == pytest.approx(0.95)
    assert memory.momentum(0.8) == pytest.approx(0.975)


@pytest.mark.parametrize(
    ("score", "visible", "overlap", "margin", "gallery", "passes"),
    [
        (0.9, 4, 0.0, 1.0, 5, True),
        (0.4, 4, 0.0, 1.0, 5, False),  # not confident
        (0.9, 1, 0.0, 1.0, 5, False),  # mostly hidden
        (0.9, 4, 0.2, 1.0, 5, False),  # overlaps a neighbour
        (0.9, 4, np.nan, 1.0, 5, True),  # NaN overlap: none
        (0.9, 4, 0.0, -0.1, 5, False),  # looks more like another track
        (0.9, 4, 0.0, -0.1, 2, True),  # too young a gallery for a margin
        (0.9, 4, 0.0, np.nan, 5, False),
    ],
)
def test_quality_gate(score, visible, overlap, margin, gallery, passes) -> None:
    got = passes_quality_gate(
        score, visible, 4, overlap, margin, high_threshold=0.5, min_margin=0.0, gallery_len=gallery
    )
    assert got is passes


@pytest.mark.parametrize("name", APPEARANCE)
def test_a_state_saved_before_any_vector_resumes(name: str) -> None:
    """Tracks but no vector yet: the memories are empty and of no dimension; the resumed
    tracker takes the first vectors as an uninterrupted one does."""
    options = TrackingOptions(tracker=name, appearance_threshold="0.5")

    def det(f: int, looks: bool) -> Detections:
        pts = np.stack([SHAPE + np.array([100.0 + f, 50.0]), SHAPE + np.array([100.0, 90.0])])
        vectors = np.stack([LOOK_A, LOOK_B]) if looks else np.full((2, 8), np.nan)
        return Detections(f, pts, np.array([0.9, 0.9]), embeddings=vectors)

    frames = [det(f, f >= 4) for f in range(10)]
    whole = make_tracker(options, POSES, 4, has_embeddings=True)
    expected = [whole.step(d).track_ids.tolist() for d in frames]
    first = make_tracker(options, POSES, 4, has_embeddings=True)
    for d in frames[:4]:
        first.step(d)
    state = first.state()
    assert state.meta["embedding_dim"] is None and state.arrays["app_ema"].shape == (2, 0)
    resumed = make_tracker(options, POSES, 4, has_embeddings=True)
    resumed.load_state(state)
    assert [resumed.step(d).track_ids.tolist() for d in frames[4:]] == expected[4:]
    assert resumed.state().arrays["app_ema"].tobytes() == whole.state().arrays["app_ema"].tobytes()


def test_a_botsort_journal_without_memories_still_resumes() -> None:
    """Journals written before botsort kept appearance memories have no ``app_*`` arrays:
    the tracks resume with empty memories (seeded at their next match)."""
    tracker = make_tracker(TrackingOptions(tracker="botsort"), POSES, 4)
    for f in range(3):
        tracker.step(Detections(f, SHAPE[None] + 50.0, np.array([0.9])))
    state = tracker.state()
    state.arrays = {k: v for k, v in state.arrays.items() if not k.startswith("app_")}
    again = make_tracker(TrackingOptions(tracker="botsort"), POSES, 4)
    again.load_state(state)
    assert len(again.memories) == 1 and again.memories[0].is_empty  # type: ignore[attr-defined]
