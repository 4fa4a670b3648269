"""A finished output is kept: a rerun skips it only for the same request, a run never
replaces one that another run finished meanwhile (issue 29 item 4, issue 28 item 4)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import sleap_io as sio

import sleap_infer
from sleap_infer.core.errors import OutputExistsError
from sleap_infer.journal import journal_path
from sleap_infer.pipeline.request import REQUEST_KEY
from sleap_infer.writers.outputs import stored_provenance

import scene
from cli_runs import error_lines, run_cli
from conftest import SYNTHETIC_MODEL

MODEL = str(SYNTHETIC_MODEL)


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("rerun") / "v.mp4"
    scene.write_video(path, n_frames=12)
    return path


def _frames(path: Path) -> int:
    return len(sio.load_slp(str(path)).labeled_frames)


def test_a_run_never_replaces_an_output_finished_while_it_predicted(
    tmp_path: Path, video: Path
) -> None:
    """The quick run saw no output when it started; the full run finished during it."""
    pipe = sleap_infer.load(MODEL, device="cpu")
    full = tmp_path / "full.slp"
    pipe.predict_to_file(video, full)  # what the full run will have written
    out = tmp_path / "v.slp"

    def full_run_finishes(_info: object, _n: int) -> None:
        shutil.copyfile(full, out)

    with pytest.raises(OutputExistsError, match="another run wrote this output"):
        pipe.predict_to_file(video, out, frames="0-3", on_start=full_run_finishes)
    assert _frames(out) == 12  # the full run's output, untouched
    assert journal_path(out).exists()  # the quick run's frames are kept too
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_a_rerun_skips_only_the_same_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, video: Path
) -> None:
    out = tmp_path / "v.slp"
    base = ("predict", video, "-m", MODEL, "--device", "cpu", "-o", out, "--progress", "none")
    code, err = run_cli(capsys, *base, "--frames", "0-5")
    assert code == 0, err
    request = stored_provenance(out)[REQUEST_KEY]
    assert request["frames"] == "0-5" and len(request["checkpoint_sha256"]) == 1
    before = out.read_bytes()

    code, err = run_cli(capsys, *base, "--frames", "0-5")  # same request: skipped
    assert code == 0 and "skipped" in err, err
    for extra, differs in (
        ((), "predicted with other frames (0-5 then, all now);"),  # 6 predicted, all asked
        (("--frames", "0-5", "--peak-threshold", "0.5"), "with other options (peak_threshold);"),
    ):
        code, err = run_cli(capsys, *base, *extra)
        [line] = error_lines(err)
        assert code == 1 and differs in line and "--overwrite" in line, err
        assert out.read_bytes() == before
    code, err = run_cli(capsys, *base, "--overwrite")
    assert code == 0 and _frames(out) == 12, err


def test_a_model_path_is_checked_before_anything_is_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, video: Path
) -> None:
    out = tmp_path / "v.slp"
    code, err = run_cli(capsys, "predict", video, "-m", MODEL, "-o", out, "-q")
    assert code == 0, err
    code, err = run_cli(capsys, "predict", video, "-m", tmp_path / "nonexistent", "-o", out)
    [line] = error_lines(err)
    assert code == 1 and "model path does not exist" in line and "skipped" not in err


def test_the_refusal_says_what_differs_in_words_on_one_line() -> None:
    """The README's top-down line after its single-instance line: other checkpoints and
    tracking. The line names the parts in words; no hashes, no JSON (issue 44 item 1)."""
    from sleap_infer.batch.tasks import other_request_message
    from sleap_infer.pipeline.request import request_changes

    then = {"checkpoint_sha256": ["7ef5fc9e4a0a" + "0" * 52], "options": {"peak_threshold": 0.2}}
    then["frames"] = "all"
    now = {
        "checkpoint_sha256": ["7edf2e8b4ae1" + "1" * 52, "f5e6189f3046" + "2" * 52],
        "options": {"peak_threshold": 0.5},
        "frames": "0-9",
        "tracking": {"candidates": None, "features": None, "tracker": "classic"},
    }
    line = other_request_message(
        Path("v.mp4.predictions.slp"), request_changes({"request": then}, now)
    )
    assert line == (
        "v.mp4.predictions.slp: exists, predicted with other models, other frames "
        "(all then, 0-9 now), no tracking (this run tracks) and other options "
        "(peak_threshold); --overwrite replaces it, or -o writes this run elsewhere"
    )
    now["tracking"]["tracker"] = "sort"
    line = other_request_message(
        Path("p.slp"), request_changes({"request": {**now, "tracking": {}}}, now)
    )
    assert "with other tracking settings;" in line and "{" not in line and "\n" not in line


def test_a_changed_config_is_named_alone_and_other_models_cover_their_configs() -> None:
    """#44/#45: the config's hash belongs to the request; the line names it in words, and
    only where the checkpoints are the same (other models bring other configs)."""
    from sleap_infer.batch.tasks import other_request_message

    config = "models: training config sha256 0418c37c029b then, 76464f390f1b now"
    checkpoint = "models: checkpoint sha256 7ef5fc9e4a0a then, f5e6189f3046 now"
    older = "models: training config sha256 none then, 76464f390f1b now"
    path = Path("v.slp")
    assert "predicted with another training_config.yaml;" in other_request_message(path, [config])
    both = other_request_message(path, [checkpoint, config])
    assert "predicted with other models;" in both and "training" not in both
    assert "no training config recorded" in other_request_message(path, [older])
