"""sleap-nn 0.3.5's ``PretrainedBackbone``: a HuggingFace encoder (``transformers``)
with sleap-nn's decoder, rebuilt offline from its HF config.

``transformers`` rebuilds ConvNeXtV2, ResNet, Swinv2, DINOv2... better than we would,
so it is an optional extra (``sleap-infer[hf]``) instead of a copy; so are ``timm/...``
checkpoints, which sleap-nn loads through transformers' ``TimmWrapperModel`` (timm
builds the named architecture with ``pretrained=False``: nothing is downloaded). Module
names follow sleap-nn (``enc``, ``image_mean``/``image_std`` buffers, ``tap_norms``,
``neck``, ``stem``, ``dec.decoder_stack`` with prefix ``pretrained_dec``) so checkpoints
load strictly. All three of sleap-nn's integration surfaces are built:

* decoder (Case A): every stage of a hierarchical encoder, deduplicated by stride,
  feeds a UNet-style decoder whose blocks past the last skip have one refine conv;
* encoder (Case B): one reshaped, layer-normed bottleneck for pooled heads;
* plain ViT (Case C): tapped transformer layers, each layer-normed and reshaped to the
  token grid, become a stride ``s/4 .. 2s`` pyramid (``ViTPyramidNeck``, optionally
  with a conv detail stem) that feeds the same decoder. A plain ViT without a
  ``*Backbone`` class (CLIP, SigLIP, timm ViTs) also serves pooled heads this way.
"""

from __future__ import annotations

import inspect
import itertools
import math
import sys
from typing import Any

import torch
from torch import nn

from sleap_infer.core.config import PretrainedConfig
from sleap_infer.core.errors import ConfigError
from sleap_infer.nets.blocks import BackboneOutput, UpBlock, run_decoder
from sleap_infer.nets.torchvision_blocks import LayerNorm2d

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
        "vit_msn",
    ]
)
PYRAMID_SCALES = (4.0, 2.0, 1.0, 0.5)  # each neck level's size over the token grid's
DETAIL_STRIDES = (2, 4, 8)
_TORCHVISION_SCHEMAS: list[Any] = []  # keeps the shim's library definitions alive


def _transformers() -> Any:
    _import_torchvision()
    try:
        import transformers
    except ImportError as exc:
        raise ConfigError(
            f"a pretrained (HuggingFace) backbone needs transformers: {EXTRA}"
        ) from exc
    return transformers


def _import_torchvision() -> None:
    """Import torchvision where its C extension cannot load, when it is installed at all.

    transformers imports torchvision whenever it is installed, and timm always does. A
    CUDA torchvision wheel next to a CPU torch dies registering fake kernels for
    ``nms``/``qnms``, ops that were never defined; neither library calls them here, so
    on that one error the two schemas are defined (no kernels: a call would still fail
    loudly) and the import retried, as benchmarks/sleap_nn_batch.py does for sleap-nn.
    On a working install, or without torchvision, nothing changes.
    """
    try:
        import torchvision
    except ImportError:
        return
    except RuntimeError as exc:
        if "torchvision::nms" not in str(exc):
            raise
        for name in [m for m in sys.modules if m.split(".")[0] == "torchvision"]:
            del sys.modules[name]
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _TORCHVISION_SCHEMAS.append(lib)
        import torchvision  # noqa: F401


def import_timm() -> None:
    """Import ``timm`` (``TimmWrapperModel`` needs it), naming the extra when it is missing."""
    _import_torchvision()
    try:
        import timm  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"a timm backbone needs timm (and torchvision): {EXTRA}") from exc


def _timm_wrapper(transformers: Any, hf_config: dict[str, Any]) -> nn.Module:
    """sleap-nn's ``_build_timm_wrapper`` without weights: ``dynamic_img_size`` on where
    the family takes it (ViTs then run at any input size), else the config's own args."""
    import_timm()
    base = dict(hf_config.get("model_args") or {})
    config = transformers.TimmWrapperConfig(architecture=hf_config["architecture"])
    for args in ({**base, "dynamic_img_size": True}, base):
        config.model_args = args
        try:
            return transformers.TimmWrapperModel(config)
        except TypeError:
            if args is base:
                raise
    raise AssertionError("unreachable")


def _timm_is_isotropic(timm_model: nn.Module) -> bool:
    info = getattr(timm_model, "feature_info", None) or []
    return len({int(f["reduction"]) for f in info}) <= 1 and hasattr(timm_model, "blocks")


def _patch_size(timm_model: Any, vision_config: Any) -> int:
    """The square patch size of a timm ViT (``timm_model``) or an HF one (its config)."""
    if timm_model is not None:
        patch = getattr(getattr(timm_model, "patch_embed", None), "patch_size", None)
        if patch is None:
            patch = timm_model.feature_info[-1]["reduction"]
    else:
        patch = getattr(vision_config, "patch_size", None)
    if isinstance(patch, (list, tuple)):
        if len(set(patch)) != 1:
            raise ConfigError(f"plain ViT patch size {patch} is not square: not supported")
        patch = patch[0]
    if not patch:
        raise ConfigError("the plain ViT's HF config has no patch_size")
    return int(patch)


def _resample(channels: int, scale: float) -> nn.Module:
    """sleap-nn's ``vit_neck._resample``: the token grid to one pyramid level."""
    if scale == 4.0:
        mid = max(channels // 2, 1)
        return nn.Sequential(
            nn.ConvTranspose2d(channels, mid, kernel_size=2, stride=2),
            LayerNorm2d(mid, eps=1e-6),
            nn.GELU(),
            nn.ConvTranspose2d(mid, mid, kernel_size=2, stride=2),
        )
    if scale == 2.0:
        return nn.ConvTranspose2d(channels, channels, kernel_size=2, stride=2)
    if scale == 1.0:
        return nn.Identity()
    return nn.Conv2d(channels, channels, kernel_size=3, stride=2, padding=1)


class ViTPyramidNeck(nn.Module):
    """sleap-nn's neck: ``dpt`` reads one tapped layer per level (shallowest to the
    finest), ``sfp`` builds every level from the last tapped layer (ViTDet)."""

    def __init__(
        self, channels: int, out_channels: list[int], scales: list[float], mode: str
    ) -> None:
        super().__init__()
        self.mode = mode
        self.levels = nn.ModuleList()
        for scale, c_out in zip(scales, out_channels):
            c_mid = max(channels // 2, 1) if scale == 4.0 else channels
            self.levels.append(
                nn.Sequential(
                    _resample(channels, scale),
                    nn.Conv2d(c_mid, c_out, kernel_size=1, bias=False),
                    LayerNorm2d(c_out, eps=1e-6),
                    nn.Conv2d(c_out, c_out, kernel_size=3, padding=1, bias=False),
                    LayerNorm2d(c_out, eps=1e-6),
                )
            )

    def forward(self, feats: list[torch.Tensor]) -> list[torch.Tensor]:
        inputs = [feats[-1]] * len(self.levels) if self.mode == "sfp" else feats
        return [level(f) for level, f in zip(self.levels, inputs)]


class DetailStem(nn.Module):
    """sleap-nn's conv stream on the image: features at strides 2, 4, 8 that join the
    neck's pyramid, so a plain ViT's decoder sees detail finer than its tokens."""

    def __init__(self, in_channels: int, channels: tuple[int, ...]) -> None:
        super().__init__()
        self.stages = nn.ModuleList()
        c_in = in_channels
        for c_out in channels:
            self.stages.append(
                nn.Sequential(
                    nn.Conv2d(c_in, c_out, kernel_size=3, stride=2, padding=1),
                    LayerNorm2d(c_out, eps=1e-6),
                    nn.ReLU(inplace=True),
                    nn.Conv2d(c_out, c_out, kernel_size=3, padding=1),
                    LayerNorm2d(c_out, eps=1e-6),
                    nn.ReLU(inplace=True),
                )
            )
            c_in = c_out

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        feats = []
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        return feats


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
    """HF or timm encoder -> (A) stride pyramid -> decoder; (B) the bottleneck alone;
    (C) a plain ViT's tapped layers -> pyramid neck -> decoder (or, pooled, one tap)."""

    image_mean: torch.Tensor
    image_std: torch.Tensor

    def __init__(self, cfg: PretrainedConfig, spatial_heads: bool) -> None:
        super().__init__()
        transformers = _transformers()
        self.is_timm = cfg.hf_config.get("model_type") == "timm_wrapper"
        hf_config: Any = None
        if self.is_timm:
            self.enc = _timm_wrapper(transformers, cfg.hf_config)
            isotropic = _timm_is_isotropic(self._timm_model)
            params = inspect.signature(self._timm_model.forward_intermediates).parameters
            self._timm_kwargs = {"stop_early": True} if "stop_early" in params else {}
        else:
            hf_config = transformers.AutoConfig.for_model(**cfg.hf_config)
            isotropic = _is_isotropic(hf_config)
        mode = cfg.mode
        if mode == "auto":
            mode = "decoder" if (not isotropic or spatial_heads) else "encoder"
        self.mode = mode
        self.normalize = cfg.normalize
        self.in_channels = cfg.in_channels
        self.register_buffer("image_mean", torch.zeros(1, 3, 1, 1))  # from the checkpoint
        self.register_buffer("image_std", torch.ones(1, 3, 1, 1))
        self.stride_to_filters: dict[int, int] = {}
        self.dec: _Decoder | None = None
        self.stem: DetailStem | None = None
        # sleap-nn reads a plain ViT through its hidden states (Case C); so too an
        # encoder-only one that has no ``*Backbone`` class, and every timm ViT.
        self.token_path = isotropic and (
            mode == "decoder" or self.is_timm or not _has_backbone_class(hf_config)
        )
        if self.token_path:
            self._build_token_path(cfg, transformers, hf_config)
            return
        if self.is_timm:
            info = self._timm_model.feature_info
            self._timm_indices = list(cfg.out_indices or range(len(info)))
        else:
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
            self.enc = transformers.AutoBackbone.from_config(hf_config)
        strides, channels = self._probe(cfg.in_channels)
        if mode == "encoder":
            self.max_stride = strides[-1]
        else:
            self._build_decoder(cfg, strides, channels)
        self.middle_blocks = nn.ModuleList([_FiltersHolder(channels[-1])])
        self.middle_filters = channels[-1]

    def _build_token_path(self, cfg: PretrainedConfig, transformers: Any, hf_config: Any) -> None:
        """Case C (and a pooled plain ViT): the encoder, its layer taps, the neck."""
        vision_config: Any = None
        if self.is_timm:
            timm_model: Any = self._timm_model
            hidden = int(getattr(timm_model, "embed_dim", None) or timm_model.num_features)
            num_layers = len(timm_model.blocks)
            self._identity_noise = False
        else:
            vision_config = getattr(hf_config, "vision_config", None) or hf_config
            model_type = getattr(vision_config, "model_type", "") or ""
            if model_type == "vit_mae":
                vision_config.mask_ratio = 0.0  # MAE's random masking would drop tokens
            self._identity_noise = model_type == "vit_mae"
            hidden = int(vision_config.hidden_size)
            num_layers = int(vision_config.num_hidden_layers)
            self.enc = transformers.AutoModel.from_config(vision_config)
        self.patch_size = _patch_size(self._timm_model if self.is_timm else None, vision_config)
        token_stride = int(cfg.token_stride or 2 ** round(math.log2(self.patch_size)))
        if token_stride < 4 or token_stride & (token_stride - 1):
            raise ConfigError(
                f"pretrained.token_stride must be a power of two >= 4, got {token_stride}"
            )
        self.token_stride = token_stride
        scales = [sc for sc in PYRAMID_SCALES if token_stride / sc >= cfg.output_stride]
        self.layers = self._taps(cfg, num_layers, len(scales))
        if self.is_timm:
            self._call_kwargs: dict[str, Any] = {}
        else:
            params = inspect.signature(self.enc.forward).parameters
            self._call_kwargs = {"output_hidden_states": True}
            if "interpolate_pos_encoding" in params:
                self._call_kwargs["interpolate_pos_encoding"] = True
        self.tap_norms = nn.ModuleList([nn.LayerNorm(hidden, eps=1e-6) for _ in self.layers])
        if self.mode == "encoder":
            self.max_stride = token_stride
            self.middle_blocks = nn.ModuleList([_FiltersHolder(hidden)])
            self.middle_filters = hidden
            return
        self._build_neck(cfg, hidden, scales)

    def _build_neck(self, cfg: PretrainedConfig, hidden: int, scales: list[float]) -> None:
        """Case C: the pyramid neck (and detail stem) over the token maps, then the decoder."""
        name, token_stride = cfg.model_name, self.token_stride
        if len(scales) < 2:
            raise ConfigError(
                f"pretrained.output_stride {cfg.output_stride} is too coarse for {name!r}: its "
                f"pyramid levels are strides {token_stride // 4}..{2 * token_stride}; use "
                f"output_stride <= {token_stride}"
            )
        if cfg.vit_neck == "dpt" and len(self.layers) != len(scales):
            raise ConfigError(
                f"pretrained.layers: the dpt neck taps one layer per pyramid level, so it "
                f"needs {len(scales)} layers, got {len(self.layers)}"
            )
        neck_channels = list(
            cfg.neck_channels
            or [max(hidden // 8, 16), max(hidden // 4, 16), max(hidden // 2, 16), hidden]
        )
        if len(neck_channels) == len(PYRAMID_SCALES):
            neck_channels = neck_channels[len(PYRAMID_SCALES) - len(scales) :]
        if len(neck_channels) != len(scales):
            raise ConfigError(
                f"pretrained.neck_channels needs {len(scales)} counts (one per level), got "
                f"{neck_channels}"
            )
        self.neck = ViTPyramidNeck(hidden, neck_channels, scales, cfg.vit_neck)
        strides = [int(token_stride / sc) for sc in scales]
        self._neck_strides = strides
        if cfg.max_stride % strides[-1]:
            raise ConfigError(
                f"pretrained.max_stride {cfg.max_stride} must be a multiple of {strides[-1]} "
                f"(twice the token stride {token_stride})"
            )
        by_stride = dict(zip(strides, neck_channels))
        self._stem_strides = [st for st in DETAIL_STRIDES if st >= cfg.output_stride]
        if cfg.detail_stem and self._stem_strides:  # sleap-nn drops a stem it cannot use
            if len(cfg.detail_channels) != len(DETAIL_STRIDES):
                raise ConfigError(
                    "pretrained.detail_channels must give 3 channel counts (strides 2, 4, 8), "
                    f"got {list(cfg.detail_channels)}"
                )
            self.stem = DetailStem(cfg.in_channels, cfg.detail_channels)
            for st, c in zip(DETAIL_STRIDES, cfg.detail_channels):
                if st in self._stem_strides:
                    by_stride[st] = by_stride.get(st, 0) + c
        strides = sorted(by_stride)
        self._build_decoder(cfg, strides, [by_stride[st] for st in strides])
        self.middle_blocks = nn.ModuleList([_FiltersHolder(by_stride[strides[-1]])])
        self.middle_filters = by_stride[strides[-1]]

    def _taps(self, cfg: PretrainedConfig, num_layers: int, levels: int) -> list[int]:
        """sleap-nn's 1-indexed layer taps: given, or evenly spaced up to the last layer
        (one per neck level for ``dpt``, the last alone for ``sfp`` and pooled heads)."""
        layers = cfg.layers
        if layers is None:
            taps = max(levels, 1) if self.mode == "decoder" and cfg.vit_neck == "dpt" else 1
            layers = tuple(max(1, round(num_layers * (i + 1) / taps)) for i in range(taps))
        elif len(layers) != 1 and (self.mode == "encoder" or cfg.vit_neck == "sfp"):
            raise ConfigError(
                f"pretrained.layers {list(layers)}: {self.mode} mode with vit_neck "
                f"{cfg.vit_neck} reads exactly one tapped layer"
            )
        resolved = []
        for layer in layers:
            index = layer if layer > 0 else num_layers + 1 + layer
            if not 1 <= index <= num_layers:
                raise ConfigError(
                    f"pretrained.layers tap {layer} is out of range for {cfg.model_name!r}, "
                    f"which has {num_layers} transformer layers"
                )
            resolved.append(index)
        return sorted(resolved)

    def describe(self, cfg: PretrainedConfig) -> list[str]:
        """What ``infer info`` says about the encoder beyond its name: the timm
        architecture, and a plain ViT's taps, neck and token grid."""
        steps = []
        if self.is_timm:
            steps.append(
                f"timm architecture {cfg.hf_config.get('architecture')} through transformers' "
                "TimmWrapperModel (built offline, weights from the checkpoint)"
            )
        if self.token_path:
            read = "pooled" if self.dec is None else f"through the {cfg.vit_neck} pyramid neck"
            grid = f"token stride {self.token_stride}"
            if self.token_stride != self.patch_size:
                grid += f" (input resampled for patch size {self.patch_size})"
            steps.append(f"plain ViT: layers {self.layers} {read}, {grid}")
            if self.stem is not None:
                steps.append(f"detail stem at strides {self._stem_strides} joins the pyramid")
        return steps

    @property
    def _timm_model(self) -> Any:
        """timm's own model inside transformers' ``TimmWrapperModel``."""
        enc: Any = self.enc
        return enc.timm_model

    def _timm_intermediates(self, x: torch.Tensor, indices: list[int]) -> list[torch.Tensor]:
        return list(
            self._timm_model.forward_intermediates(
                x, indices=indices, output_fmt="NCHW", intermediates_only=True, **self._timm_kwargs
            )
        )

    def _stage_maps(self, x: torch.Tensor) -> list[torch.Tensor]:
        if self.is_timm:
            return self._timm_intermediates(x, self._timm_indices)
        return list(self.enc(x).feature_maps)

    def _tap_tokens(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The tapped layers as NCHW maps at stride ``token_stride``: the input is
        resampled so its token grid is ``H / token_stride`` by ``W / token_stride``."""
        b, _, h, w = x.shape
        gh, gw = h // self.token_stride, w // self.token_stride
        size = (gh * self.patch_size, gw * self.patch_size)
        if (h, w) != size:
            x = nn.functional.interpolate(x, size=size, mode="bilinear", align_corners=False)
        if self.is_timm:  # timm strips prefix tokens and returns NCHW grids itself
            unique = sorted(set(self.layers))
            by_layer = dict(zip(unique, self._timm_intermediates(x, [i - 1 for i in unique])))
            return [
                norm(by_layer[layer].permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
                for norm, layer in zip(self.tap_norms, self.layers)
            ]
        kwargs = dict(self._call_kwargs)
        if self._identity_noise:  # MAE shuffles tokens by argsort(noise): keep the order
            noise = torch.arange(gh * gw, device=x.device, dtype=x.dtype)
            kwargs["noise"] = noise.unsqueeze(0).expand(b, -1)
        hidden_states = self.enc(pixel_values=x, **kwargs).hidden_states
        maps = []
        for norm, layer in zip(self.tap_norms, self.layers):
            tokens = hidden_states[layer]
            if tokens.dim() == 4:  # (B, h, w, C) grids, e.g. SAM's ViT
                tokens = tokens.flatten(1, 2)
            tokens = norm(tokens[:, tokens.shape[1] - gh * gw :, :])  # prefix tokens lead
            maps.append(tokens.transpose(1, 2).reshape(b, -1, gh, gw))
        return maps

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

    def _pyramid(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Case C: the neck's levels, with the detail stem's maps concatenated in."""
        maps = self.neck(self._tap_tokens(x))
        if self.stem is None:
            return maps
        by_stride = {st: [m] for st, m in zip(self._neck_strides, maps)}
        for st, d in zip(DETAIL_STRIDES, self.stem(x)):
            if st in self._stem_strides:
                by_stride.setdefault(st, []).append(d)
        return [torch.cat(by_stride[st], dim=1) for st in sorted(by_stride)]

    def forward(self, x: torch.Tensor) -> BackboneOutput:
        if self.normalize:
            x = (x - self.image_mean) / self.image_std
        if self.token_path and self.dec is not None:
            pyramid = self._pyramid(x)
        else:
            feats = self._tap_tokens(x) if self.token_path else self._stage_maps(x)
            if self.dec is None:
                return BackboneOutput(middle=feats[-1], levels=[], strides=[])
            by_height = {f.shape[-2]: f for f in feats}  # the deepest map of each stride
            pyramid = [by_height[h] for h in sorted(by_height, reverse=True)]
        skips = itertools.chain(pyramid[:-1][::-1], itertools.repeat(None))
        return run_decoder(pyramid[-1], self.dec.decoder_stack, skips, self.max_stride)
