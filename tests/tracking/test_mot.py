"""sleap-nn's MOT trackers (sort, botsort, ocsort, deepsort, strongsort, deepocsort): lifecycle,
presets and exact resume (appearance memories included)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sleap_infer.core.errors import UsageError
from sleap_infer.core.tracking import TrackingOptions
from sleap_infer.tracking import MASKS, POSES, Detections, MaskBitmap, TrackerState, make_tracker
from sleap_infer.tracking.mot_core import mot_params

MOT = ("sort", "botsort", "ocsort")
APPEARANCE = ("deepsort", "strongsort", "deepocsort")
SHAPE = np.array([[0.0, 0.0], [14.0, 3.0], [26.0, -2.0], [8.0, 9.0]])


def body(x: float, y: float) -> np.ndarray:
    return SHAPE + np.array([x, y])


def frame(f: int, poses: list[np.ndarray], scores: list[float]) -> Detections:
    pts = np.array(poses, np.float64).reshape(-1, 4, 2)
    return Detections(f, pts, np.array(scores, np.float64))


def tracker(name: str, carrier: str = POSES, n_nodes: int = 4, **options):
    return make_tracker(TrackingOptions(tracker=name, **options), carrier, n_nodes)


def test_presets_are_sleap_nns_animal_defaults() -> None:
    sort, bot, oc = (mot_params(TrackingOptions(tracker=n)) for n in MOT)
    assert (sort.min_hits, sort.min_match_similarity, sort.track_buffer) == (3, 0.3, 30)
    assert (sort.track_low_threshold, sort.new_track_threshold) == (0.1, 0.1)
    assert (bot.min_hits, bot.min_match_similarity) == (2, 0.2)
    assert (bot.track_high_threshold, bot.track_low_threshold, bot.new_track_threshold) == (
        0.6,
        0.1,
        0.7,
    )
    assert (oc.min_hits, oc.track_high_threshold, oc.new_track_threshold) == (3, 0.6, 0.6)
    given = mot_params(TrackingOptions(tracker="sort", min_hits=1, new_track_threshold=0.4))
    assert (given.min_hits, given.new_track_threshold) == (1, 0.4)


def test_bad_mot_knobs_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="--min_hits"):
        TrackingOptions(tracker="sort", min_hits=-1)
    with pytest.raises(UsageError, match="--min_match_similarity"):
        TrackingOptions(tracker="sort", min_match_similarity=1.5)


@pytest.mark.parametrize(("name", "first_tracked"), [("sort", 3), ("ocsort", 3), ("botsort", 1)])
def test_a_track_confirms_after_min_hits_and_keeps_its_id(name: str, first_tracked: int) -> None:
    """SORT and OC-SORT don't count the first detection (4 in a row for min_hits 3);
    BoT-SORT does (2 for its min_hits 2). Earlier detections stay untracked: online."""
    t = tracker(name)
    ids = [t.step(frame(f, [body(40 + 2 * f, 50)], [0.9])).track_ids[0] for f in range(8)]
    assert ids == [-1] * first_tracked + [0] * (8 - first_tracked)
    assert t.n_tracks == 1


def test_sort_ignores_low_scores_and_ocsort_recovers_after_a_gap() -> None:
    sort = tracker("sort")
    for f in range(6):
        sort.step(frame(f, [body(40 + 2 * f, 50)], [0.9]))
    assert sort.step(frame(6, [body(52, 50)], [0.05])).track_ids.tolist() == [-1]

    oc = tracker("ocsort")
    for f in range(6):
        oc.step(frame(f, [body(40 + 3 * f, 50)], [0.9]))
    for f in range(6, 10):  # unseen for four frames
        oc.step(frame(f, [], []))
    back = oc.step(frame(10, [body(40 + 3 * 10, 50)], [0.9]))
    assert back.track_ids.tolist() == [0]  # found again, same id


def _scene(seed: int, carrier: str, n_frames: int = 70, vectors: bool = False) -> list[Detections]:
    """Three animals crossing, misses, hidden nodes, strays, low scores and frame gaps;
    ``vectors``: a re-ID vector per detection (its animal's plus noise, some missing)."""
    rng = np.random.default_rng(seed)
    looks = np.random.default_rng(seed + 1).normal(0, 1, (4, 8))
    start = rng.uniform(40, 200, (3, 2))
    velocity = rng.uniform(-2.5, 2.5, (3, 2))
    frames, f = [], 0
    for _ in range(n_frames):
        f += 1 if rng.random() > 0.1 else 3
        poses, scores, who = [], [], []
        for a in range(3):
            if rng.random() < 0.1:
                continue
            who.append(a)
            pose = body(*(start[a] + f * velocity[a])) + rng.normal(0, 1, (4, 2))
            pose[rng.random(4) < 0.15] = np.nan
            poses.append(pose)
            scores.append(rng.uniform(0.2, 1.0))
        if rng.random() < 0.2:
            poses.append(body(*rng.uniform(20, 230, 2)))
            scores.append(rng.uniform(0.5, 0.8))
            who.append(3)
        det = frame(f, poses, scores)
        if vectors:
            det.embeddings = looks[who].reshape(-1, 8) + rng.normal(0, 0.3, (len(who), 8))
            det.embeddings[rng.random(len(who)) < 0.1] = np.nan
        if carrier == MASKS:
            masks = []
            for p in det.points:
                bitmap = np.zeros((130, 130), bool)
                for x, y in p[np.isfinite(p).all(axis=1)] / 2:
                    bitmap[max(0, int(y) - 3) : int(y) + 3, max(0, int(x) - 3) : int(x) + 3] = 1
                masks.append(MaskBitmap(bitmap, (0.5, 0.5)))
            det = Detections(
                f, np.zeros((len(masks), 0, 2)), det.scores, masks=masks, embeddings=det.embeddings
            )
        frames.append(det)
    return frames


def _through_json(state: TrackerState) -> TrackerState:
    """What the journal does to a state: JSON meta, raw array bytes."""
    meta = json.loads(json.dumps(state.meta))
    arrays = {
        k: np.frombuffer(v.tobytes(), dtype=v.dtype).reshape(v.shape)
        for k, v in state.arrays.items()
    }
    return TrackerState(meta=meta, arrays=arrays)


@pytest.mark.parametrize("carrier", [POSES, MASKS, "one node"])
@pytest.mark.parametrize("name", [*MOT, *APPEARANCE])
@pytest.mark.parametrize("cut", [1, 23, 50])
def test_resume_from_state_is_bit_identical(name: str, carrier: str, cut: int) -> None:
    """One-node poses have no extent: their body size comes from spacing and motion,
    which needs the previous frame's geometry in the state. The appearance trackers
    run with re-ID vectors and a threshold, so their memories decide matches."""
    looks = name in APPEARANCE
    frames = _scene(seed=5, carrier=MASKS if carrier == MASKS else POSES, vectors=looks)
    n_nodes = 4
    if carrier == "one node":
        frames = [
            Detections(d.frame_idx, d.points[:, :1], d.scores, embeddings=d.embeddings)
            for d in frames
        ]
        carrier, n_nodes = POSES, 1
    options = {"appearance_threshold": "0.5"} if looks else {}
    whole = tracker(name, carrier, n_nodes, **options)
    expected = [whole.step(d) for d in frames]
    first = tracker(name, carrier, n_nodes, **options)
    got = [first.step(d) for d in frames[:cut]]
    if n_nodes == 1:
        assert "prev_centroids" in first.state().arrays
    if looks:
        assert first.state().arrays["app_ema"].shape[1] == 8
    resumed = tracker(name, carrier, n_nodes, **options)
    resumed.load_state(_through_json(first.state()))
    got += [resumed.step(d) for d in frames[cut:]]
    for e, g in zip(expected, got):
        assert np.array_equal(e.track_ids, g.track_ids)
        assert e.scores.tobytes() == g.scores.tobytes()
    end, again = whole.state(), resumed.state()
    assert end.meta == again.meta and end.arrays.keys() == again.arrays.keys()
    for key, values in end.arrays.items():
        assert values.dtype == again.arrays[key].dtype
        assert values.tobytes() == again.arrays[key].tobytes(), key
    assert whole.n_tracks == resumed.n_tracks >= 1


def test_a_state_of_another_tracker_is_refused() -> None:
    state = tracker("sort").state()
    with pytest.raises(ValueError, match="ocsort"):
        tracker("ocsort").load_state(state)
