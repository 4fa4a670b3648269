"""SIGTERM stops every command as Ctrl-C does (issue 45, unclear 9): exit 130 and the one
``interrupted`` line, no temporary file left, and predict's ``--summary-json`` written
even when the signal comes before its run began. Python's default was to die at once
with exit 143, leaving render's ``.<name>.<pid>.tmp.mp4`` behind for good.

Each case runs the real entry point in a child process, with one function replaced by
one that sends the process SIGTERM at that moment (after creating its temporary file,
for render): the signal is real, its timing exact.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from conftest import SYNTHETIC_MODEL, write_video

CHILD = """
import importlib, os, signal, sys, time
from pathlib import Path
from sleap_infer.cli import main

module, name, mode = sys.argv[1], sys.argv[2], sys.argv[3]
real = getattr(importlib.import_module(module), name)

def terminated_here(*args, **kwargs):
    if mode == "touch":  # the temporary file the real function would be writing
        Path(args[0]).write_bytes(b"half a video")
    os.kill(os.getpid(), signal.SIGTERM)
    if mode == "go on":  # while the command line is read: noted, raised as it starts
        return real(*args, **kwargs)
    time.sleep(30)
    raise AssertionError("SIGTERM did not stop the command")

setattr(importlib.import_module(module), name, terminated_here)
main(sys.argv[4:])
"""


@pytest.fixture(scope="module")
def predictions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A prediction file with one instance per frame, next to its 4-frame video."""
    folder = tmp_path_factory.mktemp("sigterm")
    video_path = write_video(folder / "v.mp4", np.full((4, 32, 32, 3), 90, np.uint8))
    video = sio.Video.from_filename(str(video_path))
    skeleton = sio.Skeleton(["a", "b"], edges=[("a", "b")])
    frames = [
        sio.LabeledFrame(
            video=video,
            frame_idx=f,
            instances=[
                sio.PredictedInstance.from_numpy(
                    np.array([[8.0, 8.0], [20.0, 20.0]]),
                    skeleton=skeleton,
                    point_scores=np.ones(2),
                    score=0.9,
                )
            ],
        )
        for f in range(4)
    ]
    path = folder / "v.slp"
    labels = sio.Labels(labeled_frames=frames, videos=[video], skeletons=[skeleton])
    sio.save_slp(labels, str(path), embed=False, verbose=False)
    return path


def _terminated(target: str, *args: str | Path, mode: str = "-") -> tuple[int, str]:
    module, name = target.split(":")
    res = subprocess.run(
        [sys.executable, "-c", CHILD, module, name, mode, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return res.returncode, res.stdout + res.stderr


def _one_interrupted_line(code: int, out: str) -> None:
    assert code == 130, out
    assert out.strip().splitlines()[-1] == "interrupted", out
    assert "Traceback" not in out and "AssertionError" not in out


def test_render_interrupted_by_sigterm_leaves_no_temporary_file(predictions: Path) -> None:
    out = predictions.parent / "drawn.mp4"
    code, text = _terminated(
        "sleap_infer.render.encode:_encode", "render", predictions, "-o", out, mode="touch"
    )
    _one_interrupted_line(code, text)
    assert not out.exists()
    assert not [p.name for p in predictions.parent.iterdir() if ".tmp" in p.name]


def test_track_interrupted_by_sigterm(predictions: Path) -> None:
    out = predictions.parent / "t.slp"
    code, text = _terminated(
        "sleap_infer.pipeline.retrack:retrack_file", "track", predictions, "-o", out
    )
    _one_interrupted_line(code, text)
    assert not out.exists()


def test_bench_interrupted_by_sigterm() -> None:
    code, text = _terminated(
        "sleap_infer.bench.suite:run_bench", "bench", SYNTHETIC_MODEL, "--size", "16x16"
    )
    _one_interrupted_line(code, text)


def test_predict_interrupted_before_its_run_still_writes_the_summary(
    predictions: Path, tmp_path: Path
) -> None:
    """SIGTERM while predict imports and plans (its first second): the summary asked for
    is written, saying interrupted; nothing else is."""
    summary = tmp_path / "summary.json"
    video = predictions.parent / "v.mp4"
    args = ("predict", video, "-m", SYNTHETIC_MODEL, "-o", tmp_path, "--summary-json", summary)
    code, text = _terminated("sleap_infer.api:plan_spec", *args)
    _one_interrupted_line(code, text)
    written = json.loads(summary.read_text())
    assert written["exit_code"] == 130 and written["error"] == "interrupted", written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_predict_terminated_while_its_command_line_is_read(
    predictions: Path, tmp_path: Path
) -> None:
    """SIGTERM before the command even started (importing, parsing: over a second on a
    busy machine) is held until predict starts, so it knows where its summary goes."""
    summary = tmp_path / "summary.json"
    video = predictions.parent / "v.mp4"
    args = ("predict", video, "-m", SYNTHETIC_MODEL, "-o", tmp_path, "--summary-json", summary)
    code, text = _terminated("sleap_infer.cli:_commands_for", *args, mode="go on")
    _one_interrupted_line(code, text)
    assert json.loads(summary.read_text())["exit_code"] == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]
