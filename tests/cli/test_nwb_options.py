"""``infer predict --format nwb`` with the session and subject options, end to end: the
file movement loads with its defaults (a late start at its true time) and nwbinspector
passes under DANDI's configuration; the options are refused for other formats."""

from __future__ import annotations

import re
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

import scene
from cli_runs import error_lines, run_cli
from conftest import SYNTHETIC_MODEL

movement_io = pytest.importorskip("movement.io", reason="movement not installed")
nwbinspector = pytest.importorskip("nwbinspector", reason="nwbinspector not installed")


def test_nwb_with_metadata_file_loads_in_movement_and_passes_nwbinspector(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    video = tmp_path / "clip.mp4"
    scene.write_video(video, n_frames=10, seed=3)
    meta = tmp_path / "session.yaml"
    meta.write_text(
        "subject: m1\nspecies: Mus musculus\nsex: F\nage: P60D\n"
        "session_start_time: '2024-03-04T05:06:07+00:00'\n"
        "experimenter: 'Doe, Jane'\ninstitution: Some Institute\n"
    )
    out, slp = tmp_path / "clip.nwb", tmp_path / "clip.slp"
    for path, extra in ((out, ["--format", "nwb", "--nwb-metadata", meta, "--nwb-subject", "m2"]),
                        (slp, [])):  # fmt: skip
        args = ["predict", video, "-m", SYNTHETIC_MODEL, "--frames", "3-9", "--device", "cpu"]
        code, err = run_cli(capsys, *args, "-o", path, "-q", *extra)
        assert code == 0, err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = movement_io.load_dataset(out, source_software="NWB")  # one call, the only track
        messages = list(
            nwbinspector.inspect_nwbfile(
                nwbfile_path=str(out), config=nwbinspector.load_config("dandi")
            )
        )
    assert [m for m in messages if m.importance.name != "BEST_PRACTICE_SUGGESTION"] == []
    labels = sio.load_slp(str(slp))
    nodes = [n.name for n in labels.skeleton.nodes]
    ds = ds.sel(keypoints=nodes)
    (animal,) = ds.individuals.values  # the subject, then digits unique to the file
    assert re.fullmatch(r"m2-[0-9a-f]{12}", animal)
    assert "DANDI needs" not in err  # the subject is all given
    np.testing.assert_allclose(ds.time.values, np.arange(10) / 30)
    position = ds.position.isel(individuals=0).transpose("time", "keypoints", "space").values
    assert np.isnan(position[:3]).all()  # not predicted: the track starts at frame 3, t=0.1
    np.testing.assert_allclose(position[3:], [lf.instances[0].numpy() for lf in labels], rtol=1e-6)
    import pynwb

    with pynwb.NWBHDF5IO(str(out), "r") as io:
        nwb = io.read()
        assert nwb.subject.subject_id == "m2"  # the option wins over the file
        assert nwb.session_start_time == datetime(2024, 3, 4, 5, 6, 7, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--nwb-subject", "m1"], "--nwb-subject only matter with --format nwb (not slp)"),
        (["--format", "nwb", "--nwb-metadata", "{tmp}/nope.yaml"], "nope.yaml: cannot read"),
        (["--format", "nwb", "--nwb-session-start-time", "noon"], "'noon': not an ISO 8601"),
        (
            ["--format", "via-csv"],
            "--format via-csv cannot hold pose instances (single_instance model); "
            "use --format slp, nwb, analysis-h5, csv or dlc-csv",
        ),
    ],
)
def test_bad_output_options_are_one_line_before_predicting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], needle: str
) -> None:
    video = tmp_path / "clip.mp4"
    scene.write_video(video, n_frames=2)
    extra = [e.replace("{tmp}", str(tmp_path)) for e in extra]
    code, err = run_cli(capsys, "predict", video, "-m", SYNTHETIC_MODEL, "--device", "cpu", *extra)
    assert code == 2
    (line,) = error_lines(err)
    assert needle in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4"]  # nothing written


@pytest.mark.parametrize(
    ("extra", "missing"),
    [
        ([], "--nwb-subject, --nwb-species, --nwb-age"),
        (["--nwb-subject", "m1", "--nwb-species", "Mus musculus"], "--nwb-age"),
    ],
)
def test_nwb_without_the_subject_warns_once_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], missing: str
) -> None:
    """Before: nothing said so; DANDI refuses the files (nwbinspector: species and age)."""
    videos = [tmp_path / "a.mp4", tmp_path / "b.mp4"]
    for video in videos:
        scene.write_video(video, n_frames=2)
    args = ["predict", *videos, "-m", SYNTHETIC_MODEL, "--device", "cpu", "--format", "nwb"]
    code, err = run_cli(capsys, *args, "--progress", "plain", *extra)
    assert code == 0, err
    lines = [line for line in err.splitlines() if "DANDI needs" in line]
    assert len(lines) == 1, err  # one line for the run, not one per video
    assert f"--format nwb without {missing}: DANDI needs" in lines[0]
    assert all((tmp_path / f"{v.name}.predictions.nwb").exists() for v in videos)
