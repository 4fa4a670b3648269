"""Frames FFmpeg flags corrupt are bad frames unless kept on purpose."""

from __future__ import annotations

from pathlib import Path

import av

from sleap_infer.sources.video import CORRUPT, FrameError, VideoReader

from broken_videos import faststart_mp4, flipped_copy, noisy_frames


def _flagged(path: Path) -> list[int]:
    """Indices of the frames FFmpeg decodes with its corrupt flag (every frame decodes)."""
    with av.open(str(path)) as container:
        frames = list(container.decode(video=0))
    assert len(frames) == 100
    return [i for i, f in enumerate(frames) if f.is_corrupt]


def test_corrupt_frames_are_reported_not_yielded(tmp_path: Path) -> None:
    clean = faststart_mp4(tmp_path / "clean.mp4", noisy_frames(100), gop=30)
    bad = flipped_copy(clean, tmp_path / "flipped.mp4")
    flagged = _flagged(bad)
    assert len(flagged) >= 5  # the fault: these were predicted like healthy frames
    errors: list[FrameError] = []
    got = [i for i, _ in VideoReader(bad).iter_frames(channels=1, on_error=errors.append)]
    assert got == [i for i in range(100) if i not in flagged]
    reported = [i for e in errors for i in range(e.index, e.last + 1)]
    assert reported == flagged and all(e.kind == CORRUPT for e in errors)
    assert len(errors) < len(flagged)  # runs, not one record per frame
    assert "corrupt" in errors[0].describe()
    # A selection hears only about its own frames.
    errors.clear()
    wanted = [0, flagged[0], flagged[-1], 99]
    got = [i for i, _ in VideoReader(bad).iter_frames(wanted, 1, errors.append)]
    assert got == [0, 99]
    assert [(e.index, e.count) for e in errors] == (
        [(flagged[0], 1), (flagged[-1], 1)] if flagged[0] != flagged[-1] else [(flagged[0], 1)]
    )


def test_keep_corrupt_yields_every_frame(tmp_path: Path) -> None:
    clean = faststart_mp4(tmp_path / "clean.mp4", noisy_frames(100), gop=30)
    bad = flipped_copy(clean, tmp_path / "flipped.mp4")
    errors: list[FrameError] = []
    reader = VideoReader(bad, keep_corrupt=True)
    got = [i for i, _ in reader.iter_frames(channels=1, on_error=errors.append)]
    assert got == list(range(100)) and errors == []
