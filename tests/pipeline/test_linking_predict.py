"""``infer predict -t --link-tracklets``: linking at the video's end from the journal, and
a run killed before (or while) it links resumed to exactly the tracks of a clean run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.journal import journal_path, read_journal
from sleap_infer.pipeline.linked import LinkedJournal, link_input, link_journal
from sleap_infer.tracking.options import TrackingOptions

from cli_runs import infer_stopping, run_cli
from conftest import fixture_model


def _tracks(path: Path) -> list[tuple[int, list[str | None], list[float]]]:
    return [
        (
            lf.frame_idx,
            [i.track.name if i.track is not None else None for i in lf.instances],
            [float(i.tracking_score) for i in lf.instances],
        )
        for lf in sio.load_slp(str(path))
    ]


def _args(shared: Path, extra: list[str]) -> list[str | Path]:
    video = shared / "videos" / "centered_pair_small.mp4"
    model = fixture_model(shared, "bottomup")
    args = ["predict", video, "-m", model, "--device", "cpu", "-b", "4", "-q", "--frames", "0-47"]
    return [*args, "--tracking", "--peak-threshold", "0.1", "--link-tracklets", *extra]


@pytest.mark.parametrize(
    ("extra", "after"),
    [
        ([], 5),  # killed mid-video
        (["--tracker", "infer_bytetrack", "--track-buffer", "2"], 12),  # after the last batch
        (["--max-tracks", "2"], 12),
    ],
    ids=["classic-mid-video", "infer_bytetrack-at-the-end", "closed-set-at-the-end"],
)
def test_a_killed_linking_run_resumes_to_the_same_tracks(
    shared: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: list[str], after: int
) -> None:
    """SIGKILL after ``after`` batches (12: every frame journaled, the output not yet
    written, i.e. the end-of-video step cut off), then --resume: the same tracks as a
    run never interrupted, and the provenance says what linking did."""
    args = _args(shared, extra)
    resumed = tmp_path / "resumed.slp"
    killed = infer_stopping("SIGKILL", after, *args, "-o", resumed)
    assert killed.returncode == -9, killed.stderr
    assert not resumed.exists()
    assert read_journal(journal_path(resumed)).n_predicted == 4 * after
    code, err = run_cli(capsys, *args, "-o", resumed, "--resume")
    assert code == 0, err
    code, err = run_cli(capsys, *args, "-o", tmp_path / "clean.slp")
    assert code == 0, err
    clean, again = _tracks(tmp_path / "clean.slp"), _tracks(resumed)
    assert [f[:2] for f in clean] == [f[:2] for f in again]
    for (_, _, a), (_, _, b) in zip(clean, again, strict=True):
        np.testing.assert_array_equal(a, b)
    linking = sio.load_slp(str(resumed)).provenance["tracking"]["linking"]
    assert linking["identities"] <= linking["identities_before"]
    if "--max-tracks" in extra:
        assert linking["identities"] <= 2


def test_the_linked_journal_gives_back_each_pose_with_its_new_id(
    shared: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Kept journal, linked twice: the same ids (a pure function of the journal), laid
    back onto the same slots, NaN tracking scores where linking untracked a pose."""
    args = _args(shared, ["--max-tracks", "1"])
    out = tmp_path / "o.slp"
    killed = infer_stopping("SIGKILL", 12, *args, "-o", out)
    assert killed.returncode == -9, killed.stderr
    journal = read_journal(journal_path(out))
    options = TrackingOptions(link_tracklets=True, max_tracks=1)
    first, result = link_journal(journal, options)
    second, _ = link_journal(journal, options)
    assert isinstance(first, LinkedJournal) and isinstance(second, LinkedJournal)
    np.testing.assert_array_equal(first.relabel, second.relabel)
    assert result.identities == 1
    before = link_input(journal.batches()).arrays()[2]
    after = np.concatenate(
        [b.class_ids[b.valid] for b in first.batches() if b.class_ids is not None]
    )
    np.testing.assert_array_equal(after, first.relabel)
    scores = np.concatenate([b.class_scores[b.valid] for b in first.batches()])
    assert np.isnan(scores[after < 0]).all()
    assert (before >= 0).sum() >= (after >= 0).sum()
    assert link_journal(journal, TrackingOptions())[0] is journal  # off: untouched


def test_linking_reads_the_re_id_vectors_of_an_embedding_run(
    shared: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Centroid + embedding models: the journal's vectors reach the linker (sleap-nn
    calibrates them per video; 24 frames are too few to trust them for linking, so
    it links by position, as here), and the closed set keeps N=2."""
    video = shared / "videos" / "synthetic_multi.mp4"
    models = [shared / "models" / "synthetic_centroid", shared / "models" / "synthetic_embedding"]
    out = tmp_path / "emb.slp"
    args = ["predict", video, "-m", models[0], "-m", models[1], "--device", "cpu", "-q"]
    code, err = run_cli(capsys, *args, "-t", "--link-tracklets", "--max-tracks", "2", "-o", out)
    assert code == 0, err
    labels = sio.load_slp(str(out))
    linking = labels.provenance["tracking"]["linking"]
    assert linking["appearance"] is False and linking["identities"] <= 2
    assert all(i.identity_embedding is not None for lf in labels for i in lf.instances)
    assert {i.track.name for lf in labels for i in lf.instances if i.track} <= {
        "track_0",
        "track_1",
    }
