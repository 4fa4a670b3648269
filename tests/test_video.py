"""Video decoding: every frame once, in order, with the right index; selections; errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sleap_infer.errors import UsageError, VideoError
from sleap_infer.io.frames import parse_frames
from sleap_infer.io.video import SEEK_GAP_FRAMES, VideoReader

from conftest import counter_frames, write_video


def _levels(frames: list[np.ndarray]) -> list[int]:
    return [round(float(f.mean())) for f in frames]


def test_reads_all_frames_in_order(counter_video: Path) -> None:
    reader = VideoReader(counter_video)
    assert reader.info.n_frames == 40
    assert reader.info.grayscale
    assert (reader.info.height, reader.info.width) == (64, 96)
    got = list(reader.iter_frames(channels=reader.channels_for(1)))
    assert [i for i, _ in got] == list(range(40))
    assert got[0][1].shape == (64, 96, 1)
    expected = _levels(list(counter_frames(40)))
    assert np.abs(np.array(_levels([f for _, f in got])) - expected).max() <= 2


def test_color_video_keeps_three_channels(tmp_path: Path) -> None:
    path = write_video(tmp_path / "c.mp4", counter_frames(5, gray=False))
    reader = VideoReader(path)
    assert not reader.info.grayscale
    assert reader.channels_for(1) == 3  # the network converts colour to gray itself
    _, frame = next(iter(reader.iter_frames(channels=3)))
    assert frame.shape == (64, 96, 3)


def test_frame_selection_with_seek(tmp_path: Path) -> None:
    n = SEEK_GAP_FRAMES * 2 + 50
    path = write_video(tmp_path / "long.mp4", counter_frames(n, 32, 32))
    reader = VideoReader(path)
    all_frames = dict(reader.iter_frames(channels=1))
    wanted = [3, 4, SEEK_GAP_FRAMES + 20, SEEK_GAP_FRAMES + 21, n - 1]
    got = list(reader.iter_frames(wanted, channels=1))
    assert [i for i, _ in got] == wanted
    for i, frame in got:
        assert np.array_equal(frame, all_frames[i]), i


def test_parse_frames() -> None:
    assert parse_frames("0-3,10,2", 100) == [0, 1, 2, 3, 10]
    assert parse_frames("95-", 100) == [95, 96, 97, 98, 99]
    assert parse_frames("98-200", 100) == [98, 99]
    assert parse_frames(None, 10) is None
    with pytest.raises(UsageError, match="cannot parse"):
        parse_frames("a-b", 10)
    with pytest.raises(UsageError, match="bad range"):
        parse_frames("5-2", 10)


def test_unreadable_inputs_have_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(VideoError, match="video not found"):
        VideoReader(tmp_path / "missing.mp4")
    with pytest.raises(VideoError, match="is a directory"):
        VideoReader(tmp_path)
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"\x00" * 1000)
    with pytest.raises(VideoError, match=r"junk\.mp4: not a readable video"):
        VideoReader(junk)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(VideoError, match="notes.txt"):
        VideoReader(text)


def test_shared_videos_metadata(shared: Path) -> None:
    pair = VideoReader(shared / "videos" / "centered_pair_small.mp4").info
    assert (pair.n_frames, pair.height, pair.width, pair.grayscale) == (1100, 384, 384, True)
    robot = VideoReader(shared / "videos" / "small_robot.mp4").info
    assert (robot.n_frames, robot.height, robot.width, robot.grayscale) == (166, 320, 560, False)
