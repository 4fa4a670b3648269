"""ONNX Runtime execution of an exported graph (CPU, or CUDA with IO binding).

On CUDA the input tensor and preallocated output tensors are bound by device
pointer, so frames already on the GPU never make a host round trip. ONNX
Runtime silently falls back to the CPU when its CUDA provider cannot load
(a known pain point), so the session's providers are checked after creation.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import torch

from sleap_infer.backends.base import (
    check_export_input,
    host_input,
    refuse_misfit,
    resolve_device,
)
from sleap_infer.backends.threads import HOST_THREADS_BESIDE_POOL, cpu_budget
from sleap_infer.core.artifact import ExportInfo, read_export
from sleap_infer.core.errors import BackendError, ExportError
from sleap_infer.core.options import DecodeSettings

GRAPH_LEVELS = {
    "disable": "ORT_DISABLE_ALL",
    "basic": "ORT_ENABLE_BASIC",
    "extended": "ORT_ENABLE_EXTENDED",
    "all": "ORT_ENABLE_ALL",
}


def require_onnxruntime() -> ModuleType:
    try:
        import onnxruntime
    except ImportError as exc:
        raise BackendError(
            "the onnx backend needs onnxruntime: pip install 'sleap-infer[onnx]' "
            "(or onnxruntime-gpu for CUDA)"
        ) from exc
    return onnxruntime


def resolve_onnx_device(spec: str | torch.device = "auto") -> torch.device:
    """ONNX Runtime here runs on the CPU or CUDA; ``auto`` picks CUDA only if ORT can use it."""
    ort = require_onnxruntime()
    has_cuda_ep = "CUDAExecutionProvider" in ort.get_available_providers()
    text = str(spec).strip().lower()
    if text == "auto":
        use_cuda = torch.cuda.is_available() and has_cuda_ep
        return torch.device("cuda", 0) if use_cuda else torch.device("cpu")
    if text.startswith("mps"):
        raise BackendError("the onnx backend runs on cpu or cuda, not mps (use --backend torch)")
    device = resolve_device(text)
    if device.type == "cuda" and not has_cuda_ep:
        raise BackendError(
            f"device {text!r}: this onnxruntime has no CUDA provider "
            "(pip uninstall onnxruntime && pip install onnxruntime-gpu)"
        )
    return device


class ONNXBackend:
    """Runs ``model.onnx`` of an export directory; outputs are torch tensors on ``device``.

    A raw-maps export (segmentation, tiled models) returns ``{head name: map}`` like the
    torch backend, so it reports ``does_baked_postproc = False`` and the ordinary layers
    decode it; a decoding export returns peaks for the exported layers.
    """

    def __init__(
        self,
        export: ExportInfo,
        device: str | torch.device = "auto",
        intra_op_threads: int = 0,
        graph_optimization: str = "all",
        spin: bool = True,
    ) -> None:
        ort = require_onnxruntime()
        self.device = device if isinstance(device, torch.device) else resolve_onnx_device(device)
        self.export = export
        self.does_baked_postproc = not export.raw_maps
        # Beside the CPU provider's own pool; on CUDA the network runs on the GPU.
        self.host_threads = HOST_THREADS_BESIDE_POOL if self.device.type == "cpu" else None
        if graph_optimization not in GRAPH_LEVELS:
            raise BackendError(
                f"unknown graph optimisation level {graph_optimization!r} "
                f"(choose {', '.join(GRAPH_LEVELS)})"
            )
        options = ort.SessionOptions()
        # 0 means "size to this process's core budget" (ORT's own default counts the host's).
        options.intra_op_num_threads = intra_op_threads or cpu_budget()
        if not spin:
            # Workers sleep when idle instead of spinning: for sessions that take turns
            # (a top-down pair), where one's spinning workers hold the cores the other needs.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = getattr(
            ort.GraphOptimizationLevel, GRAPH_LEVELS[graph_optimization]
        )
        providers: list[str | tuple[str, dict[str, object]]] = ["CPUExecutionProvider"]
        if self.device.type == "cuda":
            # IEEE float32 like the torch backend and our TensorRT engines (the provider's
            # default is TF32 on Ampere and newer; an fp16 export is unaffected).
            cuda = {"device_id": self.device.index or 0, "use_tf32": 0}
            providers.insert(0, ("CUDAExecutionProvider", cuda))
        export.check_graph()
        try:
            self.session = ort.InferenceSession(
                str(export.onnx_path), sess_options=options, providers=providers
            )
        except Exception as exc:  # ORT raises its own exception types
            raise ExportError(f"{export.onnx_path}: ONNX Runtime cannot load it ({exc})") from exc
        if (
            self.device.type == "cuda"
            and self.session.get_providers()[0] != "CUDAExecutionProvider"
        ):
            raise BackendError(
                f"onnxruntime could not start its CUDA provider on {self.device} "
                "(check the CUDA/cuDNN versions onnxruntime-gpu needs)"
            )
        self.input_name = self.session.get_inputs()[0].name
        self.output_names = [o.name for o in self.session.get_outputs()]

    def bind_decode(self, decode: DecodeSettings) -> None:
        """Called by exported layers: refuse an export whose baked decoding differs."""
        refuse_misfit(self.export, decode)

    def provenance(self) -> dict[str, Any]:
        return {"runtime": "onnx", "exports": [str(self.export.path)]}

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        check_export_input(self.export, x)
        if self.device.type == "cuda":
            return self._run_bound(x)
        feed = {self.input_name: host_input(x)}
        outs = self.session.run(self.output_names, feed)
        return {name: torch.from_numpy(np.asarray(v)) for name, v in zip(self.output_names, outs)}

    def _run_bound(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """CUDA path: bind device pointers in and out, no host copies."""
        x = x.to(self.device, non_blocking=True).contiguous()
        index = self.device.index or 0
        binding = self.session.io_binding()
        binding.bind_input(self.input_name, "cuda", index, np.uint8, tuple(x.shape), x.data_ptr())
        outputs: dict[str, torch.Tensor] = {}
        for spec in self.export.data["outputs"]:
            name = spec["name"]
            shape = self.export.output_shape(name, int(x.shape[0]))
            dtype = np.dtype(spec["dtype"])
            out = torch.empty(shape, dtype=_TORCH_DTYPES[dtype.name], device=self.device)
            binding.bind_output(name, "cuda", index, dtype, shape, out.data_ptr())
            outputs[name] = out
        # The input may still be in flight on torch's stream; ORT uses its own.
        torch.cuda.current_stream(self.device).synchronize()
        self.session.run_with_iobinding(binding)
        return outputs

    def warmup(self, shape: tuple[int, ...]) -> None:
        self(torch.zeros(shape, dtype=torch.uint8, device=self.device))


_TORCH_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bool": torch.bool,
    "int32": torch.int32,
    "int64": torch.int64,
}


def onnx_backend_for_dir(path: str | Path, device: str = "auto", **options: Any) -> ONNXBackend:
    """An ONNXBackend for an export directory (as written by ``infer export``)."""
    return ONNXBackend(read_export(Path(path)), device, **options)
