"""SLEAP projects in, projects out: every video predicted, one combined file, a merged copy
with user labels untouched, outputs that refer to the project's own videos, --centroid-only."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.writers.projects import merged_path, part_path

from cli_runs import error_lines, run_cli
from conftest import fixture_model

OLD_SCORE = 0.125  # the hand-made project's stale predictions, to see which survive


def _points(x: float) -> np.ndarray:
    return np.array([[x, x + 1.0], [x + 10.0, x + 11.0]])


@pytest.fixture
def two_videos(shared: Path, tmp_path: Path) -> Path:
    """Video 0 (small_robot): user frame 3. Video 1 (centered_pair_small): user frame 10 with
    a stale prediction, prediction-only frame 20. Skeleton A-B, as the minimal models'."""
    skeleton = sio.Skeleton(["A", "B"])
    skeleton.add_edge("A", "B")
    videos = []
    for name in ("small_robot.mp4", "centered_pair_small.mp4"):
        shutil.copy(shared / "videos" / name, tmp_path / name)
        videos.append(sio.Video(filename=str(tmp_path / name), open_backend=False))

    def stale() -> sio.PredictedInstance:
        return sio.PredictedInstance.from_numpy(_points(1.0), skeleton=skeleton, score=OLD_SCORE)

    frames = [
        sio.LabeledFrame(
            video=videos[0],
            frame_idx=3,
            instances=[sio.Instance.from_numpy(_points(50.0), skeleton=skeleton)],
        ),
        sio.LabeledFrame(
            video=videos[1],
            frame_idx=10,
            instances=[sio.Instance.from_numpy(_points(60.0), skeleton=skeleton), stale()],
        ),
        sio.LabeledFrame(video=videos[1], frame_idx=20, instances=[stale()]),
    ]
    path = tmp_path / "two.slp"
    sio.save_slp(sio.Labels(labeled_frames=frames, videos=videos, skeletons=[skeleton]), str(path))
    return path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _content(path: Path) -> dict[tuple[int, int], tuple[list[np.ndarray], list[np.ndarray]]]:
    """(video index, frame) -> (user points, predicted points) of a .slp."""
    labels = sio.load_slp(str(path), open_videos=False)
    return {
        (labels.videos.index(lf.video), lf.frame_idx): (
            [i.numpy() for i in lf.user_instances],
            [i.numpy() for i in lf.predicted_instances],
        )
        for lf in labels
    }


def _scores(path: Path) -> list[float]:
    labels = sio.load_slp(str(path), open_videos=False)
    return [i.score for lf in labels for i in lf.predicted_instances]


def test_names_of_parts_and_merged_copies() -> None:
    assert part_path(Path("d/a.slp.predictions.slp"), 2) == Path("d/a.slp.video2.predictions.slp")
    assert part_path(Path("out.slp"), 0) == Path("out.video0.slp")
    assert part_path(Path("a.slp.predictions.csv"), 1) == Path("a.slp.video1.predictions.csv")
    assert merged_path(Path("d/a.pkg.slp.predictions.slp")) == Path("d/a.pkg.slp.merged.slp")
    assert merged_path(Path("out.slp")) == Path("out.merged.slp")


def test_every_video_predicted_combined_and_merged(
    two_videos: Path, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _digest(two_videos)
    model = fixture_model(shared, "centroid")
    args = ("predict", two_videos, "-m", model, "--only-labeled-frames", "--merge-into-project")
    folder = two_videos.parent
    code, err = run_cli(capsys, *args, "--progress", "none", "--summary-json", folder / "run.json")
    assert code == 0, err
    assert "two.slp [video 1]" in err  # the summary tells a project's videos apart
    summary = json.loads((folder / "run.json").read_text())
    assert [v["video_index"] for v in summary["videos"]] == [0, 1]
    written = [Path(step["written"]).name for step in summary["projects"]]
    assert written == ["two.slp.predictions.slp", "two.slp.merged.slp"]

    parts = [folder / f"two.slp.video{i}.predictions.slp" for i in (0, 1)]
    combined = folder / "two.slp.predictions.slp"
    merged = folder / "two.slp.merged.slp"
    # Each video's own output, then one file with both, videos in project order.
    assert [sorted(_content(p)) for p in parts] == [[(0, 3)], [(0, 10)]]
    both = _content(combined)
    assert sorted(both) == [(0, 3), (1, 10)]
    for i, part in enumerate(parts):
        ((frame, (users, preds)),) = _content(part).items()
        assert users == [] and len(preds) > 0
        np.testing.assert_array_equal(np.stack(both[(i, frame[1])][1]), np.stack(preds))
    videos = sio.load_slp(str(combined), open_videos=False).videos
    assert [Path(v.filename).name for v in videos] == ["small_robot.mp4", "centered_pair_small.mp4"]

    # The merged copy: user instances exactly as they were, the labeled frames' stale
    # prediction replaced by the new ones, the unpredicted frame 20 keeps its own.
    project, copy = _content(two_videos), _content(merged)
    assert sorted(copy) == [(0, 3), (1, 10), (1, 20)]
    for key in project:
        assert len(copy[key][0]) == len(project[key][0])
        for a, b in zip(copy[key][0], project[key][0], strict=True):
            np.testing.assert_array_equal(a, b)
    for key in [(0, 3), (1, 10)]:
        np.testing.assert_array_equal(np.stack(copy[key][1]), np.stack(both[key][1]))
    np.testing.assert_array_equal(copy[(1, 20)][1][0], _points(1.0))
    assert _scores(merged).count(OLD_SCORE) == 1
    assert _digest(two_videos) == before  # the input project is never written


def test_one_video_by_index_merges_into_that_video(
    two_videos: Path, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = fixture_model(shared, "centroid")
    args = ("predict", two_videos, "-m", model, "--only-labeled-frames", "--video-index", "1")
    code, err = run_cli(capsys, *args, "--merge-into-project", "-q")
    assert code == 0, err
    folder = two_videos.parent
    assert not (folder / "two.slp.predictions.slp").exists()  # one video: nothing to combine
    copy = _content(folder / "two.slp.video1.merged.slp")
    assert len(copy[(0, 3)][1]) == 0  # video 0 was not predicted: untouched
    assert all(s != OLD_SCORE for s in _scores(folder / "two.slp.video1.predictions.slp"))
    assert _scores(folder / "two.slp.video1.merged.slp").count(OLD_SCORE) == 1  # frame 20's


def test_shards_assemble_the_project_when_its_last_video_lands(
    two_videos: Path, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A project split over array tasks: the run that finishes its last video combines it."""
    model = fixture_model(shared, "centroid")
    common = ("predict", two_videos, "-m", model, "--only-labeled-frames", "--progress", "none")
    combined = two_videos.parent / "two.slp.predictions.slp"
    code, err = run_cli(capsys, *common, "--shard", "0/2")
    assert code == 0, err
    assert "1 of 2 videos have no predictions yet" in err
    assert not combined.exists()
    code, err = run_cli(capsys, *common, "--shard", "1/2")
    assert code == 0, err
    assert sorted(_content(combined)) == [(0, 3), (1, 10)]


def test_outputs_refer_to_the_projects_own_videos(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not to the .slp: a media video that moved next to the project is found and named; a
    package's frames stay read from the package (sleap-nn's default too)."""
    shutil.copy(shared / "videos" / "small_robot_minimal.slp", tmp_path / "robot.slp")
    shutil.copy(shared / "videos" / "small_robot.mp4", tmp_path / "small_robot.mp4")
    package = shared / "videos" / "minimal_instance.pkg.slp"
    shutil.copy(package, tmp_path / "minimal.pkg.slp")
    model = fixture_model(shared, "single_instance")
    for name in ("robot.slp", "minimal.pkg.slp"):
        code, err = run_cli(capsys, "predict", tmp_path / name, "-m", model, "-q")
        assert code == 0, err
    robot = sio.load_slp(str(tmp_path / "robot.slp.predictions.slp"))
    assert Path(robot.videos[0].filename) == tmp_path / "small_robot.mp4"
    assert robot.videos[0][79].shape == (320, 560, 3)
    pkg = sio.load_slp(str(tmp_path / "minimal.pkg.slp.predictions.slp"))
    source = sio.load_slp(str(tmp_path / "minimal.pkg.slp"))
    assert Path(pkg.videos[0].filename) == tmp_path / "minimal.pkg.slp"
    np.testing.assert_array_equal(pkg.videos[0][0], source.videos[0][0])


def test_merge_needs_a_project_and_slp(
    two_videos: Path, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = fixture_model(shared, "centroid")
    video = two_videos.parent / "small_robot.mp4"
    code, err = run_cli(capsys, "predict", video, "-m", model, "--merge-into-project")
    assert code == 2
    assert error_lines(err) == [
        "error: --merge-into-project needs a SLEAP project (.slp) among the inputs"
    ]
    args = ("predict", two_videos, "-m", model, "--merge-into-project", "--format", "csv")
    code, err = run_cli(capsys, *args)
    assert code == 2
    assert error_lines(err) == [
        "error: --merge-into-project writes a SLEAP project: use --format slp, not csv"
    ]


def test_centroid_only_runs_the_pairs_first_stage_alone(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    video = shared / "videos" / "centered_pair_small.mp4"
    centroid = fixture_model(shared, "centroid")
    instance = fixture_model(shared, "centered_instance")
    lone, only = tmp_path / "lone.slp", tmp_path / "only.slp"
    code, err = run_cli(capsys, "predict", video, "-m", centroid, "--frames", "0-7", "-o", lone)
    assert code == 0, err
    pair = ("-m", instance, "-m", centroid)  # either order
    code, err = run_cli(
        capsys, "predict", video, *pair, "--centroid-only", "--frames", "0-7", "-o", only
    )
    assert code == 0, err
    a, b = _content(lone), _content(only)
    assert sorted(a) == sorted(b) and len(a) == 8
    for key in a:
        np.testing.assert_array_equal(np.stack(a[key][1]), np.stack(b[key][1]))
        assert all(np.isnan(p[1:]).all() for p in b[key][1])  # the anchor node only
    code, err = run_cli(
        capsys, "predict", video, "-m", instance, "--centroid-only", "-o", tmp_path / "x.slp"
    )
    assert code == 2
    assert error_lines(err) == [
        "error: --centroid-only needs a centroid model among the models; got centered_instance"
    ]


def test_a_damaged_project_is_one_error_line(
    two_videos: Path, shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = two_videos.with_name("broken.slp")
    broken.write_bytes(two_videos.read_bytes()[:3000])
    model = fixture_model(shared, "centroid")
    code, err = run_cli(capsys, "predict", broken, "-m", model, "--merge-into-project", "-q")
    assert code == 1
    (line,) = error_lines(err)
    assert line.startswith(f"error: {broken}: not a readable SLEAP project (")
    assert "note:" not in err  # no "videos missing" note on top of the error
    assert not list(two_videos.parent.glob("broken.slp.*"))
