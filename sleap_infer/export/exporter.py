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
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from sleap_infer.core.artifact import (
    CONFIG_OVERRIDES,
    ENGINE_NAME,
    EXPORT_FOLDER,
    METADATA_NAME,
    METADATA_PROP,
    ONNX_NAME,
    PIPELINE_NAME,
    ExportInfo,
    read_export,
    write_metadata,
)
from sleap_infer.core.errors import ExportError, ModelError, UsageError
from sleap_infer.core.leftovers import owner_tag, remove_stale
from sleap_infer.export.metadata import build_metadata
from sleap_infer.export.onnx_export import embed_metadata, export_onnx, verify_numerics
from sleap_infer.export.settings import ExportSettings, check_opset
from sleap_infer.export.wrappers import ExportWrapper, wrapper_for_model
from sleap_infer.layers.preprocessing import Preprocessor
from sleap_infer.model.exported import is_export_dir, stage_dirs
from sleap_infer.model.loader import LoadedModel, load_model
from sleap_infer.model.registry import MODEL_TYPES

Notify = Callable[[str], None]

VALUE_TOLERANCE = {False: 1e-3, True: 5e-2}
"""Worst allowed gap between torch and ONNX Runtime peak values (fp32, fp16); for raw
maps, relative to the map's largest magnitude (see ``verify_numerics``)."""


def network_input_shape(model: LoadedModel, frame_size: tuple[int, int] | None) -> tuple[int, ...]:
    """``(C, H, W)`` the network sees for frames of ``frame_size``, via the layers' own chain.

    Without a frame size the config's size matcher decides (every frame is
    resized to ``max_height x max_width``); without either there is no way to know.
    Top-down stage-2 models see crops, never frames: their input is the crop
    size after their own input scale and stride padding. Tiled models see
    tiles: ``tile_size`` squares cut from the scaled frame, whatever its size.
    """
    pre = Preprocessor(model.config)
    tiling = model.config.preprocessing.tiling
    if tiling is not None:
        if frame_size is not None:
            raise UsageError(
                f"{model.path}: --input-size does not apply to a tiled model (it is traced "
                f"at its tile size, {tiling.tile_size}x{tiling.tile_size}, for any frame size)"
            )
        return (pre.input_channels, tiling.tile_size, tiling.tile_size)
    if MODEL_TYPES[model.model_type].needs_centroids:
        crop = pre.crop_size
        if frame_size is not None:
            raise UsageError(
                f"{model.path}: --input-size does not apply to a {model.model_type} model "
                f"(it is traced at its crop size, {crop}x{crop})"
            )
        crops = torch.zeros((1, pre.input_channels, crop, crop), dtype=torch.uint8)
        return tuple(int(d) for d in pre.crop_input(crops).shape[1:])
    if frame_size is None:
        settings = model.config.preprocessing
        if settings.max_height is None or settings.max_width is None:
            raise UsageError(
                f"{model.path}: the model has no max_height/max_width, so the input size "
                "is unknown: pass --input-size HxW (the video's frame size)"
            )
        frame_size = (settings.max_height, settings.max_width)
    frames = np.zeros((1, *frame_size, pre.input_channels), np.uint8)
    x, _ = pre.preprocess(frames)
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
    # Staging folders of killed exports (dead owners only) go first.
    remove_stale(out_dir.parent, f".{out_dir.name}.partial-")
    staging = out_dir.parent / f".{out_dir.name}.partial-{owner_tag()}"
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


def refuse_export_folder(path: str | Path) -> None:
    """A :class:`ModelError` when ``path`` is an ``infer export`` folder: it holds a graph,
    not a network, so there is nothing to trace (it used to end in a traceback). The line
    names the model folder it was made from, which is what to export."""
    if not is_export_dir(path):
        return
    folder = Path(path).expanduser()
    source = "an unrecorded model folder"
    with contextlib.suppress(Exception):  # any unreadable metadata: say less, still refuse
        stages = [read_export(stage).data for stage in stage_dirs(folder)]
        source = " + ".join(str(data["source"]["model_dir"]) for data in stages)
    what = "model folders" if " + " in source else "model folder"
    raise ModelError(
        f"{folder} is already an export folder (made from {source}); export the {what} instead"
    )


def load_for_export(model: str | Path | LoadedModel) -> LoadedModel:
    """The model to export, loaded; an export folder (given or loaded) is refused in one line."""
    if isinstance(model, LoadedModel):
        if model.export_dir is not None:
            refuse_export_folder(model.export_dir)
        return model
    refuse_export_folder(model)
    return load_model(model)


def export_overrides(
    model: LoadedModel, settings: ExportSettings, notify: Notify | None = None
) -> tuple[LoadedModel, dict[str, Any]]:
    """``model`` with sleap-nn 0.3.5's export ``--input-scale`` / ``--crop-size`` put into
    its preprocessing, and the values that changed it (for the metadata).

    As sleap-nn's export: the scale reaches every model (the graph's coordinates are
    divided by it; here the host also resizes by it), the crop size only models that
    take crops (centered-instance, multi-class top-down, their segmentation kin), which
    are traced at it; elsewhere it is inert, as in sleap-nn (one note says so). An
    embedding model is refused, as ``infer predict`` refuses overrides on one: its crops
    must be the trained ones (sleap-nn only warns that its vectors will differ).
    """
    if settings.input_scale is None and settings.crop_size is None:
        return model, {}
    entry = MODEL_TYPES[model.model_type]
    if entry.embeds:
        flags = " / ".join(
            flag
            for flag, value in (
                ("--input-scale", settings.input_scale),
                ("--crop-size", settings.crop_size),
            )
            if value is not None
        )
        raise UsageError(
            f"{flags}: {model.path} is an embedding model; its crop geometry comes "
            "from its trained config"
        )
    pre = model.config.preprocessing
    changes: dict[str, Any] = {}
    if settings.input_scale is not None and settings.input_scale != pre.scale:
        changes["input_scale"] = float(settings.input_scale)
    if settings.crop_size is not None and not entry.needs_centroids:
        if notify is not None:
            notify(
                f"note: --crop-size does not apply to a {model.model_type} model (it takes "
                "whole frames); ignored, as in sleap-nn"
            )
    elif settings.crop_size is not None and settings.crop_size != pre.crop_size:
        changes["crop_size"] = int(settings.crop_size)
    if not changes:
        return model, {}
    fields = {"scale" if k == "input_scale" else k: v for k, v in changes.items()}
    config = replace(model.config, preprocessing=replace(pre, **fields))
    return replace(model, config=config), changes


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
    Segmentation and tiled models get a raw-maps graph (network only; see
    :class:`~sleap_infer.export.wrappers.RawMapsWrapper`), whatever ``settings.decode`` says.
    """
    settings = settings or ExportSettings()
    check_opset(settings.opset)
    say = notify or (lambda _msg: None)
    model, overrides = export_overrides(load_for_export(model_path), settings, say)
    wrapper_cls = wrapper_for_model(model)
    trt_target = _trt_target(device) if settings.wants_trt else None  # fail before the slow part
    out = Path(out_dir).expanduser() if out_dir is not None else model.path / EXPORT_FOLDER
    check_output_dir(out)
    batch = 1 if settings.batch_size is None else settings.batch_size
    shape = network_shape or network_input_shape(model, settings.frame_size)
    input_shape = (batch, *(int(d) for d in shape))
    wrapper = wrapper_cls(model.network, model.config, settings.decode, fp16=settings.fp16)
    with staged_directory(out) as staging:
        t0 = time.perf_counter()
        onnx_path = staging / ONNX_NAME
        export_onnx(wrapper, input_shape, onnx_path, settings.opset, settings.dynamic_batch)
        export_s = time.perf_counter() - t0
        gaps = _verified(wrapper, onnx_path, input_shape, settings.fp16, out)
        extra = {"verification": gaps, "export_seconds": round(export_s, 2)}
        if overrides:
            extra[CONFIG_OVERRIDES] = overrides
        data = build_metadata(model, wrapper, settings, input_shape, extra | (extra_metadata or {}))
        _embed(model, data, onnx_path)
        shutil.copyfile(model.config_file, staging / model.config_file.name)
        say(f"ONNX graph written in {export_s:.1f} s ({onnx_path.stat().st_size / 1e6:.2f} MB)")
        if trt_target is not None:
            data["files"]["tensorrt"] = ENGINE_NAME
            data["tensorrt"] = _build_trt(
                trt_target, onnx_path, staging, input_shape, settings, say
            )
        write_metadata(staging, data)
    return read_export(out)


def _embed(model: LoadedModel, data: dict[str, Any], onnx_path: Path) -> None:
    """The metadata and training config into the ONNX file (any runtime can read them),
    then the file's hash into the metadata."""
    embed_metadata(
        onnx_path,
        {
            METADATA_PROP: json.dumps(data, sort_keys=True),
            "training_config": model.config_file.read_text(),
        },
    )
    data["onnx_sha256"] = hashlib.sha256(onnx_path.read_bytes()).hexdigest()


def _verified(
    wrapper: ExportWrapper,
    onnx_path: Path,
    input_shape: tuple[int, int, int, int],
    fp16: bool,
    out: Path,
) -> dict[str, float]:
    """Torch vs ONNX Runtime gaps per output; refuse a graph whose values disagree
    (peak values, or every map of a raw-maps graph)."""
    gaps = verify_numerics(wrapper, onnx_path, input_shape)
    checked = {k: v for k, v in gaps.items() if wrapper.checks_values(k)}
    name = max(checked, key=checked.__getitem__, default=None)
    if name is not None and checked[name] > VALUE_TOLERANCE[fp16]:
        what = "peak values" if name.endswith("_vals") else name
        raise ExportError(
            f"{out}: ONNX Runtime and torch disagree on {what} by {checked[name]:.3g} "
            f"(allowed {VALUE_TOLERANCE[fp16]}); the export is not trustworthy"
        )
    return gaps


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
            Profile.for_input(input_shape, settings.dynamic_batch, settings.batch_profile),
            GpuInfo.of(device),
            fp16=settings.fp16,
            workspace_gb=settings.workspace_gb,
        )
    say(f"TensorRT engine built in {time.perf_counter() - t0:.1f} s for {meta['gpu_name']}")
    return meta
