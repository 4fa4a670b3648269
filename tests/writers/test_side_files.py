"""Side-output JSON files (``--summary-json``, ``--json``) never replace an input, the run's
own outputs, or a file that is not one of our reports of the same kind (issue 29, item 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sleap_infer.core.errors import OutputError, UsageError
from sleap_infer.writers.side_files import check_side_file, is_ours, write_json

import scene
from cli_runs import error_lines, run_cli
from conftest import SYNTHETIC_MODEL

MODEL = str(SYNTHETIC_MODEL)
KIND = "sleap_infer.test/1"


def _digest(path: Path) -> bytes:
    return path.read_bytes()


def test_the_helper_refuses_inputs_outputs_and_foreign_files(tmp_path: Path) -> None:
    video = tmp_path / "v.mp4"
    video.write_bytes(b"video")
    out = tmp_path / "v.slp"
    out.write_bytes(b"predictions")
    with pytest.raises(UsageError, match="is an input of this run"):
        check_side_file(tmp_path / "." / "v.mp4", "--json", KIND, overwrite=True, inputs=[video])
    with pytest.raises(UsageError, match="one of this run's outputs"):
        check_side_file(out, "--json", KIND, overwrite=True, outputs=[out])
    foreign = tmp_path / "notes.json"
    foreign.write_text('{"a": 1}')
    with pytest.raises(UsageError, match="pass --overwrite"):
        check_side_file(foreign, "--json", KIND)
    check_side_file(foreign, "--json", KIND, overwrite=True)  # asked for
    with pytest.raises(OutputError, match="is a folder"):
        check_side_file(tmp_path, "--json", KIND, overwrite=True)
    ours = tmp_path / "ours.json"
    write_json(ours, {"schema": KIND, "x": 1}, "x")
    assert is_ours(ours, KIND) and not is_ours(ours, "sleap_infer.other/1")
    check_side_file(ours, "--json", KIND)  # ours of this kind: replaced without a flag
    with pytest.raises(UsageError):
        check_side_file(ours, "--json", "sleap_infer.other/1")  # ours, another kind
    assert video.read_bytes() == b"video" and out.read_bytes() == b"predictions"


def test_a_foreign_file_that_appears_before_the_rename_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text("someone else's\n")
    with pytest.raises(Exception, match="not ours appeared"):
        write_json(path, {"schema": KIND}, "--json s.json", schema=KIND, overwrite=False)
    assert path.read_text() == "someone else's\n"
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]  # no temporary file left


@pytest.fixture
def video(tmp_path: Path) -> Path:
    path = tmp_path / "v.mp4"
    scene.write_video(path, n_frames=6)
    return path


@pytest.mark.parametrize("target", ["video", "checkpoint", "output", "foreign"])
def test_predict_summary_json_never_destroys_a_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, video: Path, target: str
) -> None:
    output = tmp_path / "v.slp"
    foreign = tmp_path / "last_night.slp"
    foreign.write_bytes(b"last night's predictions")
    path = {
        "video": video,
        "checkpoint": SYNTHETIC_MODEL / "best.ckpt",
        "output": output,
        "foreign": foreign,
    }[target]
    before = path.read_bytes() if path.exists() else None
    code, err = run_cli(
        capsys, "predict", video, "-m", MODEL, "-o", output, "--summary-json", path, "-q"
    )
    assert code == 2, err
    [line] = error_lines(err)
    assert str(path) in line
    assert (path.read_bytes() if path.exists() else None) == before
    assert not output.exists()  # refused before anything ran


def test_predict_replaces_its_own_earlier_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, video: Path
) -> None:
    summary = tmp_path / "summary.json"
    for _ in range(2):  # the second run finds (and may replace) the first run's summary
        code, err = run_cli(capsys, "predict", video, "-m", MODEL, "--summary-json", summary, "-q")
        assert code == 0, err
    assert json.loads(summary.read_text())["schema"] == "sleap_infer.run_summary/1"
    foreign = tmp_path / "notes.json"
    foreign.write_text("{}")
    code, err = run_cli(
        capsys, "predict", video, "-m", MODEL, "--summary-json", foreign, "--overwrite", "-q"
    )
    assert code == 0, err
    assert json.loads(foreign.read_text())["schema"] == "sleap_infer.run_summary/1"


def test_eval_info_system_json_refuse_inputs_and_foreign_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    truth = tmp_path / "labels.slp"
    truth.write_bytes(b"labels")
    preds = tmp_path / "preds.slp"
    preds.write_bytes(b"preds")
    code, err = run_cli(capsys, "eval", truth, preds, "--json", preds, "--overwrite")
    assert code == 2 and "is an input of this run" in err
    ckpt = SYNTHETIC_MODEL / "best.ckpt"
    before = ckpt.read_bytes()
    code, err = run_cli(capsys, "info", MODEL, "--json", ckpt, "--overwrite")
    assert code == 2 and "is an input of this run" in err
    assert ckpt.read_bytes() == before
    code, err = run_cli(capsys, "system", "--json", truth)
    assert code == 2 and "pass --overwrite" in err
    assert truth.read_bytes() == b"labels" and preds.read_bytes() == b"preds"


def test_system_json_is_ours_the_second_time(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "system.json"
    for _ in range(2):
        code, err = run_cli(capsys, "system", "--json", path)
        assert code == 0, err
    assert json.loads(path.read_text())["schema"] == "sleap_infer.system/1"


def test_render_never_writes_over_its_source_video(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, video: Path
) -> None:
    preds = tmp_path / "p.slp"
    preds.write_bytes(b"predictions")
    before = video.read_bytes()
    code, err = run_cli(capsys, "render", preds, "--video", video, "-o", video, "--overwrite")
    assert code == 2 and "would replace an input" in err
    assert video.read_bytes() == before
