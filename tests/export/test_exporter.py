"""``infer export`` on something that is already an export folder: one line, no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleap_infer.core.errors import ModelError
from sleap_infer.export.exporter import export_model
from sleap_infer.export.settings import ExportSettings
from sleap_infer.model.loader import load_model

from cli_runs import error_lines, run_cli
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
