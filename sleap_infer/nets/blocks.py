"""Building blocks shared by our re-implementations of sleap-nn's backbones.

Module attribute names mirror sleap-nn's exactly (``blocks``, ``{prefix}_conv0``,
``{prefix}_refine_conv1``...), because the checkpoints are loaded with
``strict=True`` and the state-dict keys are those names.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


class SamePadMaxPool(nn.Module):
    """2x2/2 max pool that zero-pads an odd bottom/right edge (TF "same" pooling).

    Inputs are always padded to the backbone's max stride, so the padding branch
    is only a safety net; it has no parameters.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pad_h = x.shape[-2] % 2
        pad_w = x.shape[-1] % 2
        if pad_h or pad_w:
            x = F.pad(x, (0, pad_w, 0, pad_h))
        return F.max_pool2d(x, kernel_size=2, stride=2)


def conv3(in_channels: int, out_channels: int, kernel_size: int) -> nn.Conv2d:
    return nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding="same")


class ConvBlock(nn.Module):
    """``[pool] -> (conv, relu) x n`` with sleap-nn's key names under ``.blocks``."""

    def __init__(
        self,
        prefix: str,
        in_channels: int,
        out_channels: int,
        num_convs: int,
        kernel_size: int,
        pool_first: bool = False,
    ) -> None:
        super().__init__()
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        if pool_first:
            layers[f"{prefix}_pool"] = SamePadMaxPool()
        channels = in_channels
        for j in range(num_convs):
            layers[f"{prefix}_conv{j}"] = conv3(channels, out_channels, kernel_size)
            layers[f"{prefix}_act{j}_relu"] = nn.ReLU()
            channels = out_channels
        self.blocks = nn.Sequential(layers)
        self.filters = out_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


class UpBlock(nn.Module):
    """Upsample x2 (bilinear or transposed conv), concat ``[skip, up]``, refine with convs."""

    def __init__(
        self,
        prefix: str,
        in_channels: int,
        skip_channels: int,
        out_channels: int,
        num_refine: int,
        kernel_size: int,
        interpolate: bool,
        has_skip: bool = True,
    ) -> None:
        super().__init__()
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        if interpolate:
            layers[f"{prefix}_interp_bilinear"] = nn.Upsample(
                scale_factor=2, mode="bilinear", align_corners=False
            )
            up_channels = in_channels
        else:
            layers[f"{prefix}_trans_conv"] = nn.ConvTranspose2d(
                in_channels, out_channels, 3, stride=2, padding=1, output_padding=1
            )
            layers[f"{prefix}_trans_conv_act_relu"] = nn.ReLU()
            up_channels = out_channels
        channels = up_channels + (skip_channels if has_skip else 0)
        for k in range(num_refine):
            layers[f"{prefix}_refine_conv{k}"] = conv3(channels, out_channels, kernel_size)
            layers[f"{prefix}_refine_conv{k}_act_relu"] = nn.ReLU()
            channels = out_channels
        self.blocks = nn.Sequential(layers)
        self.n_up = 2 if not interpolate else 1  # modules before the concat
        self.filters = out_channels

    def forward(self, x: torch.Tensor, skip: torch.Tensor | None) -> torch.Tensor:
        mods = list(self.blocks.children())
        up = x
        for mod in mods[: self.n_up]:
            up = mod(up)
        if skip is not None:
            if up.shape[-2:] != skip.shape[-2:]:
                up = F.interpolate(up, size=skip.shape[-2:], mode="bilinear", align_corners=False)
            up = torch.cat([skip, up], dim=1)
        for mod in mods[self.n_up :]:
            up = mod(up)
        return up


@dataclass
class BackboneOutput:
    """What heads read: the middle (deepest) features and each decoder level with its stride."""

    middle: torch.Tensor
    levels: list[torch.Tensor]
    strides: list[int]


def run_decoder(
    middle: torch.Tensor,
    blocks: Iterable[UpBlock],
    skips: Iterable[torch.Tensor | None],
    max_stride: int,
) -> BackboneOutput:
    """Upsample from the middle features through ``blocks``, each halving the stride.

    ``skips`` pairs with ``blocks`` in order (deepest first); ``None`` is a block without one.
    """
    x = middle
    levels: list[torch.Tensor] = []
    strides: list[int] = []
    stride = max_stride
    for block, skip in zip(blocks, skips):
        x = block(x, skip)
        stride //= 2
        levels.append(x)
        strides.append(stride)
    return BackboneOutput(middle=middle, levels=levels, strides=strides)
