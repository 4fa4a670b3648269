"""Backbone + heads as one module: uint8 frames in, ``{head name: tensor}`` out."""

from __future__ import annotations

import torch
from torch import nn

from sleap_infer.core.config import ModelConfig
from sleap_infer.core.errors import ConfigError
from sleap_infer.nets.heads import (
    SSDPredictor,
    make_class_vectors_head,
    make_embedding_head,
    make_spatial_head,
)
from sleap_infer.ops.embedding_crops import standardize_crops


def to_model_channels(x: torch.Tensor, in_channels: int) -> torch.Tensor:
    """Repeat gray to RGB or average RGB to gray (ITU-R 601 weights) when channels differ."""
    channels = x.shape[1]
    if channels == in_channels:
        return x
    if channels == 1 and in_channels == 3:
        return x.repeat(1, 3, 1, 1)
    if channels == 3 and in_channels == 1:
        r, g, b = x[:, 0:1], x[:, 1:2], x[:, 2:3]
        return 0.2989 * r + 0.587 * g + 0.114 * b
    raise ValueError(f"cannot feed {channels}-channel input to a {in_channels}-channel model")


class PoseNetwork(nn.Module):
    """The trainable part of a sleap-nn model, with normalisation folded in.

    ``forward`` takes ``(B, C, H, W)`` uint8 (divided by 255 here, once, so every
    backend and export sees the same contract) or float already in [0, 1].

    Embedding models differ (sleap-nn never divides their crops by 255): uint8 crops
    are standardised here per crop and channel, so the exported graph holds it too;
    a float input is taken as already standardised (burn-in crops, whose mask the
    host applies).
    """

    def __init__(self, config: ModelConfig, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.head_names = [h.name for h in config.heads]
        self.head_strides = [h.output_stride for h in config.heads]
        self.head_is_vector = [h.vector for h in config.heads]
        self.head_levels = [h.strides for h in config.heads]
        self.in_channels = config.in_channels
        self.standardizes = config.embedding is not None
        layers: list[nn.Module] = []
        for head in config.heads:
            if head.strides:
                layers.append(self._multiscale_head(config, backbone, head.strides))
            elif head.is_spatial:
                if head.output_stride not in backbone.stride_to_filters:
                    raise ConfigError(
                        f"head {head.name} needs stride {head.output_stride}; backbone "
                        f"produces {sorted(backbone.stride_to_filters)}"
                    )
                layers.append(
                    make_spatial_head(head, backbone.stride_to_filters[head.output_stride])
                )
            elif head.pool is not None:
                layers.append(make_embedding_head(head, backbone.middle_filters))
            else:
                layers.append(make_class_vectors_head(head, backbone.middle_filters))
        self.head_layers = nn.ModuleList(layers)

    @staticmethod
    def _multiscale_head(
        config: ModelConfig, backbone: nn.Module, strides: tuple[int, ...]
    ) -> nn.Module:
        missing = [s for s in strides if s not in backbone.stride_to_filters]
        if missing or config.boxes is None:
            raise ConfigError(
                f"SSD levels {list(strides)} need backbone strides "
                f"{sorted(backbone.stride_to_filters)}"
            )
        widths = [backbone.stride_to_filters[s] for s in strides]
        return SSDPredictor(config.boxes, len(config.categories), widths)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        if self.standardizes:
            if not torch.is_floating_point(x):
                dtype = next(self.parameters()).dtype
                x = standardize_crops(x.float()).to(dtype)
        elif not torch.is_floating_point(x):
            x = x.float() / 255.0
        x = to_model_channels(x, self.in_channels)
        feats = self.backbone(x)
        outputs: dict[str, torch.Tensor] = {}
        heads = zip(self.head_names, self.head_strides, self.head_is_vector, self.head_layers)
        for (name, stride, vector, layer), levels in zip(heads, self.head_levels):
            if levels:  # a decoder output per level, the bottleneck for the deepest
                outputs[name] = layer(
                    [
                        feats.levels[feats.strides.index(s)] if s in feats.strides else feats.middle
                        for s in levels
                    ]
                )
                continue
            if vector or not feats.levels or stride not in feats.strides:
                source = feats.middle
            else:
                source = feats.levels[feats.strides.index(stride)]
            outputs[name] = layer(source)
        return outputs
