"""Several output formats in one run (issue #28): ``--format slp,analysis-h5,csv`` predicts
once and writes each format from the same journal, equal to one run per format."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

import scene
from cli_runs import error_lines, infer_stopping, run_cli
from conftest import SYNTHETIC_MODEL, assert_same_predictions

THREE = ("slp", "analysis-h5", "csv")
SUFFIX = {"slp": ".slp", "analysis-h5": ".analysis.h5", "csv": ".csv"}


def _video(folder: Path, name: str = "clip.mp4", n: int = 6) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    scene.write_video(folder / name, n_frames=n, seed=3)
    return folder / name


def _out(video: Path, fmt: str, beside_slp: bool = True) -> Path:
    """The output of ``fmt``; an analysis HDF5 beside a run's ``.slp`` is named as
    sleap-nn names it (``clip.mp4.analysis.h5``), alone ``<video>.predictions<suffix>``."""
    if fmt == "analysis-h5" and beside_slp:
        return video.with_name(f"{video.name}.analysis.h5")
    return video.with_name(f"{video.name}.predictions{SUFFIX[fmt]}")


def _predict(capsys: pytest.CaptureFixture[str], video: Path, *extra: str) -> tuple[int, str]:
    return run_cli(capsys, "predict", video, "-m", SYNTHETIC_MODEL, "--device", "cpu", *extra)


def _h5_tables(path: Path) -> dict[str, np.ndarray]:
    found: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as f:
        f.visititems(
            lambda name, obj: (
                found.__setitem__(name, obj[()])
                if isinstance(obj, h5py.Dataset) and name != "provenance"
                else None
            )
        )
    return found


def assert_same_output(fmt: str, a: Path, b: Path) -> None:
    """Same content, provenance (timestamps) and analysis HDF5's ``labels_path`` (the
    ``.slp`` beside each file: they are in different folders) aside."""
    if fmt == "slp":
        assert_same_predictions(a, b)
    elif fmt == "csv":
        assert a.read_text() == b.read_text()
    else:
        ta, tb = _h5_tables(a), _h5_tables(b)
        for path, tables in ((a, ta), (b, tb)):
            labels = Path(tables.pop("labels_path").decode())  # exact names: test_analysis_h5
            assert labels.parent == path.parent and labels.suffix == ".slp"
        assert sorted(ta) == sorted(tb)
        for name, value in ta.items():
            nan_ok = getattr(value, "dtype", np.dtype(object)).kind == "f"
            assert np.array_equal(value, tb[name], equal_nan=nan_ok), name


def test_three_formats_equal_three_single_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    many = _video(tmp_path / "many")
    code, err = _predict(capsys, many, "--format", "slp,analysis-h5", "--format", "csv",
                         "--summary-json", str(tmp_path / "s.json"))  # fmt: skip
    assert code == 0, err
    assert ", ".join(str(_out(many, f)) for f in THREE) in " ".join(err.split()).replace(" ,", ",")
    for fmt in THREE:  # the same video, one run per format, into a folder of its own
        folder = tmp_path / fmt
        folder.mkdir()
        code, err = _predict(capsys, many, "--format", fmt, "-o", str(folder))
        assert code == 0, err
        alone = folder / _out(many, fmt, beside_slp=False).name
        assert_same_output(fmt, alone, _out(many, fmt))
    assert sorted(p.name for p in many.parent.iterdir()) == sorted(
        ["clip.mp4", *(_out(many, f).name for f in THREE), ".clip.mp4.predictions.csv.request.json"]
    )  # no journal left (the CSV's request is recorded beside it)
    (video,) = json.loads((tmp_path / "s.json").read_text())["videos"]
    assert video["outputs"] == [str(_out(many, f)) for f in THREE]


def test_a_rerun_skips_only_when_every_format_is_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    video = _video(tmp_path)
    assert _predict(capsys, video, "--format", "slp")[0] == 0
    slp = _out(video, "slp")
    before = slp.stat().st_mtime_ns
    code, err = _predict(capsys, video, "--format", "slp,csv")
    assert code == 0, err
    assert _out(video, "csv").is_file()  # the missing format is written ...
    assert slp.stat().st_mtime_ns == before  # ... the finished one kept as it was
    csv_before = _out(video, "csv").stat().st_mtime_ns
    code, err = _predict(capsys, video, "--format", "slp,csv")
    assert code == 0 and "skipped" in err and f"{_out(video, 'csv')} exist" in err, err
    assert _out(video, "csv").stat().st_mtime_ns == csv_before


def test_a_foreign_file_at_one_format_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    video = _video(tmp_path)
    _out(video, "analysis-h5").write_text("not ours")
    code, err = _predict(capsys, video, "--format", "slp,analysis-h5")
    assert code == 1
    (line,) = error_lines(err)
    assert "not a complete analysis-h5 output" in line
    assert _out(video, "analysis-h5").read_text() == "not ours"
    assert not _out(video, "slp").exists()


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--format", "slp,via-csv"], "--format via-csv cannot hold pose instances"),
        (["--format", "slp,csv", "-o", "{tmp}/out.nwb"], "a nwb file name, but --format is"),
        (["-o", "{tmp}/out.analysis-h5"], "name a --format analysis-h5 file out.analysis.h5"),
        (["-o", "{tmp}/out.dlc_csv"], "name a --format dlc-csv file out.dlc.csv"),
        (["--format", "slp,xyz"], "unknown --format 'xyz'"),
    ],
)
def test_refusals_are_one_line_before_predicting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], needle: str
) -> None:
    video = _video(tmp_path)
    code, err = _predict(capsys, video, *[e.replace("{tmp}", str(tmp_path)) for e in extra])
    assert code == 2
    (line,) = error_lines(err)
    assert needle in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4"]


def test_o_folder_takes_several_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    video = _video(tmp_path / "in")
    out = tmp_path / "out"
    out.mkdir()
    code, err = _predict(capsys, video, "--format", "slp", "--format", "csv", "-o", str(out))
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == [
        ".clip.mp4.predictions.csv.request.json",  # the CSV's request, beside it
        "clip.mp4.predictions.csv",
        "clip.mp4.predictions.slp",
    ]


def test_resume_after_a_kill_writes_every_format(tmp_path: Path) -> None:
    video = _video(tmp_path, n=12)
    args = ["predict", video, "-m", SYNTHETIC_MODEL, "--device", "cpu", "-b", "2"]
    args += ["--format", "slp,analysis-h5"]
    killed = infer_stopping("SIGKILL", 2, *args)
    assert killed.returncode != 0
    assert not _out(video, "slp").exists() and not _out(video, "analysis-h5").exists()
    resumed = infer_stopping("SIGCONT", 10_000, *args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    with h5py.File(_out(video, "analysis-h5"), "r") as f:
        assert f["tracks"].shape[-1] == 12
    single = _video(tmp_path / "single", n=12)
    args[1] = single
    assert infer_stopping("SIGCONT", 10_000, *args[:-2], "--format", "slp").returncode == 0
    assert_same_predictions(_out(single, "slp"), _out(video, "slp"))


def test_one_format_failing_keeps_the_others_and_the_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    import sleap_infer
    from sleap_infer.core.errors import OutputError
    from sleap_infer.journal import journal_path
    from sleap_infer.writers import csv_out

    def full_disk(path: Path, source: object) -> None:
        raise OSError(errno.EIO, "input/output error")

    video = _video(tmp_path)
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu")
    with monkeypatch.context() as patch:
        patch.setattr(csv_out, "write_csv", full_disk)
        with pytest.raises(OutputError) as failed:
            pipe.predict_to_file(video, format=["slp", "csv", "analysis-h5"])
    (line,) = str(failed.value).splitlines()
    assert line.startswith("format='csv': ") and str(_out(video, "csv")) in line
    assert _out(video, "slp").is_file() and _out(video, "analysis-h5").is_file()
    assert not _out(video, "csv").exists()
    journal = journal_path(_out(video, "slp"))
    assert journal.is_file()
    kept = _out(video, "slp").stat().st_mtime_ns
    # Once the cause is fixed, the kept journal gives the missing format (nothing predicted).
    result = pipe.predict_to_file(video, format="slp,csv,analysis-h5", resume=True)
    assert result.outputs == [_out(video, "csv")] and result.resumed_frames == 6
    assert _out(video, "slp").stat().st_mtime_ns == kept and not journal.exists()


def test_the_python_api_takes_a_list(tmp_path: Path) -> None:
    import sleap_infer

    video = _video(tmp_path)
    result = sleap_infer.predict(video, SYNTHETIC_MODEL, device="cpu", format=["slp", "csv"])
    (outcome,) = result.outcomes
    assert outcome.ok and outcome.outputs == (_out(video, "slp"), _out(video, "csv"))


def test_the_summary_never_goes_over_another_formats_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    video = _video(tmp_path)
    summary = _out(video, "csv")
    code, err = _predict(capsys, video, "--format", "slp,csv", "--summary-json", str(summary))
    assert code == 2
    (line,) = error_lines(err)
    assert "--summary-json" in line and not summary.exists()


def test_o_file_names_each_format_from_its_stem_as_sleap_nn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#44.4: sleap-nn's own example, ``-i v.mp4 -o bu.slp --output_format slp
    --output_format analysis_h5``, writes bu.slp and bu.analysis.h5 (its names: the
    analysis file is the .slp's name with .analysis.h5 for .slp)."""
    video = _video(tmp_path / "in")
    out = tmp_path / "out"
    code, err = run_cli(capsys, "predict", "-i", video, "-m", SYNTHETIC_MODEL, "-o", out / "bu.slp",
                        "--output_format", "slp", "--output_format", "analysis_h5",
                        "--device", "cpu")  # fmt: skip
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["bu.analysis.h5", "bu.slp"]
    # the same predictions as one format per run into a folder
    for fmt in ("slp", "analysis-h5"):
        folder = tmp_path / fmt
        folder.mkdir()
        assert _predict(capsys, video, "--format", fmt, "-o", folder)[0] == 0
        alone = folder / _out(video, fmt, beside_slp=False).name
        assert_same_output(fmt, alone, out / f"bu{SUFFIX[fmt]}")
    # -o's format is the main one whatever the order of --format; the others from its stem
    code, err = _predict(capsys, video, "--format", "csv,analysis-h5", "-o", out / "b2.h5")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("b2")) == ["b2.csv", "b2.h5"]


def test_o_file_with_several_inputs_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two = _video(tmp_path, "a.mp4"), _video(tmp_path, "b.mp4")
    code, err = run_cli(capsys, "predict", one, two, "-m", SYNTHETIC_MODEL, "--device", "cpu",
                        "--format", "slp,csv", "-o", tmp_path / "x.slp")  # fmt: skip
    assert code == 2
    (line,) = error_lines(err)
    assert line.endswith("x.slp: must be a folder when predicting 2 videos")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.mp4", "b.mp4"]


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("x.analysis.h5", "analysis-h5"), ("x.h5", "analysis-h5"), ("x.csv", "csv"),
     ("x.dlc.csv", "dlc-csv")],
)  # fmt: skip
def test_o_file_without_format_is_a_file_of_its_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, fmt: str
) -> None:
    """#45.24: ``-o x.analysis.h5`` without --format writes that file (it was refused as
    not .slp; ``-o x.analysis-h5`` made a folder)."""
    video = _video(tmp_path / "in")
    code, err = _predict(capsys, video, "-o", tmp_path / name)
    assert code == 0, err
    from sleap_infer.writers.outputs import is_complete
    from sleap_infer.writers.registry import FORMATS

    assert is_complete(tmp_path / name, FORMATS[fmt])
    # Beside it only the CSV's hidden request record (#45 unclear 4), never a folder.
    seen = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".request.json"))
    assert seen == sorted(["in", name])
    assert all(not p.is_dir() for p in tmp_path.iterdir() if p.name != "in")
