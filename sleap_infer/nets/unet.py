"""sleap-nn's UNet, rebuilt so its checkpoints load with ``strict=True``."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import cast

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


class _StemStack(nn.Module):
    def __init__(self, blocks: list[nn.Module]) -> None:
        super().__init__()
        self.stem_stack = nn.ModuleList(blocks)


STEM_KERNEL_SIZE = 7
"""sleap-nn's ``UNet.from_config`` never passes a stem kernel size: its default, 7."""


def stem_blocks(stem_stride: int | None) -> int:
    """sleap-nn's ``log2(stem_stride)`` stem blocks (None and 1: none)."""
    return 0 if stem_stride is None else int(math.log2(stem_stride))


class UNet(nn.Module):
    """[stem] -> encoder -> middle expand/contract -> decoder, as sleap-nn's ``UNet``.

    Without a stem: ``log2(max_stride)`` encoder blocks. With ``stem_stride`` 2
    (``s = 1`` stem block; sleap-nn 0.3.5 builds but cannot run larger ones), as
    sleap-nn wires it: ``s`` stem blocks of 7x7 convs then a pool, ``log2(max_stride)
    - s`` encoder blocks that all pool first, the usual middle, and ``log2(max_stride /
    output_stride) + s`` decoder blocks. The stem's pool makes the deepest features
    ``2 * max_stride`` (sleap-nn's decoder names count from there); the stem's output is
    the last skip, and a decoder block past every skip upsamples without one.

    ``stride_to_filters`` maps each decoder output stride (and the middle's, when
    there is no decoder) to its channel count, so heads can be attached by stride.
    """

    def __init__(self, cfg: UNetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.depth = int(math.log2(cfg.max_stride))
        self.stem_blocks = stem_blocks(cfg.stem_stride)
        self.down_blocks = self.depth - self.stem_blocks
        # The deepest stride: each stem and encoder block pools once, plus the last pool.
        self.max_stride = 2 ** (self.depth + (1 if self.stem_blocks else 0))
        dec = self._decoder_blocks()
        # Registration order (stem, encoders, decoders, middle) matches sleap-nn's key order.
        self.stem = _StemStack(self._stem_blocks()) if self.stem_blocks else None
        self.encoders = nn.ModuleList([_EncoderStack(self._encoder_blocks())])
        self.decoders = nn.ModuleList([_DecoderStack(dec)])
        self.middle_blocks = nn.ModuleList(self._middle_blocks())
        self.middle_filters = self.width(self.depth)
        self.stride_to_filters: dict[int, int] = {self.max_stride: self.middle_filters}
        for j, block in enumerate(dec):
            self.stride_to_filters[self.max_stride // 2 ** (j + 1)] = block.filters

    def width(self, level: int) -> int:
        """Filters of encoder level ``level`` (sleap-nn truncates ``filters * rate**level``)."""
        return int(self.cfg.filters * self.cfg.filters_rate**level)

    def _stem_blocks(self) -> list[nn.Module]:
        cfg, stem = self.cfg, self.stem_blocks
        blocks: list[nn.Module] = [
            ConvBlock(
                f"stem{b}",
                cfg.in_channels if b == 0 else self.width(b - 1),
                self.width(b),
                cfg.convs_per_block,
                STEM_KERNEL_SIZE,
                pool_first=b > 0,
            )
            for b in range(stem)
        ]
        blocks.append(nn.Sequential(OrderedDict({f"stem{stem}_last_pool": SamePadMaxPool()})))
        return blocks

    def _encoder_blocks(self) -> list[nn.Module]:
        cfg, stem, down = self.cfg, self.stem_blocks, self.down_blocks
        enc: list[nn.Module] = [
            ConvBlock(
                f"stack0_enc{i}",
                cfg.in_channels if i + stem == 0 else self.width(i + stem - 1),
                self.width(i + stem),
                cfg.convs_per_block,
                cfg.kernel_size,
                pool_first=i + stem > 0,
            )
            for i in range(down)
        ]
        enc.append(nn.Sequential(OrderedDict({f"stack0_enc{down}_last_pool": SamePadMaxPool()})))
        return enc

    def _middle_blocks(self) -> list[nn.Module]:
        cfg, depth, k = self.cfg, self.depth, self.cfg.kernel_size
        down = self.down_blocks
        deepest = self.width(depth)
        return [
            ConvBlock(
                f"stack0_enc{down + 1}_middle_expand",
                self.width(depth - 1),
                deepest,
                cfg.convs_per_block - 1,
                k,
            ),
            ConvBlock(f"stack0_enc{down + 2}_middle_contract", deepest, deepest, 1, k),
        ]

    def _decoder_blocks(self) -> list[UpBlock]:
        cfg, depth = self.cfg, self.depth
        dec: list[UpBlock] = []
        in_ch = self.width(depth)
        n_up = int(math.log2(cfg.max_stride / cfg.output_stride)) + self.stem_blocks
        for j in range(n_up):
            stride = self.max_stride // 2**j
            out_ch = self.width(max(0, depth - 1 - j))
            # Past the stem's skip (stem + output stride 1): one conv, nothing to concat.
            past_skips = self.stem_blocks > 0 and j >= depth
            dec.append(
                UpBlock(
                    f"stack0_dec{j}_s{stride}_to_s{stride // 2}",
                    in_channels=in_ch,
                    skip_channels=out_ch,
                    out_channels=out_ch,
                    num_refine=1 if past_skips else cfg.convs_per_block,
                    kernel_size=cfg.kernel_size,
                    interpolate=cfg.up_interpolate,
                    has_skip=not past_skips,
                )
            )
            in_ch = out_ch
        return dec

    def forward(self, x: torch.Tensor) -> BackboneOutput:
        skips: list[torch.Tensor | None] = []
        if self.stem is not None:
            for block in self.stem.stem_stack:
                x = block(x)
        stem_output = x
        stack = cast(_EncoderStack, self.encoders[0]).encoder_stack
        decoder = cast(_DecoderStack, self.decoders[0]).decoder_stack
        for block in stack[:-1]:
            x = block(x)
            skips.append(x)
        x = stack[-1](x)
        for block in self.middle_blocks:
            x = block(x)
        skips.reverse()
        if self.stem is not None:
            skips.append(stem_output)
        skips += [None] * (len(decoder) - len(skips))
        return run_decoder(x, cast(list[UpBlock], decoder), skips, self.max_stride)
