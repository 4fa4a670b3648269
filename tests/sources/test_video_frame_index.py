"""Frame ``i`` is the i-th frame shown, as sleap-io (and so SLEAP and sleap-nn) counts it,
whatever the timestamps say: variable frame rate, dropped frames, a start offset, a
``-c copy`` trim behind an edit list, concatenated clips. Seeking lands on the same frame.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sleap_io as sio
from stamped_videos import dropped_pts, ffmpeg, ordinal_of, vfr_pts, write_stamped

from sleap_infer.sources.video import SEEK_GAP_FRAMES, FrameError, VideoReader


def _sio_sequence(path: Path) -> list[int]:
    """Ordinals of ``sio.load_video(path)[i]`` for i = 0, 1, ... as sleap-nn reads them
    (in order), up to the first frame sleap-io cannot read."""
    video = sio.load_video(str(path))
    out = []
    for i in range(len(video)):
        try:
            out.append(ordinal_of(video[i]))
        except IndexError:
            break
    video.close()
    return out


def _ours(path: Path, **kwargs: object) -> tuple[dict[int, int], list[FrameError], int]:
    reader = VideoReader(path)
    errors: list[FrameError] = []
    got = {i: ordinal_of(f) for i, f in reader.iter_frames(on_error=errors.append, **kwargs)}
    return got, errors, reader.info.n_frames


def _clip(kind: str, tmp: Path) -> Path:
    if kind == "vfr":  # two pauses and jitter
        return write_stamped(tmp / "vfr.mp4", vfr_pts(60))
    if kind == "dropped":  # a webcam losing 10% of its frames
        return write_stamped(tmp / "drop.mp4", dropped_pts(180))
    if kind == "offset":  # the first frame is shown at 5 s
        return write_stamped(tmp / "offset.mp4", [5000 + 33 * k for k in range(60)])
    if kind == "mkv":  # no frame count in the container
        ffmpeg(
            "-i", str(write_stamped(tmp / "v.mp4", vfr_pts(60))), "-c", "copy", str(tmp / "v.mkv")
        )
        return tmp / "v.mkv"
    if kind == "trimmed":  # -ss with -c copy: an edit list hides the lead-in to the keyframe
        src = write_stamped(tmp / "long.mp4", [33 * k for k in range(120)])
        ffmpeg("-ss", "1.3", "-i", str(src), "-c", "copy", str(tmp / "trim.mp4"))
        return tmp / "trim.mp4"
    assert kind == "concat"
    parts = [
        write_stamped(tmp / "a.mp4", [33 * k for k in range(40)]),
        write_stamped(tmp / "b.mp4", vfr_pts(50)),
        write_stamped(tmp / "c.mp4", dropped_pts(60)),
    ]
    (tmp / "list.txt").write_text("".join(f"file '{p}'\n" for p in parts))
    ffmpeg(
        "-f",
        "concat",
        "-safe",
        "0",
        "-i",
        str(tmp / "list.txt"),
        "-c",
        "copy",
        str(tmp / "cat.mp4"),
    )
    return tmp / "cat.mp4"


@pytest.mark.parametrize("kind", ["vfr", "dropped", "offset", "mkv", "trimmed", "concat"])
def test_frame_index_is_what_sleap_io_counts(kind: str, tmp_path: Path) -> None:
    path = _clip(kind, tmp_path)
    expected = _sio_sequence(path)
    got, errors, n_frames = _ours(path)
    assert errors == []  # healthy files: no "missing" frames, no "truncated" tail
    assert n_frames == len(expected)
    assert got == dict(enumerate(expected))


def test_vfr_clip_indices_stay_in_range(tmp_path: Path) -> None:
    # The clip: 60 frames, two pauses. Timestamps x rate put frames 41-59 at 50-68.
    got, errors, _ = _ours(write_stamped(tmp_path / "vfr.mp4", vfr_pts(60)))
    assert sorted(got) == list(range(60)) and errors == []
    assert all(got[i] == i for i in got)


def test_seeking_and_start_land_on_the_counted_frame(tmp_path: Path) -> None:
    # Long enough that selections far apart are reached by seeking, with pauses that would
    # move a timestamp-estimated seek target by dozens of frames, and B-frames whose
    # keyframe-before-the-timestamp can be shown after the target.
    n = 3 * SEEK_GAP_FRAMES
    path = write_stamped(
        tmp_path / "long_vfr.mp4", vfr_pts(n, pauses=range(0, n, 37)), gop=50, b_frames=3
    )
    wanted = [3, 4, SEEK_GAP_FRAMES + 20, 2 * SEEK_GAP_FRAMES + 1, n - 2, n - 1]
    errors: list[FrameError] = []
    got = [(i, ordinal_of(f)) for i, f in VideoReader(path).iter_frames(wanted, 3, errors.append)]
    assert got == [(i, i) for i in wanted] and errors == []
    start = 2 * SEEK_GAP_FRAMES + 5
    tail, errors, _ = _ours(path, start=start)
    assert tail == {i: i for i in range(start, n)} and errors == []
