"""What ``export_metadata.json`` says about an export, assembled from the model and settings.

The file format and its reader live in :mod:`sleap_infer.vocab.artifact` (the
backends read it); this module only writes the content: the model's
skeleton, strides and classes, the input contract, the outputs, the baked
decoding, and which steps run in the graph versus on the host (the latter
from the model type's registry entry).
"""

from __future__ import annotations

import time
from typing import Any

from sleap_infer.export.onnx_export import INPUT_NAME
from sleap_infer.export.settings import ExportSettings
from sleap_infer.export.wrappers import ExportWrapper
from sleap_infer.io.provenance import package_versions
from sleap_infer.model.loader import CONFIG_NAME, LoadedModel, file_sha256
from sleap_infer.model.registry import MODEL_TYPES
from sleap_infer.vocab.artifact import EXPORT_LAYOUT_VERSION, ONNX_NAME

ON_HOST = [
    "channel coercion (ensure_rgb / ensure_grayscale)",
    "size matcher (resize + pad to max_height x max_width)",
    "input scale resize (uint8, bit-identical to the torch path)",
    "pad to max_stride",
    "peak threshold",
    "divide by the size-matcher factor",
    "instance packaging (max_instances, scores)",
]
"""Host steps every model type shares; each type's entry adds its own."""

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
    entry = MODEL_TYPES[model.model_type]
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
        "in_graph": list(entry.in_graph),
        "on_host": [*ON_HOST, *entry.on_host],
        "decode": vars(wrapper.decode),
        "decode_fields": list(wrapper.decode_fields),
        "precision": "fp16" if settings.fp16 else "fp32",
        "settings": settings.as_dict(),
        "versions": package_versions(EXPORT_PACKAGES),
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "files": {"onnx": ONNX_NAME, "tensorrt": None},
        **extra,
    }
