"""Identity linking (``--link-tracklets``): broken tracks re-joined by position, animals
seen together never merged, and with ``--max-tracks N`` every fragment given to one of N."""

from __future__ import annotations

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import UsageError
from sleap_infer.pipeline.retrack import retrack_labels
from sleap_infer.tracking.common.calibration import calibrate_geometry, frame_steps, frame_stride
from sleap_infer.tracking.linking.inputs import BYTES_PER_DETECTION, LinkInput, pose_scores
from sleap_infer.tracking.linking.link import link_tracks
from sleap_infer.tracking.options import TrackingOptions

SHAPE = np.array([[0.0, 0.0], [20.0, 0.0], [10.0, 8.0]])


def _pose(x: float, y: float) -> np.ndarray:
    return SHAPE + np.array([x, y])


def _input(frames: list[list[tuple[np.ndarray, int]]], start: int = 0) -> LinkInput:
    """One entry per frame: ``(pose, track id)`` of each detection."""
    inp = LinkInput()
    for f, dets in enumerate(frames, start=start):
        pts = np.array([p for p, _ in dets]).reshape(len(dets), len(SHAPE), 2)
        ids = np.array([t for _, t in dets], np.int64)
        inp.add_frame(f, pts, np.full(pts.shape[:2], 0.9), np.full(len(dets), 0.9), ids)
    return inp


def _walk(n: int, x0: float, y: float, speed: float = 2.0) -> list[np.ndarray]:
    return [_pose(x0 + speed * t, y) for t in range(n)]


def test_a_broken_track_is_joined_back_onto_the_earlier_id() -> None:
    """One animal; the tracker lost it for 5 frames and gave it a new id after."""
    path = _walk(60, 10.0, 50.0)
    frames = [[(p, 0)] for p in path[:30]] + [[] for _ in range(5)]
    frames += [[(p, 7)] for p in path[35:]]
    new, result = link_tracks(_input(frames))
    assert set(new.tolist()) == {0}
    assert (result.identities_before, result.identities, result.merges) == (2, 1, 1)


def test_a_jump_past_the_spatial_gate_is_not_joined() -> None:
    """After the gap the new id starts far from where the old one ended: two animals."""
    path = _walk(60, 10.0, 50.0)
    frames = [[(p, 0)] for p in path[:30]] + [[] for _ in range(5)]
    frames += [[(p + np.array([900.0, 700.0]), 1)] for p in path[35:]]
    new, _ = link_tracks(_input(frames))
    assert set(new.tolist()) == {0, 1}


def test_two_tracks_seen_together_are_never_merged_even_when_one_ends_near_the_other() -> None:
    a, b = _walk(40, 10.0, 50.0), _walk(40, 10.0, 90.0)
    frames = [[(a[t], 0), (b[t], 1)] for t in range(20)] + [[(a[t], 0)] for t in range(20, 40)]
    new, result = link_tracks(_input(frames))
    np.testing.assert_array_equal(new, _input(frames).arrays()[2])
    assert result.merges == 0


def test_two_candidates_for_one_end_are_ambiguous_and_left_apart() -> None:
    """Two new ids start right where one ended: position alone cannot choose."""
    a = _walk(30, 10.0, 50.0)
    frames = [[(p, 0)] for p in a]
    frames += [[] for _ in range(3)]
    frames += [[(a[-1] + [2.0 * t, -6.0], 1), (a[-1] + [2.0 * t, 6.0], 2)] for t in range(30)]
    new, result = link_tracks(_input(frames))
    assert result.merges == 0 and set(new.tolist()) == {0, 1, 2}


def test_a_closed_set_of_two_assigns_every_fragment_to_its_animal() -> None:
    """Two animals far apart, each track cut into pieces under fresh ids, pieces of both
    overlapping in time (so gap links alone cannot finish): N=2 leaves two ids, each
    holding exactly one animal's detections."""
    rng = np.random.default_rng(3)
    a, b = _walk(120, 10.0, 40.0, 1.0), _walk(120, 10.0, 400.0, 1.0)
    ids = {0: 0, 1: 1}
    frames, truth, nxt = [], [], 2
    for t in range(120):
        row = []
        for animal, path in ((0, a), (1, b)):
            if rng.random() < 0.04:
                ids[animal], nxt = nxt, nxt + 1
            if rng.random() < 0.1:
                continue
            row.append((path[t], ids[animal]))
            truth.append(animal)
        frames.append(row)
    inp = _input(frames)
    assert len(set(inp.arrays()[2].tolist())) > 4
    new, result = link_tracks(inp, max_tracks=2)
    assert len(set(new.tolist()) - {-1}) == 2
    truth = np.array(truth)
    for animal in (0, 1):
        assert len(set(new[truth == animal].tolist())) == 1
    assert new[truth == 0][0] != new[truth == 1][0]
    assert result.identities == 2


def test_a_closed_set_untracks_a_stray_that_co_occurs_with_every_anchor() -> None:
    a, b = _walk(40, 10.0, 40.0), _walk(40, 10.0, 300.0)
    frames = [[(a[t], 0), (b[t], 1)] for t in range(40)]
    for t in range(10, 20):
        frames[t].append((_pose(600.0, 600.0), 2))
    new, result = link_tracks(_input(frames), max_tracks=2)
    assert set(new.tolist()) == {0, 1, -1}
    assert result.untracked == 10


def test_untracked_detections_stay_untracked_and_nothing_tracked_is_a_no_op() -> None:
    frames = [[(p, -1)] for p in _walk(10, 10.0, 50.0)]
    new, result = link_tracks(_input(frames), max_tracks=1)
    assert set(new.tolist()) == {-1} and result.identities_before == 0


def test_the_calibration_counts_steps_of_the_video_s_stride() -> None:
    assert frame_stride(np.array([0, 3, 6, 9, 15])) == (3, True)
    assert frame_stride(np.array([0, 1, 3, 6, 10])) == (1, False)
    np.testing.assert_array_equal(frame_steps(np.array([0, 3, 6, 12]), "frames", 3), [0, 1, 2, 4])
    np.testing.assert_array_equal(frame_steps(np.array([0, 3, 6, 12]), "steps", 3), [0, 1, 2, 3])
    # one animal, 20 frames of 2 px a step: the motion is measured, the body is its box
    path = np.array([[2.0 * t + 5, 5.0] for t in range(20)])
    geo = calibrate_geometry(
        np.arange(20),
        np.arange(20),
        path,
        np.concatenate([path - 5, path + 5], axis=1),
        np.ones(20, bool),
    )
    assert geo.time_base == "frames" and geo.body_size == pytest.approx(np.hypot(10, 10))
    assert geo.step_p95 == pytest.approx(2.0)


def test_pose_scores_follow_sleap_nn_s_auto_mode() -> None:
    pts = np.array([[[0.0, 0.0], [np.nan, np.nan]], [[1.0, 1.0], [2.0, 2.0]]])
    ps = np.array([[0.4, 1.0], [0.0, 0.0]])  # invisible node ignored; all-zero -> instance
    np.testing.assert_allclose(pose_scores(pts, ps, np.array([0.7, 0.6])), [0.4, 0.6])
    np.testing.assert_allclose(pose_scores(pts, None, np.array([0.7, 0.6])), [1.0, 1.0])
    assert BYTES_PER_DETECTION == 34


def test_linking_with_post_clean_is_refused_in_one_line() -> None:
    with pytest.raises(UsageError, match="^--link-tracklets with --tracking-clean"):
        TrackingOptions(link_tracklets=True, tracking_clean_instance_count=1)


def _fragmented_scene() -> list[list[tuple[np.ndarray, int]]]:
    """Three animals, 150 frames: each loses its id to a fresh one after short gaps, and
    two pass close by each other; per frame ``(xyxy box, track id)``."""
    rng = np.random.default_rng(11)
    frames: list[list[tuple[np.ndarray, int]]] = []
    ids, nxt = {0: 0, 1: 1, 2: 2}, 3
    for t in range(150):
        row = []
        for animal, (x0, y) in enumerate(((10.0, 40.0), (300.0, 60.0), (10.0, 300.0))):
            if rng.random() < 0.05:
                continue  # missed this frame
            if rng.random() < 0.03:
                ids[animal], nxt = nxt, nxt + 1
            x = x0 + (2.0 if animal != 1 else -1.5) * t
            box = np.array([x, y, x + 20.0, y + 12.0]) + rng.integers(0, 3, 4) * 0.5
            row.append((box, ids[animal]))
        frames.append(row)
    return frames


def _as_two_corner_poses(frames: list[list[tuple[np.ndarray, int]]]) -> LinkInput:
    inp = LinkInput()
    for f, dets in enumerate(frames):
        pts = np.array([b.reshape(2, 2) for b, _ in dets]).reshape(len(dets), 2, 2)
        ids = np.array([t for _, t in dets], np.int64)
        inp.add_frame(f, pts, np.full((len(dets), 2), 0.8), np.full(len(dets), 0.3), ids)
    return inp


def _as_masks(frames: list[list[tuple[np.ndarray, int]]]) -> LinkInput:
    inp = LinkInput()
    for f, dets in enumerate(frames):
        boxes = np.array([b for b, _ in dets]).reshape(len(dets), 4)
        ids = np.array([t for _, t in dets], np.int64)
        inp.add_masks(f, boxes, np.full(len(dets), 0.8), ids)
    return inp


@pytest.mark.parametrize("max_tracks", [None, 3])
def test_masks_link_as_their_boxes_exactly_as_poses_with_those_corners(
    max_tracks: int | None,
) -> None:
    """A mask is a box with an extent, never a single node: linking masks gives the ids
    that linking two-node poses on the same corners gives (the port checked against
    sleap-nn), and it does join the fragments."""
    frames = _fragmented_scene()
    masks, poses = _as_masks(frames), _as_two_corner_poses(frames)
    a, ra = link_tracks(masks, max_tracks)
    b, rb = link_tracks(poses, max_tracks)
    np.testing.assert_array_equal(a, b)
    assert ra == rb and ra.merges > 0
    assert ra.identities < ra.identities_before


def test_a_mask_box_keeps_its_float64_bits_and_missing_scores_count_as_one() -> None:
    inp = LinkInput()
    box = np.array([[0.1 + 1 / 3, 2.0, 7.7, 9.3], [np.nan] * 4])
    inp.add_masks(4, box, np.array([np.nan, 1.7]), np.array([0, -1]))
    _, _, _, got, score, n_visible = inp.arrays()
    assert got.dtype == np.float64 and got[0].tolist() == box[0].tolist()
    assert np.isnan(got[1]).all()
    assert score.tolist() == [1.0, 1.0] and n_visible.tolist() == [1, 0]
    single, sized = inp.single_and_sized(n_visible)
    assert single.tolist() == [False, False] and sized.tolist() == [True, False]


def test_one_video_links_poses_or_masks_never_both() -> None:
    poses = _as_two_corner_poses(_fragmented_scene()[:3])
    with pytest.raises(ValueError, match="poses or masks"):
        poses.add_masks(9, np.zeros((1, 4)), np.ones(1), np.zeros(1))
    masks = _as_masks(_fragmented_scene()[:3])
    with pytest.raises(ValueError, match="poses or masks"):
        masks.add_frame(9, np.zeros((1, 2, 2)), None, np.ones(1), np.zeros(1))


def _broken_labels() -> sio.Labels:
    """One animal walking; frames 20-24 missing, so the tracker starts a second track."""
    skeleton = sio.Skeleton(nodes=["a", "b", "c"], name="s")
    video = sio.Video(
        filename="v.mp4",
        backend_metadata={"shape": [60, 64, 64, 1], "fps": 30.0, "grayscale": True},
        open_backend=False,
    )
    frames = []
    for f, pose in enumerate(_walk(60, 10.0, 50.0)):
        insts = []
        if not 20 <= f < 25:
            insts = [sio.PredictedInstance.from_numpy(pose, skeleton=skeleton, score=0.9)]
        frames.append(sio.LabeledFrame(video=video, frame_idx=f, instances=insts))
    return sio.Labels(labeled_frames=frames, videos=[video], skeletons=[skeleton])


@pytest.mark.parametrize(
    "kw",
    [{"tracker": t, "track_buffer": 2} for t in ("bytetrack", "infer_bytetrack")]
    + [{"tracker": "classic"}],
    ids=str,
)
def test_retracking_with_linking_joins_the_broken_track(kw: dict) -> None:
    labels = _broken_labels()
    retrack_labels(labels, TrackingOptions(**kw))
    names = {i.track.name for lf in labels for i in lf.instances if i.track is not None}
    assert len(names) == 2  # the tracker alone loses it
    linked = _broken_labels()
    retrack_labels(linked, TrackingOptions(**kw, link_tracklets=True))
    tracks = [i.track for lf in linked for i in lf.instances]
    assert len({t.name for t in tracks if t is not None}) == 1  # (bytetrack: min_hits)
    assert sum(t is not None for t in tracks) >= 50
    assert [t.name for t in linked.tracks] == ["track_0"]  # the merged-away one is gone


def test_after_linking_the_next_video_s_names_follow_the_last_kept_id() -> None:
    """sleap-nn lists only the identities linking kept, and names the next video's
    tracks from the highest kept id + 1: two videos, each broken once, give track_0 for
    the first and track_1 (not track_2) for the second."""
    first, second = _broken_labels(), _broken_labels()
    video = sio.Video(
        filename="w.mp4",
        backend_metadata={"shape": [60, 64, 64, 1], "fps": 30.0, "grayscale": True},
        open_backend=False,
    )
    for lf in second.labeled_frames:
        lf.video = video
    labels = sio.Labels(
        labeled_frames=[*first.labeled_frames, *second.labeled_frames],
        videos=[first.videos[0], video],
        skeletons=first.skeletons,
    )
    retrack_labels(labels, TrackingOptions(link_tracklets=True))
    by_video = {
        v.filename: {i.track.name for lf in labels for i in lf.instances if lf.video is v}
        for v in labels.videos
    }
    assert by_video == {"v.mp4": {"track_0"}, "w.mp4": {"track_1"}}
    assert [t.name for t in labels.tracks] == ["track_0", "track_1"]


def _appearance_scene(swap: bool, jump: bool, vectors: bool = True) -> tuple[LinkInput, list]:
    """Three animals, 500 frames, each with its own re-ID vector (plus noise).

    ``swap``: animals 0 and 1 meet at frame 250 and the tracker swaps their ids after.
    ``jump``: animal 2 vanishes for frames 200-299 and comes back 1300 px away, new id.
    Returns the input and each detection's animal.
    """
    rng = np.random.default_rng(7)
    identity = np.eye(8)[:3] * 3.0
    inp, truth = LinkInput(), []
    for f in range(500):
        pts, ids, vecs = [], [], []
        x = 3.0 + abs(f - 250) * 1.2  # 0 and 1 approach, overlap around 250, part again
        where = {0: (300.0 - x, 200.0), 1: (300.0 + x, 200.0), 2: (100.0 + f, 700.0)}
        if jump and f >= 300:
            where[2] = (100.0 + f, 2000.0)
        for animal in range(3):
            if jump and animal == 2 and 200 <= f < 300:
                continue
            tid = animal
            if swap and f > 250 and animal < 2:
                tid = 1 - animal
            if jump and animal == 2 and f >= 300:
                tid = 3
            pts.append(_pose(*where[animal]))
            ids.append(tid)
            vecs.append(identity[animal] + rng.normal(0, 0.6, 8))
            truth.append((animal, f))
        p = np.array(pts)
        inp.add_frame(
            f,
            p,
            np.full(p.shape[:2], 0.9),
            np.full(len(p), 0.9),
            np.array(ids),
            np.array(vecs, np.float32) if vectors else None,
        )
    return inp, truth


def test_a_swap_at_a_crossing_is_corrected_by_appearance() -> None:
    """0 and 1 overlap around frame 250 (the ambiguity event) and the tracker swaps their
    ids there: after the event, appearance puts them back."""
    inp, truth = _appearance_scene(swap=True, jump=False)
    new, result = link_tracks(inp)
    assert result.appearance and result.swaps == 1
    animal, frame = np.array(truth).T
    outside = np.abs(frame - 250) > 10  # inside the event the swap stays, as in sleap-nn
    for a in range(3):
        assert set(new[(animal == a) & outside].tolist()) == {a}
    unlinked, _ = link_tracks(_appearance_scene(swap=True, jump=False, vectors=False)[0])
    assert set(unlinked[(animal == 0) & outside].tolist()) == {0, 1}


def test_a_long_absence_past_the_gate_is_linked_by_appearance_only() -> None:
    inp, truth = _appearance_scene(swap=False, jump=True)
    new, result = link_tracks(inp)
    assert result.appearance and result.merges == 1
    animal = np.array(truth)[:, 0]
    assert set(new[animal == 2].tolist()) == {2}
    blind, _ = link_tracks(_appearance_scene(swap=False, jump=True, vectors=False)[0])
    assert set(blind[animal == 2].tolist()) == {2, 3}  # by position: too far


def _broken_mask_labels() -> sio.Labels:
    """One animal walking as a mask (its pose linked to it); frames 20-24 missing."""
    labels = _broken_labels()
    for lf in labels:
        masks = []
        for inst in lf.instances:
            grid = np.zeros((80, 160), bool)
            x0, y0 = (int(v) for v in np.nanmin(inst.numpy(), axis=0))
            grid[y0 - 4 : y0 + 12, x0 - 4 : x0 + 24] = True
            mask = sio.PredictedSegmentationMask.from_numpy(grid, score=0.9)
            mask.instance = inst
            masks.append(mask)
        lf.masks = masks
    return labels


@pytest.mark.parametrize(
    "kw",
    [
        {"tracker": "sort", "track_buffer": 2},
        {"tracker": "bytetrack", "track_buffer": 2},
        {"tracker": "infer_bytetrack", "track_buffer": 2},
    ],
    ids=str,
)
def test_retracking_masks_with_linking_joins_the_broken_track_and_poses_inherit(
    kw: dict,
) -> None:
    labels = _broken_mask_labels()
    stats = retrack_labels(labels, TrackingOptions(features="masks", **kw))
    assert stats.carrier == "masks"
    named = {m.track.name for lf in labels for m in lf.masks if m.track is not None}
    assert len(named) == 2  # the tracker alone
    linked = _broken_mask_labels()
    retrack_labels(linked, TrackingOptions(features="masks", link_tracklets=True, **kw))
    masks = [m for lf in linked for m in lf.masks]
    tracked = [m for m in masks if m.track is not None]
    assert len(masks) == 55 and len(tracked) >= 50  # (bytetrack: a tentative track's misses)
    assert len({m.track.name for m in tracked}) == 1
    assert [t.name for t in linked.tracks] == [tracked[0].track.name]
    for lf in linked:
        for inst in lf.instances:  # each pose took its mask's (linked) track
            assert inst.track is lf.masks[0].track
