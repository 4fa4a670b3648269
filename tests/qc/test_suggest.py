"""Frames to label next: the ranking (low scores, events, spread) and the project copy."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import OutputExistsError, UsageError
from sleap_infer.qc.records import Event, Suggestion, VideoData
from sleap_infer.qc.suggest import (
    OURS_ATTR,
    exclusion_radius,
    frame_badness,
    match_video,
    suggest_frames,
    write_suggestions,
)

from conftest import SHARED, counter_frames, write_video


def video_data(
    n_frames: int = 300, n_animals: int = 2, n_nodes: int = 3, score: float = 0.95, seed: int = 0
) -> VideoData:
    """A clean tracked video: every animal present, every point scored ``score`` (+- 0.01)."""
    rng = np.random.default_rng(seed)
    points = rng.uniform(20, 200, (n_frames, n_animals, n_nodes, 2))
    scores = np.clip(score + rng.uniform(-0.01, 0.01, (n_frames, n_animals, n_nodes)), 0, 1)
    return VideoData(
        video="/data/session1/cam0.mp4",
        video_index=0,
        frames=np.arange(n_frames, dtype=np.int64),
        n_frames=n_frames,
        tracked=True,
        track_names=[f"track_{k}" for k in range(n_animals)],
        node_names=[f"n{i}" for i in range(n_nodes)],
        edges=[(i, i + 1) for i in range(n_nodes - 1)],
        points=points,
        point_scores=scores,
        instance_scores=scores.mean(axis=-1),
        present=np.ones((n_frames, n_animals), dtype=bool),
    )


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------
# Ranking


def test_low_scores_come_first() -> None:
    data = video_data()
    for frame, value in ((40, 0.2), (150, 0.3), (260, 0.1)):
        data.point_scores[frame, 1] = value
    picks = suggest_frames(data, [], 3)
    assert [p.frame for p in picks] == [260, 40, 150]
    assert all(p.reason == "low_confidence" for p in picks)
    assert picks[0].score >= picks[1].score >= picks[2].score


def test_missing_points_and_missing_animals_count_as_doubt() -> None:
    data = video_data()
    data.points[70, 0, :2] = np.nan
    data.point_scores[70, 0, :2] = 0.0
    data.present[200, 1] = False
    data.points[200, 1] = np.nan
    data.point_scores[200, 1] = 0.0
    badness, reason = frame_badness(data)
    assert reason[70] == "missing_points" and badness[70] > 0.6
    assert reason[200] == "missing_instances" and badness[200] == pytest.approx(0.5)
    assert {p.frame for p in suggest_frames(data, [], 2)} == {70, 200}


def test_events_rank_frames_the_scores_call_good() -> None:
    data = video_data()
    data.point_scores[10] = 0.6  # mildly doubtful
    swap = Event("identity_swap", 120, 120, ["track_0", "track_1"], 0.9)
    jump = Event("jump", 220, 220, ["track_1"], 0.8, nodes=["n0"])
    picks = suggest_frames(data, [swap, jump], 3)
    assert [(p.frame, p.reason) for p in picks[:2]] == [(120, "identity_swap"), (220, "jump")]
    assert picks[2].frame == 10


def test_picks_spread_instead_of_crowding_one_stretch() -> None:
    data = video_data(n_frames=1000)
    data.point_scores[400:460] = 0.1  # one long bad stretch
    data.point_scores[800, 0] = 0.5  # and one lone doubtful frame
    stretch = Event("low_confidence", 400, 459, ["track_0", "track_1"], 1.0)
    n = 10
    picks = suggest_frames(data, [stretch], n)
    frames = np.array(sorted(p.frame for p in picks))
    assert len(frames) == n
    assert np.diff(frames).min() > exclusion_radius(data.frames, n)
    in_stretch = ((frames >= 400) & (frames < 460)).sum()
    assert 1 <= in_stretch <= 3, frames  # a few picks there, not all ten
    assert 800 in frames  # the lone frame is not crowded out
    assert frames.min() < 250 and frames.max() > 850  # the rest spread over the video


def test_a_clean_video_still_gets_frames_spread_over_it() -> None:
    data = video_data(n_frames=400)
    picks = suggest_frames(data, [], 8)
    frames = np.array(sorted(p.frame for p in picks))
    assert len(frames) == 8
    assert np.histogram(frames, bins=4, range=(0, 400))[0].min() >= 1
    assert sum(p.reason == "diversity" for p in picks) >= 6


def test_ranking_is_deterministic_and_ties_go_to_the_earlier_frame() -> None:
    data = video_data()
    data.point_scores[:] = 0.9
    data.point_scores[[50, 150, 250]] = 0.2
    first = suggest_frames(data, [], 5)
    assert first == suggest_frames(data, [], 5)
    assert [p.frame for p in first[:3]] == [50, 150, 250]


def test_bad_frames_are_never_suggested_and_n_is_checked() -> None:
    data = video_data(n_frames=50)
    data.point_scores[20] = 0.0
    data.bad_frames = [20]
    assert 20 not in {p.frame for p in suggest_frames(data, [], 10)}
    assert suggest_frames(data, [], 0) == []
    with pytest.raises(UsageError, match="--suggest"):
        suggest_frames(data, [], -1)


def test_sparse_frame_numbers_are_video_frames() -> None:
    data = video_data(n_frames=30)
    data.frames = np.arange(30, dtype=np.int64) * 10 + 5  # every 10th frame, from 5
    data.point_scores[7] = 0.1  # row 7 = video frame 75
    event = Event("jump", 255, 255, ["track_0"], 1.0)  # row 25
    picks = suggest_frames(data, [event], 2)
    assert [p.frame for p in picks] == [255, 75]


def test_a_file_without_instances_or_with_every_frame_clean_says_diversity() -> None:
    empty = video_data(n_frames=60, n_animals=0)
    picks = suggest_frames(empty, [], 4)
    assert len(picks) == 4 and {p.reason for p in picks} == {"diversity"}
    clean = video_data(n_frames=60, score=1.0)
    clean.point_scores[:] = 1.0
    picks = suggest_frames(clean, [], 30)  # more than the window leaves room for
    assert 10 <= len(picks) < 30 and {p.reason for p in picks} == {"diversity"}


def test_ten_thousand_frames_of_ten_animals_rank_in_seconds() -> None:
    data = video_data(n_frames=10_000, n_animals=10, n_nodes=8)
    start = time.perf_counter()
    picks = suggest_frames(data, [Event("jump", 5000, 5000, ["track_3"], 1.0)], 100)
    assert time.perf_counter() - start < 3.0  # generous: the CPU is shared with other runs
    assert len(picks) == 100 and picks[0].frame == 5000


# ---------------------------------------------------------------------------------------
# Writing into a copy of the project


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A small SLEAP project: one labelled frame of one video, one suggestion already."""
    (tmp_path / "videos").mkdir()
    video_path = write_video(tmp_path / "videos" / "cam0.mp4", counter_frames(30))
    skeleton = sio.Skeleton(["a", "b"])
    video = sio.Video.from_filename(str(video_path))
    inst = sio.Instance.from_numpy(np.array([[1.0, 2.0], [3.0, 4.0]]), skeleton=skeleton)
    labels = sio.Labels(
        labeled_frames=[sio.LabeledFrame(video=video, frame_idx=3, instances=[inst])],
        videos=[video],
        skeletons=[skeleton],
        suggestions=[sio.SuggestionFrame(video=video, frame_idx=12)],
    )
    path = tmp_path / "project.slp"
    sio.save_slp(labels, str(path))
    video.close()
    return path


def test_suggestions_go_into_a_copy_and_the_project_is_untouched(
    project: Path, tmp_path: Path
) -> None:
    before = sha(project)
    out = tmp_path / "out" / "project.suggested.slp"
    (tmp_path / "elsewhere").mkdir()
    other = write_video(tmp_path / "elsewhere" / "cam1.mp4", counter_frames(20))
    sugg = {
        # the project's video, predicted from another folder: matched by basename
        "/mnt/lab/cam0.mp4": [Suggestion(12, "jump", 1.0), Suggestion(20, "low_confidence", 0.5)],
        str(other): [Suggestion(4, "identity_swap", 1.2), Suggestion(9, "diversity", 0.1)],
        "/mnt/lab/cam7.mp4": [],  # nothing to suggest: not added to the project
    }
    counts = write_suggestions(project, out, sugg)
    assert counts == {"added": 3, "already": 1, "videos_added": 1}
    assert sha(project) == before

    labels = sio.load_slp(str(out))
    assert len(labels.videos) == 2
    assert Path(labels.videos[0].filename).name == "cam0.mp4"
    assert labels.videos[1].filename == str(other)
    assert labels.videos[1].shape[:3] == (20, 64, 96)  # read from the file, for the GUI
    got = sorted((labels.videos.index(s.video), s.frame_idx) for s in labels.suggestions)
    assert got == [(0, 12), (0, 20), (1, 4), (1, 9)]  # 12 was there: kept, not doubled
    assert len(labels.labeled_frames) == 1 and labels[0].frame_idx == 3
    np.testing.assert_array_equal(labels[0].instances[0].numpy(), [[1, 2], [3, 4]])

    # Run again into the same output (ours): replaced without --overwrite, nothing doubled.
    assert write_suggestions(project, out, sugg)["added"] == 3
    assert len(sio.load_slp(str(out)).suggestions) == 4


def test_a_package_keeps_its_embedded_frames(tmp_path: Path) -> None:
    pkg = SHARED / "videos" / "minimal_instance.pkg.slp"
    if not pkg.is_file():
        pytest.skip(f"{pkg} not found")
    before = sha(pkg)
    out = tmp_path / "labels.suggested.pkg.slp"
    write_suggestions(pkg, out, {"centered_pair_small.mp4": [Suggestion(7, "jump", 1.0)]})
    assert sha(pkg) == before
    labels = sio.load_slp(str(out))
    assert labels[0].image.shape == (384, 384, 1)  # the embedded frame is still there
    assert [(labels.videos.index(s.video), s.frame_idx) for s in labels.suggestions] == [(1, 7)]
    with h5py.File(out, "r") as f, h5py.File(pkg, "r") as g:
        frames = [np.asarray(x).tobytes() for x in f["video0/video"][()]]
        assert frames == [np.asarray(x).tobytes() for x in g["video0/video"][()]]
        assert f.attrs[OURS_ATTR]

    # The embedded video answers to the name of the video it was taken from.
    by_source = tmp_path / "by_source.pkg.slp"
    sugg = {"/lab/centered_pair_low_quality.mp4": [Suggestion(0, "jump", 1.0)]}
    assert write_suggestions(pkg, by_source, sugg)["videos_added"] == 0
    labels = sio.load_slp(str(by_source))
    assert [(labels.videos.index(s.video), s.frame_idx) for s in labels.suggestions] == [(0, 0)]


def test_refusals_leave_every_file_as_it_was(project: Path, tmp_path: Path) -> None:
    sugg = {"cam0.mp4": [Suggestion(5, "jump", 1.0)]}
    before = sha(project)
    with pytest.raises(UsageError, match="is the project given to --into"):
        write_suggestions(project, tmp_path / "." / project.name, sugg)
    foreign = tmp_path / "notes.slp"
    foreign.write_bytes(b"not ours")
    with pytest.raises(OutputExistsError, match="not a copy written by infer qc") as err:
        write_suggestions(project, foreign, sugg)
    assert "\n" not in str(err.value)
    assert foreign.read_bytes() == b"not ours"
    another_project = tmp_path / "another.slp"
    another_project.write_bytes(project.read_bytes())
    with pytest.raises(OutputExistsError):
        write_suggestions(project, another_project, sugg)  # a SLEAP file, but not ours
    with pytest.raises(UsageError, match="no such SLEAP project"):
        write_suggestions(tmp_path / "missing.slp", tmp_path / "x.slp", sugg)
    bad = tmp_path / "bad.slp"
    bad.write_bytes(b"garbage")
    with pytest.raises(UsageError, match="not a readable SLEAP project"):
        write_suggestions(bad, tmp_path / "y.slp", sugg)
    assert not (tmp_path / "y.slp").exists()
    write_suggestions(project, foreign, sugg, overwrite=True)  # told to: replaced
    assert len(sio.load_slp(str(foreign)).suggestions) == 2
    assert sha(project) == before
    assert not list(tmp_path.glob(".*.tmp"))


def test_videos_match_by_path_then_by_a_unique_basename() -> None:
    videos = [
        sio.Video(filename="/a/cam0.mp4", open_backend=False),
        sio.Video(filename="/b/cam0.mp4", open_backend=False),
        sio.Video(filename="/b/cam1.mp4", open_backend=False),
    ]
    assert match_video(videos, "/b/cam0.mp4") == 1
    assert match_video(videos, "/c/cam1.mp4") == 2
    assert match_video(videos, "/c/cam9.mp4") is None
    with pytest.raises(UsageError, match="2 videos of the project are named cam0.mp4"):
        match_video(videos, "/c/cam0.mp4")
