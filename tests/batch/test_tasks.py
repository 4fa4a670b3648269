"""What a batch may write and what counts as finished work (issue 45): an input of the
run is never one of its outputs, a file without our request record is not ours, and a
glob passes over our own outputs instead of predicting them as projects."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.batch.tasks import drop_own_outputs
from sleap_infer.pipeline.request import REQUEST_KEY, side_record_path
from sleap_infer.sources.inputs import expand_inputs
from sleap_infer.writers.outputs import stored_provenance

import scene
from cli_runs import error_lines, run_cli
from conftest import SYNTHETIC_MODEL

MODEL = str(SYNTHETIC_MODEL)


def write_labels(video: Path, path: Path, n_user: int = 2) -> None:
    """A SLEAP 1.x-style project of ``video`` with ``n_user`` user instances on frame 0."""
    skeleton = sio.Skeleton(["a", "b"])
    media = sio.Video(filename=str(video), open_backend=False)
    instances = [
        sio.Instance.from_numpy(np.array([[1.0, 2.0], [3.0, 4.0]]) + i, skeleton=skeleton)
        for i in range(n_user)
    ]
    frame = sio.LabeledFrame(video=media, frame_idx=0, instances=instances)
    sio.save_slp(sio.Labels([frame], videos=[media], skeletons=[skeleton]), str(path))


def _run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    return run_cli(capsys, "predict", *args, "-m", MODEL, "--device", "cpu", "--progress", "none")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    scene.write_video(tmp_path / "v.mp4", n_frames=6)
    return tmp_path


def test_an_input_is_never_written_over_by_another_inputs_output(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    """``'v.mp4*'`` matches the video and a SLEAP project named as its output: with
    --overwrite the video's predictions used to replace the project (2 user instances)."""
    project = folder / "v.mp4.predictions.slp"
    write_labels(folder / "v.mp4", project)
    before = project.read_bytes()
    code, err = _run(capsys, str(folder / "v.mp4*"), "--overwrite", "--frames", "0-1")
    assert code == 1, err
    [line] = [x for x in error_lines(err) if "v.mp4:" in x]
    assert "is also an input of this run" in line and str(project) in line
    assert project.read_bytes() == before  # kept, whatever --overwrite says
    # The project was an input too: predicted to its own output, never over itself.
    assert (folder / "v.mp4.predictions.slp.predictions.slp").exists()


def test_a_file_without_our_request_record_is_not_finished_work(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    """A SLEAP 1.x file at the output name used to "match" every request: skipped, exit 0."""
    labels = folder / "v.mp4.predictions.slp"
    write_labels(folder / "v.mp4", labels)
    before = labels.read_bytes()
    summary = folder / "summary.json"
    code, err = _run(capsys, folder / "v.mp4", "--summary-json", summary)
    [line] = error_lines(err)
    assert code == 1 and "no sleap_infer request record" in line and "skipped" not in err
    assert labels.read_bytes() == before
    assert json.loads(summary.read_text())["videos"][0]["status"] == "failed"
    # Not an input of this run: --overwrite may replace it.
    code, err = _run(capsys, folder / "v.mp4", "--overwrite", "--frames", "0-1")
    assert code == 0, err
    assert REQUEST_KEY in stored_provenance(labels)


def test_a_glob_passes_over_our_own_outputs(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    """``'data/*'`` used to predict ``v.mp4.predictions.slp`` as a project, one generation
    more per rerun."""
    code, err = _run(capsys, folder / "v.mp4", "--frames", "0-1", "--format", "slp,csv")
    assert code == 0, err
    (folder / "elsewhere.slp").write_bytes((folder / "v.mp4.predictions.slp").read_bytes())
    code, err = _run(capsys, str(folder / "*"), "--frames", "0-1", "--format", "slp,csv")
    assert code == 0, err
    [note] = [x for x in err.splitlines() if x.startswith("note:")]
    assert "skipped 3 inputs that are our own predictions" in note, note
    assert "1 video: 1 skipped" in err
    assert not list(folder.glob("*.predictions.slp.predictions.*"))


def test_a_project_named_like_an_output_stays_an_input(folder: Path) -> None:
    """Dropped by name only when it holds no user labels; named one by one, never."""
    write_labels(folder / "v.mp4", folder / "v.mp4.predictions.slp")
    write_labels(folder / "v.mp4", folder / "v.mp4.video1.predictions.slp", n_user=0)
    (folder / "v.mp4.predictions.csv").write_text("frame\n")
    (folder / "v.mp4.predictions.mp4").write_bytes(b"a video, not a format of ours")
    kept, dropped = drop_own_outputs(expand_inputs([str(folder / "v*")]))
    assert [i.path.name for i in kept] == [
        "v.mp4",
        "v.mp4.predictions.mp4",
        "v.mp4.predictions.slp",
    ]
    assert sorted(p.name for p in dropped) == [
        "v.mp4.predictions.csv",
        "v.mp4.video1.predictions.slp",
    ]
    # A --merge-into-project copy holds user labels too, and is ours all the same.
    write_labels(folder / "v.mp4", folder / "p.slp")
    merged = sio.load_slp(str(folder / "p.slp"))
    merged.provenance["sleap_infer_merged_from"] = str(folder / "p.slp")
    sio.save_slp(merged, str(folder / "p.slp.merged.slp"))
    kept, dropped = drop_own_outputs(expand_inputs([str(folder / "p*")]))
    assert [i.path.name for i in kept] == ["p.slp"] and [p.name for p in dropped] == [
        "p.slp.merged.slp"
    ]
    named = [str(folder / "v.mp4"), str(folder / "v.mp4.predictions.csv")]
    kept, dropped = drop_own_outputs(expand_inputs(named))
    assert len(kept) == 2 and not dropped


def test_a_csv_from_another_request_is_refused_like_an_slp(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    """``--format slp,csv`` next to a CSV of another request used to write the .slp and
    keep the stale CSV silently; the CSV's request is recorded beside it now."""
    video = folder / "v.mp4"
    csv = folder / "v.mp4.predictions.csv"
    code, err = _run(capsys, video, "--frames", "0-1", "--format", "csv")
    assert code == 0 and side_record_path(csv).exists(), err
    code, err = _run(capsys, video, "--frames", "0-1", "--format", "csv")  # the same: skipped
    assert code == 0 and "skipped" in err, err
    stale = csv.read_bytes()
    code, err = _run(capsys, video, "--frames", "0-2", "--format", "slp,csv")
    [line] = error_lines(err)
    assert code == 1 and str(csv) in line and "frames" in line, err
    assert csv.read_bytes() == stale and not (folder / "v.mp4.predictions.slp").exists()
    csv.write_text(csv.read_text() + "\n")  # changed since it was recorded: not ours
    code, err = _run(capsys, video, "--frames", "0-1", "--format", "csv")
    [line] = error_lines(err)
    assert code == 1 and "no sleap_infer request record" in line, err
    code, err = _run(capsys, video, "--frames", "0-2", "--format", "slp,csv", "--overwrite")
    assert code == 0, err
    code, err = _run(capsys, video, "--frames", "0-2", "--format", "slp,csv")
    assert code == 0 and "skipped" in err, err


def test_broken_links_in_a_folder_fail_alone(
    capsys: pytest.CaptureFixture[str], folder: Path
) -> None:
    """Passed over silently, exit 0, before; a link loop then also broke the summary."""
    d = folder / "d"
    d.mkdir()
    (folder / "v.mp4").rename(d / "v.mp4")
    (d / "gone.mp4").symlink_to("missing.mp4")
    (d / "l1.mp4").symlink_to("l2.mp4")
    (d / "l2.mp4").symlink_to("l1.mp4")
    code, err = _run(capsys, d, "--frames", "0-1")
    assert code == 1, err
    assert sorted(error_lines(err)) == [
        f"error: {d / 'gone.mp4'}: broken symbolic link (its target missing.mp4 does not exist)",
        f"error: {d / 'l1.mp4'}: symbolic link loop",
        f"error: {d / 'l2.mp4'}: symbolic link loop",
    ]
    assert (d / "v.mp4.predictions.slp").exists() and "4 videos: 3 failed, 1 done" in err
