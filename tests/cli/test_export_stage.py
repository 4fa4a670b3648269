"""A first-use export is a progress stage of its own (issue 30): its lines go through
the running display, and its seconds stay out of the video's rate and ETA (before,
a 4-minute export on the first batch made the first progress line's ETA hours)."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

from sleap_infer.batch.tasks import VideoTask
from sleap_infer.cli.progress import BarProgress, JsonProgress, PlainProgress, show_export_notice
from sleap_infer.runtimes.cache import ExportNotice

WALL0 = time.mktime((2025, 1, 2, 12, 0, 0, 0, 0, -1))


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def wall(self) -> float:
        return WALL0 + self.t


def _task(root: Path) -> VideoTask:
    return VideoTask(0, root / "a.mp4", root / "a.mp4.predictions.slp")


def _export_then_frames(
    clock: FakeClock, reporter: PlainProgress | JsonProgress, task: VideoTask
) -> None:
    """1100 frames; the first batch exports for 240 s, then 100 frames in 2 s (50 FPS)."""
    reporter.video_started(task, 1100)
    clock.t = 0.5
    assert show_export_notice(ExportNotice("Exporting m to onnx for 4x1x48x48 input", "started"))
    clock.t = 240.5
    assert show_export_notice(ExportNotice("exported m to onnx: done in 240.0 s", "finished", 240))
    clock.t = 242.0
    reporter.frames_done(task, 100)


def test_plain_lines_show_the_export_and_an_eta_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = FakeClock()
    task = _task(tmp_path)
    with PlainProgress(1, interval=10.0, clock=clock, wall=clock.wall) as reporter:
        _export_then_frames(clock, reporter, task)
    assert capsys.readouterr().err.splitlines() == [
        f"[12:00:00] {task.video}: started, 1100 frames -> {task.output}",
        "[12:00:00] export: Exporting m to onnx for 4x1x48x48 input",
        "[12:04:00] export: exported m to onnx: done in 240.0 s",
        # 100 frames in the 2 s after the export: 50 FPS, 1000 left: 20 s (not 40 min).
        f"[12:04:02] {task.video}: 100/1100 frames (9.1%), 50.0 FPS, ETA 0:00:20",
    ]


def test_json_events_carry_the_export_stage_and_its_seconds(tmp_path: Path) -> None:
    clock, out = FakeClock(), io.StringIO()
    with JsonProgress(1, interval=1.0, clock=clock, wall=clock.wall, out=out) as reporter:
        _export_then_frames(clock, reporter, _task(tmp_path))
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["video_started", "export", "export", "progress"]
    assert [(e["stage"], e["seconds"]) for e in events[1:3]] == [
        ("started", None),
        ("finished", 240),
    ]
    assert (events[3]["rate"], events[3]["eta"]) == (50.0, 20.0)


def test_a_failed_export_prints_no_done_line(capsys: pytest.CaptureFixture[str]) -> None:
    clock = FakeClock()
    with PlainProgress(1, interval=10.0, clock=clock, wall=clock.wall):
        assert show_export_notice(ExportNotice("exporting m to onnx failed", "failed", 3.0))
    assert capsys.readouterr().err == ""  # the error is reported where it is raised


def test_without_a_running_display_the_caller_prints_the_notice() -> None:
    with PlainProgress(1, interval=10.0):
        pass
    assert not show_export_notice(ExportNotice("Exporting m to onnx", "started"))


def test_a_bar_still_at_frame_zero_starts_its_clock_after_the_export(tmp_path: Path) -> None:
    with BarProgress(1) as reporter:
        task = _task(tmp_path)
        reporter.video_started(task, 1100)
        [bar] = reporter.progress.tasks
        before = bar.start_time
        assert before is not None
        time.sleep(0.01)  # only so that the clock moves, not a timing assertion
        show_export_notice(ExportNotice("exported m to onnx: done in 1.0 s", "finished", 1.0))
        [bar] = reporter.progress.tasks
        assert bar.start_time is not None and bar.start_time > before
        assert (bar.completed, bar.total) == (0, 1100)
