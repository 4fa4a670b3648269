"""sleap-nn's MOT trackers (sort, bytetrack, botsort, ocsort, deepsort, strongsort,
deepocsort): lifecycle,
presets and exact resume (appearance memories included)."""

from __future__ import annotations

import numpy as np
import pytest
from journal_roundtrip import through_json

from sleap_infer.core.errors import UsageError
from sleap_infer.tracking import MASKS, POSES, Detections, MaskBitmap, make_tracker
from sleap_infer.tracking.mot.core import mot_params
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.tracking.resolve import resolve_options

MOT = ("sort", "bytetrack", "botsort", "ocsort")
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
    sort, byte, bot, oc = (mot_params(TrackingOptions(tracker=n)) for n in MOT)
    assert (byte.min_hits, byte.min_match_similarity, byte.track_buffer) == (2, 0.2, 30)
    assert (byte.track_high_threshold, byte.track_low_threshold) == (0.5, 0.1)
    assert byte.new_track_threshold == 0.6
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


@pytest.mark.parametrize("name", MOT)
def test_an_explicit_value_equal_to_the_shared_default_is_kept(name: str) -> None:
    """Issue 31: ``--min_hits 3`` on botsort became botsort's 2 (and ``--track_high_threshold
    0.5`` on sort its 0.1) because a value equal to ByteTrack's default read as unset."""
    shared = dict(
        track_high_threshold=0.5,
        track_low_threshold=0.1,
        new_track_threshold=0.6,
        min_hits=3,
        min_match_similarity=0.3,
        track_buffer=30,
    )
    options = TrackingOptions(tracker=name, **shared)
    params = mot_params(options)
    assert {k: getattr(params, k) for k in shared} == shared
    resolved = resolve_options(options, POSES, 4)
    assert {k: getattr(resolved, k) for k in shared} == shared
    assert {k: v for k, v in resolved.to_json().items() if k in shared} == shared


def test_unset_knobs_resolve_to_the_trackers_own_numbers() -> None:
    """Every reader after resolution sees numbers: the preset for the SORT family,
    ByteTrack's values for infer_bytetrack and classic (as recorded before they could be
    unset)."""
    knobs = ("track_high_threshold", "track_low_threshold", "new_track_threshold")
    knobs += ("min_hits", "min_match_similarity", "track_buffer")
    expected = {
        "classic": (0.5, 0.1, 0.6, 3, 0.3, 30),
        "infer_bytetrack": (0.5, 0.1, 0.6, 3, 0.3, 30),
        "bytetrack": (0.5, 0.1, 0.6, 2, 0.2, 30),
        "sort": (0.1, 0.1, 0.1, 3, 0.3, 30),
        "botsort": (0.6, 0.1, 0.7, 2, 0.2, 30),
        "ocsort": (0.6, 0.1, 0.6, 3, 0.3, 30),
    }
    for name, values in expected.items():
        options = TrackingOptions(tracker=name)
        resolved = resolve_options(options, POSES, 4)
        assert tuple(getattr(resolved, k) for k in knobs) == values, name
        assert tuple(options.to_json()[k] for k in knobs) == values, name


def test_bad_mot_knobs_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="--min_hits"):
        TrackingOptions(tracker="sort", min_hits=-1)
    with pytest.raises(UsageError, match="--min_match_similarity"):
        TrackingOptions(tracker="sort", min_match_similarity=1.5)


@pytest.mark.parametrize(
    ("name", "first_tracked"), [("sort", 3), ("ocsort", 3), ("botsort", 1), ("bytetrack", 1)]
)
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
    resumed.load_state(through_json(first.state()))
    got += [resumed.step(d) for d in frames[cut:]]
    for e, g in zip(expected, got):
        assert np.array_equal(e.track_ids, g.track_ids)
        assert e.scores.tobytes() == g.scores.tobytes()
        assert e.late == g.late  # a track confirmed after the cut labels frames before it
    assert any(e.late for e in expected)
    end, again = whole.state(), resumed.state()
    assert end.meta == again.meta and end.arrays.keys() == again.arrays.keys()
    for key, values in end.arrays.items():
        assert values.dtype == again.arrays[key].dtype
        assert values.tobytes() == again.arrays[key].tobytes(), key
    assert whole.n_tracks == resumed.n_tracks >= 1


# The frame a track seen every frame confirms at: SORT and OC-SORT after a streak of
# min_hits 3 matches; BoT-SORT counts its spawn as a hit (min_hits 2).
@pytest.mark.parametrize(
    ("name", "confirm"), [("sort", 3), ("botsort", 1), ("bytetrack", 1), ("ocsort", 3)]
)
def test_a_confirmed_track_labels_its_tentative_frames(name: str, confirm: int) -> None:
    """sleap-nn labels a track's tentative detections once it confirms (spawn: 1.0, then
    each match's similarity); here those come back as late labels, oldest first."""
    t = tracker(name)
    answers = [t.step(frame(f, [body(50 + 2 * f, 60)], [0.9])) for f in range(confirm + 2)]
    assert all(a.track_ids[0] == -1 and not a.late for a in answers[:confirm])
    confirmed = answers[confirm]
    assert confirmed.track_ids.tolist() == [0]
    assert [(f, j, tid) for f, j, tid, _ in confirmed.late] == [(f, 0, 0) for f in range(confirm)]
    scores = [score for *_, score in confirmed.late]
    assert scores[0] == 1.0 and all(0.5 < s <= 1.0 for s in scores[1:])
    assert answers[-1].late == [] and answers[-1].track_ids.tolist() == [0]


def test_a_track_that_never_confirms_labels_nothing() -> None:
    """A detection seen once (a stray) spawns a track that dies: no late label, ever."""
    t = tracker("botsort")
    answers = [t.step(frame(0, [body(50, 60), body(200, 200)], [0.9, 0.9]))]
    answers += [t.step(frame(f, [body(50 + 2 * f, 60)], [0.9])) for f in range(1, 6)]
    late = [label for a in answers for label in a.late]
    assert late and all(j == 0 for _, j, _, _ in late)
    assert t.state().arrays["member_tid"].size == 0


def test_a_state_of_another_format_is_refused() -> None:
    """Only the current state format loads (the journal's format version guards older
    runs, which are refused in one line before any state is read)."""
    state = tracker("sort").state()
    with pytest.raises(ValueError, match="not a sort state of this version"):
        tracker("sort").load_state(type(state)(meta=state.meta | {"format": 1}, arrays={}))


def test_a_state_of_another_tracker_is_refused() -> None:
    state = tracker("sort").state()
    with pytest.raises(ValueError, match="ocsort"):
        tracker("ocsort").load_state(state)


# ------------------------------------------------------------------ --mot_param


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("ocsort", ["delta_t=5", "inertia=0.5", "use_byte=true"]),
        ("botsort", ["low_stage_min_similarity=0.3", "fuse_score=false", "box_padding=0.2"]),
        ("sort", ["body_size=40"]),
    ],
)
def test_mot_param_overrides_resume_bit_identical(name: str, overrides: list[str]) -> None:
    """The overrides shape the state (OC-SORT keeps 2 * delta_t + 1 observations)."""
    frames = _scene(seed=9, carrier=POSES)
    whole = tracker(name, mot_param=overrides)
    expected = [whole.step(d).track_ids for d in frames]
    first = tracker(name, mot_param=overrides)
    got = [first.step(d).track_ids for d in frames[:30]]
    resumed = tracker(name, mot_param=overrides)
    resumed.load_state(through_json(first.state()))
    got += [resumed.step(d).track_ids for d in frames[30:]]
    assert all(np.array_equal(e, g) for e, g in zip(expected, got))
    if name == "ocsort":
        assert whole.state().arrays["obs_steps"].shape[1] == 11


def test_ocsort_use_byte_keeps_a_low_scoring_animal_on_its_track() -> None:
    """sleap-nn's BYTE stage: a detection between the low and high thresholds can
    continue a track (never start one); without it, it stays untracked."""
    runs = {}
    for use_byte in ("false", "true"):
        oc = tracker("ocsort", mot_param=[f"use_byte={use_byte}"])
        for f in range(6):
            oc.step(frame(f, [body(40 + 2 * f, 50)], [0.9]))
        runs[use_byte] = oc.step(frame(6, [body(52, 50)], [0.3])).track_ids.tolist()
    assert runs == {"false": [-1], "true": [0]}


def test_botsort_stage_caps_come_from_mot_param() -> None:
    params = mot_params(TrackingOptions(tracker="botsort", mot_param=("duplicate_similarity=0.9",)))
    bot = make_tracker(
        TrackingOptions(tracker="botsort", mot_param=["duplicate_similarity=0.9"]), POSES, 4
    )
    assert params.extra["duplicate_similarity"] == 0.9
    assert (bot.duplicate_min, bot.low_stage_min, bot.unconfirmed_min) == (0.9, 0.5, 0.3)


def test_a_lost_bytetrack_track_stops_growing_taller_and_a_botsort_one_wider_too() -> None:
    """sleap-nn's size_velocity: ByteTrack zeroes a lost track's height velocity only,
    BoT-SORT (ByteTrack plus appearance) its width and height velocities."""
    velocities = {}
    for name in ("bytetrack", "botsort"):
        t = tracker(name)
        for f in range(6):  # a body that grows every frame: size velocities build up
            t.step(frame(f, [body(40 + 2 * f, 50) * (1 + 0.05 * f)], [0.9]))
        t.step(frame(6, [], []))  # lost here: its velocities are zeroed before the next step
        t.step(frame(7, [], []))
        velocities[name] = t.mean[0, 6:8]
    assert velocities["bytetrack"][0] != 0 and velocities["bytetrack"][1] == 0
    assert (velocities["botsort"] == 0).all()


@pytest.mark.parametrize("name", ["bytetrack", "ocsort"])
def test_a_pose_scores_by_its_mean_visible_point_score_not_its_instance_score(name: str) -> None:
    """Issue 43: a top-down pose's instance score is its centroid's confidence; sleap-nn's
    MOT trackers (``score_mode="auto"``) read the mean point score over the visible nodes.
    An animal with a confident centroid but weak nodes (0.3 < the new-track threshold 0.6)
    must never start a track; weak centroid, confident nodes: it must."""
    weak_nodes = np.array([0.3, 0.3, 0.3, 0.95])  # the last node hidden: not counted
    strong_nodes = np.full(4, 0.9)
    for nodes, instance, tracked in ((weak_nodes, 0.99, False), (strong_nodes, 0.2, True)):
        t = tracker(name)
        ids = []
        for f in range(8):
            pose = body(40 + 2 * f, 50)
            pose[3] = np.nan
            det = frame(f, [pose], [instance])
            det.point_scores = nodes[None].copy()
            ids.append(int(t.step(det).track_ids[0]))
        assert (max(ids) >= 0) == tracked, (nodes, instance, ids)


def test_infer_track_scores_predicted_poses_by_their_point_scores() -> None:
    """Issue 43 through ``retrack_labels`` (``infer track``): the file's point scores reach
    the tracker and its per-video normalizer. One animal has a confident centroid and weak
    nodes, the other the reverse; sleap-nn tracks the second only."""
    import sleap_io as sio

    from sleap_infer.pipeline.retrack import retrack_labels

    skeleton = sio.Skeleton(nodes=["a", "b", "c", "d"], name="s")
    video = sio.Video(
        filename="v.mp4",
        backend_metadata={"shape": [12, 128, 128, 1], "fps": 30.0, "grayscale": True},
        open_backend=False,
    )
    frames = []
    for f in range(12):
        insts = [
            sio.PredictedInstance.from_numpy(
                body(10 + 2 * f, y), skeleton=skeleton, point_scores=np.full(4, nodes), score=inst
            )
            for y, nodes, inst in ((20.0, 0.3, 0.99), (80.0, 0.9, 0.2))
        ]
        frames.append(sio.LabeledFrame(video=video, frame_idx=f, instances=insts))
    labels = sio.Labels(labeled_frames=frames, videos=[video], skeletons=[skeleton])
    retrack_labels(labels, TrackingOptions(tracker="bytetrack"))
    weak, strong = zip(*((i.track for i in lf.instances) for lf in labels.labeled_frames))
    assert all(t is None for t in weak)
    assert all(t is not None for t in strong)


@pytest.mark.parametrize("name", ["bytetrack", "botsort"])
def test_bytetrack_and_botsort_fuse_scores_unless_told_not_to(name: str) -> None:
    """Issue 43: ``fuse_score`` is False among the MOTParams class defaults
    (``core/mot_param.py``) but True in ByteTrack's and BoT-SORT's presets, which is what
    sleap-nn 0.3.5 runs (its provenance records ``fuse_score: true`` for bytetrack)."""
    assert tracker(name).fuse_score is True
    assert tracker(name, mot_param=("fuse_score=false",)).fuse_score is False
