"""ONNX export: graph validity, metadata, parity with the torch path, and bad input."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from sleap_infer.backends import TorchBackend
from sleap_infer.backends.onnx_backend import ONNXBackend
from sleap_infer.core.artifact import METADATA_NAME, read_export
from sleap_infer.core.errors import BackendError, ExportError, ModelError, UsageError
from sleap_infer.core.options import DecodeSettings
from sleap_infer.export.exporter import export_model
from sleap_infer.export.graph_ops import local_peak_candidates
from sleap_infer.export.settings import ExportSettings
from sleap_infer.export.wrappers import wrapper_for
from sleap_infer.layers import (
    CentroidLayer,
    PredictOptions,
    SingleInstanceLayer,
    exported_layer_class,
)
from sleap_infer.layers.exported import ExportedCentroidLayer, ExportedSingleInstanceLayer
from sleap_infer.model.config import parse_config
from sleap_infer.model.loader import load_model

from conftest import fixture_model
from fakes import FakeBackend
from model_factory import config_dict, write_model_dir

PARITY_PX = 0.05


def _parity(shared: Path, name: str) -> list[dict]:
    with open(shared / "parity" / f"{name}.pkl", "rb") as fh:
        return pickle.load(fh)


@pytest.fixture(scope="session")
def single_export(shared: Path, tmp_path_factory: pytest.TempPathFactory):
    model = load_model(fixture_model(shared, "single_instance"))
    return model, export_model(model, tmp_path_factory.mktemp("si") / "exp")


@pytest.fixture(scope="session")
def centroid_export(shared: Path, tmp_path_factory: pytest.TempPathFactory):
    model = load_model(fixture_model(shared, "centroid"))
    return model, export_model(model, tmp_path_factory.mktemp("centroid") / "exp")


def _max_gap(a: np.ndarray, b: np.ndarray) -> float:
    assert np.array_equal(np.isnan(a), np.isnan(b))
    return float(np.nanmax(np.abs(a - b))) if np.isfinite(a).any() else 0.0


def test_single_instance_onnx_matches_torch_on_parity_inputs(single_export) -> None:
    model, info = single_export
    opts = PredictOptions(peak_threshold=0.3)
    torch_layer = SingleInstanceLayer(model.config, TorchBackend(model.network, "cpu"), opts)
    onnx_layer = ExportedSingleInstanceLayer(model.config, ONNXBackend(info, "cpu"), opts)
    worst = 0.0
    for batch in _parity(Path(model.path).parents[1], "single_instance"):
        x = torch.from_numpy(batch["image"][:, 0])
        ref = torch_layer.run_preprocessed(x, torch_layer.info_for_input(x))
        got = onnx_layer.run_preprocessed(x, onnx_layer.info_for_input(x))
        worst = max(worst, _max_gap(got.points, ref.points))
        np.testing.assert_allclose(got.point_scores, ref.point_scores, atol=1e-5)
        np.testing.assert_array_equal(got.valid, ref.valid)
        # ...and so with sleap-nn's own predictions, as the torch path is.
        assert _max_gap(got.points[:, 0], batch["pred_instance_peaks"]) <= 1e-3
    assert worst <= PARITY_PX


def test_centroid_onnx_matches_torch_on_parity_inputs(centroid_export) -> None:
    model, info = centroid_export
    torch_layer = CentroidLayer(model.config, TorchBackend(model.network, "cpu"))
    onnx_layer = ExportedCentroidLayer(model.config, ONNXBackend(info, "cpu"))
    for batch in _parity(Path(model.path).parents[1], "topdown"):
        x = torch.from_numpy(batch["image"][:1])
        ref = torch_layer.run_preprocessed(x, torch_layer.info_for_input(x))
        got = onnx_layer.run_preprocessed(x, onnx_layer.info_for_input(x))
        np.testing.assert_array_equal(got.valid, ref.valid)
        assert got.valid.sum() >= 1
        assert _max_gap(got.extras["centroids"], ref.extras["centroids"]) <= PARITY_PX
        np.testing.assert_allclose(got.instance_scores, ref.instance_scores, atol=1e-5)
        np.testing.assert_allclose(
            got.extras["centroids"][0][got.valid[0]], batch["pred_centroids"], atol=1e-3
        )


def test_export_writes_a_checked_onnx_file_and_metadata(single_export) -> None:
    model, info = single_export
    proto = onnx.load(str(info.onnx_path))
    onnx.checker.check_model(proto)
    assert [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")] == [18]
    assert [i.name for i in proto.graph.input] == ["image"]
    assert proto.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.UINT8
    assert [o.name for o in proto.graph.output] == ["peaks", "peak_vals", "peak_valid"]
    embedded = {p.key: p.value for p in proto.metadata_props}
    assert json.loads(embedded["sleap_infer_metadata"])["model_type"] == "single_instance"
    assert "head_configs" in embedded["training_config"]
    data = json.loads((info.path / METADATA_NAME).read_text())
    assert data["model_type"] == "single_instance"
    assert data["source"]["checkpoint_sha256"] == model.checkpoint_sha256
    assert data["skeleton"]["node_names"] == list(model.config.node_names)
    assert data["input"] == {
        "name": "image",
        "dtype": "uint8",
        "shape": ["batch", 3, 160, 280],  # 320x560 size matcher, scale 0.5
        "normalization": "divided by 255 in the graph",
    }
    assert data["strides"] == {
        "max_stride": 4,
        "output_strides": {"SingleInstanceConfmapsHead": 4},
    }
    assert data["outputs"][0] == {"name": "peaks", "dtype": "float32", "shape": ["batch", 2, 2]}
    assert data["decode"]["refine"] is True and data["precision"] == "fp32"
    assert {"torch", "onnx", "onnxscript", "sleap_infer"} <= set(data["versions"])
    assert "integral refinement (fixed-size patch gather)" in data["in_graph"]
    assert data["verification"]["peak_vals"] < 1e-4
    assert (info.path / "training_config.yaml").is_file()


def test_random_single_instance_through_sizematch_and_scale(tmp_path: Path) -> None:
    raw = config_dict(
        "single_instance", preprocessing={"max_height": 60, "max_width": 90, "scale": 0.5}
    )
    model = load_model(write_model_dir(tmp_path / "m", raw, seed=3))
    info = export_model(model, tmp_path / "exp")
    assert info.input_shape == ["batch", 1, 32, 48]  # 60x90 -> 30x45 -> pad to 8
    opts = PredictOptions(peak_threshold=-1e9)  # random weights: keep every peak
    torch_layer = SingleInstanceLayer(model.config, TorchBackend(model.network, "cpu"), opts)
    onnx_layer = ExportedSingleInstanceLayer(model.config, ONNXBackend(info, "cpu"), opts)
    frames = np.random.default_rng(0).integers(0, 256, (3, 120, 200, 1), dtype=np.uint8)
    ref, got = torch_layer.predict(frames), onnx_layer.predict(frames)
    assert np.isfinite(ref.points).all()
    assert _max_gap(got.points, ref.points) <= PARITY_PX
    np.testing.assert_allclose(got.instance_scores, ref.instance_scores, atol=1e-4)


def test_random_centroid_with_max_instances(tmp_path: Path) -> None:
    model = load_model(write_model_dir(tmp_path / "m", config_dict("centroid"), seed=4))
    info = export_model(model, tmp_path / "exp", ExportSettings(frame_size=(64, 96)))
    opts = PredictOptions(peak_threshold=-1e9, max_instances=3)
    torch_layer = CentroidLayer(model.config, TorchBackend(model.network, "cpu"), opts)
    onnx_layer = ExportedCentroidLayer(model.config, ONNXBackend(info, "cpu"), opts)
    frames = np.random.default_rng(1).integers(0, 256, (2, 64, 96, 1), dtype=np.uint8)
    ref, got = torch_layer.predict(frames), onnx_layer.predict(frames)
    assert ref.valid.all() and ref.valid.shape == (2, 3)
    assert _max_gap(got.extras["centroids"], ref.extras["centroids"]) <= PARITY_PX
    np.testing.assert_allclose(got.instance_scores, ref.instance_scores, atol=1e-5)


def test_exported_centroid_ordering_rule_matches_torch_layer() -> None:
    """Raster order normally; value order in frames with more peaks than max_instances."""
    cfg = parse_config(config_dict("centroid"))
    maps = torch.zeros(2, 1, 16, 16)
    maps[0, 0, 2, 2], maps[0, 0, 5, 9], maps[0, 0, 12, 4] = 0.5, 0.9, 0.7
    maps[1, 0, 3, 3], maps[1, 0, 9, 1] = 0.3, 0.6
    x, y, values, dropped = local_peak_candidates(maps, k=8)
    stride = cfg.head("CentroidConfmapsHead").output_stride
    baked = {
        "centroids": torch.stack([x, y], dim=-1)[:, 0].float() * stride,
        "centroid_vals": values[:, 0],
        "dropped_centroid_vals": dropped[:, 0],
    }
    for max_instances in (None, 1, 2, 3):
        opts = PredictOptions(peak_threshold=0.2, refine=False, max_instances=max_instances)
        frames = np.zeros((2, 32, 32, 1), np.uint8)
        ref = CentroidLayer(cfg, FakeBackend(lambda _x: {"CentroidConfmapsHead": maps}), opts)
        got = ExportedCentroidLayer(cfg, _Baked(baked), opts)
        r, g = ref.predict(frames), got.predict(frames)
        np.testing.assert_array_equal(g.valid, r.valid)
        np.testing.assert_allclose(g.instance_scores, r.instance_scores)
        np.testing.assert_allclose(g.extras["centroids"], r.extras["centroids"])


class _Baked(FakeBackend):
    does_baked_postproc = True

    def __init__(self, outputs: dict[str, torch.Tensor]) -> None:
        super().__init__(lambda _x: outputs)


def test_fp16_export_runs_and_stays_close(single_export, tmp_path: Path) -> None:
    model, _ = single_export
    info = export_model(model, tmp_path / "fp16", ExportSettings(fp16=True))
    assert info.data["precision"] == "fp16"
    proto = onnx.load(str(info.onnx_path))
    kinds = {init.data_type for init in proto.graph.initializer if len(init.dims) == 4}
    assert kinds == {onnx.TensorProto.FLOAT16}  # conv weights are half
    opts = PredictOptions(peak_threshold=0.3)
    ref_layer = SingleInstanceLayer(model.config, TorchBackend(model.network, "cpu"), opts)
    layer = ExportedSingleInstanceLayer(model.config, ONNXBackend(info, "cpu"), opts)
    x = torch.from_numpy(_parity(model.path.parents[1], "single_instance")[0]["image"][:, 0])
    ref = ref_layer.run_preprocessed(x, ref_layer.info_for_input(x))
    got = layer.run_preprocessed(x, layer.info_for_input(x))
    assert float(np.nanmedian(np.abs(got.points - ref.points))) < 0.5
    np.testing.assert_allclose(got.point_scores, ref.point_scores, atol=2e-2)
    assert next(model.network.parameters()).dtype == torch.float32  # caller's net untouched


def test_static_export_rejects_other_shapes_with_one_line(tmp_path: Path) -> None:
    model = load_model(write_model_dir(tmp_path / "m", config_dict("single_instance")))
    settings = ExportSettings(batch_size=2, frame_size=(64, 64))
    info = export_model(model, tmp_path / "exp", settings)
    assert info.input_shape == [2, 1, 64, 64]
    backend = ONNXBackend(info, "cpu")
    out = backend(torch.zeros(2, 1, 64, 64, dtype=torch.uint8))
    assert out["peaks"].shape == (2, 3, 2)
    with pytest.raises(
        BackendError, match=r"traced for 2x1x64x64 input .* preprocess to 2x1x32x48"
    ):
        backend(torch.zeros(2, 1, 32, 48, dtype=torch.uint8))
    with pytest.raises(BackendError, match="static batch of 2, not 3"):
        backend(torch.zeros(3, 1, 64, 64, dtype=torch.uint8))
    with pytest.raises(BackendError, match="uint8"):
        backend(torch.zeros(2, 1, 64, 64))


def test_decode_mismatch_with_a_fixed_export_is_reported(tmp_path: Path) -> None:
    from sleap_infer.core.artifact import decode_misfit

    have = DecodeSettings(refine=True, integral_patch_size=5, max_peaks=20)
    fields = ["refine", "integral_patch_size", "max_peaks"]
    assert decode_misfit(have, DecodeSettings(max_peaks=10), fields) is None
    assert "without" not in (decode_misfit(have, DecodeSettings(refine=False), fields) or "")
    assert "with integral" in (decode_misfit(have, DecodeSettings(refine=False), fields) or "")
    assert "patch is 5, not 3" in (
        decode_misfit(have, DecodeSettings(integral_patch_size=3, max_peaks=5), fields) or ""
    )
    assert "20 peak candidates" in (decode_misfit(have, DecodeSettings(max_peaks=64), fields) or "")
    assert decode_misfit(have, DecodeSettings(max_peaks=64), ["refine"]) is None


# ------------------------------------------------------------------ bad input
def test_missing_and_corrupt_models_are_model_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="nope: model path does not exist"):
        export_model(tmp_path / "nope")
    bad = write_model_dir(tmp_path / "bad", config_dict("single_instance"))
    (bad / "best.ckpt").write_bytes(b"not a checkpoint")
    with pytest.raises(ModelError, match="best.ckpt"):
        export_model(bad)


@pytest.mark.parametrize(("opset", "needle"), [(17, "writes opset 18 or newer"), (99, "knows")])
def test_unsupported_opsets_are_rejected_before_loading(opset: int, needle: str) -> None:
    with pytest.raises(UsageError, match=f"--opset {opset} is not supported: .*{needle}"):
        export_model("/does/not/matter", settings=ExportSettings(opset=opset))


def test_unexportable_type_and_unknown_size_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="'tiled' cannot be exported yet .*bottomup"):
        wrapper_for("tiled")
    with pytest.raises(UsageError, match="'tiled' cannot run on an exported backend"):
        exported_layer_class("tiled")
    single = write_model_dir(tmp_path / "si", config_dict("single_instance"))
    with pytest.raises(UsageError, match="--input-size"):
        export_model(single)


def test_export_never_clobbers_a_foreign_directory(tmp_path: Path) -> None:
    model_dir = write_model_dir(tmp_path / "m", config_dict("single_instance"))
    target = tmp_path / "busy"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match="busy: exists and is not an export directory"):
        export_model(model_dir, target, ExportSettings(frame_size=(32, 32)))
    assert (target / "notes.txt").read_text() == "mine"


def test_damaged_export_directories_are_named(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="not an export directory"):
        read_export(tmp_path)
    (tmp_path / METADATA_NAME).write_text("{broken")
    with pytest.raises(ExportError, match="unreadable export metadata"):
        read_export(tmp_path)
    (tmp_path / METADATA_NAME).write_text(json.dumps({"model_type": "centroid"}))
    with pytest.raises(ExportError, match="lacks source"):
        read_export(tmp_path)


def test_fixed_export_refuses_predict_options_it_cannot_serve(tmp_path: Path) -> None:
    from sleap_infer.backends.onnx_backend import onnx_backend_for_dir

    raw = config_dict("single_instance", preprocessing={"max_height": 32, "max_width": 32})
    model = load_model(write_model_dir(tmp_path / "m", raw))
    no_refine = ExportSettings(decode=DecodeSettings(refine=False))
    export_model(model, tmp_path / "exp", no_refine)
    backend = onnx_backend_for_dir(tmp_path / "exp", "cpu")
    layer = ExportedSingleInstanceLayer(model.config, backend, PredictOptions(refine=False))
    assert layer.predict(np.zeros((1, 32, 32, 1), np.uint8)).points.shape == (1, 1, 3, 2)
    with pytest.raises(BackendError, match="exp: cannot serve .* exported without integral"):
        ExportedSingleInstanceLayer(model.config, backend, PredictOptions())
