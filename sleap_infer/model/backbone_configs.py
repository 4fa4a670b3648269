"""ConvNeXt and Swin-T backbone settings (``backbone_config.convnext`` / ``.swint``).

Both are four-stage hierarchical encoders followed by sleap-nn's middle
blocks and UNet-style decoder. Named model types fix the stage layout;
``arch`` is only read for other names, exactly as sleap-nn resolves it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sleap_infer.errors import ConfigError

CONVNEXT_ARCHS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "tiny": ((3, 3, 9, 3), (96, 192, 384, 768)),
    "small": ((3, 3, 27, 3), (96, 192, 384, 768)),
    "base": ((3, 3, 27, 3), (128, 256, 512, 1024)),
    "large": ((3, 3, 27, 3), (192, 384, 768, 1536)),
}
"""ConvNeXt ``model_type`` -> (blocks per stage, channels per stage)."""

SWINT_ARCHS: dict[str, tuple[int, tuple[int, ...], tuple[int, ...]]] = {
    "tiny": (96, (2, 2, 6, 2), (3, 6, 12, 24)),
    "small": (96, (2, 2, 18, 2), (3, 6, 12, 24)),
    "base": (128, (2, 2, 18, 2), (4, 8, 16, 32)),
}
"""Swin-T ``model_type`` -> (embedding width, blocks per stage, heads per stage)."""


@dataclass(frozen=True)
class DecoderSettings:
    """The knobs shared by the ConvNeXt and Swin decoders."""

    in_channels: int = 1
    kernel_size: int = 3
    filters_rate: float = 2.0
    convs_per_block: int = 2
    up_interpolate: bool = True
    output_stride: int = 1
    stem_stride: int = 2

    @property
    def max_stride(self) -> int:
        """Stem stride, three 2x downsamplings and one extra pool (sleap-nn ignores the
        configured ``max_stride`` for these backbones)."""
        return self.stem_stride * 16


@dataclass(frozen=True)
class ConvNeXtConfig:
    depths: tuple[int, ...]
    channels: tuple[int, ...]
    stem_kernel: int
    decoder: DecoderSettings


@dataclass(frozen=True)
class SwinTConfig:
    embed: int
    depths: tuple[int, ...]
    num_heads: tuple[int, ...]
    patch_size: tuple[int, int]
    window_size: tuple[int, int]
    decoder: DecoderSettings


def _value(raw: dict[str, Any], key: str, default: Any) -> Any:
    value = raw.get(key)
    return default if value is None else value


def _pair(value: Any, name: str) -> tuple[int, int]:
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ConfigError(f"{name} must be an int or a pair, got {value!r}")
        return int(value[0]), int(value[1])
    return int(value), int(value)


def _is_power_of_two(value: int) -> bool:
    return value >= 1 and math.log2(value).is_integer()


def _decoder_settings(raw: dict[str, Any], section: str) -> DecoderSettings:
    cfg = DecoderSettings(
        in_channels=int(_value(raw, "in_channels", 1)),
        kernel_size=int(_value(raw, "kernel_size", 3)),
        filters_rate=float(_value(raw, "filters_rate", 2.0)),
        convs_per_block=int(_value(raw, "convs_per_block", 2)),
        up_interpolate=bool(_value(raw, "up_interpolate", True)),
        output_stride=int(_value(raw, "output_stride", 1)),
        stem_stride=int(_value(raw, "stem_patch_stride", 2)),
    )
    if raw.get("block_contraction"):
        raise ConfigError(f"{section}.block_contraction is not supported")
    for name, value in (
        ("stem_patch_stride", cfg.stem_stride),
        ("output_stride", cfg.output_stride),
    ):
        if not _is_power_of_two(value):
            raise ConfigError(f"{section}.{name} must be a power of two, got {value}")
    if cfg.output_stride > cfg.max_stride:
        raise ConfigError(
            f"{section}.output_stride {cfg.output_stride} exceeds the backbone's "
            f"max stride {cfg.max_stride}"
        )
    if cfg.convs_per_block < 1:
        raise ConfigError(f"{section}.convs_per_block must be >= 1")
    if cfg.convs_per_block == 1 and cfg.filters_rate != 1:
        # Without the expand block the contract conv expects channels * rate inputs.
        raise ConfigError(
            f"{section}.convs_per_block 1 needs filters_rate 1 (sleap-nn cannot run it)"
        )
    return cfg


def _four(values: Any, name: str) -> tuple[int, ...]:
    try:
        out = tuple(int(v) for v in values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{name} must be a list of 4 integers, got {values!r}") from exc
    if len(out) != 4:
        raise ConfigError(f"{name} must list 4 stages, got {len(out)}")
    return out


def parse_convnext(raw: dict[str, Any]) -> ConvNeXtConfig:
    """Resolve ``backbone_config.convnext`` to concrete stage widths and depths."""
    model_type = str(_value(raw, "model_type", "tiny"))
    arch = raw.get("arch")
    if model_type in CONVNEXT_ARCHS:
        depths, channels = CONVNEXT_ARCHS[model_type]
    elif isinstance(arch, dict):
        depths = _four(arch.get("depths"), "convnext.arch.depths")
        channels = _four(arch.get("channels"), "convnext.arch.channels")
    else:
        depths, channels = CONVNEXT_ARCHS["tiny"]
    return ConvNeXtConfig(
        depths=depths,
        channels=channels,
        stem_kernel=int(_value(raw, "stem_patch_kernel", 4)),
        decoder=_decoder_settings(raw, "convnext"),
    )


def parse_swint(raw: dict[str, Any]) -> SwinTConfig:
    """Resolve ``backbone_config.swint`` to concrete stage widths, depths and heads."""
    model_type = str(_value(raw, "model_type", "tiny"))
    arch = raw.get("arch")
    if model_type in SWINT_ARCHS:
        embed, depths, heads = SWINT_ARCHS[model_type]
    elif isinstance(arch, dict):
        embed = int(_value(arch, "embed", 96))
        depths = _four(arch.get("depths"), "swint.arch.depths")
        heads = _four(arch.get("num_heads"), "swint.arch.num_heads")
    else:
        embed, depths, heads = SWINT_ARCHS["tiny"]
    for i, n_heads in enumerate(heads):
        if (embed * 2**i) % n_heads:
            raise ConfigError(
                f"swint stage {i} width {embed * 2**i} is not divisible by {n_heads} heads"
            )
    return SwinTConfig(
        embed=embed,
        depths=depths,
        num_heads=heads,
        patch_size=_pair(_value(raw, "patch_size", 4), "swint.patch_size"),
        window_size=_pair(_value(raw, "window_size", 7), "swint.window_size"),
        decoder=_decoder_settings(raw, "swint"),
    )
