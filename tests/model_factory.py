"""Build sleap-nn-layout model directories with random weights, for every model type."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch
import yaml

from sleap_infer.model.checkpoint import save_checkpoint
from sleap_infer.model.config import parse_config
from sleap_infer.nets import build_network

NODES = ["head", "thorax", "tail"]

_HEADS: dict[str, dict[str, Any]] = {
    "single_instance": {"confmaps": {"part_names": None, "sigma": 2.5, "output_stride": 2}},
    "centroid": {"confmaps": {"anchor_part": "thorax", "sigma": 2.5, "output_stride": 2}},
    "centered_instance": {
        "confmaps": {"part_names": None, "anchor_part": "thorax", "sigma": 2.5, "output_stride": 2}
    },
    "bottomup": {
        "confmaps": {"part_names": None, "sigma": 2.5, "output_stride": 2},
        "pafs": {"edges": None, "sigma": 15.0, "output_stride": 4},
    },
    "multi_class_bottomup": {
        "confmaps": {"part_names": None, "sigma": 2.5, "output_stride": 2},
        "class_maps": {"classes": ["female", "male"], "sigma": 2.5, "output_stride": 2},
    },
    "multi_class_topdown": {
        "confmaps": {"part_names": None, "anchor_part": "thorax", "sigma": 2.5, "output_stride": 2},
        "class_vectors": {
            "classes": ["female", "male"],
            "num_fc_layers": 2,
            "num_fc_units": 16,
            "global_pool": True,
            "output_stride": 8,
        },
    },
    "bottomup_segmentation": {
        "segmentation": {"output_stride": 2},
        "center": {"sigma": 4.0, "output_stride": 2},
        "offsets": {"output_stride": 2},
    },
    "semantic_segmentation": {"segmentation": {"output_stride": 2}},
    "centered_instance_segmentation": {"segmentation": {"output_stride": 2, "anchor_part": None}},
    "bbox_centernet": {
        "center": {"categories": None, "output_stride": 2},
        "size": {"output_stride": 2},
        "offset": {"output_stride": 2},
    },
    "bbox_ssd": {
        "ssd": {
            "categories": None,
            "output_stride": 2,
            "num_levels": 3,
            "anchor_sizes": [6.0, 10.0, 16.0],
            "anchor_scales": [1.0, 1.26],
            "aspect_ratios": [0.5, 1.0, 2.0],
            "box_variances": [0.1, 0.1, 0.2, 0.2],
            "head_channels": 8,
            "head_convs": 1,
        }
    },
    "embedding": {
        "embedding": {
            "embedding_dim": 8,
            "num_fc_layers": 1,
            "num_fc_units": 16,
            "pool": "gem",
            "normalize": True,
            "output_stride": 8,
            "anchor_part": None,
            "detection_mode": "pose",
        }
    },
}


# Tiny ConvNeXt / Swin-T layouts (custom ``arch``), small enough to run in tests.
TINY_CONVNEXT: dict[str, Any] = {
    "model_type": "custom",
    "arch": {"depths": [1, 1, 2, 1], "channels": [8, 16, 24, 32]},
    "stem_patch_kernel": 4,
    "stem_patch_stride": 2,
    "in_channels": 1,
    "kernel_size": 3,
    "filters_rate": 1.5,
    "convs_per_block": 2,
    "up_interpolate": True,
    "output_stride": 2,
    "max_stride": 32,
}
TINY_SWINT: dict[str, Any] = {
    "model_type": "custom",
    "arch": {"embed": 8, "depths": [2, 2, 2, 2], "num_heads": [1, 2, 2, 4]},
    "patch_size": 4,
    "window_size": 3,
    "stem_patch_stride": 2,
    "in_channels": 1,
    "kernel_size": 3,
    "filters_rate": 1.5,
    "convs_per_block": 2,
    "up_interpolate": True,
    "output_stride": 2,
    "max_stride": 32,
}


def config_dict(
    model_type: str,
    unet: dict[str, Any] | None = None,
    preprocessing: dict[str, Any] | None = None,
    backbone: tuple[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A sleap-nn ``training_config.yaml`` as a dict; ``backbone`` = (type, settings) replaces
    the default small UNet."""
    heads: dict[str, Any] = {k: None for k in _HEADS}
    heads[model_type] = copy.deepcopy(_HEADS[model_type])
    backbone_settings = {
        "in_channels": 1,
        "kernel_size": 3,
        "filters": 4,
        "filters_rate": 1.5,
        "max_stride": 8,
        "stem_stride": None,
        "middle_block": True,
        "up_interpolate": True,
        "stacks": 1,
        "convs_per_block": 2,
        "output_stride": 2,
    }
    backbone_settings.update(unet or {})
    backbones: dict[str, Any] = {"unet": backbone_settings, "convnext": None, "swint": None}
    if backbone is not None:
        backbones = {"unet": None, "convnext": None, "swint": None}
        backbones[backbone[0]] = copy.deepcopy(backbone[1])
    pre = {"ensure_rgb": False, "ensure_grayscale": False, "max_height": None, "max_width": None}
    pre.update(
        {
            "scale": 1.0,
            "crop_size": 32 if "centered" in model_type or "topdown" in model_type else None,
        }
    )
    pre.update(preprocessing or {})
    return {
        "data_config": {
            "preprocessing": pre,
            "skeletons": [
                {
                    "name": "fly",
                    "nodes": [{"name": n} for n in NODES],
                    "edges": [
                        {"source": {"name": "head"}, "destination": {"name": "thorax"}},
                        {"source": {"name": "thorax"}, "destination": {"name": "tail"}},
                    ],
                    "symmetries": [],
                }
            ],
        },
        "model_config": {
            "backbone_config": backbones,
            "head_configs": heads,
        },
    }


def write_model_dir(path: Path, raw: dict[str, Any], seed: int = 0) -> Path:
    """Random-init the network described by ``raw`` and save it like sleap-nn would."""
    torch.manual_seed(seed)
    net = build_network(parse_config(raw))
    raw = copy.deepcopy(raw)
    raw["model_config"]["total_params"] = sum(p.numel() for p in net.parameters())
    path.mkdir(parents=True, exist_ok=True)
    (path / "training_config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    save_checkpoint(path / "best.ckpt", net.state_dict())
    return path


def write_box_detector(path: Path, seed: int = 4) -> Path:
    """A random-weight CenterNet whose size head says ~10 px: random sizes are ~0, which
    clips every box away."""
    write_model_dir(path, config_dict("bbox_centernet"), seed=seed)
    from sleap_infer.model.loader import load_model

    net = load_model(path).network
    size_head = net.head_layers[1].BBoxSizeHead[0]
    size_head.weight.data.zero_()
    size_head.bias.data.fill_(5.0)
    save_checkpoint(path / "best.ckpt", net.state_dict())
    return path
