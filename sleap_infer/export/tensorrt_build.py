"""Build a serialised TensorRT engine from ``model.onnx`` with TensorRT's Python API.

The engine gets one optimisation profile over the batch axis only (height
and width are static in our exports), and a ``model.trt.json`` recording the
TensorRT version and GPU it was built for (see ``check_engine_compat``).
The ``trt`` module and GPU description are parameters so the logic can be
tested with fakes on machines without CUDA.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from sleap_infer.backends.tensorrt_backend import GpuInfo
from sleap_infer.core.errors import ExportError
from sleap_infer.export.settings import TRT_DYNAMIC_BATCH

Shape = tuple[int, int, int, int]


@dataclass(frozen=True)
class Profile:
    """TensorRT optimisation profile for the ``image`` input."""

    min: Shape
    opt: Shape
    max: Shape

    @classmethod
    def for_input(
        cls,
        input_shape: Shape,
        dynamic_batch: bool,
        batches: tuple[int, int, int] = TRT_DYNAMIC_BATCH,
    ) -> Profile:
        """``batches``: (min, opt, max) batch of a dynamic-batch engine."""
        _, channels, height, width = input_shape
        if not dynamic_batch:
            return cls(input_shape, input_shape, input_shape)
        low, opt, high = batches
        return cls(
            (low, channels, height, width),
            (opt, channels, height, width),
            (high, channels, height, width),
        )

    def as_dict(self) -> dict[str, list[int]]:
        return {"min": list(self.min), "opt": list(self.opt), "max": list(self.max)}


def build_engine(
    trt: ModuleType,
    onnx_path: Path,
    engine_path: Path,
    profile: Profile,
    gpu: GpuInfo,
    fp16: bool = False,
    workspace_gb: float = 2.0,
    input_name: str = "image",
) -> dict[str, Any]:
    """Parse, build, serialise; writes ``engine_path`` and ``<engine>.json``, returns the latter."""
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network(0)  # TensorRT 10: explicit batch is the only mode
    parser = trt.OnnxParser(network, logger)
    if not parser.parse(onnx_path.read_bytes()):
        errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
        raise ExportError(f"{onnx_path}: TensorRT cannot parse this ONNX file ({errors})")
    config = builder.create_builder_config()
    config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace_gb * (1 << 30)))
    precision = "fp32"
    if fp16:
        config.set_flag(trt.BuilderFlag.FP16)
        precision = "fp16"
    elif hasattr(trt.BuilderFlag, "TF32"):
        config.clear_flag(trt.BuilderFlag.TF32)  # strict fp32, like the torch path
    shapes = builder.create_optimization_profile()
    shapes.set_shape(input_name, profile.min, profile.opt, profile.max)
    config.add_optimization_profile(shapes)
    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        raise ExportError(f"{onnx_path}: TensorRT failed to build an engine (see its log above)")
    engine_path.write_bytes(bytes(serialized))
    meta = {
        "tensorrt_version": trt.__version__,
        "gpu_name": gpu.name,
        "compute_capability": gpu.compute_capability,
        "precision": precision,
        "workspace_gb": workspace_gb,
        "profile": profile.as_dict(),
        "onnx_sha256": hashlib.sha256(onnx_path.read_bytes()).hexdigest(),
    }
    engine_path.with_name(engine_path.name + ".json").write_text(
        json.dumps(meta, indent=2, sort_keys=True) + "\n"
    )
    return meta
