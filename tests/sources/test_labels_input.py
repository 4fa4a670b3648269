"""SLEAP projects as inputs: frames of a project's video, exactly as sleap-io returns them."""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import VideoError
from sleap_infer.sources.labels_video import LabelsVideoReader
from sleap_infer.sources.open import open_video
from sleap_infer.sources.video import ABSENT, DECODE_ERROR, FrameError, VideoReader

from conftest import counter_frames, write_video

PACKAGES = {  # name: (embedded frames, height = width)
    "synthetic_multi.pkg.slp": (24, 128),
    "synthetic_single.pkg.slp": (12, 256),
}


@pytest.fixture(params=sorted(PACKAGES))
def package(request: pytest.FixtureRequest, shared: Path) -> Path:
    path = shared / "videos" / request.param
    if not path.is_file():
        pytest.skip(f"{path} not in the shared fixtures")
    return path


def _project(
    path: Path, videos: list[Path], frames: dict[int, list[int]] | None = None, embed: bool = False
) -> Path:
    """A small project over ``videos``, labeled (one instance) at ``frames[video index]``."""
    skeleton = sio.Skeleton(["head", "tail"])
    sio_videos = [sio.Video.from_filename(str(v)) for v in videos]
    labeled = [
        sio.LabeledFrame(
            video=sio_videos[v],
            frame_idx=k,
            instances=[sio.Instance.from_numpy(np.array([[5.0, 6.0], [20.0, 30.0]]), skeleton)],
        )
        for v, ks in (frames or {}).items()
        for k in ks
    ]
    labels = sio.Labels(labeled_frames=labeled, videos=sio_videos, skeletons=[skeleton])
    sio.save_slp(labels, str(path), embed="user" if embed else False, verbose=False)
    for video in sio_videos:
        video.close()
    return path


def _sio_frames(path: Path, indices: list[int], video_index: int = 0) -> list[np.ndarray]:
    video = sio.load_slp(str(path)).videos[video_index]
    try:
        return [video[k] for k in indices]
    finally:
        video.close()


def test_embedded_frames_are_sleap_ios(package: Path) -> None:
    n, size = PACKAGES[package.name]
    reader = open_video(package)
    assert isinstance(reader, LabelsVideoReader)
    info = reader.info
    assert info.path == package.absolute()  # outputs are named after the project
    assert (info.n_frames, info.height, info.width, info.grayscale) == (n, size, size, True)
    assert reader.frame_indices == list(range(n))
    assert (reader.channels_for(1), reader.channels_for(3)) == (1, 3)
    errors: list[FrameError] = []
    got = list(reader.iter_frames(channels=1, on_error=errors.append))
    assert [i for i, _ in got] == list(range(n)) and errors == []
    expected = _sio_frames(package, list(range(n)))
    for (i, frame), want in zip(got, expected):
        assert frame.dtype == np.uint8 and frame.shape == (size, size, 1)
        assert np.array_equal(frame, want), i
    # A colour model gets the gray frame repeated, as sleap-nn feeds it.
    _, rgb = next(iter(reader.iter_frames([3], channels=3)))
    assert rgb.shape == (size, size, 3) and all(
        np.array_equal(rgb[..., [c]], got[3][1]) for c in (0, 1, 2)
    )


def test_selection_start_and_frames_not_stored(package: Path) -> None:
    n, _ = PACKAGES[package.name]
    reader = LabelsVideoReader(package)
    assert [i for i, _ in reader.iter_frames([5, 1, 5, 3], 1)] == [1, 3, 5]
    assert [i for i, _ in reader.iter_frames(None, 1, start=n - 3)] == [n - 3, n - 2, n - 1]
    errors: list[FrameError] = []
    got = [i for i, _ in reader.iter_frames([2, n, n + 1, n + 5], 1, errors.append)]
    assert got == [2]
    assert [(e.index, e.count, e.kind) for e in errors] == [(n, 2, ABSENT), (n + 5, 1, ABSENT)]
    assert errors[0].reason == f"not stored in {package.name}"


def test_sparse_package_yields_only_its_embedded_frames(tmp_path: Path) -> None:
    clip = write_video(tmp_path / "clip.mp4", counter_frames(12))
    pkg = _project(tmp_path / "sparse.pkg.slp", [clip], {0: [2, 5, 9]}, embed=True)
    reader = LabelsVideoReader(pkg)
    assert reader.frame_indices == [2, 5, 9] and reader.info.n_frames == 3
    got = list(reader.iter_frames(channels=reader.channels_for(1)))
    assert [i for i, _ in got] == [2, 5, 9]  # the source video's frame numbers
    for (_, frame), want in zip(got, _sio_frames(pkg, [2, 5, 9])):
        assert np.array_equal(frame, want)


def test_a_damaged_embedded_image_costs_its_frames_only(package: Path, tmp_path: Path) -> None:
    n, _ = PACKAGES[package.name]
    copy = shutil.copy(package, tmp_path / package.name)
    with h5py.File(copy, "r+") as f:
        images = f["video0/video"]
        images[4] = images[5] = np.full(images.shape[1], 7, np.int8)  # not an image any more
    errors: list[FrameError] = []
    got = [i for i, _ in LabelsVideoReader(copy).iter_frames(None, 1, errors.append)]
    assert got == [i for i in range(n) if i not in (4, 5)]
    assert [(e.index, e.count, e.kind) for e in errors] == [(4, 2, DECODE_ERROR)]
    assert errors[0].reason.startswith("decode error")


def test_project_over_video_files_finds_them_after_a_move(tmp_path: Path) -> None:
    made, moved = tmp_path / "made", tmp_path / "moved"
    made.mkdir()
    gray = write_video(made / "gray.mp4", counter_frames(20))
    colour = write_video(made / "colour.mp4", counter_frames(8, 48, 64, gray=False))
    _project(made / "proj.slp", [gray, colour], {0: [1], 1: [2]})
    shutil.move(made, moved)  # the project still names made/...: found next to the .slp
    project = moved / "proj.slp"

    reader = open_video(project)
    assert isinstance(reader, LabelsVideoReader)
    info = reader.info
    assert info.path == project.absolute()
    assert (info.n_frames, info.height, info.width, info.grayscale) == (20, 64, 96, True)
    assert reader.frame_indices is None  # a media file: every frame its metadata promises
    got = dict(reader.iter_frames(channels=reader.channels_for(1)))
    assert sorted(got) == list(range(20))
    for k, want in zip((0, 7, 19), _sio_frames(project, [0, 7, 19])):
        assert np.array_equal(got[k], want), k
    assert [i for i, _ in reader.iter_frames([3, 4], 1)] == [3, 4]
    assert [i for i, _ in reader.iter_frames(None, 1, start=15)] == [15, 16, 17, 18, 19]

    second = open_video(project, video_index=1)
    assert (second.info.n_frames, second.info.grayscale) == (8, False)
    assert (second.channels_for(1), second.info.path) == (3, project.absolute())
    frames = dict(second.iter_frames([0, 5], channels=3))
    for k, want in zip((0, 5), _sio_frames(project, [0, 5], video_index=1)):
        assert np.array_equal(frames[k], want), k

    (moved / "gray.mp4").unlink()
    with pytest.raises(
        VideoError,
        match=r"proj\.slp: video 0 \(.*gray\.mp4\): video not found, there or next to proj\.slp",
    ):
        LabelsVideoReader(project)


def test_unreadable_projects_are_one_clear_line(tmp_path: Path, counter_video: Path) -> None:
    junk = tmp_path / "junk.slp"
    junk.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, np.uint8).tobytes())
    with pytest.raises(VideoError, match=r"junk\.slp: not a readable SLEAP project") as caught:
        open_video(junk)
    assert "\n" not in str(caught.value)
    with h5py.File(tmp_path / "other.slp", "w") as f:
        f["data"] = np.zeros(3)
    with pytest.raises(VideoError, match=r"other\.slp: not a readable SLEAP project"):
        LabelsVideoReader(tmp_path / "other.slp")
    with pytest.raises(VideoError, match=r"missing\.slp: SLEAP project not found"):
        LabelsVideoReader(tmp_path / "missing.slp")
    project = _project(tmp_path / "one.slp", [counter_video])
    with pytest.raises(
        VideoError, match=r"one\.slp: no video 1: the project has 1 \(indices 0-0\)"
    ):
        LabelsVideoReader(project, video_index=1)
    empty = sio.Labels()
    sio.save_slp(empty, str(tmp_path / "none.slp"))
    with pytest.raises(VideoError, match=r"none\.slp: SLEAP project has no videos"):
        LabelsVideoReader(tmp_path / "none.slp")


def test_open_video_picks_the_reader_by_name(counter_video: Path) -> None:
    # A plain video ignores video_index, so one setting serves a batch mixing both kinds.
    assert type(open_video(counter_video, video_index=3)) is VideoReader
