"""What ``infer predict`` reports while it runs and at the end: plain lines on a fake
clock, JSON events, the summary table and the atomic summary file."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import pytest
from rich.console import Console

from sleap_infer.batch.tasks import DONE, FAILED, INTERRUPTED, SKIPPED, VideoOutcome, VideoTask
from sleap_infer.cli.progress import (
    BarProgress,
    JsonProgress,
    PlainProgress,
    Reporter,
    make_reporter,
)
from sleap_infer.cli.summary import (
    RunReport,
    count_line,
    summary_heading,
    summary_table,
    write_summary,
)
from sleap_infer.core.errors import OutputError
from sleap_infer.core.products import Counts
from sleap_infer.journal import journal_path

# 2025-01-02 12:03:01 local time: the plain lines' timestamps are local.
WALL0 = time.mktime((2025, 1, 2, 12, 3, 1, 0, 0, -1))


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def wall(self) -> float:
        return WALL0 + self.t


def _task(index: int, name: str, root: Path) -> VideoTask:
    return VideoTask(index, root / "videos" / name, root / "out" / f"{name}.predictions.slp")


def _done(task: VideoTask, frames: int = 1100, instances: int = 2322) -> VideoOutcome:
    return VideoOutcome(
        task,
        DONE,
        counts=Counts(
            frames=frames, instances=instances, frames_with_instances=1050, mean_score=0.8125
        ),
        fps=31.25,
    )


def _drive(reporter: PlainProgress | JsonProgress, clock: FakeClock, task: VideoTask) -> None:
    """1100 frames: 100 at 4 s (no line yet), 380 more at 10 s, 100 at 15 s, 212 at 20 s."""
    reporter.video_started(task, 1100)
    for t, n in ((4.0, 100), (10.0, 380), (15.0, 100), (20.0, 212)):
        clock.t = t
        reporter.frames_done(task, n)


def test_plain_lines_at_a_steady_interval_with_windowed_fps_and_eta(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = FakeClock()
    reporter = PlainProgress(2, interval=10.0, clock=clock, wall=clock.wall)
    task = _task(0, "a.mp4", tmp_path)
    with reporter:
        _drive(reporter, clock, task)
        clock.t = 26.0
        reporter.video_finished(_done(task))
        gone = _task(1, "gone.mp4", tmp_path)
        reporter.video_finished(VideoOutcome(gone, FAILED, message=f"{gone.video}: not found"))
    lines = capsys.readouterr().err.splitlines()
    video, out = task.video, task.output
    assert lines == [
        f"[12:03:01] {video}: started, 1100 frames -> {out}",
        # 480 frames in the first 10 s: 48 FPS, 620 left: 12.9 s.
        f"[12:03:11] {video}: 480/1100 frames (43.6%), 48.0 FPS, ETA 0:00:13",
        # 312 frames over the next 10 s: 31.2 FPS (the window, not the mean since start).
        f"[12:03:21] {video}: 792/1100 frames (72.0%), 31.2 FPS, ETA 0:00:10",
        f"[12:03:27] 1/2 ✓ {video}: 1100 frames, 2322 instances, 31.2 FPS -> {out}",
        f"error: {gone.video}: not found",  # error lines start the line, for grep
    ]


def test_plain_lines_report_every_running_video_and_unknown_totals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = FakeClock()
    reporter = PlainProgress(1, interval=5.0, clock=clock, wall=clock.wall)
    a, b = _task(0, "a.mp4", tmp_path), _task(1, "b.mp4", tmp_path)
    reporter.video_started(a, 0)  # a container that does not say how many frames it holds
    reporter.video_started(b, 100)
    clock.t = 5.0
    reporter.frames_done(a, 50)
    reporter.frames_done(b, 10)  # same tick: no second pair of lines
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"[12:03:01] {a.video}: started, frame count unknown -> {a.output}",
        f"[12:03:01] {b.video}: started, 100 frames -> {b.output}",
        f"[12:03:06] {a.video}: 50 frames, 10.0 FPS, ETA --:--:--",
        f"[12:03:06] {b.video}: 0/100 frames (0.0%), 0.0 FPS, ETA --:--:--",
    ]


def test_json_events_parse_and_carry_the_numbers(tmp_path: Path) -> None:
    clock = FakeClock()
    out = io.StringIO()
    reporter = JsonProgress(2, interval=10.0, clock=clock, wall=clock.wall, out=out)
    task, missing = _task(0, "a.mp4", tmp_path), _task(1, "missing.mp4", tmp_path)
    report = RunReport([task, missing], options={"batch_size": 4}, started=clock.wall())
    with reporter:
        reporter.model_loaded("SingleInstanceLayer (single_instance)", "torch/cpu", 4)
        _drive(reporter, clock, task)
        reporter.video_finished(_done(task))
        reporter.note("worker on cuda:1 died")
        failed = VideoOutcome(missing, FAILED, message=f"{missing.video}: video not found")
        reporter.video_finished(failed)
    clock.t = 30.0
    reporter.finished(report.build([_done(task), failed], 1, finished=clock.wall()))
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds == [
        "model_loaded",
        "video_started",
        "progress",
        "progress",
        "video_finished",
        "warning",
        "video_finished",
        "summary",
    ]
    assert events[0]["device"] == "torch/cpu" and events[0]["batch_size"] == 4
    assert events[1]["n_total"] == 1100 and events[1]["output"] == str(task.output)
    first, second = events[2], events[3]
    assert (first["n_processed"], first["n_total"], first["percent"]) == (480, 1100, 43.6)
    assert (first["rate"], first["eta"]) == (48.0, 12.9)
    assert (second["n_processed"], second["rate"], second["eta"]) == (792, 31.2, 9.9)
    done = events[4]
    assert done["status"] == DONE and done["frames"] == 1100 and done["instances"] == 2322
    assert done["frames_with_instances"] == 1050 and done["mean_score"] == 0.8125
    assert done["fps"] == 31.25 and (done["videos_finished"], done["videos_total"]) == (1, 2)
    assert events[5]["message"] == "worker on cuda:1 died"
    assert events[6]["status"] == FAILED and events[6]["message"].endswith("video not found")
    summary = events[7]
    assert summary["status"] == "failed" and summary["exit_code"] == 1
    assert summary["elapsed_s"] == 30.0
    assert summary["totals"]["done"] == 1 and summary["totals"]["failed"] == 1
    assert summary["totals"]["frames"] == 1100 and summary["totals"]["instances"] == 2322
    assert [v["video"] for v in summary["videos"]] == [str(task.video), str(missing.video)]


def test_json_error_event(tmp_path: Path) -> None:
    out = io.StringIO()
    JsonProgress(1, 1.0, out=out).error("/m: model path does not exist", 1)
    event = json.loads(out.getvalue())
    assert event["event"] == "error" and event["exit_code"] == 1
    assert event["message"] == "/m: model path does not exist"


def test_summary_lists_unstarted_videos_and_the_journal_an_interruption_kept(
    tmp_path: Path,
) -> None:
    a, b, c = (_task(i, n, tmp_path) for i, n in enumerate(("a.mp4", "b.mp4", "c.mp4")))
    journal_path(b.output).parent.mkdir(parents=True)
    journal_path(b.output).write_bytes(b"x")
    stopped = VideoOutcome(
        b, INTERRUPTED, counts=Counts(frames=480), message=f"{b.video}: interrupted"
    )
    summary = RunReport([a, b, c], started=WALL0).build(
        [_done(a), stopped], 130, finished=WALL0 + 5
    )
    assert summary["status"] == "interrupted" and summary["exit_code"] == 130
    videos = {Path(v["video"]).name: v for v in summary["videos"]}
    assert videos["b.mp4"]["status"] == INTERRUPTED and videos["b.mp4"]["frames"] == 480
    assert videos["b.mp4"]["journal"] == str(journal_path(b.output))
    assert videos["a.mp4"]["journal"] is None
    assert videos["c.mp4"]["status"] == "not_started" and videos["c.mp4"]["fps"] is None
    assert summary["totals"]["not_started"] == 1 and summary["totals"]["frames"] == 1580
    assert summary["output_folder"] == str((tmp_path / "out").resolve())
    assert json.loads(json.dumps(summary, allow_nan=False)) == summary


def _render(table: object) -> str:
    console = Console(record=True, width=120, file=io.StringIO())
    console.print(table)
    return console.export_text()


def test_summary_table_names_the_output_folder_and_shows_frames_saved(tmp_path: Path) -> None:
    a, b, c, d = (_task(i, f"{n}.mp4", tmp_path) for i, n in enumerate("abcd"))
    outcomes = [
        _done(a),
        VideoOutcome(b, INTERRUPTED, counts=Counts(frames=480), message="interrupted"),
        VideoOutcome(c, SKIPPED, message="exists"),
    ]
    out, videos = (tmp_path / "out").resolve(), (tmp_path / "videos").resolve()
    assert summary_heading(outcomes, [a, b, c, d]) == f"outputs in {out} (videos in {videos})"
    lines = _render(summary_table(outcomes, [a, b, c, d])).splitlines()
    row = {line.split()[1]: line.split("│")[2:-1] for line in lines if ".mp4" in line}
    assert [cell.strip() for cell in row["b.mp4"]] == [
        "480",
        "-",
        "-",
        "interrupted (480 frames saved)",
    ]
    assert [cell.strip() for cell in row["a.mp4"]] == ["1100", "2322", "31.2", "done"]
    assert row["d.mp4"][-1].strip() == "not started"
    beside = VideoTask(0, tmp_path / "v.mp4", tmp_path / "v.mp4.predictions.slp")
    assert summary_heading([_done(beside)]) == f"outputs in {tmp_path.resolve()}"
    assert count_line(["done", "interrupted", "not_started"]) == (
        "3 videos: 1 done, 1 interrupted, 1 not started"
    )


def test_summary_file_is_written_atomically(tmp_path: Path) -> None:
    target = tmp_path / "run" / "summary.json"
    target.parent.mkdir()
    write_summary(target, {"status": "ok", "videos": []})
    assert json.loads(target.read_text()) == {"status": "ok", "videos": []}
    assert os.listdir(target.parent) == ["summary.json"]  # no temporary file left
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "summary.json").mkdir()  # the rename cannot replace a folder
    with pytest.raises(OutputError, match="cannot write the run summary"):
        write_summary(blocked / "summary.json", {"status": "ok"})
    assert os.listdir(blocked) == ["summary.json"]


def test_auto_is_a_bar_on_a_terminal_and_plain_lines_in_a_log(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sleap_infer.cli import progress

    log = Console(file=io.StringIO(), force_terminal=False)
    monkeypatch.setattr(progress, "console", log)
    plain = make_reporter("auto", 3)
    assert type(plain) is PlainProgress and plain.interval == 10.0
    terminal = Console(file=io.StringIO(), force_terminal=True)
    monkeypatch.setattr(progress, "console", terminal)
    assert type(make_reporter("auto", 3)) is BarProgress
    json_reporter = make_reporter("json", 3)
    assert type(json_reporter) is JsonProgress and json_reporter.interval == 1.0
    assert make_reporter("plain", 3, interval=2.5).interval == 2.5
    assert type(make_reporter("none", 3)) is Reporter
