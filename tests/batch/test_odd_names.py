"""Odd input names fail alone or just work, never crash the batch (issue 29 items 8, 9):
a video name too long for its outputs, ``.`` and image globs from inside their folder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import scene
from cli_runs import error_lines, run_cli
from conftest import SYNTHETIC_MODEL

MODEL = str(SYNTHETIC_MODEL)


def test_a_too_long_video_name_fails_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "videos"
    folder.mkdir()
    long_name = "a" * 230 + ".mp4"  # fits, but its output's journal name does not
    scene.write_video(folder / long_name, n_frames=4)
    scene.write_video(folder / "b.mp4", n_frames=4)
    summary = tmp_path / "summary.json"
    code, err = run_cli(capsys, "predict", folder, "-m", MODEL, "--summary-json", summary, "-q")
    assert code == 1, err
    [line] = error_lines(err)
    assert long_name in line and "too long for the file system" in line
    assert (folder / "b.mp4.predictions.slp").exists()  # the other video ran
    statuses = {
        Path(v["video"]).name: v["status"] for v in json.loads(summary.read_text())["videos"]
    }
    assert statuses == {long_name: "failed", "b.mp4": "done"}


@pytest.fixture
def images(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "frames"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(3):
        Image.fromarray(rng.integers(0, 255, (64, 96), dtype=np.uint8)).save(folder / f"f{i}.png")
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.parametrize("arg", [".", "*.png", "f*.png"])
def test_an_image_sequence_from_inside_its_folder(
    capsys: pytest.CaptureFixture[str], images: Path, arg: str
) -> None:
    code, err = run_cli(capsys, "predict", arg, "-m", MODEL, "-q")
    assert code == 0, err
    assert (images.parent / "frames.predictions.slp").exists()  # named after the folder


def test_a_glob_matching_nothing_here_is_one_line(
    capsys: pytest.CaptureFixture[str], images: Path
) -> None:
    code, err = run_cli(capsys, "predict", "nothing*.png", "-m", MODEL, "-q")
    assert code == 1
    [line] = error_lines(err)
    assert line == "error: nothing*.png: no files match this pattern"


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("-", "cannot go to stdout"),
        ("video", "is an input of this run"),
        ("under_file", "is a file, not a folder"),
        ("file", "is an existing file, not a --format slp output"),
    ],
)
def test_unusable_output_arguments_are_one_usage_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    target: str,
    says: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=2)
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    output = {"-": "-", "video": video, "under_file": notes / "x.slp", "file": notes}[target]
    before = video.read_bytes()
    code, err = run_cli(capsys, "predict", video, "-m", MODEL, "-o", output, "-q")
    assert code == 2
    [line] = error_lines(err)
    assert says in line
    assert not (tmp_path / "-").exists()
    assert video.read_bytes() == before and notes.read_text() == "mine"
