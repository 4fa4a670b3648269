"""Network definitions: sleap-nn architectures rebuilt for strict checkpoint loading."""

from __future__ import annotations

from torch import nn

from sleap_infer.errors import ConfigError
from sleap_infer.model.backbone_configs import parse_convnext, parse_swint
from sleap_infer.model.config import ModelConfig, parse_unet
from sleap_infer.nets.network import PoseNetwork


def build_backbone(config: ModelConfig) -> nn.Module:
    """Instantiate the backbone named by the config (weights uninitialised)."""
    if config.backbone_type == "unet":
        from sleap_infer.nets.unet import UNet

        return UNet(parse_unet(config.backbone))
    if config.backbone_type == "convnext":
        from sleap_infer.nets.hierarchical import convnext

        return convnext(parse_convnext(config.backbone))
    if config.backbone_type == "swint":
        from sleap_infer.nets.hierarchical import swint

        return swint(parse_swint(config.backbone))
    raise ConfigError(f"backbone {config.backbone_type!r} is not supported yet")


def build_network(config: ModelConfig) -> PoseNetwork:
    """Backbone + heads for ``config``, ready for ``load_state_dict(strict=True)``."""
    return PoseNetwork(config, build_backbone(config))


__all__ = ["PoseNetwork", "build_backbone", "build_network"]
