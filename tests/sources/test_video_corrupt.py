"""Frames decoded from damaged data (FFmpeg's corrupt flag, and the frames predicted from a
flagged one up to the next keyframe) are bad frames unless kept on purpose."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np

from sleap_infer.sources.video import (
    CORRUPT,
    CORRUPT_REASON,
    TAINTED_REASON,
    FrameError,
    VideoReader,
)

from broken_videos import faststart_mp4, flipped_copy, noisy_frames

N = 100
GOP = 30


def _flags(path: Path) -> tuple[list[int], list[int]]:
    """Indices of the frames FFmpeg flags corrupt, and of its keyframes (every frame decodes)."""
    with av.open(str(path)) as container:
        frames = list(container.decode(video=0))
    assert len(frames) == N
    return [i for i, f in enumerate(frames) if f.is_corrupt], [
        i for i, f in enumerate(frames) if f.key_frame
    ]


def _bad_and_clean(
    tmp_path: Path, gop: int = GOP, n_bits: int = 200, span: tuple[float, float] = (0.4, 0.6)
) -> tuple[Path, dict[int, np.ndarray]]:
    """The damaged copy, and the frames the undamaged file decodes to."""
    clean = faststart_mp4(tmp_path / "clean.mp4", noisy_frames(N), gop=gop)
    bad = flipped_copy(clean, tmp_path / "flipped.mp4", n_bits, span)
    return bad, dict(VideoReader(clean).iter_frames(channels=1))


def _read(
    path: Path, **kwargs: object
) -> tuple[dict[int, np.ndarray], list[FrameError], list[int]]:
    errors: list[FrameError] = []
    got = dict(VideoReader(path).iter_frames(channels=1, on_error=errors.append, **kwargs))
    return got, errors, [i for e in errors for i in range(e.index, e.last + 1)]


def test_flagged_frames_are_reported_not_yielded(tmp_path: Path) -> None:
    bad, clean = _bad_and_clean(tmp_path)
    flagged, keyframes = _flags(bad)
    assert len(flagged) >= 5  # the fault: these were predicted like healthy frames
    got, errors, reported = _read(bad)
    assert sorted(reported) == sorted(set(range(N)) - set(got))
    assert set(flagged) <= set(reported) and all(e.kind == CORRUPT for e in errors)
    assert len(errors) < len(reported)  # runs, not one record per frame
    # Past the first flagged frame, no damaged pixels get through. (Damage FFmpeg does not
    # notice before it, a frame or so here, is beyond what the decoder tells.)
    assert [i for i in got if i > flagged[0] and not np.array_equal(got[i], clean[i])] == []
    # Damage ends at the next keyframe: the frames from there on are predicted.
    after = [k for k in keyframes if k > flagged[-1]]
    assert after and all(i in got for i in range(after[0], N))
    # A selection hears only about its own frames.
    wanted = [0, flagged[0], flagged[-1], N - 1]
    got, _, reported = _read(bad, indices=wanted)
    assert sorted(got) == [0, N - 1] and reported == sorted(set(wanted[1:3]))


def test_frames_predicted_from_a_flagged_one_are_reported_up_to_the_next_keyframe(
    tmp_path: Path,
) -> None:
    # Few flips, long GOP: FFmpeg flags 3 frames and decodes on without a flag; the frames
    # after them may be predicted from them, so they count as damaged until a keyframe.
    bad, clean = _bad_and_clean(tmp_path, gop=1000, n_bits=20, span=(0.4, 0.42))
    flagged, keyframes = _flags(bad)
    got, errors, _ = _read(bad)
    assert flagged and {CORRUPT_REASON, TAINTED_REASON} <= {e.reason for e in errors}
    tainted = [i for e in errors if e.reason == TAINTED_REASON for i in range(e.index, e.last + 1)]
    next_key = min(k for k in keyframes if k > flagged[-1])
    assert tainted == [i for i in range(flagged[-1] + 1, next_key) if i not in flagged]
    assert [i for i in got if not np.array_equal(got[i], clean[i])] == []


def test_keep_corrupt_yields_every_frame(tmp_path: Path) -> None:
    bad, _ = _bad_and_clean(tmp_path)
    errors: list[FrameError] = []
    reader = VideoReader(bad, keep_corrupt=True)
    got = [i for i, _ in reader.iter_frames(channels=1, on_error=errors.append)]
    assert got == list(range(N)) and errors == []
