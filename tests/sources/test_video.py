"""Video decoding: every frame once, in order, with the right index; selections; errors."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import UsageError, VideoError
from sleap_infer.sources.frames import parse_frames
from sleap_infer.sources.video import (
    CORRUPT,
    DECODE_ERROR,
    MISSING_AT_END,
    SEEK_GAP_FRAMES,
    SLEAP_IO_VIDEO_EXTS,
    FrameError,
    VideoReader,
    runs,
)

from broken_videos import (
    avi_claiming,
    faststart_mp4,
    noisy_frames,
    truncated_copy,
    zero_frame_mp4,
    zeroed_copy,
)
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


def test_pixels_are_pyav_default_conversions_own(tmp_path: Path) -> None:
    # The reader converts on one swscale thread (SWSCALE_THREADS); PyAV's default threads
    # must give the very same pixels, on a noisy colour frame where rounding would show.
    rng = np.random.default_rng(0)
    noisy = rng.integers(0, 256, size=(6, 64, 96, 3), dtype=np.uint8)
    path = write_video(tmp_path / "noisy.mp4", noisy, options={"crf": "18"})
    with av.open(str(path)) as container:
        expected = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    got = [frame for _, frame in VideoReader(path).iter_frames(channels=3)]
    assert len(got) == len(expected) == 6
    for mine, theirs in zip(got, expected, strict=True):
        assert np.array_equal(mine, theirs)


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


def _decode_all(path: Path, **kwargs: object) -> tuple[list[int], list[FrameError]]:
    errors: list[FrameError] = []
    got = [i for i, _ in VideoReader(path).iter_frames(on_error=errors.append, **kwargs)]
    return got, errors


def test_runs_groups_consecutive_indices() -> None:
    assert list(runs([1, 2, 3, 7, 9, 10])) == [(1, 3), (7, 1), (9, 2)]
    assert list(runs([])) == []


def test_truncated_stream_reports_the_missing_tail(tmp_path: Path) -> None:
    full = faststart_mp4(tmp_path / "full.mp4", noisy_frames(100))
    cut = truncated_copy(full, tmp_path / "cut.mp4", 0.5)
    reader = VideoReader(cut)
    assert reader.info.n_frames == 100  # the index still promises every frame
    got, errors = _decode_all(cut)
    k = len(got)
    assert 10 < k < 90 and got == list(range(k))
    assert errors == [
        FrameError(
            k,
            f"stream ended after frame {k - 1}; metadata says 100 frames",
            MISSING_AT_END,
            100 - k,
        )
    ]
    # A selection only hears about the requested frames it could not get.
    got, errors = _decode_all(cut, indices=[1, 2, k + 3, 99])
    assert got == [1, 2]
    assert [(e.index, e.count, e.kind) for e in errors] == [
        (k + 3, 1, MISSING_AT_END),
        (99, 1, MISSING_AT_END),
    ]


def test_corrupt_bytes_mid_file_cost_only_the_frames_they_hit(tmp_path: Path) -> None:
    full = faststart_mp4(tmp_path / "full.mp4", noisy_frames(100))
    bad = zeroed_copy(full, tmp_path / "bad.mp4", at=0.7)
    got, errors = _decode_all(bad)
    lost = sorted(set(range(100)) - set(got))
    assert 1 <= len(lost) < 10, lost
    assert got == sorted(got) and got[-1] == 99  # decoding went on after the damage
    reported = [i for e in errors for i in range(e.index, e.last + 1)]
    assert reported == lost  # each lost frame reported once, with its index
    # The zeroed packets fail to decode; frames predicted from them come out flagged corrupt.
    assert any(e.kind == DECODE_ERROR and e.reason.startswith("decode error") for e in errors)
    assert {e.kind for e in errors} <= {DECODE_ERROR, CORRUPT}


def test_more_frames_than_metadata_are_all_decoded(tmp_path: Path) -> None:
    avi = avi_claiming(tmp_path / "long.avi", counter_frames(60), claimed=25)
    assert VideoReader(avi).info.n_frames == 25
    got, errors = _decode_all(avi)
    assert got == list(range(60)) and errors == []


def test_frames_far_past_the_real_end_are_reported_not_sought_forever(tmp_path: Path) -> None:
    # The header promises 1000 frames, the file holds 60: a seek to frame 900 lands on the
    # last keyframe, far short of its target. It must not seek there again and again.
    avi = avi_claiming(tmp_path / "liar.avi", counter_frames(60), claimed=1000)
    reader = VideoReader(avi)
    assert reader.info.n_frames == 60  # its index and data agree: the header overcounts
    errors: list[FrameError] = []
    got = [i for i, _ in reader.iter_frames([5, 900, 950], 1, errors.append)]
    assert got == [5]
    assert [(e.index, e.count, e.kind) for e in errors] == [
        (900, 1, MISSING_AT_END),
        (950, 1, MISSING_AT_END),
    ]
    errors.clear()
    assert list(reader.iter_frames(None, 1, errors.append, start=700)) == []
    assert errors == []  # nothing from frame 700 on was ever there to miss


def test_a_header_overcount_is_a_note_not_a_truncation(tmp_path: Path) -> None:
    # A healthy MJPEG AVI whose header says 21 frames and holds 20.
    avi = avi_claiming(tmp_path / "cam.avi", counter_frames(20), claimed=21, mjpeg=True)
    reader = VideoReader(avi)
    assert reader.info.n_frames == 20
    assert reader.info.notes == (
        f"{avi}: its header says 21 frames but the file holds 20, all present (the header "
        "overcounts; nothing is cut off or damaged): predicting and recording 20 frames",
    )
    got, errors = _decode_all(avi)
    assert got == list(range(20)) and errors == []
    # sleap-io's readers cannot read a 21st frame either (its OpenCV one reports 21).
    with pytest.raises(Exception):  # noqa: B017 (each sleap-io reader raises its own type)
        sio.load_video(str(avi), plugin="FFMPEG")[20]
    # A cut AVI (its index lost with its tail) is still a truncation, not an overcount.
    whole = avi_claiming(tmp_path / "whole.avi", counter_frames(60), claimed=60, mjpeg=True)
    cut = truncated_copy(whole, tmp_path / "cut.avi", 0.5)
    assert VideoReader(cut).info.n_frames == 60 and VideoReader(cut).info.notes == ()
    got, errors = _decode_all(cut)
    assert errors and errors[-1].kind == MISSING_AT_END and errors[-1].last == 59


def test_a_video_sleap_io_cannot_open_gets_a_note(tmp_path: Path) -> None:
    mp4 = write_video(tmp_path / "clip.mp4", counter_frames(3))
    assert VideoReader(mp4).info.notes == ()
    webm = tmp_path / "clip.webm"
    with av.open(str(webm), "w") as container:
        stream = container.add_stream("libvpx-vp9", rate=30)
        stream.width, stream.height, stream.pix_fmt = 96, 64, "yuv420p"
        for frame in counter_frames(3):
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())
    with pytest.raises(ValueError, match="Unknown video file type"):
        sio.load_video(str(webm))
    assert VideoReader(webm).info.notes == (
        f"{webm}: sleap-io (and so SLEAP) cannot open .webm videos, so an .slp of it will not "
        "open its video there (the predictions are fine); convert it, e.g. ffmpeg -i "
        "clip.webm clip.mp4, to view them in SLEAP",
    )


def test_the_names_sleap_io_opens_are_its_own() -> None:
    assert set(SLEAP_IO_VIDEO_EXTS) == set(sio.Video.EXTS)


def test_start_skips_earlier_frames_by_seeking(tmp_path: Path) -> None:
    n = SEEK_GAP_FRAMES + 60
    path = write_video(tmp_path / "long.mp4", counter_frames(n, 32, 32))
    got, errors = _decode_all(path, start=SEEK_GAP_FRAMES + 10)
    assert got == list(range(SEEK_GAP_FRAMES + 10, n)) and errors == []


def test_broken_files_are_one_clear_error(tmp_path: Path) -> None:
    moov_last = write_video(tmp_path / "rec.mp4", noisy_frames(30))
    cut = truncated_copy(moov_last, tmp_path / "cut.mp4", 0.5)
    with pytest.raises(VideoError, match=r"cut\.mp4: not a readable video \(no 'moov' index atom"):
        VideoReader(cut)
    with pytest.raises(VideoError, match=r"zero\.mp4: contains no video stream"):
        VideoReader(zero_frame_mp4(tmp_path / "zero.mp4"))
    (tmp_path / "empty.mp4").write_bytes(b"")
    with pytest.raises(VideoError, match=r"empty\.mp4: not a readable video \(empty file\)"):
        VideoReader(tmp_path / "empty.mp4")
    (tmp_path / "notes.mp4").write_text("these are my lab notes, not a video\n")
    with pytest.raises(VideoError, match=r"notes\.mp4: not a readable video"):
        VideoReader(tmp_path / "notes.mp4")


def test_permission_denied_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import av

    path = write_video(tmp_path / "v.mp4", counter_frames(3))

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(av, "open", denied)  # root ignores chmod, so simulate it
    with pytest.raises(VideoError, match=r"v\.mp4: permission denied"):
        VideoReader(path)
