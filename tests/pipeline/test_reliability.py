"""Nothing lost, nothing silent: selections, validation, finished outputs, failed-run journals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.batch.execute import JobSettings
from sleap_infer.batch.run import Batch, plan_batch, run_batch
from sleap_infer.batch.tasks import DONE, FAILED, INTERRUPTED, SKIPPED, VideoOutcome, VideoTask
from sleap_infer.core.errors import OutputError, ResumeError, UsageError, VideoError
from sleap_infer.core.options import DecodeSettings, PredictOptions
from sleap_infer.journal import journal_path, read_journal
from sleap_infer.pipeline import video_job
from sleap_infer.pipeline.pipeline import Pipeline
from sleap_infer.pipeline.spec import PipelineSpec
from sleap_infer.sources.video import VideoReader
from sleap_infer.writers.registry import get_format

import scene
from conftest import (
    SYNTHETIC_MODEL,
    assert_same_predictions,
    interrupt_after_batches,
    pipeline,
    predicted_poses,
)
from model_factory import config_dict, write_model_dir


@pytest.fixture(scope="module")
def pipe() -> Pipeline:
    return pipeline([SYNTHETIC_MODEL], device="cpu", batch_size=4)


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("videos") / "scene.mp4"
    scene.write_video(path, n_frames=20, seed=5)
    return path


class _Events:
    def __init__(self) -> None:
        self.finished: list[VideoOutcome] = []

    def video_started(self, task: VideoTask, total_frames: int) -> None:
        pass

    def frames_done(self, task: VideoTask, n: int) -> None:
        pass

    def video_finished(self, outcome: VideoOutcome) -> None:
        self.finished.append(outcome)


# --- --frames ---------------------------------------------------------------------------


def test_a_selection_past_the_end_is_an_error_and_keeps_the_earlier_output(
    pipe: Pipeline, video: Path, tmp_path: Path
) -> None:
    out = tmp_path / "p.slp"
    pipe.predict_to_file(video, output=out)
    before = out.read_bytes()
    with pytest.raises(
        VideoError, match=r": frames 1000-2000 selects no frame: .* 20 frames \(0-19\)"
    ):
        pipe.predict_to_file(video, output=out, frames="1000-2000")
    assert out.read_bytes() == before and not journal_path(out).exists()


def test_a_clamped_selection_says_how_many_frames_it_dropped(
    pipe: Pipeline, video: Path, tmp_path: Path
) -> None:
    with pytest.warns(UserWarning, match="11 selected frames past the end"):
        result = pipe.predict_to_file(video, output=tmp_path / "p.slp", frames="15-29,40")
    assert result.counts.frames == 5
    assert len(result.warnings) == 1
    assert "11 selected frames past the end" in result.warnings[0]
    assert "predicting the 5 that exist" in result.warnings[0]
    quiet = pipe.predict_to_file(video, output=tmp_path / "q.slp", frames="15-")
    assert quiet.counts.frames == 5 and quiet.warnings == []  # an open range means "to the end"


# --- validation -------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 4, 17, 999])
def test_integral_patch_size_must_be_odd_and_small(size: int) -> None:
    with pytest.raises(UsageError, match=rf"--integral-patch-size {size}: must be an odd number"):
        PredictOptions(integral_patch_size=size)
    with pytest.raises(UsageError, match="odd number from 1 to 15"):
        DecodeSettings(integral_patch_size=size)


def test_valid_patch_sizes_are_accepted() -> None:
    assert [PredictOptions(integral_patch_size=s).integral_patch_size for s in (1, 5, 15)] == [
        1,
        5,
        15,
    ]


def test_a_batch_larger_than_the_video_runs_only_real_frames(
    video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = pipeline([SYNTHETIC_MODEL], device="cpu", batch_size=1000)
    shapes: list[int] = []
    # warmups call predict, the runner's batches start (postprocessing follows on a thread)
    for name in ("predict", "start"):
        original = getattr(big.layer, name)

        def spy(frames: np.ndarray, original=original):  # type: ignore[no-untyped-def]
            shapes.append(int(frames.shape[0]))
            return original(frames)

        monkeypatch.setattr(big.layer, name, spy)
    big.predict_to_file(video, output=tmp_path / "big.slp")
    # the one batch (a run of one batch is not warmed up first: it would only run the
    # network twice): the 20 real frames, never 1000 zero-padded ones
    assert shapes == [20]
    shapes.clear()
    big.predict_to_file(video, output=tmp_path / "few.slp", frames="0-2")
    assert shapes == [3]  # again one batch, of a new shape
    small = pipeline([SYNTHETIC_MODEL], device="cpu", batch_size=4)
    small.predict_to_file(video, output=tmp_path / "ref.slp")
    assert_same_predictions(tmp_path / "ref.slp", tmp_path / "big.slp", rtol=1e-5)


def test_a_pair_trained_on_different_skeletons_is_warned_about(tmp_path: Path) -> None:
    centroid_raw = config_dict("centroid")
    skeleton = centroid_raw["data_config"]["skeletons"][0]
    skeleton["nodes"].append({"name": "wing"})
    centroid = write_model_dir(tmp_path / "centroid", centroid_raw)
    instance = write_model_dir(tmp_path / "instance", config_dict("centered_instance"))
    pair = pipeline([centroid, instance], device="cpu")
    assert len(pair.warnings) == 1
    assert "different skeletons (4 nodes head, thorax, tail, wing vs 3 nodes" in pair.warnings[0]
    assert pair.warnings[0].endswith("the output uses instance's")
    same = write_model_dir(tmp_path / "centroid2", config_dict("centroid"))
    assert pipeline([same, instance], device="cpu").warnings == []


# --- journals that must not block a plain rerun -----------------------------------------


def _fail_output_write(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OutputError("/x/p.nwb: cannot write (simulated)")

    monkeypatch.setattr(video_job, "write_from_journal", refuse)


def test_a_run_that_failed_writing_its_output_is_continued_by_a_plain_rerun(
    pipe: Pipeline, video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "p.slp"
    with monkeypatch.context() as m:
        _fail_output_write(m)
        with pytest.raises(OutputError):
            pipe.predict_to_file(video, output=out)
    journal = read_journal(journal_path(out))
    assert (
        journal.n_predicted == 20
        and journal.failed == "OutputError: /x/p.nwb: cannot write (simulated)"
    )
    with pytest.warns(UserWarning, match="continuing the 20 frames of a run that failed"):
        again = pipe.predict_to_file(video, output=out)  # no --resume needed
    assert again.resumed_frames == 20 and again.counts.frames == 20
    assert "continuing the 20 frames of a run that failed" in again.warnings[0]
    pipe.predict_to_file(video, output=tmp_path / "clean.slp")
    assert_same_predictions(tmp_path / "clean.slp", out)


def test_a_failed_journal_with_other_settings_is_replaced_with_a_warning(
    pipe: Pipeline, video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "p.slp"
    with monkeypatch.context() as m:
        _fail_output_write(m)
        with pytest.raises(OutputError):
            pipe.predict_to_file(video, output=out, frames="0-9")
    with pytest.warns(UserWarning, match="discarded 10 frames of a run that failed"):
        again = pipe.predict_to_file(video, output=out)
    assert again.resumed_frames == 0 and again.counts.frames == 20
    assert "discarded 10 frames" in again.warnings[0]
    assert 'frames: "0-9" then, "all" now' in again.warnings[0]


def _fail_on_call(
    monkeypatch: pytest.MonkeyPatch, pipe: Pipeline, n: int, exc: BaseException
) -> None:
    """The layer raises ``exc`` on its ``n``-th batch (the earlier ones run normally)."""
    original = pipe.layer.start
    calls = {"n": 0}

    def start(frames: np.ndarray):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == n:
            raise exc
        return original(frames)

    monkeypatch.setattr(pipe.layer, "start", start)


def test_memory_error_mid_video_marks_the_journal_failed(
    pipe: Pipeline, video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "p.slp"
    with monkeypatch.context() as m:
        _fail_on_call(m, pipe, 3, MemoryError("cannot allocate 50 GiB"))
        with pytest.raises(MemoryError):
            pipe.predict_to_file(video, output=out)
    journal = read_journal(journal_path(out))
    assert journal.n_predicted == 8 and journal.failed == "MemoryError: cannot allocate 50 GiB"
    with pytest.warns(UserWarning, match="continuing the 8 frames of a run that failed"):
        assert pipe.predict_to_file(video, output=out).resumed_frames == 8


def test_ctrl_c_before_the_first_frame_leaves_nothing_that_blocks(
    pipe: Pipeline, video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "p.slp"
    with monkeypatch.context() as m:
        _fail_on_call(m, pipe, 1, KeyboardInterrupt())
        with pytest.raises(KeyboardInterrupt):
            pipe.predict_to_file(video, output=out)
    assert read_journal(journal_path(out)).n_predicted == 0
    result = pipe.predict_to_file(video, output=out)
    assert result.counts.frames == 20 and result.warnings == []


def test_an_interrupted_journal_with_predictions_still_asks_for_a_flag(
    pipe: Pipeline, video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "p.slp"
    with monkeypatch.context() as m:
        _fail_on_call(m, pipe, 3, KeyboardInterrupt())
        with pytest.raises(KeyboardInterrupt):
            pipe.predict_to_file(video, output=out)
    with pytest.raises(ResumeError, match=r"interrupted run exist \(8 frames\); pass resume=True"):
        pipe.predict_to_file(video, output=out)


# --- finished outputs, inputs checked before the model ----------------------------------


def test_finished_outputs_are_skipped_by_default_and_replaced_with_overwrite(
    video: Path, tmp_path: Path
) -> None:
    fmt = get_format("slp")
    out = tmp_path / "p.slp"
    tasks = plan_batch([video], out, fmt)
    spec = PipelineSpec(model_paths=(str(SYNTHETIC_MODEL),))
    first = run_batch(tasks, spec, JobSettings(), _Events(), ["cpu"])
    assert [o.status for o in first.outcomes] == [DONE]
    rerun = run_batch(tasks, spec, JobSettings(), _Events(), ["cpu"])
    assert [o.status for o in rerun.outcomes] == [SKIPPED]
    assert rerun.outcomes[0].message == f"{out} exists (--overwrite replaces it)"
    # Another request (a 10-frame test) is no reason to skip, nor to replace: one line.
    other = run_batch(tasks, spec, JobSettings(frames="0-9"), _Events(), ["cpu"])
    assert [o.status for o in other.outcomes] == [FAILED]
    assert "predicted with other frames (all then, 0-9 now);" in other.outcomes[0].message
    assert predicted_poses(out)[0] == list(range(20))  # untouched
    forced = run_batch(tasks, spec, JobSettings(frames="0-9", overwrite=True), _Events(), ["cpu"])
    assert [o.status for o in forced.outcomes] == [DONE]
    assert predicted_poses(out)[0] == list(range(10))


def test_a_foreign_file_at_the_output_path_is_refused_not_replaced(
    video: Path, tmp_path: Path
) -> None:
    out = tmp_path / "notes.slp"
    out.write_text("my notes")
    tasks = plan_batch([video], out, get_format("slp"))
    spec = PipelineSpec(model_paths=(str(SYNTHETIC_MODEL),))
    result = run_batch(tasks, spec, JobSettings(), _Events(), ["cpu"])
    assert [o.status for o in result.outcomes] == [FAILED]
    assert "exists but is not a complete slp output" in result.outcomes[0].message
    assert out.read_text() == "my notes"


def test_missing_inputs_fail_before_the_model_is_loaded(tmp_path: Path) -> None:
    tasks = plan_batch([tmp_path / "typo.mp4"], None, get_format("slp"))
    spec = PipelineSpec(model_paths=(str(tmp_path / "no_model"),))  # would fail to load
    batch = Batch(tasks, spec, JobSettings(), ["cpu"])
    assert batch.todo == []  # so the CLI never loads the model
    events = _Events()
    result = batch.run(events)
    assert [o.status for o in result.outcomes] == [FAILED]
    assert result.outcomes[0].message == f"{tmp_path / 'typo.mp4'}: video not found"
    assert events.finished == result.outcomes


def test_an_interrupted_outcome_counts_the_frames_saved(
    video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    interrupt_after_batches(monkeypatch, 2)
    tasks = plan_batch([video], tmp_path / "p.slp", get_format("slp"))
    spec = PipelineSpec(model_paths=(str(SYNTHETIC_MODEL),))
    result = run_batch(tasks, spec, JobSettings(), _Events(), ["cpu"])
    assert result.interrupted
    assert [(o.status, o.counts.frames) for o in result.outcomes] == [(INTERRUPTED, 8)]


def test_relative_inputs_are_stored_with_absolute_paths(
    video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pipe: Pipeline
) -> None:
    monkeypatch.chdir(video.parent)
    assert VideoReader(video.name).info.path == video
    pipe.predict_to_file(video.name, output=tmp_path / "p.slp")
    assert sio.load_slp(str(tmp_path / "p.slp")).videos[0].filename == str(video)
