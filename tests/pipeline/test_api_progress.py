"""The API's progress display: plain lines off a terminal, a rich bar on one."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from sleap_infer.pipeline import progress
from sleap_infer.pipeline.progress import FrameProgress, wanted


def test_plain_lines_every_interval(capsys: pytest.CaptureFixture[str]) -> None:
    now = [100.0]
    bar = FrameProgress("v.mp4", clock=lambda: now[0], interval=10.0)
    bar.start(200)
    for _ in range(10):
        now[0] += 3.0
        bar.advance(10)  # a line when 10 s have passed since the last one
    bar.close()
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == ""
    assert lines[0].endswith("v.mp4: started, 200 frames")
    assert lines[1].endswith("v.mp4: 40/200 frames (20.0%), 3.3 FPS, ETA 0:00:48")
    assert len(lines) == 4  # start, a line at 12 s and at 24 s (10 s apart at least), end
    assert lines[-1].endswith("v.mp4: 100 frames in 30.0 s, 3.3 FPS")


def test_bar_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    monkeypatch.setattr(
        progress, "_console", lambda: Console(file=screen, force_terminal=True, width=100)
    )
    bar = FrameProgress("v.mp4")
    bar.start(8)
    bar.advance(8)
    bar.close()
    text = screen.getvalue()
    assert "v.mp4" in text and "8/8" in text and "started" not in text


def test_wanted() -> None:
    assert wanted(None, is_file=True) and not wanted(None, is_file=False)
    assert wanted(True, is_file=False) and not wanted(False, is_file=True)
