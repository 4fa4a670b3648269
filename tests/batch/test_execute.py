"""Two runs started on one folder (issue 45): a video the other run is predicting right
now, or finished meanwhile for the same request, is not a failure of this one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import sleap_infer
from sleap_infer.batch.execute import QuietEvents
from sleap_infer.batch.tasks import SKIPPED, VideoTask
from sleap_infer.journal import JournalWriter, journal_path

import scene
from cli_runs import error_lines, run_cli
from conftest import SYNTHETIC_MODEL

MODEL = str(SYNTHETIC_MODEL)


@pytest.fixture
def video(tmp_path: Path) -> Path:
    path = tmp_path / "v.mp4"
    scene.write_video(path, n_frames=6)
    return path


def test_a_video_in_progress_elsewhere_is_left_to_that_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, video: Path
) -> None:
    """It used to fail (exit 1) with advice to pass --overwrite."""
    out = tmp_path / "v.slp"
    # The other run: its journal open, and locked, as long as it predicts.
    with JournalWriter(journal_path(out), header={"fingerprint": {}}):
        args = ("predict", video, "-m", MODEL, "--device", "cpu", "-o", out)
        code, err = run_cli(capsys, *args, "--progress", "none")
    assert code == 0 and not error_lines(err), err
    assert "another infer process is predicting it right now; left to it" in err
    assert "in progress elsewhere" in err and "--overwrite" not in err
    assert not out.exists()


def test_a_video_finished_by_another_run_meanwhile_is_skipped(tmp_path: Path, video: Path) -> None:
    """The other run finished the same request while this one predicted: kept, skipped,
    and this run's journal of it removed (the output holds the same predictions)."""
    out = tmp_path / "v.slp"
    done = tmp_path / "done.slp"
    sleap_infer.plan(video, MODEL, output=done, device="cpu").run()

    class OtherRunFinishes(QuietEvents):
        def video_started(self, task: VideoTask, total_frames: int) -> None:
            shutil.copyfile(done, out)

    batch = sleap_infer.plan(video, MODEL, output=out, device="cpu")
    assert batch.todo
    result = batch.run(OtherRunFinishes())
    [outcome] = result.outcomes
    assert outcome.status == SKIPPED and not result.failed, outcome.message
    assert outcome.skip_reason == "finished by another run"
    assert out.read_bytes() == done.read_bytes() and not journal_path(out).exists()
