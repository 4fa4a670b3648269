"""What ``export_metadata.json`` says about an export, assembled from the model and settings.

The file format and its reader live in :mod:`sleap_infer.core.artifact` (the
backends read it); this module only writes the content: the model's
skeleton, strides and classes, the input contract, the outputs (decoded peaks,
or the raw maps of a network-only graph), the baked decoding, and which steps
run in the graph versus on the host (the latter from the model type's registry
entry, so the two cannot drift apart).
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from sleap_infer.core.artifact import (
    DECODED,
    EXPORT_LAYOUT_VERSION,
    GRAPH_OUTPUTS,
    ONNX_NAME,
    RAW_MAPS,
)
from sleap_infer.core.files import file_sha256
from sleap_infer.core.provenance import package_versions
from sleap_infer.export.onnx_export import INPUT_NAME
from sleap_infer.export.settings import ExportSettings
from sleap_infer.export.wrappers import ExportWrapper
from sleap_infer.model.loader import LoadedModel
from sleap_infer.model.registry import MODEL_TYPES

PREPROCESS = [
    "channel coercion (ensure_rgb / ensure_grayscale)",
    "size matcher (resize + pad to max_height x max_width)",
    "input scale resize (uint8, bit-identical to the torch path)",
    "pad to max_stride",
]
FINISH = [
    "peak threshold",
    "divide by the size-matcher factor",
    "instance packaging (max_instances, scores)",
]
ON_HOST = [*PREPROCESS, *FINISH]
"""Host steps every model type shares; each type's entry adds its own."""

NETWORK_ONLY = ["uint8 -> float32 / 255", "network"]
"""A raw-maps graph of a keypoint type (tiled): the registry's first two in-graph steps."""

TILED_PREPROCESS = [
    "channel coercion (ensure_rgb / ensure_grayscale)",
    "input scale resize (uint8; no size matcher when tiling)",
    "pad to output_stride",
    "tile_size x tile_size tiles on an overlapping grid, tile_batch_size per graph call",
    "tile maps stitched: blend-window weighted sum over weight sum where tiles overlap",
]
"""Host steps of tiled models up to the stitched maps (the graph runs on each tile)."""

EXPORT_PACKAGES = ("onnx", "onnxscript", "onnxruntime", "tensorrt")


def build_metadata(
    model: LoadedModel,
    wrapper: ExportWrapper,
    settings: ExportSettings,
    input_shape: tuple[int, int, int, int],
    extra: dict[str, Any],
) -> dict[str, Any]:
    """The JSON written as ``export_metadata.json`` and embedded in the ONNX file."""
    config = model.config
    in_graph, on_host = graph_and_host_steps(model, wrapper.raw_maps)
    batch: int | str = "batch" if settings.dynamic_batch else input_shape[0]
    tiling = config.preprocessing.tiling
    return {
        "layout_version": EXPORT_LAYOUT_VERSION,
        "model_type": model.model_type,
        "model_name": model.path.name,
        "source": {
            "model_dir": str(model.path.resolve()),
            "checkpoint_sha256": model.checkpoint_sha256,
            "training_config_sha256": file_sha256(model.config_file),
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
        "crop_size": config.preprocessing.crop_size,
        "input": {
            "name": INPUT_NAME,
            "dtype": "uint8",
            "shape": [batch, *input_shape[1:]],
            "normalization": "divided by 255 in the graph",
        },
        "frame_size": None if settings.frame_size is None else list(settings.frame_size),
        GRAPH_OUTPUTS: RAW_MAPS if wrapper.raw_maps else DECODED,
        "outputs": [spec.as_dict() for spec in wrapper.output_specs(input_shape)],
        "coordinates": (
            "maps on each head's output_stride grid of the network input; "
            "decoded on the host by the model type's layer"
            if wrapper.raw_maps
            else "(x, y) in size-matched frame pixels (network input pixels / input_scale); "
            "divide by the size-matcher factor for original frame pixels"
        ),
        "tiling": None if tiling is None else asdict(tiling),
        "in_graph": in_graph,
        "on_host": on_host,
        "decode": vars(wrapper.decode),
        "decode_fields": list(wrapper.decode_fields),
        "precision": "fp16" if settings.fp16 else "fp32",
        "settings": settings.as_dict(),
        "versions": package_versions(EXPORT_PACKAGES),
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "files": {"onnx": ONNX_NAME, "tensorrt": None},
        **extra,
    }


def graph_and_host_steps(model: LoadedModel, raw_maps: bool) -> tuple[list[str], list[str]]:
    """What runs in the graph and what on the host, from the type's registry entry.

    A raw-maps graph of a keypoint type (a tiled single-instance model) is the network
    alone: the entry's in-graph decoding moves to the host, after the stitching.
    """
    entry = MODEL_TYPES[model.model_type]
    if not raw_maps:
        return list(entry.in_graph), [*ON_HOST, *entry.on_host]
    tiled = model.config.preprocessing.tiling is not None
    before = TILED_PREPROCESS if tiled else PREPROCESS
    if entry.raw_export:  # segmentation: its entry already describes a network-only graph
        return list(entry.in_graph), [*before, *entry.on_host]
    moved = [step for step in entry.in_graph if step not in NETWORK_ONLY]
    finish = [step for step in FINISH if not (tiled and "size-matcher" in step)]
    return list(NETWORK_ONLY), [*before, *moved, *finish, *entry.on_host]
