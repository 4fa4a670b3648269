"""ConvNeXt and Swin-T backbones: a four-stage encoder wrapped the way sleap-nn wraps it.

sleap-nn puts the same tail after both encoders: one extra 2x max pool,
"middle" expand/contract convs (whose prefixes say ``convnext_`` for Swin
too) and a UNet-style decoder whose skips are the stem output and the three
downsampling outputs. Module names follow sleap-nn (``enc``,
``additional_pool``, ``middle_blocks``, ``dec.decoder_stack``) so
checkpoints load strictly.
"""

from __future__ import annotations

import itertools
import math

import torch
from torch import nn

from sleap_infer.core.config import ConvNeXtConfig, DecoderSettings, SwinTConfig
from sleap_infer.nets.blocks import BackboneOutput, ConvBlock, SamePadMaxPool, UpBlock, run_decoder
from sleap_infer.nets.torchvision_blocks import (
    CNBlock,
    LayerNorm2d,
    PatchMerging,
    Permute,
    SwinTransformerBlock,
)

N_SKIPS = 4  # stem + three downsamplings


class ConvNeXtEncoder(nn.Module):
    """``features``: stem, then (stage, downsample) x 3, then the last stage; all NCHW."""

    def __init__(self, cfg: ConvNeXtConfig) -> None:
        super().__init__()
        channels = cfg.channels
        layers: list[nn.Module] = [
            nn.Sequential(
                nn.Conv2d(
                    cfg.decoder.in_channels,
                    channels[0],
                    kernel_size=cfg.stem_kernel,
                    stride=cfg.decoder.stem_stride,
                    padding=1,
                ),
                LayerNorm2d(channels[0], eps=1e-6),
            )
        ]
        for i, depth in enumerate(cfg.depths):
            layers.append(nn.Sequential(*[CNBlock(channels[i]) for _ in range(depth)]))
            if i + 1 < len(cfg.depths):
                layers.append(
                    nn.Sequential(
                        LayerNorm2d(channels[i], eps=1e-6),
                        nn.Conv2d(channels[i], channels[i + 1], kernel_size=2, stride=2),
                    )
                )
        self.features = nn.Sequential(*layers)
        self.stage_channels = list(channels)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        outs = []
        for layer in self.features:
            x = layer(x)
            outs.append(x)
        return outs


class SwinEncoder(nn.Module):
    """Patch-embedding stem, then (stage, patch merging) x 3 and a final stage + ``norm``.

    Runs channels-last internally; every returned feature is NCHW.
    """

    def __init__(self, cfg: SwinTConfig) -> None:
        super().__init__()
        embed = cfg.embed
        layers: list[nn.Module] = [
            nn.Sequential(
                nn.Conv2d(
                    cfg.decoder.in_channels,
                    embed,
                    kernel_size=cfg.patch_size,
                    stride=cfg.decoder.stem_stride,
                    padding=1,
                ),
                Permute((0, 2, 3, 1)),
                nn.LayerNorm(embed),
            )
        ]
        window = cfg.window_size
        half = (window[0] // 2, window[1] // 2)
        for i, depth in enumerate(cfg.depths):
            dim = embed * 2**i
            blocks = [
                SwinTransformerBlock(dim, cfg.num_heads[i], window, (0, 0) if j % 2 == 0 else half)
                for j in range(depth)
            ]
            layers.append(nn.Sequential(*blocks))
            if i + 1 < len(cfg.depths):
                layers.append(PatchMerging(dim))
        self.features = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(embed * 2 ** (len(cfg.depths) - 1))
        self.stage_channels = [embed * 2**i for i in range(len(cfg.depths))]

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        outs = []
        last = len(self.features) - 1
        for i, layer in enumerate(self.features):
            x = layer(x)
            if i == last:
                x = self.norm(x)
            outs.append(x.permute(0, 3, 1, 2))
        return outs


class _Decoder(nn.Module):
    def __init__(self, blocks: list[UpBlock]) -> None:
        super().__init__()
        self.decoder_stack = nn.ModuleList(blocks)


class HierarchicalBackbone(nn.Module):
    """Encoder -> extra pool -> middle expand/contract -> decoder, with sleap-nn's widths."""

    def __init__(self, enc: ConvNeXtEncoder | SwinEncoder, settings: DecoderSettings) -> None:
        super().__init__()
        k = settings.kernel_size
        rate = settings.filters_rate
        stage_channels = enc.stage_channels
        deepest = stage_channels[-1]
        expanded = int(deepest * rate)

        middle: list[nn.Module] = []
        if settings.convs_per_block > 1:
            middle.append(
                ConvBlock(
                    "convnext_middle_expand", deepest, expanded, settings.convs_per_block - 1, k
                )
            )
        middle.append(ConvBlock("convnext_middle_contract", expanded, expanded, 1, k))

        n_up = int(math.log2(16 / settings.output_stride)) + int(math.log2(settings.stem_stride))
        skip_channels = stage_channels[::-1]
        stride = settings.max_stride
        in_ch = expanded
        self.stride_to_filters: dict[int, int] = {stride: expanded}
        blocks: list[UpBlock] = []
        for j in range(n_up):
            out_ch = int(stage_channels[0] * rate ** max(0, len(stage_channels) - 1 - j))
            has_skip = j < N_SKIPS
            blocks.append(
                UpBlock(
                    f"dec{j}_s{stride}_to_s{stride // 2}",
                    in_channels=in_ch,
                    skip_channels=skip_channels[j] if has_skip else 0,
                    out_channels=out_ch,
                    # Blocks past the last skip get a single refine conv, as in sleap-nn.
                    num_refine=settings.convs_per_block if has_skip else 1,
                    kernel_size=k,
                    interpolate=settings.up_interpolate,
                    has_skip=has_skip,
                )
            )
            stride //= 2
            self.stride_to_filters[stride] = out_ch
            in_ch = out_ch

        self.enc = enc
        self.additional_pool = SamePadMaxPool()
        self.middle_blocks = nn.ModuleList(middle)
        self.dec = _Decoder(blocks)
        self.middle_filters = expanded
        self.max_stride = settings.max_stride

    def forward(self, x: torch.Tensor) -> BackboneOutput:
        feats = self.enc(x)
        skips = feats[0::2][::-1]  # stem + downsampling outputs, deepest first
        x = self.additional_pool(feats[-1])
        for block in self.middle_blocks:
            x = block(x)
        # Blocks past the last skip upsample without one.
        skips_or_none = itertools.chain(skips, itertools.repeat(None))
        return run_decoder(x, self.dec.decoder_stack, skips_or_none, self.max_stride)


def convnext(cfg: ConvNeXtConfig) -> HierarchicalBackbone:
    return HierarchicalBackbone(ConvNeXtEncoder(cfg), cfg.decoder)


def swint(cfg: SwinTConfig) -> HierarchicalBackbone:
    return HierarchicalBackbone(SwinEncoder(cfg), cfg.decoder)
