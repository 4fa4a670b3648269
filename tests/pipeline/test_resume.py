"""predict_to_file: journaled runs, interruption and resume, bad frames in the provenance."""

from __future__ import annotations

from pathlib import Path

import pytest
import sleap_io as sio

from sleap_infer.core.errors import ResumeError
from sleap_infer.journal import journal_path, read_journal
from sleap_infer.layers import PredictOptions
from sleap_infer.pipeline.pipeline import Pipeline
from sleap_infer.sources.video import CORRUPT, DECODE_ERROR, MISSING_AT_END

import scene
from broken_videos import faststart_mp4, noisy_frames, truncated_copy, zeroed_copy
from conftest import (
    SYNTHETIC_MODEL,
    assert_same_predictions,
    fixture_model,
    interrupt_after_batches,
    pipeline,
    predicted_poses,
)


@pytest.fixture(scope="module")
def pipe() -> Pipeline:
    return pipeline([SYNTHETIC_MODEL], device="cpu", batch_size=4)


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("videos") / "scene.mp4"
    scene.write_video(path, n_frames=40, seed=3)
    return path


def test_interrupted_run_resumes_to_the_clean_result(
    pipe: Pipeline, video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean = pipe.predict_to_file(video, output=tmp_path / "clean.slp")
    assert clean.counts.frames == 40 and not journal_path(tmp_path / "clean.slp").exists()

    out = tmp_path / "resumed.slp"
    with monkeypatch.context() as m:
        interrupt_after_batches(m, 3)
        with pytest.raises(KeyboardInterrupt):
            pipe.predict_to_file(video, output=out)
    assert not out.exists()
    partial = read_journal(journal_path(out))
    assert partial.predicted.tolist() == list(range(12))

    with pytest.raises(ResumeError, match=r"resumed\.slp\.partial: .* pass resume=True"):
        pipe.predict_to_file(video, output=out)
    resumed = pipe.predict_to_file(video, output=out, resume=True)
    assert (resumed.counts.frames, resumed.resumed_frames) == (40, 12)
    assert_same_predictions(tmp_path / "clean.slp", out)
    assert not journal_path(out).exists()
    prov = sio.load_slp(str(out)).provenance
    assert [s["resumed_from_frames"] for s in prov["sessions"]] == [0, 12]
    assert prov["frames_processed"] == 40


def test_a_torn_journal_tail_is_predicted_again(
    pipe: Pipeline, video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "torn.slp"
    with monkeypatch.context() as m:
        interrupt_after_batches(m, 5)
        with pytest.raises(KeyboardInterrupt):
            pipe.predict_to_file(video, output=out, frames="0-9,20-")
    jpath = journal_path(out)
    data = jpath.read_bytes()
    jpath.write_bytes(data[:-25])  # the last batch record was half-written when power failed
    assert read_journal(jpath).n_predicted == 16
    pipe.predict_to_file(video, output=out, frames="0-9,20-", resume=True)
    pipe.predict_to_file(video, output=tmp_path / "clean.slp", frames="0-9,20-")
    assert_same_predictions(tmp_path / "clean.slp", out)
    assert predicted_poses(out)[0] == [*range(10), *range(20, 40)]


def test_resume_refuses_a_journal_from_other_settings(
    video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = pipeline([SYNTHETIC_MODEL], device="cpu", options=PredictOptions(peak_threshold=0.2))
    out = tmp_path / "p.slp"
    with monkeypatch.context() as m:
        interrupt_after_batches(m, 1)
        with pytest.raises(KeyboardInterrupt):
            first.predict_to_file(video, output=out)
    other = pipeline([SYNTHETIC_MODEL], device="cpu", options=PredictOptions(peak_threshold=0.5))
    with pytest.raises(
        ResumeError, match=r"differs: options.peak_threshold: 0.2 then, 0.5 now; use overwrite=True"
    ):
        other.predict_to_file(video, output=out, resume=True)
    with pytest.raises(ResumeError, match='differs: frames: "all" then, "0-9" now;'):
        first.predict_to_file(video, output=out, resume=True, frames="0-9")
    result = other.predict_to_file(video, output=out, overwrite=True)
    assert result.resumed_frames == 0 and result.counts.frames == 40
    assert sio.load_slp(str(out)).provenance["options"]["peak_threshold"] == 0.5


def test_bad_frames_are_skipped_and_recorded(pipe: Pipeline, tmp_path: Path) -> None:
    full = faststart_mp4(tmp_path / "full.mp4", noisy_frames(100))
    damaged = zeroed_copy(full, tmp_path / "damaged.mp4", at=0.5)
    bad = truncated_copy(damaged, tmp_path / "bad.mp4", 0.85)
    result = pipe.predict_to_file(bad, output=tmp_path / "bad.slp")
    assert result.truncated
    tail = [e for e in result.bad_frames if e.kind == MISSING_AT_END]
    mid = [e for e in result.bad_frames if e.kind != MISSING_AT_END]
    assert len(tail) == 1 and tail[0].last == 99
    assert result.counts.frames + result.n_bad_frames == 100
    prov = sio.load_slp(str(tmp_path / "bad.slp")).provenance
    assert prov["frames_processed"] == result.counts.frames
    recorded = {(b["frame_idx"], b["count"], b["kind"]) for b in prov["bad_frames"]}
    assert recorded == {(e.index, e.count, e.kind) for e in result.bad_frames}
    assert prov["bad_frames"][-1]["reason"].startswith("stream ended after frame")
    # The zeroed bytes: a packet that fails to decode, and frames FFmpeg flags corrupt.
    assert any(e.kind == DECODE_ERROR and e.reason.startswith("decode error") for e in mid)
    assert {e.kind for e in mid} <= {DECODE_ERROR, CORRUPT}
    assert mid[0].last < tail[0].index  # predicting went on past the damaged frame


def test_multi_instance_model_resumes_exactly(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = pipeline([fixture_model(shared, "centroid")], device="cpu", batch_size=4)
    video = shared / "videos" / "centered_pair_small.mp4"
    out = tmp_path / "pair.slp"
    with monkeypatch.context() as m:
        interrupt_after_batches(m, 4)
        with pytest.raises(KeyboardInterrupt):
            model.predict_to_file(video, output=out, frames="0-39")
    model.predict_to_file(video, output=out, frames="0-39", resume=True)
    model.predict_to_file(video, output=tmp_path / "clean.slp", frames="0-39")
    assert_same_predictions(tmp_path / "clean.slp", out)
