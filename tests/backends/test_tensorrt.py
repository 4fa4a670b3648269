"""TensorRT without a GPU: the missing-runtime errors, engine compatibility, and our build/run
logic against a fake ``tensorrt`` module (real engines need CUDA and are not tested here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from sleap_infer.backends import TorchBackend
from sleap_infer.backends.tensorrt_backend import (
    GpuInfo,
    TensorRTBackend,
    check_engine_compat,
    read_engine_metadata,
    require_tensorrt,
)
from sleap_infer.core.artifact import ExportInfo
from sleap_infer.core.errors import BackendError, ExportError
from sleap_infer.core.options import DecodeSettings
from sleap_infer.export import exporter
from sleap_infer.export.pipeline import export_topdown
from sleap_infer.export.settings import ExportSettings
from sleap_infer.export.tensorrt_build import Profile, build_engine
from sleap_infer.export.wrappers.bottomup import BottomUpWrapper
from sleap_infer.layers import BottomUpLayer, PredictOptions
from sleap_infer.layers.exported import ExportedBottomUpLayer
from sleap_infer.model.loader import load_model
from sleap_infer.runtimes import EngineTarget, backend_maker, get_runtime
from sleap_infer.runtimes.cache import ExportRequest, misfit

import fake_tensorrt as fake
from model_factory import config_dict, write_model_dir

H200 = GpuInfo("NVIDIA H200", "9.0")


@pytest.fixture()
def fake_trt(monkeypatch: pytest.MonkeyPatch):
    fake.RECORD.clear()
    fake.PARSE_OK[0] = True
    monkeypatch.setitem(sys.modules, "tensorrt", fake)
    return fake


def _tensorrt_installed() -> bool:
    try:
        import tensorrt  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(_tensorrt_installed(), reason="tensorrt is installed here")
def test_missing_tensorrt_names_the_extra() -> None:
    with pytest.raises(BackendError, match=r"pip install 'sleap-infer\[tensorrt\]'"):
        require_tensorrt()
    with pytest.raises(BackendError, match=r"sleap-infer\[tensorrt\]"):
        backend_maker("trt", "auto")


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_no_cuda_is_one_clear_error_even_with_tensorrt(fake_trt, tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="needs a CUDA GPU"):
        backend_maker("trt", "cuda:1")
    with pytest.raises(BackendError, match="needs a CUDA GPU"):
        TensorRTBackend(tmp_path / "model.trt")


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_trt_export_fails_before_writing_anything(tmp_path: Path) -> None:
    model_dir = write_model_dir(tmp_path / "m", config_dict("centroid"))
    settings = ExportSettings(formats=("onnx", "trt"), frame_size=(32, 32))
    with pytest.raises(BackendError):
        exporter.export_model(model_dir, tmp_path / "out", settings)
    assert not (tmp_path / "out").exists()


def test_engine_compat_checks_version_and_architecture(tmp_path: Path) -> None:
    meta = {"tensorrt_version": "10.3.0", "gpu_name": "NVIDIA A100", "compute_capability": "8.0"}
    where = tmp_path / "model.trt"
    check_engine_compat(meta, "10.3.0", GpuInfo("NVIDIA A100-SXM4-80GB", "8.0"), where)
    with pytest.raises(ExportError, match=r"model.trt: engine built with TensorRT 10.3.0, .* 10.7"):
        check_engine_compat(meta, "10.7.0", GpuInfo("NVIDIA A100", "8.0"), where)
    with pytest.raises(ExportError, match=r"built for NVIDIA A100 \(compute capability 8.0\)"):
        check_engine_compat(meta, "10.3.0", H200, where)


def test_engine_metadata_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="TensorRT engine not found"):
        read_engine_metadata(tmp_path / "model.trt")
    (tmp_path / "model.trt").write_bytes(b"x")
    with pytest.raises(ExportError, match="missing or unreadable engine metadata"):
        read_engine_metadata(tmp_path / "model.trt")


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("fp16", [False, True])
def test_build_engine_profile_flags_and_metadata(
    fake_trt, tmp_path: Path, dynamic: bool, fp16: bool
) -> None:
    onnx_path = tmp_path / "model.onnx"
    onnx_path.write_bytes(b"onnx bytes")
    profile = Profile.for_input((2, 1, 64, 96), dynamic_batch=dynamic)
    meta = build_engine(
        fake_trt, onnx_path, tmp_path / "model.trt", profile, H200, fp16=fp16, workspace_gb=1.0
    )
    name, low, opt, high = fake.RECORD["profile"]
    assert name == "image"
    if dynamic:
        assert (low, opt, high) == ((1, 1, 64, 96), (4, 1, 64, 96), (16, 1, 64, 96))
    else:
        assert low == opt == high == (2, 1, 64, 96)
    flags = fake.RECORD["config"].flags
    assert (fake.BuilderFlag.FP16 in flags) == fp16
    assert (fake.BuilderFlag.TF32 in flags) == fp16  # strict fp32 clears TF32
    assert fake.RECORD["workspace"] == 1 << 30
    assert (tmp_path / "model.trt").read_bytes() == b"fake-engine"
    written = json.loads((tmp_path / "model.trt.json").read_text())
    assert written == meta
    assert meta["tensorrt_version"] == "10.99.0"
    assert (meta["gpu_name"], meta["compute_capability"]) == ("NVIDIA H200", "9.0")
    assert meta["precision"] == ("fp16" if fp16 else "fp32")
    assert meta["profile"]["max"][0] == (16 if dynamic else 2)


def test_build_engine_reports_parser_errors(fake_trt, tmp_path: Path) -> None:
    fake.PARSE_OK[0] = False
    (tmp_path / "model.onnx").write_bytes(b"x")
    with pytest.raises(ExportError, match="cannot parse this ONNX file .*Unsupported operator"):
        build_engine(
            fake_trt,
            tmp_path / "model.onnx",
            tmp_path / "model.trt",
            Profile.for_input((1, 1, 8, 8), False),
            H200,
        )
    assert not (tmp_path / "model.trt").exists()


def _engine(input_type: fake.DataType) -> fake.FakeEngine:
    return fake.FakeEngine(
        inputs={"image": input_type},
        outputs={
            "peaks": (fake.DataType.HALF, lambda x: x.float().mean(dim=(2, 3))[..., None] / 2),
            "peak_valid": (fake.DataType.BOOL, lambda x: x.float().amax(dim=(2, 3)) > 100),
        },
    )


def test_runner_casts_inputs_and_half_outputs(fake_trt) -> None:
    engine = _engine(fake.DataType.UINT8)
    backend = TensorRTBackend.from_engine(fake_trt, engine, torch.device("cpu"))
    assert backend.does_baked_postproc and backend.input_name == "image"
    x = torch.full((2, 3, 4, 4), 200, dtype=torch.uint8)
    out = backend(x)
    assert out["peaks"].dtype == torch.float32 and out["peaks"].shape == (2, 3, 1)
    assert torch.all(out["peaks"] == 100)
    assert out["peak_valid"].dtype == torch.bool and out["peak_valid"].all()
    assert engine.contexts[0].seen[-1].dtype == torch.uint8


def test_runner_casts_uint8_frames_for_float_engines(fake_trt) -> None:
    engine = _engine(fake.DataType.FLOAT)
    backend = TensorRTBackend.from_engine(fake_trt, engine, torch.device("cpu"))
    out = backend(torch.full((1, 1, 2, 2), 50, dtype=torch.uint8))
    assert engine.contexts[0].seen[-1].dtype == torch.float32
    assert out["peaks"].item() == 25 and not out["peak_valid"].item()
    backend.warmup((1, 1, 2, 2))
    assert len(engine.contexts[0].seen) == 2


def test_runner_rejects_batches_outside_the_profile(fake_trt) -> None:
    backend = TensorRTBackend.from_engine(
        fake_trt, _engine(fake.DataType.UINT8), torch.device("cpu")
    )
    with pytest.raises(BackendError, match="outside its optimisation profile"):
        backend(torch.zeros((9, 1, 2, 2), dtype=torch.uint8))


def test_export_with_engine_and_engine_matching(
    fake_trt, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole --format trt path with the fake builder: files, metadata, then reuse checks."""
    monkeypatch.setattr(exporter, "_trt_target", lambda device: (fake_trt, torch.device("cpu")))
    monkeypatch.setattr(GpuInfo, "of", classmethod(lambda cls, device: H200))
    model = load_model(write_model_dir(tmp_path / "m", config_dict("centroid")))
    settings = ExportSettings(formats=("onnx", "trt"), batch_size=4, frame_size=(32, 32))
    info = exporter.export_model(model, tmp_path / "exp", settings)
    assert info.engine_path == tmp_path / "exp" / "model.trt" and info.engine_path.is_file()
    assert info.data["tensorrt"]["profile"]["opt"] == [4, 1, 32, 32]
    assert json.loads((tmp_path / "exp" / "model.trt.json").read_text())["gpu_name"] == H200.name

    def request(**kw: object) -> ExportRequest:
        base = {
            "runtime": get_runtime("trt"),
            "input_shape": (4, 1, 32, 32),
            "decode": DecodeSettings(),
            "target": EngineTarget(fake.__version__, H200),
        }
        return ExportRequest(**{**base, **kw})  # type: ignore[arg-type]

    assert misfit(info, model, request()) is None
    old_trt = EngineTarget("10.1.0", H200)
    assert "TensorRT 10.99.0" in (misfit(info, model, request(target=old_trt)) or "")
    other = EngineTarget(fake.__version__, GpuInfo("NVIDIA GeForce RTX 3090", "8.6"))
    assert "its engine is for NVIDIA H200" in (misfit(info, model, request(target=other)) or "")
    assert "static batch of 4" in (misfit(info, model, request(input_shape=(2, 1, 32, 32))) or "")
    assert "fp32" in (misfit(info, model, request(fp16=True)) or "")
    stale = SimpleNamespace(checkpoint_sha256="0" * 64, model_type="centroid")
    assert "different best.ckpt" in (misfit(info, stale, request()) or "")  # type: ignore[arg-type]
    info.engine_path.unlink()
    assert misfit(info, model, request()) == "it has no TensorRT engine"
    assert isinstance(info, ExportInfo)


def test_pair_export_builds_an_engine_per_stage_with_a_dynamic_crop_batch(
    fake_trt, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exporter, "_trt_target", lambda device: (fake_trt, torch.device("cpu")))
    monkeypatch.setattr(GpuInfo, "of", classmethod(lambda cls, device: H200))
    centroid = write_model_dir(tmp_path / "c", config_dict("centroid"))
    instance = write_model_dir(tmp_path / "i", config_dict("centered_instance"))
    settings = ExportSettings(formats=("onnx", "trt"), batch_size=4, frame_size=(32, 32))
    _, stage1, stage2 = export_topdown([centroid, instance], tmp_path / "pair", settings)
    assert stage1.engine_path is not None and stage1.engine_path.is_file()
    assert stage2.engine_path is not None and stage2.engine_path.is_file()
    assert stage1.data["tensorrt"]["profile"]["max"] == [4, 1, 32, 32]  # frames: static
    assert stage2.data["tensorrt"]["profile"] == {  # crops: as many as there are animals
        "min": [1, 1, 32, 32],
        "opt": [4, 1, 32, 32],
        "max": [16, 1, 32, 32],
    }


def test_bottomup_adapter_reads_tensorrt_outputs(fake_trt, tmp_path: Path) -> None:
    """The TensorRT runner's output handling with the bottom-up adapter (engine = the wrapper)."""
    model = load_model(write_model_dir(tmp_path / "m", config_dict("bottomup")))
    wrapper = BottomUpWrapper(model.network, model.config, DecodeSettings()).eval()
    kinds = {"peak_valid": fake.DataType.BOOL}

    def output(index: int):
        return lambda x: torch.no_grad()(wrapper)(x)[index]

    engine = fake.FakeEngine(
        inputs={"image": fake.DataType.UINT8},
        outputs={
            name: (kinds.get(name, fake.DataType.FLOAT), output(i))
            for i, name in enumerate(wrapper.output_names)
        },
    )
    backend = TensorRTBackend.from_engine(fake_trt, engine, torch.device("cpu"))
    options = PredictOptions(peak_threshold=-1e9, min_line_scores=-1e9)
    layer = ExportedBottomUpLayer(model.config, backend, options)
    ref_layer = BottomUpLayer(model.config, TorchBackend(model.network, "cpu"), options)
    frames = np.random.default_rng(0).integers(0, 256, (2, 16, 24, 1), dtype=np.uint8)
    got, ref = layer.predict(frames), ref_layer.predict(frames)
    assert ref.valid.sum() >= 4
    np.testing.assert_array_equal(got.valid, ref.valid)
    np.testing.assert_allclose(got.points, ref.points, atol=1e-4)
    np.testing.assert_allclose(got.instance_scores, ref.instance_scores, atol=1e-5)
