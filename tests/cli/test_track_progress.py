"""``infer track --progress json`` (sleap-nn's ``track --gui`` without a model): JSON
lines on stdout, as ``infer predict --progress json`` prints them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.cli import main
from sleap_infer.cli import sleap_nn_flags as snf
from sleap_infer.pipeline.retrack import retrack_labels
from sleap_infer.tracking.options import TrackingOptions


def predictions(path: Path, n_frames: int = 5) -> Path:
    """Two animals walking right, predicted (no tracks); frame 2 is empty."""
    skeleton = sio.Skeleton(["head", "tail"])
    video = sio.Video(filename="/data/walk.mp4", open_backend=False)
    frames = []
    for t in range(n_frames):
        made = []
        if t != 2:
            for y in (10.0, 80.0):
                pts = np.array([[20.0 + 3 * t, y], [5.0 + 3 * t, y]])
                made.append(sio.PredictedInstance.from_numpy(pts, skeleton=skeleton, score=0.9))
        frames.append(sio.LabeledFrame(video=video, frame_idx=t, instances=made))
    sio.save_slp(sio.Labels(frames, videos=[video], skeletons=[skeleton]), str(path))
    return path


def _run(args: list[str]) -> int:
    with pytest.raises(SystemExit) as exit_:
        main(args)
    return int(exit_.value.code or 0)


def _events(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_gui_prints_json_progress_and_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = predictions(tmp_path / "p.slp"), tmp_path / "t.slp"
    assert _run(["track", "-i", str(src), "--gui", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    events = _events(captured.out)  # stdout holds JSON lines only
    progress = [e for e in events if e["event"] == "progress"]
    assert progress and progress[-1]["n_processed"] == progress[-1]["n_total"] == 5
    assert {"n_processed", "n_total", "rate", "eta", "time"} <= progress[-1].keys()
    assert events[-1]["event"] == "summary" and events[-1]["tracks"] == 2
    assert events[-1]["output"] == str(out) and out.exists()
    assert "tracked" in captured.err  # the human line stays on stderr


def test_a_failed_run_ends_with_an_error_event(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.slp"
    assert _run(["track", str(missing), "--progress", "json"]) == 2
    events = _events(capsys.readouterr().out)
    assert [e["event"] for e in events] == ["error"]
    assert events[0]["exit_code"] == 2 and "no such file" in events[0]["message"]


def test_progress_counts_every_frame_empty_ones_too(tmp_path: Path) -> None:
    """sleap-nn's retrack callback counts each labeled frame, tracked or empty."""
    labels = sio.load_slp(str(predictions(tmp_path / "p.slp")))
    seen: list[tuple[int, int]] = []
    retrack_labels(labels, TrackingOptions(), lambda done, total: seen.append((done, total)))
    assert seen == [(i, 5) for i in range(1, 6)]


def test_gui_is_no_longer_refused_by_infer_track() -> None:
    assert snf.RETRACK["--gui"].kind == snf.ALIAS and snf.RETRACK["--gui"].to == "--progress json"
