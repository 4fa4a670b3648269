"""Output formats built from a journal: slp, nwb, analysis-h5, csv; completeness checks."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.io.formats import FORMATS, get_format
from sleap_infer.io.journal import JournalWriter, read_journal
from sleap_infer.io.outputs import is_complete, write_from_journal
from sleap_infer.io.video import VideoInfo
from sleap_infer.io.writer import make_skeleton, make_video
from sleap_infer.model.config import parse_config
from sleap_infer.vocab.errors import OutputError, UsageError
from sleap_infer.vocab.predictions import BatchPredictions

from model_factory import config_dict


def _journal(tmp_path: Path, empty: bool = False):
    points = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 1, 3, 2)
    preds = BatchPredictions(
        points=points,
        point_scores=np.full((4, 1, 3), 0.9, np.float32),
        instance_scores=np.full((4, 1), 2.0, np.float32),
        valid=np.array([[not empty], [False], [not empty], [not empty]]),
        frame_indices=np.array([0, 1, 5, 6]),  # sparse on purpose
    )
    path = tmp_path / "j.partial"
    with JournalWriter(path, header={"fingerprint": {}}) as w:
        w.write_batch(preds)
    return read_journal(path), points


def _write(tmp_path: Path, name: str, empty: bool = False) -> tuple[Path, np.ndarray]:
    journal, points = _journal(tmp_path, empty)
    cfg = parse_config(config_dict("single_instance"))
    info = VideoInfo(tmp_path / "v.mp4", 10, 30.0, 64, 96, True, "h264")
    fmt = get_format(name)
    out = tmp_path / f"v.mp4.predictions{fmt.suffix}"
    write_from_journal(journal, out, fmt, make_video(info), make_skeleton(cfg), (), {"run": "test"})
    return out, points


def test_slp(tmp_path: Path) -> None:
    out, points = _write(tmp_path, "slp")
    labels = sio.load_slp(str(out))
    assert [lf.frame_idx for lf in labels] == [0, 5, 6]
    np.testing.assert_allclose(labels[1].instances[0].numpy(), points[2, 0])
    assert labels.provenance["run"] == "test"
    assert is_complete(out, FORMATS["slp"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.partial", out.name]  # no temp left


def test_analysis_h5(tmp_path: Path) -> None:
    out, points = _write(tmp_path, "analysis_h5")
    assert out.name.endswith(".analysis.h5")
    labels = sio.load_analysis_h5(str(out))
    by_frame = {lf.frame_idx: lf for lf in labels}
    assert sorted(by_frame) == [0, 5, 6]
    np.testing.assert_allclose(by_frame[6].instances[0].numpy(), points[3, 0])
    assert is_complete(out, FORMATS["analysis-h5"])


def test_csv(tmp_path: Path) -> None:
    out, points = _write(tmp_path, "csv")
    lines = out.read_text().splitlines()
    header = lines[0].split(",")
    assert header[:3] == ["track", "frame_idx", "instance.score"]
    rows = [dict(zip(header, line.split(","))) for line in lines[1:]]
    assert [r["frame_idx"] for r in rows] == ["0", "5", "6"]
    assert float(rows[1]["tail.x"]) == points[2, 0, 2, 0]
    assert is_complete(out, FORMATS["csv"])


@pytest.mark.skipif(importlib.util.find_spec("pynwb") is None, reason="pynwb not installed")
def test_nwb_with_sparse_frames(tmp_path: Path) -> None:
    out, points = _write(tmp_path, "nwb")
    with warnings.catch_warnings():
        # pynwb 4 reading what sleap-io 0.9.5 writes: deprecated Device fields, not ours.
        warnings.simplefilter("ignore", DeprecationWarning)
        labels = sio.load_nwb(str(out))
    assert len(labels) == 3  # frames 0, 5, 6 (sleap-io's reader renumbers them by timestamp)
    np.testing.assert_allclose(labels[2].instances[0].numpy(), points[3, 0])
    assert is_complete(out, FORMATS["nwb"])
    with pytest.raises(OutputError, match="an NWB file cannot be empty"):
        _write(tmp_path, "nwb", empty=True)


def test_format_names_and_missing_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    assert get_format("analysis-h5") is get_format("analysis_h5") is FORMATS["analysis-h5"]
    with pytest.raises(UsageError, match="unknown --format 'mat'"):
        get_format("mat")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "pynwb" else real(name)
    )
    with pytest.raises(UsageError, match=r"--format nwb needs pynwb \(pip install pynwb\)"):
        get_format("nwb")


def test_damaged_outputs_are_not_complete(tmp_path: Path) -> None:
    out, _ = _write(tmp_path, "slp")
    data = out.read_bytes()
    out.write_bytes(data[: len(data) // 3])
    assert not is_complete(out, FORMATS["slp"])
    assert not is_complete(tmp_path / "missing.slp", FORMATS["slp"])
    (tmp_path / "zero.csv").write_text("")
    assert not is_complete(tmp_path / "zero.csv", FORMATS["csv"])
