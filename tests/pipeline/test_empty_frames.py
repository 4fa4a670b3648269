"""Empty frames (predicted, nothing found) are written by default, as sleap-nn 0.3.5 writes
them; ``no_empty_frames`` leaves them out. Resume keeps the same frames, and frames that
could not be decoded are never written as empty frames (they were not predicted)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sleap_io as sio

import sleap_infer
from sleap_infer.core.options import PredictOptions
from sleap_infer.journal import journal_path, read_journal
from sleap_infer.pipeline.pipeline import Pipeline

import scene
from broken_videos import faststart_mp4, noisy_frames, truncated_copy, zeroed_copy
from conftest import SYNTHETIC_MODEL, interrupt_after_batches, pipeline

NOTHING = PredictOptions(peak_threshold=2.0)  # no confidence map reaches 2: every frame empty


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("videos") / "scene.mp4"
    scene.write_video(path, n_frames=20, seed=5)
    return path


@pytest.fixture(scope="module")
def blind() -> Pipeline:
    return pipeline([SYNTHETIC_MODEL], device="cpu", batch_size=4, options=NOTHING)


def _frames(path: Path) -> list[tuple[int, int]]:
    return [(lf.frame_idx, len(lf.instances)) for lf in sio.load_slp(str(path))]


def test_every_predicted_frame_is_written_unless_left_out(
    blind: Pipeline, video: Path, tmp_path: Path
) -> None:
    result = blind.predict_to_file(video, tmp_path / "kept.slp", frames="2-9,15")
    assert (result.counts.frames, result.counts.instances) == (9, 0)
    assert _frames(tmp_path / "kept.slp") == [(i, 0) for i in [*range(2, 10), 15]]
    dropping = pipeline(
        [SYNTHETIC_MODEL],
        device="cpu",
        options=PredictOptions(peak_threshold=2.0, no_empty_frames=True),
    )
    dropping.predict_to_file(video, tmp_path / "dropped.slp", frames="2-9,15")
    assert _frames(tmp_path / "dropped.slp") == []


def test_load_takes_no_empty_frames_by_name(video: Path, tmp_path: Path) -> None:
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu", peak_threshold=2.0, no_empty_frames=True)
    assert pipe.options.no_empty_frames
    pipe.predict_to_file(video, tmp_path / "p.slp", frames="0-3")
    assert _frames(tmp_path / "p.slp") == []
    assert sio.load_slp(str(tmp_path / "p.slp")).provenance["options"]["no_empty_frames"]


def test_resume_keeps_the_empty_frames_of_both_runs(
    blind: Pipeline, video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "resumed.slp"
    with monkeypatch.context() as m:
        interrupt_after_batches(m, 2)
        with pytest.raises(KeyboardInterrupt):
            blind.predict_to_file(video, output=out)
    partial = read_journal(journal_path(out))
    # The journal records the frames predicted with no instance, so resume skips them ...
    assert partial.predicted.tolist() == list(range(8)) and partial.totals.instances == 0
    result = blind.predict_to_file(video, output=out, resume=True)
    assert (result.resumed_frames, result.counts.frames) == (8, 20)
    # ... and the output holds them all, once each, as an uninterrupted run does.
    assert _frames(out) == [(i, 0) for i in range(20)]


def test_no_empty_frames_may_change_on_resume(
    blind: Pipeline, video: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What goes into the file only, like --mask-output: the journal is the same."""
    out = tmp_path / "changed.slp"
    with monkeypatch.context() as m:
        interrupt_after_batches(m, 1)
        with pytest.raises(KeyboardInterrupt):
            blind.predict_to_file(video, output=out)
    dropping = pipeline(
        [SYNTHETIC_MODEL],
        device="cpu",
        batch_size=4,
        options=PredictOptions(peak_threshold=2.0, no_empty_frames=True),
    )
    result = dropping.predict_to_file(video, output=out, resume=True)
    assert (result.resumed_frames, result.counts.frames) == (4, 20)
    assert _frames(out) == []


def test_undecodable_frames_are_not_written_as_empty_frames(
    blind: Pipeline, tmp_path: Path
) -> None:
    """sleap-nn skips frames it cannot read; we record them in the provenance
    (``bad_frames``) and write no frame for them: nothing was predicted there."""
    full = faststart_mp4(tmp_path / "full.mp4", noisy_frames(60))
    damaged = zeroed_copy(full, tmp_path / "damaged.mp4", at=0.5)
    bad = truncated_copy(damaged, tmp_path / "bad.mp4", 0.85)
    result = blind.predict_to_file(bad, output=tmp_path / "bad.slp")
    unread = {i for e in result.bad_frames for i in range(e.index, e.last + 1)}
    assert unread and result.counts.frames + len(unread) == 60
    written = [f for f, _ in _frames(tmp_path / "bad.slp")]
    assert written == sorted(set(range(60)) - unread)  # every decoded frame, no bad one
