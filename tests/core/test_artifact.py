"""An export folder's files are checked before a runtime loads them (core.artifact)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sleap_infer.backends.onnx_backend import ONNXBackend, onnx_backend_for_dir
from sleap_infer.core.artifact import METADATA_NAME, ONNX_NAME, decode_misfit, read_export
from sleap_infer.core.errors import ExportError, ModelError
from sleap_infer.core.options import PredictOptions
from sleap_infer.export.exporter import export_model
from sleap_infer.export.settings import ExportSettings
from sleap_infer.model.loader import load_model

from model_factory import config_dict, write_model_dir


@pytest.fixture(scope="module")
def two_exports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two single-instance models (other weights, same graph shape), each exported."""
    work = tmp_path_factory.mktemp("exports")
    settings = ExportSettings(frame_size=(64, 64))
    out = []
    for seed, name in ((1, "a"), (2, "b")):
        src = write_model_dir(work / f"model_{name}", config_dict("single_instance"), seed=seed)
        out.append(export_model(src, work / f"export_{name}", settings, device="cpu").path)
    return out[0], out[1]


def test_a_graph_swapped_for_another_models_is_refused(
    two_exports: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = two_exports
    ONNXBackend(read_export(a), "cpu")  # the export as written loads
    swapped = tmp_path / "swapped"
    shutil.copytree(a, swapped)
    shutil.copyfile(b / ONNX_NAME, swapped / ONNX_NAME)
    info = read_export(swapped)  # reading the metadata stays cheap: no hash here
    with pytest.raises(ExportError) as err:
        ONNXBackend(info, "cpu")
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(f"{swapped / ONNX_NAME}: not the graph this export wrote")
    assert "re-export it: infer export " in line and "model_a" in line
    pytest.importorskip("openvino")
    from sleap_infer.backends.openvino_backend import OpenVINOBackend

    with pytest.raises(ExportError, match="not the graph this export wrote"):
        OpenVINOBackend(info, "cpu")


def test_the_hash_is_computed_once_per_unchanged_file(
    two_exports: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sleap_infer.core.artifact as artifact

    calls: list[Path] = []
    real = artifact.file_sha256
    monkeypatch.setattr(artifact, "_VERIFIED", {})
    monkeypatch.setattr(artifact, "file_sha256", lambda p: calls.append(p) or real(p))
    for _ in range(3):
        onnx_backend_for_dir(two_exports[0], "cpu")
    assert len(calls) == 1


@pytest.mark.parametrize("name", [METADATA_NAME, ONNX_NAME])
@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_export_files_that_are_not_regular_files_are_refused(
    two_exports: tuple[Path, Path], tmp_path: Path, alarm: None, name: str, kind: str
) -> None:
    folder = tmp_path / "exp"
    shutil.copytree(two_exports[0], folder)
    (folder / name).unlink()
    if kind == "fifo":
        os.mkfifo(folder / name)
    else:
        (folder / name).symlink_to("/dev/zero")
    what = "a FIFO" if kind == "fifo" else "a character device"
    with pytest.raises(ExportError, match=rf"{name}: is {what}.*not a regular file"):
        read_export(folder)
    with pytest.raises(ModelError, match=rf"{name}: is {what}"):
        load_model(folder)


def test_an_export_serves_refine_like_sleap_nn_only_if_made_with_it() -> None:
    """The unguarded refinement is traced into the graph: a guarded export cannot serve it
    (and the reverse); without refinement the guard does not matter."""
    fields = ["refine", "integral_patch_size", "refine_guard", "max_peaks"]
    guarded = PredictOptions().decode_settings()
    like = PredictOptions(refine_like_sleap_nn=True).decode_settings()
    assert like.refine_guard is False and guarded.refine_guard is True
    assert decode_misfit(guarded, like, fields) == "it was exported without --refine-like-sleap-nn"
    assert decode_misfit(like, guarded, fields) == "it was exported with --refine-like-sleap-nn"
    assert decode_misfit(like, like, fields) is None
    no_refine = PredictOptions(refine=False, refine_like_sleap_nn=True).decode_settings()
    plain = PredictOptions(refine=False).decode_settings()
    assert decode_misfit(plain, no_refine, fields) is None
