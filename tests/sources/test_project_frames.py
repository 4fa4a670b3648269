"""Frame selection over SLEAP projects: the real fixtures and a hand-made two-video project."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import UsageError, VideoError
from sleap_infer.sources.project_frames import ProjectSelection, select_project_frames

FLAGS = ("only_labeled", "only_suggested", "exclude_user_labeled", "only_predicted")


def _skeleton() -> sio.Skeleton:
    return sio.Skeleton(["a", "b"])


def _user(skeleton: sio.Skeleton) -> sio.Instance:
    return sio.Instance.from_numpy(np.array([[1.0, 2.0], [3.0, 4.0]]), skeleton=skeleton)


def _predicted(skeleton: sio.Skeleton) -> sio.PredictedInstance:
    points = np.array([[5.0, 6.0], [7.0, 8.0]])
    return sio.PredictedInstance.from_numpy(points, skeleton=skeleton, score=0.5)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Video 0: user 2, 5 (5 also predicted), predicted-only 7, empty 9; suggestions 2, 3, 9.
    Video 1: user 1, predicted-only 4; suggestion 1, 6. Media never exists: never opened."""
    skeleton = _skeleton()
    first = sio.Video(filename=str(tmp_path / "first.mp4"), open_backend=False)
    second = sio.Video(filename=str(tmp_path / "second.mp4"), open_backend=False)
    content = {
        (first, 2): [_user(skeleton)],
        (first, 5): [_user(skeleton), _predicted(skeleton)],
        (first, 7): [_predicted(skeleton)],
        (first, 9): [],
        (second, 1): [_user(skeleton)],
        (second, 4): [_predicted(skeleton)],
    }
    frames = [
        sio.LabeledFrame(video=video, frame_idx=k, instances=instances)
        for (video, k), instances in content.items()
    ]
    suggestions = [
        sio.SuggestionFrame(video=video, frame_idx=k)
        for video, k in ((first, 2), (first, 3), (first, 9), (second, 1), (second, 6))
    ]
    labels = sio.Labels(
        labeled_frames=frames, videos=[first, second], skeletons=[skeleton], suggestions=suggestions
    )
    path = tmp_path / "two.slp"
    sio.save_slp(labels, str(path))
    return path


@pytest.mark.parametrize(
    ("video_index", "flag", "n_frames", "want"),
    [
        (None, "only_labeled", 12, [2, 5]),
        (0, "only_suggested", 12, [3, 9]),  # 2 is labeled; video 1's suggestions never count
        (None, "exclude_user_labeled", 12, [0, 1, 3, 4, 6, 7, 8, 9, 10, 11]),
        (0, "only_predicted", 12, [5, 7]),
        (1, "only_labeled", 8, [1]),
        (1, "only_suggested", 8, [6]),
        (1, "exclude_user_labeled", 6, [0, 2, 3, 4, 5]),
        (1, "only_predicted", 8, [4]),
        (0, "only_predicted", 6, [5]),  # annotations past the video's end are dropped
        (0, "only_labeled", None, [2, 5]),  # no count needed to pick annotated frames
    ],
)
def test_each_flag_on_each_video(
    project: Path, video_index: int | None, flag: str, n_frames: int | None, want: list[int]
) -> None:
    selection = ProjectSelection(video_index, **{flag: True})
    assert selection.active and selection.filtered
    got = select_project_frames(project, selection, n_frames=n_frames)
    assert got == (video_index or 0, want)


def test_no_flag_means_every_frame_of_the_video(project: Path) -> None:
    assert not ProjectSelection().active
    assert select_project_frames(project, ProjectSelection()) == (0, None)
    picked = ProjectSelection(video_index=1)
    assert picked.active and not picked.filtered
    assert select_project_frames(project, picked) == (1, None)


def test_first_flag_wins_as_in_sleap_nn(project: Path) -> None:
    everything = ProjectSelection(only_labeled=True, only_suggested=True, only_predicted=True)
    assert select_project_frames(project, everything, 12) == (0, [2, 5])
    later = ProjectSelection(only_suggested=True, exclude_user_labeled=True, only_predicted=True)
    assert select_project_frames(project, later, 12) == (0, [3, 9])
    last = ProjectSelection(exclude_user_labeled=True, only_predicted=True)
    assert select_project_frames(project, last, 4) == (0, [0, 1, 3])


def test_errors_are_one_line_with_our_flag_names(project: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError) as clash:
        ProjectSelection(only_labeled=True, exclude_user_labeled=True)
    assert str(clash.value) == (
        "--only-labeled-frames and --exclude-user-labeled are mutually exclusive"
    )
    with pytest.raises(UsageError, match=r"^--video-index must be 0 or more, not -1$"):
        ProjectSelection(video_index=-1)
    with pytest.raises(UsageError) as far:
        select_project_frames(project, ProjectSelection(video_index=2))
    assert str(far.value) == (
        f"{project}: --video-index 2 is out of range: it has 2 videos (indices 0-1)"
    )
    with pytest.raises(VideoError, match="frame count unknown.*--exclude-user-labeled"):
        select_project_frames(project, ProjectSelection(exclude_user_labeled=True))
    junk = tmp_path / "junk.slp"
    junk.write_text("not hdf5")
    with pytest.raises(VideoError, match="not a readable SLEAP project"):
        select_project_frames(junk, ProjectSelection(only_labeled=True))
    for error in (clash.value, far.value):
        assert "\n" not in str(error)


def _expected(labels: sio.Labels, flag: str) -> list[int]:
    """Independent of the module: straight from the instances' types; embedded videos only."""
    video = labels.videos[0]
    frames = [lf for lf in labels.labeled_frames if lf.video is video]
    user = {lf.frame_idx for lf in frames if any(type(i) is sio.Instance for i in lf.instances)}
    predicted = {
        lf.frame_idx for lf in frames if any(type(i) is sio.PredictedInstance for i in lf.instances)
    }
    suggested = {s.frame_idx for s in labels.suggestions if s.video is video}
    return sorted(
        {
            "only_labeled": user,
            "only_suggested": suggested - user,
            "exclude_user_labeled": {lf.frame_idx for lf in frames} - user,
            "only_predicted": predicted,
        }[flag]
    )


@pytest.mark.parametrize("name", ["minimal_instance.pkg.slp", "synthetic_multi.pkg.slp"])
@pytest.mark.parametrize("flag", FLAGS)
def test_packages_filter_their_labeled_frames(shared: Path, name: str, flag: str) -> None:
    path = shared / "videos" / name
    labels = sio.load_slp(str(path), open_videos=False)
    got = select_project_frames(path, ProjectSelection(**{flag: True}))
    assert got == (0, _expected(labels, flag))


def test_fixture_contents_pin_the_expectations(shared: Path) -> None:
    videos = shared / "videos"
    # Both packages hold user instances only, no suggestions: labeled is every stored frame.
    labeled = ProjectSelection(only_labeled=True)
    assert select_project_frames(videos / "minimal_instance.pkg.slp", labeled) == (0, [0])
    assert select_project_frames(videos / "synthetic_multi.pkg.slp", labeled) == (
        0,
        list(range(24)),
    )
    robot = videos / "small_robot_minimal.slp"
    labels = sio.load_slp(str(robot), open_videos=False)
    user = sorted(lf.frame_idx for lf in labels.labeled_frames if lf.user_instances)
    assert user == [0, 79]
    assert select_project_frames(robot, labeled) == (0, user)
    excluded = select_project_frames(robot, ProjectSelection(exclude_user_labeled=True), 100)
    assert excluded == (0, [k for k in range(100) if k not in user])
    assert select_project_frames(robot, ProjectSelection(only_suggested=True)) == (0, [])
    assert select_project_frames(robot, ProjectSelection(only_predicted=True)) == (0, [])
    with pytest.raises(UsageError, match=r"it has 1 video \(indices 0-0\)$"):
        select_project_frames(robot, ProjectSelection(video_index=1))
