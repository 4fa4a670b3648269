"""Analysis HDF5 names the run's ``.slp`` predictions in ``labels_path``, as sleap-nn."""

from __future__ import annotations

from pathlib import Path

import h5py
import pytest
import sleap_io as sio

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
