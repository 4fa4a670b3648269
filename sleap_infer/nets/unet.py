"""sleap-nn's UNet, rebuilt so its checkpoints load with ``strict=True``."""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import torch
from torch import nn

from sleap_infer.model.config import UNetConfig
from sleap_infer.nets.blocks import ConvBlock, SamePadMaxPool, UpBlock


@dataclass
class BackboneOutput:
    """What heads read: the middle (deepest) features and each decoder level with its stride."""

    middle: torch.Tensor
    levels: list[torch.Tensor]
    strides: list[int]


class _EncoderStack(nn.Module):
    def __init__(self, blocks: list[nn.Module]) -> None:
        super().__init__()
        self.encoder_stack = nn.ModuleList(blocks)


class _DecoderStack(nn.Module):
    def __init__(self, blocks: list[UpBlock]) -> None:
        super().__init__()
        self.decoder_stack = nn.ModuleList(blocks)


class UNet(nn.Module):
    """Encoder (``log2(max_stride)`` conv blocks) -> middle expand/contract -> decoder.

    ``stride_to_filters`` maps each decoder output stride (and the middle's, when
    there is no decoder) to its channel count, so heads can be attached by stride.
    """

    def __init__(self, cfg: UNetConfig) -> None:
        super().__init__()
        depth = int(math.log2(cfg.max_stride))
        n_up = int(math.log2(cfg.max_stride / cfg.output_stride))
        k = cfg.kernel_size

        def width(level: int) -> int:
            return int(cfg.filters * cfg.filters_rate**level)

        enc: list[nn.Module] = []
        for i in range(depth):
            enc.append(
                ConvBlock(
                    f"stack0_enc{i}",
                    cfg.in_channels if i == 0 else width(i - 1),
                    width(i),
                    cfg.convs_per_block,
                    k,
                    pool_first=i > 0,
                )
            )
        enc.append(nn.Sequential(OrderedDict({f"stack0_enc{depth}_last_pool": SamePadMaxPool()})))

        dec: list[UpBlock] = []
        in_ch = width(depth)
        for j in range(n_up):
            stride = cfg.max_stride // 2**j
            out_ch = width(max(0, depth - 1 - j))
            dec.append(
                UpBlock(
                    f"stack0_dec{j}_s{stride}_to_s{stride // 2}",
                    in_channels=in_ch,
                    skip_channels=out_ch,
                    out_channels=out_ch,
                    num_refine=cfg.convs_per_block,
                    kernel_size=k,
                    interpolate=cfg.up_interpolate,
                )
            )
            in_ch = out_ch

        # Registration order (encoders, decoders, middle) matches sleap-nn's key order.
        self.encoders = nn.ModuleList([_EncoderStack(enc)])
        self.decoders = nn.ModuleList([_DecoderStack(dec)])
        self.middle_blocks = nn.ModuleList(
            [
                ConvBlock(
                    f"stack0_enc{depth + 1}_middle_expand",
                    width(depth - 1),
                    width(depth),
                    cfg.convs_per_block - 1,
                    k,
                ),
                ConvBlock(
                    f"stack0_enc{depth + 2}_middle_contract", width(depth), width(depth), 1, k
                ),
            ]
        )
        self.middle_filters = width(depth)
        self.stride_to_filters: dict[int, int] = {cfg.max_stride: width(depth)}
        for j, block in enumerate(dec):
            self.stride_to_filters[cfg.max_stride // 2 ** (j + 1)] = block.filters
        self.max_stride = cfg.max_stride

    def forward(self, x: torch.Tensor) -> BackboneOutput:
        skips: list[torch.Tensor] = []
        stack = self.encoders[0].encoder_stack
        for block in stack[:-1]:
            x = block(x)
            skips.append(x)
        x = stack[-1](x)
        for block in self.middle_blocks:
            x = block(x)
        middle = x
        levels: list[torch.Tensor] = []
        strides: list[int] = []
        stride = self.max_stride
        for block, skip in zip(self.decoders[0].decoder_stack, reversed(skips)):
            x = block(x, skip)
            stride //= 2
            levels.append(x)
            strides.append(stride)
        return BackboneOutput(middle=middle, levels=levels, strides=strides)
