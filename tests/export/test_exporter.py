"""``infer export`` on something that is already an export folder: one line, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sleap_infer.core.errors import ModelError
from sleap_infer.export.exporter import export_model
from sleap_infer.export.settings import ExportSettings
from sleap_infer.model.loader import load_model

from cli_runs import error_lines, run_cli
from conftest import fixture_model
from model_factory import config_dict, write_model_dir


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("exp")
    src = write_model_dir(work / "model", config_dict("single_instance"), seed=1)
    out = export_model(src, work / "export", ExportSettings(frame_size=(64, 64)), device="cpu")
    return src, out.path


def test_exporting_an_export_folder_names_the_model_folder(
    exported: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, folder = exported
    expected = (
        f"{folder} is already an export folder (made from {src.absolute()}); "
        "export the model folder instead"
    )
    with pytest.raises(ModelError) as err:
        export_model(folder, tmp_path / "again", device="cpu")
    assert str(err.value) == expected
    with pytest.raises(ModelError, match="already an export folder"):
        export_model(load_model(folder), tmp_path / "again", device="cpu")  # loaded first
    code, stderr = run_cli(capsys, "export", folder, "-o", tmp_path / "again", "--device", "cpu")
    assert code == 1 and error_lines(stderr) == [f"error: {expected}"]
    assert "Traceback" not in stderr and not (tmp_path / "again").exists()


def test_exporting_a_pair_export_names_both_model_folders(tmp_path: Path) -> None:
    from sleap_infer.export.pipeline import export_topdown

    centroid = write_model_dir(tmp_path / "centroid", config_dict("centroid"), seed=1)
    instance = write_model_dir(tmp_path / "instance", config_dict("centered_instance"), seed=2)
    settings = ExportSettings(frame_size=(64, 64))
    folder, _, _ = export_topdown([centroid, instance], tmp_path / "pair", settings, device="cpu")
    with pytest.raises(ModelError) as err:
        export_model(folder, tmp_path / "again", device="cpu")
    assert str(err.value) == (
        f"{folder} is already an export folder (made from {centroid.absolute()} + "
        f"{instance.absolute()}); export the model folders instead"
    )
    with pytest.raises(ModelError, match="already an export folder"):
        export_topdown([folder, instance], tmp_path / "again", settings, device="cpu")


# --- --input-scale / --crop-size (issue 46 item 6) ----------------------------------------


def _max_gap(a: Path, b: Path) -> float:
    from conftest import predicted_poses

    fa, pa, _ = predicted_poses(a)
    fb, pb, _ = predicted_poses(b)
    assert fa == fb and pa.shape == pb.shape and not np.isnan(pa).all()
    return float(np.nanmax(np.abs(pa - pb)))


def _predict(capsys: pytest.CaptureFixture[str], video: Path, out: Path, *args: str | Path) -> Path:
    code, err = run_cli(capsys, "predict", video, *args, "--frames", "0-2", "-o", out,
                        "--device", "cpu", "-q")  # fmt: skip
    assert code == 0, err
    return out


def test_export_input_scale_predicts_as_torch_with_that_scale(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: ``infer export M --input-scale 0.25`` was refused (exports kept the trained
    0.5). Now the folder predicts as ``infer predict -m M --input-scale 0.25`` on torch."""
    model = fixture_model(shared, "single_instance")
    video = shared / "videos" / "small_robot.mp4"
    folder = tmp_path / "exp"
    code, err = run_cli(capsys, "export", model, "--input-scale", "0.25", "-o", folder,
                        "--device", "cpu")  # fmt: skip
    assert code == 0, err
    data = json.loads((folder / "export_metadata.json").read_text())
    assert data["config_overrides"] == {"input_scale": 0.25} and data["input_scale"] == 0.25
    assert data["input"]["shape"][2:] == [80, 140]  # 320x560 at 0.25 (trained 0.5: 160x280)
    assert (folder / "training_config.yaml").read_bytes() == (
        model / "training_config.yaml"
    ).read_bytes()  # the copy stays the trained config; the metadata carries the override
    exported = _predict(capsys, video, tmp_path / "exp.slp", "-m", folder)
    torch_run = _predict(capsys, video, tmp_path / "t.slp", "-m", model, "--input-scale", "0.25")
    trained = _predict(capsys, video, tmp_path / "trained.slp", "-m", model)
    assert _max_gap(exported, torch_run) < 1e-4
    assert _max_gap(exported, trained) > 1.0  # the scale really changed the predictions


def test_export_crop_size_pair_predicts_as_torch_with_that_crop(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: ``--crop-size 128`` was refused. The pair's crop stage is traced at 128 (the
    centroid stage unchanged) and the folder predicts as torch with ``--crop-size 128``."""
    centroid = fixture_model(shared, "centroid")
    instance = fixture_model(shared, "centered_instance")
    video = shared / "videos" / "centered_pair_small.mp4"
    folder = tmp_path / "pair"
    code, err = run_cli(capsys, "export", centroid, instance, "--crop-size", "128",
                        "-o", folder, "--device", "cpu")  # fmt: skip
    assert code == 0, err
    assert json.loads((folder / "export_pipeline.json").read_text())["crop_size"] == 128
    stage = json.loads((folder / "centered_instance" / "export_metadata.json").read_text())
    assert stage["config_overrides"] == {"crop_size": 128} and stage["crop_size"] == 128
    assert stage["input"]["shape"][2:] == [128, 128]  # trained: 96
    first = json.loads((folder / "centroid" / "export_metadata.json").read_text())
    assert "config_overrides" not in first
    exported = _predict(capsys, video, tmp_path / "exp.slp", "-m", folder)
    torch_run = _predict(capsys, video, tmp_path / "t.slp", "-m", centroid, "-m", instance,
                         "--crop-size", "128")  # fmt: skip
    trained = _predict(capsys, video, tmp_path / "trained.slp", "-m", centroid, "-m", instance)
    assert _max_gap(exported, torch_run) < 1e-4
    assert _max_gap(exported, trained) > 1.0


def test_an_export_with_another_scale_is_never_reused(
    exported: tuple[Path, Path], tmp_path: Path
) -> None:
    """An export traced for another input scale divides its coordinates by that scale: the
    model run at its own scale must not take it, even where the input shapes agree, and its
    cache key differs; loaded on its own, the folder runs at the exported scale."""
    from sleap_infer.core.options import DecodeSettings
    from sleap_infer.runtimes import get_runtime
    from sleap_infer.runtimes.cache import ExportRequest, cache_key, misfit

    src, _ = exported
    model = load_model(src)
    settings = ExportSettings(frame_size=(64, 64), input_scale=0.9)  # 64 and 57.6 pad to 64
    info = export_model(src, tmp_path / "scaled", settings, device="cpu")
    assert info.data["config_overrides"] == {"input_scale": 0.9}
    shape = (1, *(int(d) for d in info.input_shape[1:]))
    request = ExportRequest(get_runtime("onnx"), shape, DecodeSettings())  # type: ignore[arg-type]
    assert misfit(info, model, request) == "it was exported for input scale 0.9, not 1.0"
    folder = load_model(info.path)
    assert folder.config.preprocessing.scale == 0.9
    assert misfit(info, folder, request) is None
    assert cache_key(model, request) != cache_key(folder, request)


def test_crop_size_is_inert_on_whole_frame_models_and_refused_on_embedders(tmp_path: Path) -> None:
    """sleap-nn's export ignores --crop-size on models that take whole frames (one note
    says so here); an embedding model keeps its trained crops, as in infer predict."""
    from sleap_infer.core.errors import UsageError
    from sleap_infer.export.exporter import export_overrides

    single = load_model(write_model_dir(tmp_path / "si", config_dict("single_instance")))
    notes: list[str] = []
    same, changed = export_overrides(single, ExportSettings(crop_size=64), notes.append)
    assert same is single and changed == {}
    assert notes == [
        "note: --crop-size does not apply to a single_instance model (it takes whole "
        "frames); ignored, as in sleap-nn"
    ]
    embedder = load_model(write_model_dir(tmp_path / "emb", config_dict("embedding")))
    with pytest.raises(UsageError, match=r"^--crop-size: .* is an embedding model; its crop"):
        export_overrides(embedder, ExportSettings(crop_size=64))
    with pytest.raises(UsageError, match=r"^--input-scale 0.0: must be a number > 0$"):
        ExportSettings(input_scale=0.0)


def test_an_unknown_config_override_in_an_export_is_refused(
    exported: tuple[Path, Path], tmp_path: Path
) -> None:
    import shutil

    _, folder = exported
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    meta = copy / "export_metadata.json"
    data = json.loads(meta.read_text())
    meta.write_text(json.dumps({**data, "config_overrides": {"max_height": 9}}))
    with pytest.raises(ModelError, match=r"unknown config_overrides \['max_height'\]"):
        load_model(copy)
