"""``infer predict -m EXPORT_DIR``: a folder written by ``infer export`` runs on its own,
moved away from its model directory (no checkpoint), on the runtime it was exported for."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

import sleap_infer
from sleap_infer.core.errors import ModelError, UsageError

import scene
from conftest import SYNTHETIC_MODEL, fixture_model, predicted_poses


def infer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sleap_infer", *args], capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic model exported, then moved where no model directory is."""
    work = tmp_path_factory.mktemp("export")
    res = infer("export", str(SYNTHETIC_MODEL), "-o", str(work / "exp"), "--device", "cpu")
    assert res.returncode == 0, res.stderr
    target = tmp_path_factory.mktemp("elsewhere") / "model_export"
    shutil.move(str(work / "exp"), target)
    shutil.rmtree(work)
    return target


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("videos") / "synthetic.mp4"
    scene.write_video(path, n_frames=12, seed=3)
    return path


def test_the_folder_holds_what_a_run_needs(moved: Path) -> None:
    assert sorted(p.name for p in moved.iterdir()) == [
        "export_metadata.json",
        "model.onnx",
        "training_config.yaml",
    ]
    meta = json.loads((moved / "export_metadata.json").read_text())
    assert not Path(meta["source"]["model_dir"]).is_relative_to(moved)  # not where it was made


def test_a_moved_export_predicts_as_the_torch_path(
    moved: Path, video: Path, tmp_path: Path
) -> None:
    common = ["--device", "cpu", "-b", "4", "-q"]
    res = infer(
        "predict", str(video), "-m", str(SYNTHETIC_MODEL), *common, "-o", str(tmp_path / "t.slp")
    )
    assert res.returncode == 0, res.stderr
    res = infer("predict", str(video), "-m", str(moved), *common, "-o", str(tmp_path / "e.slp"))
    assert res.returncode == 0, res.stderr
    assert "Exporting" not in res.stderr  # the folder's own graph, nothing exported again
    frames_t, points_t, scores_t = predicted_poses(tmp_path / "t.slp")
    frames_e, points_e, scores_e = predicted_poses(tmp_path / "e.slp")
    assert frames_e == frames_t == list(range(12))
    assert np.array_equal(np.isnan(points_t), np.isnan(points_e))
    np.testing.assert_allclose(points_e, points_t, atol=0.05)
    np.testing.assert_allclose(scores_e, scores_t, atol=1e-4)
    prov = sio.load_slp(str(tmp_path / "e.slp")).provenance
    assert prov["backend"] == "onnx" and prov["export"]["exports"] == [str(moved)]


def test_torch_on_an_export_folder_is_one_line(moved: Path, video: Path, tmp_path: Path) -> None:
    res = infer(
        "predict", str(video), "-m", str(moved), "--backend", "torch", "-o", str(tmp_path / "x.slp")
    )
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and str(moved) in lines[0] and "not torch" in lines[0]
    assert not (tmp_path / "x.slp").exists()


def test_an_export_folder_without_engine_refuses_trt(
    moved: Path, video: Path, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="exported for ONNX only"):
        sleap_infer.load(moved, backend="trt", device="cpu")


def test_the_python_api_runs_the_folder_in_memory(moved: Path, video: Path) -> None:
    pipe = sleap_infer.load(moved, device="cpu")
    assert pipe.backend_name == "onnx"
    pred = pipe.predict(video, frames="0-3")
    torch_pred = sleap_infer.load(SYNTHETIC_MODEL, device="cpu").predict(video, frames="0-3")
    assert pred.frame_indices.tolist() == [0, 1, 2, 3]
    np.testing.assert_allclose(pred.points, torch_pred.points, atol=0.05)


def test_options_the_export_cannot_serve_fail_the_video_in_one_line(
    moved: Path, video: Path, tmp_path: Path
) -> None:
    res = infer(
        "predict", str(video), "-m", str(moved), "--no-refine", "-o", str(tmp_path / "n.slp")
    )
    assert res.returncode == 1
    assert f"{moved}: this exported model cannot run the request" in " ".join(res.stderr.split())
    assert "integral refinement" in res.stderr


def test_a_sleap_nn_export_folder_is_named_and_refused(tmp_path: Path) -> None:
    """sleap-nn 0.3.5's ``export_metadata.json`` (its fields) next to its ``model.onnx``."""
    folder = tmp_path / "sleap_nn_export"
    folder.mkdir()
    meta = {"sleap_nn_version": "0.3.5", "export_format": "onnx", "model_type": "bottomup"}
    (folder / "export_metadata.json").write_text(json.dumps(meta))
    (folder / "model.onnx").write_bytes(b"")
    with pytest.raises(ModelError, match=r"exported by sleap-nn 0\.3\.5 \(bottomup\); infer runs"):
        sleap_infer.load(folder, device="cpu")


def test_a_moved_top_down_pair_export_runs_as_one_model(shared: Path, tmp_path: Path) -> None:
    """``infer export -m centroid -m instance`` writes one folder with both stages; given as
    the one ``-m`` it runs the pair, as the two model directories do on torch."""
    models = [fixture_model(shared, t) for t in ("centroid", "centered_instance")]
    res = infer("export", *map(str, models), "-o", str(tmp_path / "pair"), "--device", "cpu")
    assert res.returncode == 0, res.stderr
    moved = tmp_path / "elsewhere" / "pair"
    moved.parent.mkdir()
    shutil.move(str(tmp_path / "pair"), moved)
    video = shared / "videos" / "centered_pair_small.mp4"
    common = ["--frames", "0-7", "--device", "cpu", "-q"]
    torch_args = [a for m in models for a in ("-m", str(m))]
    res = infer("predict", str(video), *torch_args, *common, "-o", str(tmp_path / "t.slp"))
    assert res.returncode == 0, res.stderr
    res = infer("predict", str(video), "-m", str(moved), *common, "-o", str(tmp_path / "e.slp"))
    assert res.returncode == 0, res.stderr
    frames_t, points_t, _ = predicted_poses(tmp_path / "t.slp")
    frames_e, points_e, _ = predicted_poses(tmp_path / "e.slp")
    assert frames_e == frames_t == list(range(8))
    assert np.array_equal(np.isnan(points_t), np.isnan(points_e))
    np.testing.assert_allclose(points_e, points_t, atol=1e-3)
    prov = sio.load_slp(str(tmp_path / "e.slp")).provenance
    assert prov["layer"] == "TopDownLayer" and prov["backend"] == "onnx"


@pytest.mark.gpu
def test_a_moved_tensorrt_export_runs_on_its_own(video: Path, tmp_path: Path) -> None:
    """On a CUDA machine with TensorRT: the folder holds an engine, so it runs on trt."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    pytest.importorskip("tensorrt")
    args = ["--runtime", "trt", "--device", "cuda", "-o", str(tmp_path / "exp")]
    res = infer("export", str(SYNTHETIC_MODEL), *args)
    assert res.returncode == 0, res.stderr
    moved = tmp_path / "elsewhere" / "trt_export"
    moved.parent.mkdir()
    shutil.move(str(tmp_path / "exp"), moved)
    assert (moved / "model.trt").is_file()
    common = ["--device", "cuda", "-b", "1", "-q"]
    res = infer(
        "predict", str(video), "-m", str(SYNTHETIC_MODEL), *common, "-o", str(tmp_path / "t.slp")
    )
    assert res.returncode == 0, res.stderr
    res = infer("predict", str(video), "-m", str(moved), *common, "-o", str(tmp_path / "e.slp"))
    assert res.returncode == 0, res.stderr
    assert sio.load_slp(str(tmp_path / "e.slp")).provenance["backend"] == "trt"
    frames_t, points_t, _ = predicted_poses(tmp_path / "t.slp")
    frames_e, points_e, _ = predicted_poses(tmp_path / "e.slp")
    assert frames_e == frames_t
    np.testing.assert_allclose(points_e, points_t, atol=0.01)
