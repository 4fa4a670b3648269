"""Native TensorRT execution of an exported engine (CUDA only).

``tensorrt`` is imported lazily, so this module loads on any machine; asking
for the backend where it cannot run raises one :class:`BackendError` naming
the missing piece. Engines are tied to a GPU architecture and a TensorRT
version, so the build records both next to the engine (``model.trt.json``)
and :func:`check_engine_compat` compares them *before* deserialising, which
otherwise fails with an opaque TensorRT log line or a crash.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from sleap_infer.backends.base import refuse_misfit, resolve_device
from sleap_infer.core.artifact import ExportInfo
from sleap_infer.core.errors import BackendError, ExportError
from sleap_infer.core.files import CONFIG_MAX_BYTES, read_text_bounded
from sleap_infer.core.options import DecodeSettings

INSTALL_HINT = "pip install 'sleap-infer[tensorrt]'"


def require_tensorrt() -> ModuleType:
    """The ``tensorrt`` module, or a BackendError with the install line."""
    try:
        import tensorrt
    except ImportError as exc:
        raise BackendError(
            f"the trt backend needs NVIDIA TensorRT, which is not installed here ({INSTALL_HINT}, "
            "on a Linux or Windows machine with an NVIDIA GPU)"
        ) from exc
    return tensorrt


def require_cuda(device: str | torch.device) -> torch.device:
    """``auto|cuda|cuda:N`` -> a CUDA device that exists, or a BackendError."""
    text = str(device).strip().lower()
    if not torch.cuda.is_available():
        raise BackendError(
            f"the trt backend needs a CUDA GPU, and torch sees none here (device {text!r}); "
            "use --backend onnx or torch"
        )
    resolved = resolve_device("cuda" if text == "auto" else text)
    if resolved.type != "cuda":
        raise BackendError(f"the trt backend runs on cuda or cuda:N, not {text!r}")
    return resolved


@dataclass(frozen=True)
class GpuInfo:
    """What a serialised engine is specific to."""

    name: str
    compute_capability: str  # "8.6"

    @classmethod
    def of(cls, device: torch.device) -> GpuInfo:
        major, minor = torch.cuda.get_device_capability(device)
        return cls(torch.cuda.get_device_name(device), f"{major}.{minor}")


def read_engine_metadata(engine_path: Path) -> dict[str, Any]:
    path = engine_path.with_name(engine_path.name + ".json")
    if not engine_path.is_file():
        raise ExportError(f"{engine_path}: TensorRT engine not found")
    try:
        data = json.loads(read_text_bounded(path, CONFIG_MAX_BYTES, OSError))
    except (OSError, ValueError) as exc:
        raise ExportError(
            f"{path}: missing or unreadable engine metadata, so {engine_path.name} cannot be "
            "checked against this GPU; rebuild it with infer export --format trt"
        ) from exc
    return data


def check_engine_compat(meta: dict[str, Any], trt_version: str, gpu: GpuInfo, where: Path) -> None:
    """Raise an ExportError if an engine was built by another TensorRT or GPU architecture.

    Same compute capability with a different GPU name is allowed: TensorRT runs
    such engines (with a performance note), and e.g. H100/H200 share one.
    """
    built_trt = str(meta.get("tensorrt_version"))
    built_cc = str(meta.get("compute_capability"))
    if built_trt != trt_version:
        raise ExportError(
            f"{where}: engine built with TensorRT {built_trt}, this machine has {trt_version}; "
            "rebuild it (infer export --format trt) or delete it to rebuild on first use"
        )
    if built_cc != gpu.compute_capability:
        raise ExportError(
            f"{where}: engine built for {meta.get('gpu_name')} (compute capability {built_cc}), "
            f"this GPU is {gpu.name} ({gpu.compute_capability}); rebuild it on this machine"
        )


def torch_dtype(trt: ModuleType, trt_dtype: Any) -> torch.dtype:
    table = {
        "FLOAT": torch.float32,
        "HALF": torch.float16,
        "BF16": torch.bfloat16,
        "INT8": torch.int8,
        "UINT8": torch.uint8,
        "INT32": torch.int32,
        "INT64": torch.int64,
        "BOOL": torch.bool,
    }
    for name, dtype in table.items():
        if getattr(trt.DataType, name, None) == trt_dtype:
            return dtype
    raise BackendError(f"TensorRT engine uses unsupported dtype {trt_dtype}")


class TensorRTBackend:
    """Runs a TensorRT engine on torch CUDA tensors: no host copies, one stream.

    Inputs are cast to the engine's input dtype (uint8 for our exports; float
    for engines built elsewhere); half outputs come back as float32 so layers
    see the same dtypes as from ONNX Runtime. An engine of a raw-maps export
    (segmentation, tiled models) returns ``{head name: map}``, so it reports
    ``does_baked_postproc = False``; without export metadata an engine is taken
    to decode in-graph, as every engine did before raw maps.
    """

    does_baked_postproc = True

    def __init__(
        self,
        engine_path: str | Path,
        device: str | torch.device = "cuda",
        check: bool = True,
        export: ExportInfo | None = None,
    ) -> None:
        trt = require_tensorrt()
        self.device = device if isinstance(device, torch.device) else require_cuda(device)
        self.export = export
        self.does_baked_postproc = export is None or not export.raw_maps
        engine_path = Path(engine_path)
        meta = read_engine_metadata(engine_path)
        if check:
            check_engine_compat(meta, trt.__version__, GpuInfo.of(self.device), engine_path)
        with torch.cuda.device(self.device):
            logger = trt.Logger(trt.Logger.WARNING)
            engine = trt.Runtime(logger).deserialize_cuda_engine(engine_path.read_bytes())
        if engine is None:
            raise ExportError(f"{engine_path}: TensorRT could not deserialise this engine")
        self._setup(trt, engine, self.device, lambda: torch.cuda.current_stream(self.device))
        self.engine_path = engine_path

    @classmethod
    def from_engine(
        cls,
        trt: ModuleType,
        engine: Any,
        device: torch.device,
        stream: Callable[[], Any] | None = None,
        export: ExportInfo | None = None,
    ) -> TensorRTBackend:
        """Wrap an already deserialised engine (tests use a fake engine on the CPU);
        ``export``: the metadata it was built from, if any (raw maps or decoded)."""
        self = cls.__new__(cls)
        self.device = device
        self.engine_path = None
        self.export = export
        self.does_baked_postproc = export is None or not export.raw_maps
        self._setup(trt, engine, device, stream)
        return self

    def _setup(
        self, trt: ModuleType, engine: Any, device: torch.device, stream: Callable[[], Any] | None
    ) -> None:
        self._trt = trt
        self._engine = engine
        self._context = engine.create_execution_context()
        self._stream = stream
        names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
        inputs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        if len(inputs) != 1:
            raise BackendError(f"expected an engine with one input, got {inputs}")
        self.input_name = inputs[0]
        self.input_dtype = torch_dtype(trt, engine.get_tensor_dtype(self.input_name))
        self.output_names = [n for n in names if n not in inputs]
        self._output_dtypes = {
            n: torch_dtype(trt, engine.get_tensor_dtype(n)) for n in self.output_names
        }

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        with self._on_device():
            return self._run(x)

    def _on_device(self) -> contextlib.AbstractContextManager[Any]:
        """TensorRT runs on the current CUDA device, so make it ours (cuda:N)."""
        if self.device.type == "cuda":
            return torch.cuda.device(self.device)
        return contextlib.nullcontext()

    def _run(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        x = x.to(self.device, non_blocking=True)
        if x.dtype != self.input_dtype:
            x = x.to(self.input_dtype)
        x = x.contiguous()
        context = self._context
        if not context.set_input_shape(self.input_name, tuple(x.shape)):
            raise BackendError(
                f"TensorRT engine does not accept input shape {tuple(x.shape)} "
                "(outside its optimisation profile)"
            )
        context.set_tensor_address(self.input_name, x.data_ptr())
        outputs: dict[str, torch.Tensor] = {}
        for name in self.output_names:
            shape = tuple(int(d) for d in context.get_tensor_shape(name))
            out = torch.empty(shape, dtype=self._output_dtypes[name], device=self.device)
            context.set_tensor_address(name, out.data_ptr())
            outputs[name] = out
        stream = self._stream() if self._stream is not None else None
        handle = stream.cuda_stream if stream is not None else 0
        if not context.execute_async_v3(handle):
            raise BackendError("TensorRT execution failed (see the TensorRT log above)")
        if stream is not None:
            stream.synchronize()
        return {k: v.float() if v.is_floating_point() else v for k, v in outputs.items()}

    def warmup(self, shape: tuple[int, ...]) -> None:
        self(torch.zeros(shape, dtype=self.input_dtype, device=self.device))

    def bind_decode(self, decode: DecodeSettings) -> None:
        """Refuse an export whose baked decoding differs (engines without export metadata
        cannot be checked; they are only made by ``infer export``, which records it)."""
        if self.export is not None:
            refuse_misfit(self.export, decode)

    def provenance(self) -> dict[str, Any]:
        where = self.export.path if self.export is not None else self.engine_path
        return {"runtime": "trt", "exports": [] if where is None else [str(where)]}
