"""The request record: what a rerun compares before it skips a finished output (issue 45).
The config's content belongs to the request, a broken config is never skipped past, and
frame selections are compared as the frame sets they resolve to."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sleap_infer.pipeline.request import frames_text, request_changes, resolved_frames
from sleap_infer.writers.outputs import stored_provenance

import scene
from cli_runs import error_lines, run_cli
from conftest import SYNTHETIC_MODEL


@pytest.fixture
def video(tmp_path: Path) -> Path:
    path = tmp_path / "v.mp4"
    scene.write_video(path, n_frames=6)
    return path


def _run(
    capsys: pytest.CaptureFixture[str], video: Path, model: Path, *args: str
) -> tuple[int, str]:
    out = video.with_name("v.slp")
    base = ("predict", video, "-m", model, "--device", "cpu", "-o", out, "--progress", "none")
    return run_cli(capsys, *base, *args)


def test_the_training_config_belongs_to_the_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, video: Path
) -> None:
    """A new preprocessing.scale (or renamed nodes) used to be "the same request": skipped."""
    model = tmp_path / "model"
    shutil.copytree(SYNTHETIC_MODEL, model)
    code, err = _run(capsys, video, model, "--frames", "0-1")
    assert code == 0, err
    config = model / "training_config.yaml"
    text = config.read_text()
    config.write_text(text.replace("scale: 1.0", "scale: 0.5", 1))
    code, err = _run(capsys, video, model, "--frames", "0-1")
    [line] = error_lines(err)
    assert code == 1 and "config" in line and "skipped" not in err, err
    config.write_text(text)  # the same config again: the same request
    code, err = _run(capsys, video, model, "--frames", "0-1")
    assert code == 0 and "skipped" in err, err
    config.write_text("data_config: [unclosed\n")
    code, err = _run(capsys, video, model, "--frames", "0-1")
    [line] = error_lines(err)
    assert code != 0 and "not valid YAML" in line and "skipped" not in err, err


def test_frame_selections_are_compared_as_frame_sets(
    capsys: pytest.CaptureFixture[str], video: Path
) -> None:
    """``0-5`` of a 6-frame video is every frame; ``0-2,3-5`` is ``0-5``; not text."""
    code, err = _run(capsys, video, SYNTHETIC_MODEL, "--frames", "0-5")
    assert code == 0, err
    for same in ((), ("--frames", "0-2,3-5"), ("--frames", "3-5, 0-2"), ("--frames", "0-")):
        code, err = _run(capsys, video, SYNTHETIC_MODEL, *same)
        assert code == 0 and "skipped" in err, (same, err)
    code, err = _run(capsys, video, SYNTHETIC_MODEL, "--frames", "0-4")
    [line] = error_lines(err)
    assert code == 1 and "frames" in line, err


def test_frames_text_merges_ranges_and_resolves_them_on_the_video() -> None:
    assert frames_text(None) == "all"
    assert frames_text("10-19, 0-9") == frames_text("0-19") == "0-19"
    assert frames_text("5,3,4,100-,120") == "3-5,100-"
    assert resolved_frames("0-165", 166) == "all"
    assert resolved_frames("100-", 120) == "100-119"
    assert resolved_frames("0-3,200-300", 10) == "0-3"
    stored = {"request": {"frames": "0-165", "video_frames": 166, "checkpoint_sha256": []}}
    assert request_changes(stored, {"frames": "all", "checkpoint_sha256": []}) == []
    assert request_changes(stored, {"frames": "0-164", "checkpoint_sha256": []}) != []


def test_refine_like_sleap_nn_is_recorded_and_belongs_to_the_request(
    capsys: pytest.CaptureFixture[str], video: Path
) -> None:
    """Issue 50 item 3: the flag is in the provenance's options, and a rerun without it
    is another request (refused without --overwrite), never skipped."""
    code, err = _run(capsys, video, SYNTHETIC_MODEL, "--frames", "0-1", "--refine-like-sleap-nn")
    assert code == 0, err
    provenance = stored_provenance(video.with_name("v.slp"))
    assert provenance is not None and provenance["options"]["refine_like_sleap_nn"] is True
    code, err = _run(capsys, video, SYNTHETIC_MODEL, "--frames", "0-1")
    [line] = error_lines(err)
    assert code == 1 and "with other options (refine_like_sleap_nn)" in line, err
