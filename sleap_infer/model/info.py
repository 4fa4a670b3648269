"""The facts ``infer info`` prints about a loaded model, as one JSON-ready dict.

Everything comes from the parsed :class:`~sleap_infer.core.config.ModelConfig`
and the rebuilt network, never from re-reading the YAML, so any folder
:func:`~sleap_infer.model.loader.load_model` can load (SLEAP 1.x ones too) is
described the same way.

FLOPs are counted by ``torch.utils.flop_counter.FlopCounterMode`` on zeros of
the network's input at training size. Quirks worth knowing: it counts only
convolutions and matrix products, at 2 FLOPs per multiply-add (activations,
pooling, resizing and normalisation are free to it), and it runs the forward
on a meta-device copy of the network (shapes only, no arithmetic), so a
ConvNeXt at 1024 x 1024 costs no more than a small UNet; the loaded network
is run for real only where a layer has no meta kernel.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from sleap_infer.core.config import ModelConfig, PretrainedConfig
from sleap_infer.evaluation.report import to_json_safe
from sleap_infer.model.loader import CKPT_NAME, LoadedModel
from sleap_infer.model.registry import MODEL_TYPES
from sleap_infer.model.training_files import training_files
from sleap_infer.nets import build_network
from sleap_infer.ops.preprocess import pad_to_stride, scale_image

CHECKPOINT_NAMES = (CKPT_NAME, "best_model.h5")
"""sleap-nn's checkpoint, then SLEAP 1.x's."""
FLOPS_NOTE = "convolutions and matrix products only, 2 FLOPs per multiply-add"


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def count_flops(network: nn.Module, shape: tuple[int, ...]) -> int:
    """FLOPs of one forward pass of ``network`` on float zeros of ``shape`` (on its device)."""
    param = next(network.parameters(), None)
    x = torch.zeros(shape, device=param.device if param is not None else None)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        network(x)
    return int(counter.get_total_flops())


def forward_flops(config: ModelConfig, network: nn.Module, shape: tuple[int, ...]) -> int:
    """:func:`count_flops` on a meta-device twin of ``network``; the real one as a fallback."""
    try:
        with torch.device("meta"):
            twin = build_network(config)
        return count_flops(twin, shape)
    except (NotImplementedError, RuntimeError, TypeError, ValueError):  # no meta kernel
        return count_flops(network, shape)


def _input(
    kind: str, shape: list[int] | None, size_from: str | None, why_unknown: str | None = None
) -> dict[str, Any]:
    return {"kind": kind, "shape": shape, "size_from": size_from, "why_unknown": why_unknown}


def network_input(config: ModelConfig, frame_size: tuple[int, int] | None = None) -> dict[str, Any]:
    """The ``(C, H, W)`` one network call sees at training size, what it is, and whence.

    Frames: ``max_height x max_width`` (every frame is resized to it), else
    ``frame_size`` (``--input-size``); crop models: ``crop_size`` squares; both
    then scaled and padded to ``max_stride`` by the layers' own ops. Tiled
    models: one ``tile_size`` tile. Embedding crops are neither scaled nor padded
    (sleap-nn ignores ``scale`` for them). ``shape`` is None when no size is known.
    """
    pre = config.preprocessing
    entry = MODEL_TYPES[config.model_type]
    channels = config.in_channels
    if pre.tiling is not None:
        size = pre.tiling.tile_size
        return _input("tile", [channels, size, size], "tile_size")
    kind = "crop" if entry.needs_centroids else "frame"
    if kind == "crop" and pre.crop_size is not None:
        if entry.embeds:
            return _input(kind, [channels, pre.crop_size, pre.crop_size], "crop_size")
        size, source = (pre.crop_size, pre.crop_size), "crop_size"
    elif kind == "crop":
        return _input(kind, None, None, "no crop_size in the config")
    elif pre.max_height is not None and pre.max_width is not None:
        size, source = (pre.max_height, pre.max_width), "max_height x max_width"
    elif frame_size is not None:
        size, source = frame_size, "--input-size"
    else:
        why = "no max_height/max_width in the config: give the frame size with --input-size HxW"
        return _input(kind, None, None, why)
    x = torch.zeros((1, channels, *size), dtype=torch.uint8)
    x = pad_to_stride(scale_image(x, pre.scale), config.max_stride)
    return _input(kind, [int(d) for d in x.shape[1:]], source)


def _flops(model: LoadedModel, frame_size: tuple[int, int] | None) -> dict[str, Any]:
    facts = network_input(model.config, frame_size)
    shape = facts["shape"]
    total = None if shape is None else forward_flops(model.config, model.network, (1, *shape))
    return {"total": total, "input": facts, "counts": FLOPS_NOTE}


def _skeleton(config: ModelConfig) -> dict[str, Any]:
    nodes = list(config.node_names)
    return {
        "name": config.skeleton_name,
        "nodes": nodes,
        "edges": [[nodes[a], nodes[b]] for a, b in config.edges],
        "symmetries": [[nodes[a], nodes[b]] for a, b in config.symmetries],
    }


def _preprocessing(config: ModelConfig) -> dict[str, Any]:
    pre = config.preprocessing
    return {
        "input_scale": pre.scale,
        "max_height": pre.max_height,
        "max_width": pre.max_width,
        "ensure_rgb": pre.ensure_rgb,
        "ensure_grayscale": pre.ensure_grayscale,
        "input_channels": config.in_channels,
        "crop_size": pre.crop_size,
        "anchor_part": config.anchor_part,
        "max_stride": config.max_stride,
        "output_strides": sorted({h.output_stride for h in config.heads if h.is_spatial}),
        "tiling": None if pre.tiling is None else asdict(pre.tiling),
    }


def _heads(config: ModelConfig) -> list[dict[str, Any]]:
    return [
        {
            "name": h.name,
            "section": h.section,
            "channels": h.channels,
            "output_stride": None if h.vector else h.output_stride,
            "levels": list(h.strides),  # SSD: the pyramid strides it reads
            "activation": h.activation,
        }
        for h in config.heads
    ]


def _checkpoint(model: LoadedModel) -> dict[str, Any]:
    path = next((model.path / n for n in CHECKPOINT_NAMES if (model.path / n).is_file()), None)
    return {
        "file": None if path is None else path.name,
        "bytes": None if path is None else path.stat().st_size,
        "sha256": model.checkpoint_sha256,
    }


def _trained_with(config: ModelConfig) -> str | None:
    for key, name in (("sleap_nn_version", "sleap-nn"), ("sleap_version", "SLEAP")):
        version = config.raw.get(key)
        if version:
            return f"{name} {version}"
    return None


def _backbone(config: ModelConfig) -> dict[str, Any]:
    """The typed backbone settings; a HuggingFace config is named, not dumped."""
    settings = {"type": config.backbone_type, **asdict(config.backbone)}
    hf_config = settings.pop("hf_config", None)
    if hf_config is not None:
        settings["hf_model_type"] = hf_config.get("model_type")
    return settings


def _vector(buffer: Any) -> list[float] | None:
    return None if buffer is None else [round(float(v), 6) for v in buffer.flatten()]


def forward_pass(model: LoadedModel) -> list[str]:
    """What the network does beyond a plain backbone + 1x1 heads on frames / 255: options
    of the training config that change the forward pass, so a user sees them before a run."""
    config = model.config
    backbone = getattr(model.network, "backbone", None)
    steps = []
    if config.embedding is not None:
        steps.append("input: uint8 crops standardised per crop and channel (embedding)")
    else:
        steps.append("input: uint8 / 255")
    if config.in_channels == 3:
        steps.append("gray frames repeated to 3 channels (the model takes RGB)")
    if isinstance(config.backbone, PretrainedConfig) and backbone is not None:
        pretrained = config.backbone
        steps.append(
            f"pretrained HuggingFace backbone {pretrained.model_name} "
            f"({pretrained.hf_config.get('model_type')}, mode {backbone.mode}; "
            f"architecture from {pretrained.hf_config_source})"
        )
        steps.extend(backbone.describe(pretrained))
        if backbone.normalize:
            mean, std = _vector(backbone.image_mean), _vector(backbone.image_std)
            steps.append(f"normalisation (x - mean) / std, mean {mean}, std {std}")
        else:
            steps.append("normalisation off (pretrained.normalize: false)")
    specs = {s.name: s for s in MODEL_TYPES[config.model_type].heads}
    for head in config.heads:
        if head.activation == "sigmoid":
            spec = specs.get(head.name)
            optional = spec is not None and spec.sigmoid_option
            why = "use_sigmoid_activation: true" if optional else "built into the head type"
            steps.append(f"{head.name}: sigmoid after the head ({why})")
    return steps


def describe_model(model: LoadedModel, frame_size: tuple[int, int] | None = None) -> dict[str, Any]:
    """Everything ``infer info`` reports about one model except its exports (a floor up),
    as plain JSON types (tuples as lists, NaN as None), so ``--json`` round-trips.
    ``frame_size`` (H, W) sizes FLOPs of a frame model whose config sets no max size."""
    config = model.config
    backbone = model.network.backbone if hasattr(model.network, "backbone") else model.network
    return to_json_safe(
        {
            "path": str(Path(model.path).resolve()),
            "model_type": model.model_type,
            "trained_with": _trained_with(config),
            "backbone": _backbone(config),
            "forward_pass": forward_pass(model),
            "parameters": parameter_count(model.network),
            "backbone_parameters": parameter_count(backbone),
            "config_total_params": config.total_params,
            "flops": _flops(model, frame_size),
            "skeleton": _skeleton(config),
            "part_names": list(config.part_names),
            "preprocessing": _preprocessing(config),
            "heads": _heads(config),
            "class_names": list(config.class_names),
            "categories": list(config.categories),
            "box_detector": None if config.boxes is None else asdict(config.boxes),
            "embedding": None if config.embedding is None else asdict(config.embedding),
            "training": training_files(model.path),
            "checkpoint": _checkpoint(model),
        }
    )
