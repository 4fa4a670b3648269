"""sleap-nn's UNet, rebuilt so its checkpoints load with ``strict=True``."""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
from torch import nn

from sleap_infer.core.config import UNetConfig
from sleap_infer.nets.blocks import BackboneOutput, ConvBlock, SamePadMaxPool, UpBlock, run_decoder


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
        self.cfg = cfg
        self.depth = int(math.log2(cfg.max_stride))
        dec = self._decoder_blocks()
        # Registration order (encoders, decoders, middle) matches sleap-nn's key order.
        self.encoders = nn.ModuleList([_EncoderStack(self._encoder_blocks())])
        self.decoders = nn.ModuleList([_DecoderStack(dec)])
        self.middle_blocks = nn.ModuleList(self._middle_blocks())
        self.middle_filters = self.width(self.depth)
        self.stride_to_filters: dict[int, int] = {cfg.max_stride: self.middle_filters}
        for j, block in enumerate(dec):
            self.stride_to_filters[cfg.max_stride // 2 ** (j + 1)] = block.filters
        self.max_stride = cfg.max_stride

    def width(self, level: int) -> int:
        """Filters of encoder level ``level`` (sleap-nn truncates ``filters * rate**level``)."""
        return int(self.cfg.filters * self.cfg.filters_rate**level)

    def _encoder_blocks(self) -> list[nn.Module]:
        cfg, depth = self.cfg, self.depth
        enc: list[nn.Module] = [
            ConvBlock(
                f"stack0_enc{i}",
                cfg.in_channels if i == 0 else self.width(i - 1),
                self.width(i),
                cfg.convs_per_block,
                cfg.kernel_size,
                pool_first=i > 0,
            )
            for i in range(depth)
        ]
        enc.append(nn.Sequential(OrderedDict({f"stack0_enc{depth}_last_pool": SamePadMaxPool()})))
        return enc

    def _middle_blocks(self) -> list[nn.Module]:
        cfg, depth, k = self.cfg, self.depth, self.cfg.kernel_size
        deepest = self.width(depth)
        return [
            ConvBlock(
                f"stack0_enc{depth + 1}_middle_expand",
                self.width(depth - 1),
                deepest,
                cfg.convs_per_block - 1,
                k,
            ),
            ConvBlock(f"stack0_enc{depth + 2}_middle_contract", deepest, deepest, 1, k),
        ]

    def _decoder_blocks(self) -> list[UpBlock]:
        cfg, depth = self.cfg, self.depth
        dec: list[UpBlock] = []
        in_ch = self.width(depth)
        for j in range(int(math.log2(cfg.max_stride / cfg.output_stride))):
            stride = cfg.max_stride // 2**j
            out_ch = self.width(max(0, depth - 1 - j))
            dec.append(
                UpBlock(
                    f"stack0_dec{j}_s{stride}_to_s{stride // 2}",
                    in_channels=in_ch,
                    skip_channels=out_ch,
                    out_channels=out_ch,
                    num_refine=cfg.convs_per_block,
                    kernel_size=cfg.kernel_size,
                    interpolate=cfg.up_interpolate,
                )
            )
            in_ch = out_ch
        return dec

    def forward(self, x: torch.Tensor) -> BackboneOutput:
        skips: list[torch.Tensor] = []
        stack = self.encoders[0].encoder_stack
        for block in stack[:-1]:
            x = block(x)
            skips.append(x)
        x = stack[-1](x)
        for block in self.middle_blocks:
            x = block(x)
        return run_decoder(x, self.decoders[0].decoder_stack, reversed(skips), self.max_stride)
