"""``export_model``: a model directory -> an export directory (ONNX, optionally TensorRT).

The directory is assembled under a temporary name and renamed into place,
so a crash never leaves a half-written export that later looks valid.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import numpy as np
import torch

import sleap_infer
from sleap_infer.errors import ExportError, UsageError
from sleap_infer.export.metadata import (
    ENGINE_NAME,
    IN_GRAPH,
    METADATA_NAME,
    METADATA_PROP,
    ON_HOST,
    ON_HOST_BY_TYPE,
    ONNX_NAME,
    PIPELINE_NAME,
    ExportInfo,
    read_export,
    write_metadata,
)
from sleap_infer.export.onnx_export import INPUT_NAME, embed_metadata, export_onnx, verify_numerics
from sleap_infer.export.settings import EXPORT_LAYOUT_VERSION, ExportSettings, check_opset
from sleap_infer.export.wrappers import ExportWrapper, wrapper_for
from sleap_infer.model.loader import CONFIG_NAME, LoadedModel, file_sha256, load_model

Notify = Callable[[str], None]

VALUE_TOLERANCE = {False: 1e-3, True: 5e-2}
"""Worst allowed gap between torch and ONNX Runtime peak values (fp32, fp16)."""


class _ShapeOnly:
    """A backend stand-in that lets a layer run its preprocessing, and nothing else."""

    device = torch.device("cpu")
    does_baked_postproc = True

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        raise RuntimeError("shape probe only")

    def warmup(self, shape: tuple[int, ...]) -> None:
        pass


def network_input_shape(model: LoadedModel, frame_size: tuple[int, int] | None) -> tuple[int, ...]:
    """``(C, H, W)`` the network sees for frames of ``frame_size``, via the layer's own chain.

    Without a frame size the config's size matcher decides (every frame is
    resized to ``max_height x max_width``); without either there is no way to know.
    Top-down stage-2 models see crops, never frames: their input is the crop
    size after their own input scale and stride padding.
    """
    from sleap_infer.layers.centered_instance import CenteredInstanceLayer
    from sleap_infer.layers.exported import exported_layer_class

    layer = exported_layer_class(model.model_type)(model.config, _ShapeOnly())
    if isinstance(layer, CenteredInstanceLayer):
        if frame_size is not None:
            raise UsageError(
                f"{model.path}: --input-size does not apply to a {model.model_type} model "
                f"(it is traced at its crop size, {layer.crop_size}x{layer.crop_size})"
            )
        crop = layer.crop_size
        crops = torch.zeros((1, layer.input_channels, crop, crop), dtype=torch.uint8)
        return tuple(int(d) for d in layer.crop_input(crops).shape[1:])
    pre = model.config.preprocessing
    if frame_size is None:
        if pre.max_height is None or pre.max_width is None:
            raise UsageError(
                f"{model.path}: the model has no max_height/max_width, so the input size "
                "is unknown: pass --input-size HxW (the video's frame size)"
            )
        frame_size = (pre.max_height, pre.max_width)
    frames = np.zeros((1, *frame_size, layer.input_channels), np.uint8)
    x, _ = layer.preprocess(frames)
    return tuple(int(d) for d in x.shape[1:])


def check_output_dir(out_dir: Path) -> None:
    """Refuse to replace anything but an earlier export (or an empty folder)."""
    if not out_dir.exists():
        return
    ours = (out_dir / METADATA_NAME).exists() or (out_dir / PIPELINE_NAME).exists()
    foreign = not out_dir.is_dir() or (any(out_dir.iterdir()) and not ours)
    if foreign:
        raise ExportError(f"{out_dir}: exists and is not an export directory; choose another -o")


@contextlib.contextmanager
def staged_directory(out_dir: Path) -> Iterator[Path]:
    """Yield a fresh temp dir beside ``out_dir``; on success it replaces ``out_dir``."""
    out_dir = out_dir.expanduser()
    check_output_dir(out_dir)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExportError(f"{out_dir.parent}: cannot create ({exc.strerror or exc})") from exc
    staging = out_dir.parent / f".{out_dir.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        staging.mkdir()
    except OSError as exc:
        raise ExportError(f"{out_dir.parent}: cannot write here ({exc.strerror or exc})") from exc
    try:
        yield staging
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _versions() -> dict[str, str]:
    out = {"sleap_infer": sleap_infer.__version__, "torch": torch.__version__}
    for name in ("onnx", "onnxscript", "onnxruntime", "tensorrt"):
        with contextlib.suppress(importlib_metadata.PackageNotFoundError):
            out[name] = importlib_metadata.version(name)
    return out


def build_metadata(
    model: LoadedModel,
    wrapper: ExportWrapper,
    settings: ExportSettings,
    input_shape: tuple[int, int, int, int],
    extra: dict[str, Any],
) -> dict[str, Any]:
    """The JSON written as ``export_metadata.json`` and embedded in the ONNX file."""
    config = model.config
    batch: int | str = "batch" if settings.dynamic_batch else input_shape[0]
    return {
        "layout_version": EXPORT_LAYOUT_VERSION,
        "model_type": model.model_type,
        "model_name": model.path.name,
        "source": {
            "model_dir": str(model.path.resolve()),
            "checkpoint_sha256": model.checkpoint_sha256,
            "training_config_sha256": file_sha256(model.path / CONFIG_NAME),
        },
        "skeleton": {
            "name": config.skeleton_name,
            "node_names": list(config.node_names),
            "edges": [list(e) for e in config.edges],
            "symmetries": [list(s) for s in config.symmetries],
        },
        "anchor_part": config.anchor_part,
        "class_names": list(config.class_names),
        "backbone": config.backbone_type,
        "strides": {
            "max_stride": config.max_stride,
            "output_strides": {h.name: h.output_stride for h in config.heads},
        },
        "input_scale": config.preprocessing.scale,
        "input": {
            "name": INPUT_NAME,
            "dtype": "uint8",
            "shape": [batch, *input_shape[1:]],
            "normalization": "divided by 255 in the graph",
        },
        "frame_size": None if settings.frame_size is None else list(settings.frame_size),
        "outputs": [spec.as_dict() for spec in wrapper.output_specs(input_shape)],
        "coordinates": (
            "(x, y) in size-matched frame pixels (network input pixels / input_scale); "
            "divide by the size-matcher factor for original frame pixels"
        ),
        "in_graph": IN_GRAPH.get(model.model_type, []),
        "on_host": [*ON_HOST, *ON_HOST_BY_TYPE.get(model.model_type, [])],
        "decode": vars(wrapper.decode),
        "decode_fields": list(wrapper.decode_fields),
        "precision": "fp16" if settings.fp16 else "fp32",
        "settings": settings.as_dict(),
        "versions": _versions(),
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "files": {"onnx": ONNX_NAME, "tensorrt": None},
        **extra,
    }


def export_model(
    model_path: str | Path | LoadedModel,
    out_dir: str | Path | None = None,
    settings: ExportSettings | None = None,
    device: str = "auto",
    notify: Notify | None = None,
    network_shape: tuple[int, ...] | None = None,
    extra_metadata: dict[str, Any] | None = None,
) -> ExportInfo:
    """Export one model directory; returns the written export (default ``<model>/exported``).

    ``network_shape`` ``(C, H, W)`` skips deriving the input from the frame
    size (used when a running layer already knows its preprocessed shape).
    ``extra_metadata`` is merged into the metadata (a top-down pair names its stage).
    """
    settings = settings or ExportSettings()
    check_opset(settings.opset)
    model = model_path if isinstance(model_path, LoadedModel) else load_model(model_path)
    wrapper_cls = wrapper_for(model.model_type)
    trt_target = _trt_target(device) if settings.wants_trt else None  # fail before the slow part
    out = Path(out_dir).expanduser() if out_dir is not None else model.path / "exported"
    check_output_dir(out)
    batch = 1 if settings.batch_size is None else settings.batch_size
    shape = network_shape or network_input_shape(model, settings.frame_size)
    input_shape = (batch, *(int(d) for d in shape))
    wrapper = wrapper_cls(model.network, model.config, settings.decode, fp16=settings.fp16)
    say = notify or (lambda _msg: None)
    with staged_directory(out) as staging:
        t0 = time.perf_counter()
        onnx_path = staging / ONNX_NAME
        export_onnx(wrapper, input_shape, onnx_path, settings.opset, settings.dynamic_batch)
        export_s = time.perf_counter() - t0
        gaps = verify_numerics(wrapper, onnx_path, input_shape)
        worst = max((v for k, v in gaps.items() if k.endswith("_vals")), default=0.0)
        if worst > VALUE_TOLERANCE[settings.fp16]:
            raise ExportError(
                f"{out}: ONNX Runtime and torch disagree on peak values by {worst:.3g} "
                f"(allowed {VALUE_TOLERANCE[settings.fp16]}); the export is not trustworthy"
            )
        data = build_metadata(
            model,
            wrapper,
            settings,
            input_shape,
            {
                "verification": gaps,
                "export_seconds": round(export_s, 2),
                **(extra_metadata or {}),
            },
        )
        embed_metadata(
            onnx_path,
            {
                METADATA_PROP: json.dumps(data, sort_keys=True),
                "training_config": (model.path / CONFIG_NAME).read_text(),
            },
        )
        data["onnx_sha256"] = hashlib.sha256(onnx_path.read_bytes()).hexdigest()
        shutil.copyfile(model.path / CONFIG_NAME, staging / CONFIG_NAME)
        say(f"ONNX graph written in {export_s:.1f} s ({onnx_path.stat().st_size / 1e6:.2f} MB)")
        if trt_target is not None:
            data["files"]["tensorrt"] = ENGINE_NAME
            data["tensorrt"] = _build_trt(
                trt_target, onnx_path, staging, input_shape, settings, say
            )
        write_metadata(staging, data)
    return read_export(out)


def _trt_target(device: str) -> tuple[Any, torch.device]:
    from sleap_infer.backends.tensorrt_backend import require_cuda, require_tensorrt

    trt = require_tensorrt()
    return trt, require_cuda(device)


def _build_trt(
    target: tuple[Any, torch.device],
    onnx_path: Path,
    staging: Path,
    input_shape: tuple[int, int, int, int],
    settings: ExportSettings,
    say: Notify,
) -> dict[str, Any]:
    from sleap_infer.backends.tensorrt_backend import GpuInfo
    from sleap_infer.export.tensorrt_build import Profile, build_engine

    trt, device = target
    t0 = time.perf_counter()
    on_device = torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
    with on_device:
        meta = build_engine(
            trt,
            onnx_path,
            staging / ENGINE_NAME,
            Profile.for_input(input_shape, settings.dynamic_batch),
            GpuInfo.of(device),
            fp16=settings.fp16,
            workspace_gb=settings.workspace_gb,
        )
    say(f"TensorRT engine built in {time.perf_counter() - t0:.1f} s for {meta['gpu_name']}")
    return meta
