"""Parse ``model_config.backbone_config`` into a typed backbone (UNet, ConvNeXt, Swin-T,
or a HuggingFace ``pretrained`` one, parsed in :mod:`sleap_infer.model.pretrained`).

Every setting is read once here, with sleap-nn's defaults for missing or
``null`` keys (generated configs write ``max_stride: null``, which means the
default, not a crash). Layouts sleap-nn itself cannot build are rejected,
since no valid checkpoint can exist for them. ConvNeXt and Swin-T named
model types fix the stage layout; ``arch`` is only read for other names,
exactly as sleap-nn resolves it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sleap_infer.core.config import (
    BackboneConfig,
    ConvNeXtConfig,
    DecoderSettings,
    SwinTConfig,
    UNetConfig,
)
from sleap_infer.core.errors import ConfigError

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


def get(mapping: Any, key: str, default: Any = None) -> Any:
    """``mapping[key]``, or ``default`` when the key is missing or ``null``."""
    if not isinstance(mapping, dict):
        return default
    value = mapping.get(key)
    return default if value is None else value


def first_non_null(mapping: dict[str, Any], section: str) -> str:
    """sleap-nn configs list every option of a union and set the chosen one."""
    for key, value in mapping.items():
        if value is not None:
            return key
    raise ConfigError(f"{section} has no non-null entry")


def _is_power_of_two(value: int) -> bool:
    return value >= 1 and math.log2(value).is_integer()


def _check_strides(section: str, deepest: int, **strides: int) -> None:
    """Every stride a power of two, and the output stride no deeper than ``deepest``."""
    for name, value in strides.items():
        if not _is_power_of_two(value):
            raise ConfigError(f"{section}.{name} must be a power of two, got {value}")
    output_stride = strides["output_stride"]
    if output_stride > deepest:
        what = "max_stride" if "max_stride" in strides else "the backbone's max stride"
        raise ConfigError(f"{section}.output_stride {output_stride} exceeds {what} {deepest}")


def parse_unet(raw: dict[str, Any]) -> UNetConfig:
    """Parse and validate a UNet block, rejecting layouts sleap-nn itself cannot run."""
    d = UNetConfig()
    cfg = UNetConfig(
        in_channels=int(get(raw, "in_channels", d.in_channels)),
        kernel_size=int(get(raw, "kernel_size", d.kernel_size)),
        filters=int(get(raw, "filters", d.filters)),
        filters_rate=float(get(raw, "filters_rate", d.filters_rate)),
        max_stride=int(get(raw, "max_stride", d.max_stride)),
        stem_stride=None if raw.get("stem_stride") is None else int(raw["stem_stride"]),
        middle_block=bool(raw.get("middle_block", True)),
        up_interpolate=bool(get(raw, "up_interpolate", d.up_interpolate)),
        stacks=int(get(raw, "stacks", d.stacks)),
        convs_per_block=int(get(raw, "convs_per_block", d.convs_per_block)),
        output_stride=int(get(raw, "output_stride", d.output_stride)),
    )
    # These layouts crash or mis-wire inside sleap-nn, so no valid checkpoint exists.
    if cfg.stem_stride not in (None, 1, 2):
        # sleap-nn 0.3.5 builds stem_stride 4 but its decoder mis-wires the channels
        # (its own forward pass fails), so no trained checkpoint exists.
        raise ConfigError(
            f"unet.stem_stride {cfg.stem_stride}: sleap-nn runs stem-strided UNets "
            "with stem_stride 2 only"
        )
    if cfg.stem_stride == 2 and cfg.max_stride < 4:
        raise ConfigError("unet.max_stride must be at least 4 with stem_stride 2 (as in sleap-nn)")
    if not cfg.middle_block:
        raise ConfigError("unet.middle_block is false: sleap-nn cannot run UNets without it")
    if cfg.stacks != 1:
        raise ConfigError(f"unet.stacks is {cfg.stacks}: only single-stack UNets are supported")
    if cfg.convs_per_block < 2:
        raise ConfigError("unet.convs_per_block < 2 is not supported (sleap-nn cannot build it)")
    _check_strides(
        "unet", cfg.max_stride, max_stride=cfg.max_stride, output_stride=cfg.output_stride
    )
    return cfg


def _decoder_settings(raw: dict[str, Any], section: str) -> DecoderSettings:
    d = DecoderSettings()
    cfg = DecoderSettings(
        in_channels=int(get(raw, "in_channels", d.in_channels)),
        kernel_size=int(get(raw, "kernel_size", d.kernel_size)),
        filters_rate=float(get(raw, "filters_rate", d.filters_rate)),
        convs_per_block=int(get(raw, "convs_per_block", d.convs_per_block)),
        up_interpolate=bool(get(raw, "up_interpolate", d.up_interpolate)),
        output_stride=int(get(raw, "output_stride", d.output_stride)),
        stem_stride=int(get(raw, "stem_patch_stride", d.stem_stride)),
    )
    if raw.get("block_contraction"):
        raise ConfigError(f"{section}.block_contraction is not supported")
    _check_strides(
        section, cfg.max_stride, stem_patch_stride=cfg.stem_stride, output_stride=cfg.output_stride
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


def _pair(value: Any, name: str) -> tuple[int, int]:
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ConfigError(f"{name} must be an int or a pair, got {value!r}")
        return int(value[0]), int(value[1])
    return int(value), int(value)


def parse_convnext(raw: dict[str, Any]) -> ConvNeXtConfig:
    """Resolve ``backbone_config.convnext`` to concrete stage widths and depths."""
    model_type = str(get(raw, "model_type", "tiny"))
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
        stem_kernel=int(get(raw, "stem_patch_kernel", 4)),
        decoder=_decoder_settings(raw, "convnext"),
    )


def parse_swint(raw: dict[str, Any]) -> SwinTConfig:
    """Resolve ``backbone_config.swint`` to concrete stage widths, depths and heads."""
    model_type = str(get(raw, "model_type", "tiny"))
    arch = raw.get("arch")
    if model_type in SWINT_ARCHS:
        embed, depths, heads = SWINT_ARCHS[model_type]
    elif isinstance(arch, dict):
        embed = int(get(arch, "embed", 96))
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
        patch_size=_pair(get(raw, "patch_size", 4), "swint.patch_size"),
        window_size=_pair(get(raw, "window_size", 7), "swint.window_size"),
        decoder=_decoder_settings(raw, "swint"),
    )


BACKBONE_PARSERS: dict[str, Callable[[dict[str, Any]], BackboneConfig]] = {
    "unet": parse_unet,
    "convnext": parse_convnext,
    "swint": parse_swint,
}


def parse_backbone(configs: dict[str, Any], folder: Path = Path(".")) -> BackboneConfig:
    """The one configured backbone of ``model_config.backbone_config``, typed.

    ``folder`` is the model folder: a pretrained (HuggingFace) backbone's architecture
    is looked up there (see :mod:`sleap_infer.model.pretrained`).
    """
    kind = first_non_null(configs, "model_config.backbone_config")
    if kind == "pretrained":
        from sleap_infer.model.pretrained import parse_pretrained

        return parse_pretrained(dict(configs[kind]), folder)
    parser = BACKBONE_PARSERS.get(kind)
    if parser is None:
        supported = ", ".join((*BACKBONE_PARSERS, "pretrained"))
        raise ConfigError(f"backbone {kind!r} is not supported (supported: {supported})")
    return parser(dict(configs[kind]))
