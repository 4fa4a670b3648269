"""Network definitions: sleap-nn architectures rebuilt for strict checkpoint loading."""

from __future__ import annotations

from torch import nn

from sleap_infer.core.config import (
    ConvNeXtConfig,
    ModelConfig,
    PretrainedConfig,
    SwinTConfig,
    UNetConfig,
)
from sleap_infer.core.errors import ConfigError
from sleap_infer.nets.network import PoseNetwork


def build_backbone(config: ModelConfig) -> nn.Module:
    """Instantiate the config's (typed) backbone, weights uninitialised."""
    backbone = config.backbone
    if isinstance(backbone, UNetConfig):
        from sleap_infer.nets.unet import UNet

        return UNet(backbone)
    if isinstance(backbone, ConvNeXtConfig):
        from sleap_infer.nets.hierarchical import convnext

        return convnext(backbone)
    if isinstance(backbone, SwinTConfig):
        from sleap_infer.nets.hierarchical import swint

        return swint(backbone)
    if isinstance(backbone, PretrainedConfig):
        from sleap_infer.nets.pretrained import PretrainedBackbone

        return PretrainedBackbone(backbone, spatial_heads=any(h.is_spatial for h in config.heads))
    raise ConfigError(f"backbone {config.backbone_type!r} is not supported yet")


def build_network(config: ModelConfig) -> PoseNetwork:
    """Backbone + heads for ``config``, ready for ``load_state_dict(strict=True)``."""
    return PoseNetwork(config, build_backbone(config))


__all__ = ["PoseNetwork", "build_backbone", "build_network"]
