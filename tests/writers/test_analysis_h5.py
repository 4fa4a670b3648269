"""Analysis HDF5 names the run's ``.slp`` predictions in ``labels_path``, as sleap-nn."""

from __future__ import annotations

from pathlib import Path

import h5py
import pytest
import sleap_io as sio

from sleap_infer.writers.outputs import labels_output, sibling_output
from sleap_infer.writers.registry import FORMATS

import scene
from cli_runs import run_cli
from conftest import SYNTHETIC_MODEL
from output_cases import make_case, write


def labels_path(path: Path) -> str:
    with h5py.File(path, "r") as f:
        value = f["labels_path"][()]
    return value.decode() if isinstance(value, bytes) else str(value)


def test_labels_path_is_the_slp_beside_it(tmp_path: Path) -> None:
    """Before: ``labels_path`` was empty. sleap-nn 0.3.5 writes its ``.slp`` output's
    path there (``save_analysis_h5_files``), even when it writes no ``.slp``."""
    out = write(tmp_path, make_case("untracked"), "analysis-h5")
    assert labels_path(out) == str(tmp_path.resolve() / "v.mp4.predictions.slp")


def test_predict_slp_and_analysis_h5_point_at_each_other(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=3)
    monkeypatch.chdir(tmp_path)  # relative paths on the command line
    args = ["predict", "v.mp4", "-m", SYNTHETIC_MODEL, "--device", "cpu", "-q"]
    code, err = run_cli(capsys, *args, "--format", "analysis-h5,slp", "-o", "out")
    assert code == 0, err
    slp = Path(labels_path(tmp_path / "out" / "v.mp4.predictions.analysis.h5"))
    assert slp.is_absolute() and slp == tmp_path.resolve() / "out" / "v.mp4.predictions.slp"
    assert len(sio.load_slp(str(slp))) == 3


@pytest.mark.parametrize(
    ("slp", "h5"),
    [
        ("bu.predictions.slp", "bu.analysis.h5"),
        ("bu.slp", "bu.analysis.h5"),
        ("v.mp4.predictions.slp", "v.mp4.analysis.h5"),
        ("bu.pkg.slp", "bu.pkg.analysis.h5"),
    ],
)
def test_analysis_h5_beside_a_slp_is_named_as_sleap_nn(slp: str, h5: str) -> None:
    """sleap-nn 0.3.5's ``save_analysis_h5_files`` strips ``.predictions.slp`` (or ``.slp``)
    from its ``.slp`` name; infer used to write ``bu.predictions.analysis.h5``. Other
    formats keep the ``.slp``'s stem (``bu.predictions.csv``)."""
    path = Path("d") / slp
    assert sibling_output(path, FORMATS["slp"], FORMATS["analysis-h5"]) == Path("d") / h5
    assert labels_output(path, (FORMATS["slp"], FORMATS["analysis-h5"])) == path
    csv = sibling_output(Path("d/bu.predictions.slp"), FORMATS["slp"], FORMATS["csv"])
    assert csv == Path("d/bu.predictions.csv")


def test_predict_o_predictions_slp_writes_bu_analysis_h5(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-o bu.predictions.slp --format slp,analysis-h5`` writes ``bu.analysis.h5`` (as
    sleap-nn), whose ``labels_path`` is the ``.slp`` really written beside it."""
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=3)
    monkeypatch.chdir(tmp_path)
    args = ["predict", "v.mp4", "-m", SYNTHETIC_MODEL, "--device", "cpu", "-q"]
    code, err = run_cli(capsys, *args, "--format", "slp,analysis-h5", "-o", "bu.predictions.slp")
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "bu.analysis.h5",
        "bu.predictions.slp",
        "v.mp4",
    ]
    slp = Path(labels_path(tmp_path / "bu.analysis.h5"))
    assert slp == tmp_path.resolve() / "bu.predictions.slp"
    assert len(sio.load_slp(str(slp))) == 3
