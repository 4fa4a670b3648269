"""sleap-nn 0.3.5's ``PretrainedBackbone``: a HuggingFace encoder (``transformers``
``AutoBackbone``) with sleap-nn's decoder, rebuilt offline from its HF config.

``transformers`` rebuilds ConvNeXtV2, ResNet, Swinv2, DINOv2... better than we would,
so it is an optional extra (``sleap-infer[hf]``) instead of a copy. Module names follow
sleap-nn (``enc``, ``image_mean``/``image_std`` buffers, ``dec.decoder_stack`` with
prefix ``pretrained_dec``) so checkpoints load strictly. Two of sleap-nn's three
integration surfaces are built:

* decoder (Case A): every stage of a hierarchical encoder, deduplicated by stride,
  feeds a UNet-style decoder whose blocks past the last skip have one refine conv;
* encoder (Case B): one reshaped, layer-normed bottleneck for pooled heads.

The plain-ViT pyramid neck (Case C) and ``timm/...`` checkpoints are refused.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import torch
from torch import nn

from sleap_infer.core.config import PretrainedConfig
from sleap_infer.core.errors import ConfigError
from sleap_infer.nets.blocks import BackboneOutput, UpBlock, run_decoder

EXTRA = "pip install 'sleap-infer[hf]'"
PROBE_SIZE = 256  # sleap-nn's dummy-forward size for finding each stage's stride
# sleap-nn 0.3.5's list of single-stride (plain ViT) HF model types.
ISOTROPIC_MODEL_TYPES = frozenset(
    [
        "vit",
        "deit",
        "beit",
        "dinov2",
        "dinov2_with_registers",
        "dinov2-with-registers",
        "dinov3_vit",
        "dinov3-vit",
        "ijepa",
        "vitdet",
        "vit_det",
        "vit_mae",
    ]
)


def _transformers() -> Any:
    try:
        import transformers
    except ImportError as exc:
        raise ConfigError(
            f"a pretrained (HuggingFace) backbone needs transformers: {EXTRA}"
        ) from exc
    return transformers


def _is_isotropic(hf_config: Any) -> bool:
    model_type = (getattr(hf_config, "model_type", "") or "").lower()
    return model_type in ISOTROPIC_MODEL_TYPES or not getattr(hf_config, "stage_names", None)


def _has_backbone_class(hf_config: Any) -> bool:
    from transformers.models.auto.modeling_auto import MODEL_FOR_BACKBONE_MAPPING

    try:
        MODEL_FOR_BACKBONE_MAPPING[type(hf_config)]
    except KeyError:
        return False
    return True


class _FiltersHolder(nn.Module):
    """Parameter-free stand-in for sleap-nn's ``middle_blocks[-1]`` (it only carries a width)."""

    def __init__(self, filters: int) -> None:
        super().__init__()
        self.filters = int(filters)


class _Decoder(nn.Module):
    def __init__(self, blocks: list[UpBlock]) -> None:
        super().__init__()
        self.decoder_stack = nn.ModuleList(blocks)


class PretrainedBackbone(nn.Module):
    """HF encoder -> (Case A) stride pyramid -> decoder; (Case B) the bottleneck alone."""

    image_mean: torch.Tensor
    image_std: torch.Tensor

    def __init__(self, cfg: PretrainedConfig, spatial_heads: bool) -> None:
        super().__init__()
        transformers = _transformers()
        hf_config = transformers.AutoConfig.for_model(**cfg.hf_config)
        isotropic = _is_isotropic(hf_config)
        mode = cfg.mode
        if mode == "auto":
            mode = "decoder" if (not isotropic or spatial_heads) else "encoder"
        if isotropic and (mode == "decoder" or not _has_backbone_class(hf_config)):
            raise ConfigError(
                f"pretrained backbone {cfg.model_name!r} ({hf_config.model_type}) is a plain "
                f"ViT read through sleap-nn's pyramid neck (mode {mode}): not supported here"
            )
        if mode == "encoder":
            # Case B: a single reshaped spatial bottleneck (tokens stripped, layer-normed).
            options: dict[str, Any] = {
                "out_indices": (-1,),
                "reshape_hidden_states": True,
                "apply_layernorm": True,
            }
        else:
            stages = getattr(hf_config, "stage_names", None) or ()
            indices = cfg.out_indices or tuple(range(len(stages)))
            options = {"out_indices": tuple(indices)}
        for key, value in options.items():  # as sleap-nn: attributes, then from_config
            setattr(hf_config, key, value)
        self.mode = mode
        self.normalize = cfg.normalize
        self.enc = transformers.AutoBackbone.from_config(hf_config)
        self.register_buffer("image_mean", torch.zeros(1, 3, 1, 1))  # from the checkpoint
        self.register_buffer("image_std", torch.ones(1, 3, 1, 1))
        strides, channels = self._probe(cfg.in_channels)
        self.stride_to_filters: dict[int, int] = {}
        self.dec: _Decoder | None = None
        if mode == "encoder":
            self.max_stride = strides[-1]
        else:
            self._build_decoder(cfg, strides, channels)
        self.middle_blocks = nn.ModuleList([_FiltersHolder(channels[-1])])
        self.middle_filters = channels[-1]

    def _stage_maps(self, x: torch.Tensor) -> list[torch.Tensor]:
        return list(self.enc(x).feature_maps)

    def _probe(self, in_channels: int) -> tuple[list[int], list[int]]:
        """Each map's stride and width from a dummy forward (HF states no strides)."""
        self.enc.eval()
        with torch.no_grad():
            feats = self._stage_maps(torch.zeros(1, in_channels, PROBE_SIZE, PROBE_SIZE))
        by_stride = {PROBE_SIZE // f.shape[-2]: f.shape[1] for f in feats}
        strides = sorted(by_stride)
        return strides, [by_stride[s] for s in strides]

    def _build_decoder(self, cfg: PretrainedConfig, strides: list[int], channels: list[int]):
        if len(strides) < 2:
            raise ConfigError(
                f"pretrained backbone {cfg.model_name!r} gives one feature stride: it cannot "
                "feed a spatial decoder"
            )
        deepest = strides[-1]
        up_blocks = int(math.log2(deepest / cfg.output_stride))
        if up_blocks < 1:
            raise ConfigError(
                f"pretrained.output_stride {cfg.output_stride} is not finer than the "
                f"backbone's deepest stride {deepest}"
            )
        n_skips = len(strides) - 1
        skips = channels[:-1][::-1]  # deepest first
        filters, rate = channels[0], cfg.filters_rate
        blocks: list[UpBlock] = []
        stride, in_ch = deepest, channels[-1]
        self.stride_to_filters = {deepest: in_ch}
        for j in range(up_blocks):
            out_ch = int(filters * rate ** max(0, n_skips - 1 - j))
            has_skip = j < n_skips  # sleap-nn: stem_blocks 1, down_blocks n_skips - 1
            blocks.append(
                UpBlock(
                    f"pretrained_dec{j}_s{stride}_to_s{stride // 2}",
                    in_channels=in_ch,
                    skip_channels=skips[j] if has_skip else 0,
                    out_channels=out_ch,
                    num_refine=cfg.convs_per_block if has_skip else 1,
                    kernel_size=cfg.kernel_size,
                    interpolate=cfg.up_interpolate,
                    has_skip=has_skip,
                )
            )
            stride //= 2
            self.stride_to_filters[stride] = out_ch
            in_ch = out_ch
        self.dec = _Decoder(blocks)
        self.max_stride = deepest

    def forward(self, x: torch.Tensor) -> BackboneOutput:
        if self.normalize:
            x = (x - self.image_mean) / self.image_std
        feats = self._stage_maps(x)
        if self.dec is None:
            return BackboneOutput(middle=feats[-1], levels=[], strides=[])
        by_height = {f.shape[-2]: f for f in feats}  # the deepest map of each stride
        pyramid = [by_height[h] for h in sorted(by_height, reverse=True)]
        skips = itertools.chain(pyramid[:-1][::-1], itertools.repeat(None))
        return run_decoder(pyramid[-1], self.dec.decoder_stack, skips, self.max_stride)
