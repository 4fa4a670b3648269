"""``infer predict --backend onnx`` writes what ``--backend torch`` writes, for every
multi-animal model type on the real two-fly video; ``infer export`` of pairs and bottom-up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from conftest import fixture_model
from model_factory import config_dict, write_model_dir

FRAMES = "0-7"


def infer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sleap_infer", *args], capture_output=True, text=True, timeout=600
    )


def _predict(shared: Path, out: Path, models: list[str], backend: str, *extra: str) -> str:
    args = ["predict", str(shared / "videos" / "centered_pair_small.mp4"), "-o", str(out)]
    for m in models:
        args += ["--model", str(fixture_model(shared, m))]
    res = infer(*args, "--frames", FRAMES, "--device", "cpu", "-q", "--backend", backend, *extra)
    assert res.returncode == 0, res.stderr
    return res.stderr


def _instances(path: Path) -> list[list[tuple[np.ndarray, float, str | None, float | None]]]:
    """Per frame: (points, score, track name, tracking score) of each instance, in file order."""
    labels = sio.load_slp(str(path))
    return [
        [
            (
                inst.numpy(),
                float(inst.score),
                inst.track.name if inst.track is not None else None,
                inst.tracking_score if inst.track is not None else None,
            )
            for inst in lf.instances
        ]
        for lf in labels
    ]


CASES = {
    "topdown": (["centroid", "centered_instance"], []),
    "multiclass-topdown": (
        ["centroid", "multi_class_topdown"],
        ["--peak-threshold", "0.01", "--centroid-peak-threshold", "0.2"],
    ),
    "bottomup": (["bottomup"], ["--min-line-scores", "0.1"]),
    "multiclass-bottomup": (["multi_class_bottomup"], []),
}


@pytest.mark.parametrize("case", list(CASES))
def test_onnx_writes_the_same_instances_as_torch(shared: Path, tmp_path: Path, case: str) -> None:
    models, extra = CASES[case]
    _predict(shared, tmp_path / "torch.slp", models, "torch", *extra)
    log = _predict(shared, tmp_path / "onnx.slp", models, "onnx", *extra)
    assert "PeakOverflowWarning" not in log
    ref, got = _instances(tmp_path / "torch.slp"), _instances(tmp_path / "onnx.slp")
    assert len(ref) == len(got) == 8
    found = 0
    for ref_frame, got_frame in zip(ref, got):
        assert len(got_frame) == len(ref_frame) >= 1
        for (ref_pts, ref_score, ref_track, ref_ts), (pts, score, track, ts) in zip(
            ref_frame, got_frame
        ):
            assert np.array_equal(np.isnan(pts), np.isnan(ref_pts))
            # Full-size crops and the refinement guard leave only float noise (<= 1e-3 px).
            np.testing.assert_allclose(pts, ref_pts, atol=2e-3)
            assert score == pytest.approx(ref_score, abs=1e-4)
            assert track == ref_track
            if ref_ts is not None:
                assert ts == pytest.approx(ref_ts, abs=1e-4)
            found += int(np.isfinite(pts).all(axis=-1).sum())
    assert found >= 16
    if case.startswith("multiclass"):
        assert {t for frame in got for _, _, t, _ in frame} == {"female", "male"}


def test_export_command_for_a_pair_and_for_bottomup(tmp_path: Path) -> None:
    centroid = write_model_dir(tmp_path / "centroid", config_dict("centroid"))
    instance = write_model_dir(tmp_path / "mc", config_dict("multi_class_topdown"))
    res = infer("export", str(instance), str(centroid), "--input-size", "48x64")
    assert res.returncode == 0, res.stderr
    folder = centroid / "exported_multi_class_topdown"
    assert "centroid + multi_class_topdown exported in" in res.stderr
    assert "multi_class_topdown/: model.onnx:" in res.stderr
    manifest = json.loads((folder / "export_pipeline.json").read_text())
    assert manifest["pipeline"] == "multi_class_topdown"
    meta = json.loads((folder / "multi_class_topdown" / "export_metadata.json").read_text())
    assert meta["input"]["shape"] == ["batch", 1, 32, 32]
    assert [o["name"] for o in meta["outputs"]][-1] == "class_probs"

    bottomup = write_model_dir(tmp_path / "bu", config_dict("bottomup"))
    res = infer(
        "export", str(bottomup), "--input-size", "32x48", "--max-peaks-per-node", "12",
        "--n-points", "7",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    meta = json.loads((bottomup / "exported" / "export_metadata.json").read_text())
    shapes = {o["name"]: o["shape"] for o in meta["outputs"]}
    assert shapes["peaks"] == ["batch", 3, 12, 2] and shapes["line_scores"] == ["batch", 2, 12, 12]
    assert meta["decode"]["max_peaks"] == 12 and meta["decode"]["n_points"] == 7
    assert any("PAF line scores" in step for step in meta["in_graph"])
