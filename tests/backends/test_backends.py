"""Torch backend and device resolution."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sleap_infer.backends import ModelBackend, TorchBackend, resolve_device
from sleap_infer.backends.base import host_input
from sleap_infer.backends.host_memory import keep_freed_memory
from sleap_infer.backends.torch_backend import first_floats_per_pixel
from sleap_infer.core.errors import BackendError, UsageError
from sleap_infer.model.config import parse_config
from sleap_infer.nets import build_network
from sleap_infer.runtimes import backend_maker

from model_factory import config_dict, write_model_dir


def test_resolve_device() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type in {"cpu", "cuda", "mps"}
    with pytest.raises(BackendError, match="unknown device"):
        resolve_device("tpu:9")
    if not torch.cuda.is_available():
        with pytest.raises(BackendError, match="CUDA is not available"):
            resolve_device("cuda:1")


def test_unknown_backend_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown backend 'tensorflow'"):
        backend_maker("tensorflow")


def test_torch_backend_matches_network_and_satisfies_protocol() -> None:
    net = build_network(parse_config(config_dict("bottomup")))
    backend = TorchBackend(net, "cpu")
    assert isinstance(backend, ModelBackend)
    x = torch.randint(0, 255, (2, 1, 32, 32), dtype=torch.uint8)
    out = backend(x)
    with torch.no_grad():
        ref = net(x.float() / 255)
    for k in ref:
        assert torch.allclose(out[k], ref[k])
        assert out[k].dtype == torch.float32
    backend.warmup((1, 1, 32, 32))


def test_fp16_needs_an_accelerator() -> None:
    net = build_network(parse_config(config_dict("single_instance")))
    with pytest.raises(BackendError, match="--fp16 needs a cuda or mps device"):
        TorchBackend(net, "cpu", fp16=True)


def test_compiled_backend_matches_eager() -> None:
    pytest.importorskip("torch._dynamo")
    net = build_network(parse_config(config_dict("single_instance")))
    x = torch.randint(0, 255, (1, 1, 32, 32), dtype=torch.uint8)
    eager = TorchBackend(net, "cpu")(x)["SingleInstanceConfmapsHead"]
    try:
        compiled = TorchBackend(net, "cpu", compile=True)(x)["SingleInstanceConfmapsHead"]
    except Exception as exc:  # no C++ toolchain for inductor on this machine
        pytest.skip(f"torch.compile unavailable here: {type(exc).__name__}")
    assert torch.allclose(eager, compiled, atol=1e-5)


def test_channels_last_is_default_on_cpu_and_matches_nchw() -> None:
    import copy

    net = build_network(parse_config(config_dict("bottomup"))).eval()
    nchw = TorchBackend(copy.deepcopy(net), "cpu", channels_last=False)
    nhwc = TorchBackend(net, "cpu")
    assert nhwc.memory_format is torch.channels_last
    x = torch.randint(0, 255, (2, 1, 64, 64), dtype=torch.uint8)
    a, b = nchw(x), nhwc(x)
    for k in a:
        assert b[k].is_contiguous()  # peak finding views these maps
        torch.testing.assert_close(b[k], a[k], rtol=1e-4, atol=1e-5)


def test_bf16_autocast_runs_on_cpu_and_stays_close() -> None:
    import copy

    net = build_network(parse_config(config_dict("single_instance"))).eval()
    fp32 = TorchBackend(copy.deepcopy(net), "cpu")
    bf16 = TorchBackend(net, "cpu", bf16=True)
    x = torch.randint(0, 255, (1, 1, 64, 64), dtype=torch.uint8)
    a, b = fp32(x), bf16(x)
    for k in a:
        assert b[k].dtype == torch.float32
        assert not torch.equal(a[k], b[k])  # really ran in bfloat16
        torch.testing.assert_close(b[k], a[k], rtol=0.1, atol=0.05)
    with pytest.raises(UsageError, match="--fp16 and --bf16 conflict"):
        TorchBackend(net, "cpu", bf16=True, fp16=True)


def test_cpu_batches_of_large_frames_run_in_chunks_with_the_same_maps() -> None:
    net = build_network(parse_config(config_dict("single_instance"))).eval()
    backend = TorchBackend(net, "cpu")
    calls: list[int] = []
    forward = backend._forward
    backend._forward = lambda x: calls.append(int(x.shape[0])) or forward(x)  # type: ignore[assignment]
    backend.cpu_chunk_pixels = 2 * 64 * 64  # two 64x64 frames per network call
    x = torch.randint(0, 255, (5, 1, 64, 64), dtype=torch.uint8)
    chunked = backend(x)
    assert calls == [2, 2, 1]
    calls.clear()
    backend.cpu_chunk_pixels = 10**9
    whole = backend(x)
    assert calls == [5]
    for name, maps in whole.items():
        assert chunked[name].shape == maps.shape
        assert torch.allclose(chunked[name], maps, atol=1e-5)
    small = torch.zeros((16, 1, 16, 16), dtype=torch.uint8)
    assert TorchBackend.chunk_size(backend, small) == 16
    backend.cpu_chunk_pixels = 3 * 64 * 64  # at most 3 a call: 4 frames run as 2 + 2
    assert backend.chunk_size(torch.zeros((4, 1, 64, 64))) == 2


def test_cpu_chunks_hold_a_fixed_first_activation() -> None:
    """The chunk is sized by the first convolution's output (floats per input pixel)."""
    unet = build_network(parse_config(config_dict("single_instance", unet={"filters": 16})))
    assert first_floats_per_pixel(unet) == 16
    stem = torch.nn.Sequential(torch.nn.Conv2d(1, 96, 4, stride=2), torch.nn.ReLU())
    assert first_floats_per_pixel(stem) == 24  # ConvNeXt's stem: 96 channels at stride 2
    assert first_floats_per_pixel(torch.nn.Identity()) == 1
    backend = TorchBackend(unet.eval(), "cpu")
    if keep_freed_memory():
        assert backend.cpu_chunk_pixels == TorchBackend.cpu_chunk_floats // 16
    else:
        assert backend.cpu_chunk_pixels == TorchBackend.cpu_chunk_pixels


def test_onnx_cuda_sessions_ask_for_ieee_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    """ONNX Runtime's CUDA provider runs float32 convolutions in TF32 unless told not to;
    the torch backend and our TensorRT engines are IEEE float32 on a GPU, so it is told."""
    ort = pytest.importorskip("onnxruntime")
    from types import SimpleNamespace

    from sleap_infer.backends.onnx_backend import ONNXBackend

    asked: list[object] = []

    def session(path: str, sess_options: object, providers: list[object]) -> object:
        asked.extend(providers)
        raise RuntimeError("recorded")

    monkeypatch.setattr(ort, "InferenceSession", session)
    export = SimpleNamespace(raw_maps=False, onnx_path="model.onnx", check_graph=lambda: None)
    with pytest.raises(Exception, match="recorded"):
        ONNXBackend(export, torch.device("cuda", 1))  # type: ignore[arg-type]
    assert asked == [
        ("CUDAExecutionProvider", {"device_id": 1, "use_tf32": 0}),
        "CPUExecutionProvider",
    ]


@pytest.mark.parametrize("runtime", ["onnx", "openvino"])
def test_cpu_pool_runtimes_ask_for_one_host_thread(runtime: str, tmp_path) -> None:
    """ONNX Runtime and OpenVINO run the network in their own CPU pool: the layer's torch
    work beside them runs on one thread (``torch_threads``), torch's own backend leaves
    the pool alone."""
    pytest.importorskip("onnxruntime")
    if runtime == "openvino":
        pytest.importorskip("openvino")
    import numpy as np

    import sleap_infer
    from sleap_infer.backends.threads import HOST_THREADS_BESIDE_POOL

    model = write_model_dir(tmp_path / "m", config_dict("single_instance"))
    frames = np.zeros((2, 64, 64, 1), np.uint8)
    torch_pipe = sleap_infer.load(model, backend="torch", device="cpu")
    assert getattr(torch_pipe.layer.backend, "host_threads", None) is None
    pipe = sleap_infer.load(model, backend=runtime, device="cpu")
    assert pipe.layer.backend.host_threads == HOST_THREADS_BESIDE_POOL == 1
    before = torch.get_num_threads()
    pipe.predict(frames)
    assert torch.get_num_threads() == before


def test_onnx_sessions_of_a_top_down_pair_do_not_spin(tmp_path) -> None:
    """The two networks of a top-down pair take turns on every batch: their ONNX Runtime
    sessions sleep when idle instead of spinning on the cores the other one needs. A lone
    model's session keeps ONNX Runtime's default (spinning: faster for it)."""
    pytest.importorskip("onnxruntime")
    import numpy as np

    import sleap_infer

    key = "session.intra_op.allow_spinning"
    centroid = write_model_dir(tmp_path / "c", config_dict("centroid"))
    instance = write_model_dir(tmp_path / "i", config_dict("centered_instance"))
    frames = np.zeros((2, 64, 64, 1), np.uint8)

    def spin_entries(backend: object) -> list[str]:
        """Each opened session's setting ("unset": ONNX Runtime's default, spinning)."""
        out = []
        for b in backend._backends.values():  # type: ignore[attr-defined]
            entries = b.session.get_session_options()
            try:
                out.append(entries.get_session_config_entry(key))
            except RuntimeError:  # "does not have configuration with key"
                out.append("unset")
        return out

    pair = sleap_infer.load(centroid, instance, backend="onnx", device="cpu")
    pair.predict(frames)  # random weights: no centroid, so the instance network never runs
    for stage in (pair.layer.centroid, pair.layer.instance):
        assert stage.backend.runtime_options["spin"] is False
    assert spin_entries(pair.layer.centroid.backend) == ["0"]
    lone = sleap_infer.load(centroid, backend="onnx", device="cpu")
    lone.predict(frames)
    assert "spin" not in lone.layer.backend.runtime_options
    assert spin_entries(lone.layer.backend) == ["unset"]


def test_host_input_is_a_contiguous_copy_of_a_permuted_batch() -> None:
    # Frames arrive NHWC and are permuted to NCHW without a copy; the CPU runtimes get one
    # C-contiguous array with the same values (made by numpy, off torch's thread pool).
    frames = torch.arange(2 * 5 * 7 * 3, dtype=torch.int64).remainder(251).to(torch.uint8)
    x = frames.reshape(2, 5, 7, 3).permute(0, 3, 1, 2)
    assert not x.is_contiguous()
    array = host_input(x)
    assert array.flags.c_contiguous and array.dtype == np.uint8
    assert array.shape == (2, 3, 5, 7)
    assert (array == x.contiguous().numpy()).all()
