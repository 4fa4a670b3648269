"""Typed view of a trained model: what ``training_config.yaml`` says, parsed once.

These are plain frozen records, with no parsing logic (that lives in
:mod:`sleap_infer.model.config`), so every floor can share them: the
networks are built from them, layers read their preprocessing and heads,
writers name skeletons and tracks from them. Backbones are typed too, so no
code re-reads the YAML dict (and a ``max_stride: null`` in it means the
default, not a crash).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from sleap_infer.core.errors import ConfigError


@dataclass(frozen=True)
class Tiling:
    """``data_config.preprocessing.tiling``: sliding-window inference, on when ``enabled``.

    sleap-nn rounds ``tile_size`` and ``overlap`` at training and writes the
    results into the saved config, so inference reads them as they are.
    """

    tile_size: int
    overlap: int = 0
    min_overlap_fraction: float = 0.25
    blend: str = "gaussian"  # gaussian | pyramid | constant
    sigma_scale: float = 0.125
    tile_batch_size: int = 8


@dataclass(frozen=True)
class Preprocessing:
    """How raw frames are turned into network input (``data_config.preprocessing``)."""

    ensure_rgb: bool = False
    ensure_grayscale: bool = False
    max_height: int | None = None
    max_width: int | None = None
    scale: float = 1.0
    crop_size: int | None = None
    tiling: Tiling | None = None  # set only when tiling is enabled


@dataclass(frozen=True)
class HeadConfig:
    """One output head: its sleap-nn class name (the key of its output and weights),
    width, stride, and the ``head_configs`` block it came from."""

    name: str
    channels: int
    output_stride: int
    section: str = "confmaps"
    activation: str = "none"  # "sigmoid": class maps
    vector: bool = False  # one vector per image (class vectors), not a map
    # Vector heads only.
    num_fc_layers: int = 0
    num_fc_units: int = 0
    global_pool: bool = True
    # Multi-scale heads only (SSD): the feature strides read, finest first.
    strides: tuple[int, ...] = ()
    # Embedding heads only: bottleneck pooling (gem | avg | max) and the final L2 norm.
    pool: str | None = None
    normalize: bool = False

    @property
    def is_spatial(self) -> bool:
        return not self.vector


@dataclass(frozen=True)
class UNetConfig:
    """``backbone_config.unet`` with sleap-nn's defaults."""

    kind: ClassVar[str] = "unet"

    in_channels: int = 1
    kernel_size: int = 3
    filters: int = 32
    filters_rate: float = 1.5
    max_stride: int = 16
    stem_stride: int | None = None
    middle_block: bool = True
    up_interpolate: bool = True
    stacks: int = 1
    convs_per_block: int = 2
    output_stride: int = 1


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


class _WithDecoder:
    """ConvNeXt and Swin-T: input channels and max stride are their decoder's settings."""

    decoder: DecoderSettings

    @property
    def in_channels(self) -> int:
        return self.decoder.in_channels

    @property
    def max_stride(self) -> int:
        return self.decoder.max_stride


@dataclass(frozen=True)
class ConvNeXtConfig(_WithDecoder):
    kind: ClassVar[str] = "convnext"

    depths: tuple[int, ...]
    channels: tuple[int, ...]
    stem_kernel: int
    decoder: DecoderSettings


@dataclass(frozen=True)
class SwinTConfig(_WithDecoder):
    kind: ClassVar[str] = "swint"

    embed: int
    depths: tuple[int, ...]
    num_heads: tuple[int, ...]
    patch_size: tuple[int, int]
    window_size: tuple[int, int]
    decoder: DecoderSettings


@dataclass(frozen=True)
class PretrainedConfig:
    """``backbone_config.pretrained`` (sleap-nn 0.3.5): a HuggingFace ``transformers``
    encoder (or a ``timm`` one through ``transformers``) with sleap-nn's decoder (mode
    ``decoder``; a plain ViT through its pyramid neck) or alone (mode ``encoder``).

    ``hf_config`` is the encoder's HuggingFace ``config.json`` as a dict, found next to
    the model (never downloaded): training stores only ``model_name`` in the YAML. The
    normalisation statistics are buffers in the checkpoint, so only the switch is here.
    """

    kind: ClassVar[str] = "pretrained"

    model_name: str
    hf_config: dict[str, Any] = field(compare=False, hash=False, repr=False)
    hf_config_source: str = ""  # the file (or the HF cache) the config came from
    mode: str = "auto"  # auto | decoder | encoder
    out_indices: tuple[int, ...] | None = None
    in_channels: int = 3
    normalize: bool = True
    filters_rate: float = 2.0
    convs_per_block: int = 2
    kernel_size: int = 3
    up_interpolate: bool = True
    output_stride: int = 2
    max_stride: int = 32  # what inputs are padded to (sleap-nn pads to the config's value)
    frozen: bool = False  # ``freeze``: an unset embedding pool is then ``avg``
    # The plain-ViT pyramid neck (sleap-nn's Case C), read only on that path.
    layers: tuple[int, ...] | None = None  # 1-indexed taps; None: sleap-nn's defaults
    vit_neck: str = "dpt"  # dpt | sfp
    neck_channels: tuple[int, ...] | None = None
    token_stride: int | None = None  # None: the power of two nearest the patch size
    detail_stem: bool = False
    detail_channels: tuple[int, ...] = (32, 64, 128)


BackboneConfig = UNetConfig | ConvNeXtConfig | SwinTConfig | PretrainedConfig


@dataclass(frozen=True)
class EmbeddingSettings:
    """How an ``embedding`` model cuts and normalises its crops (sleap-nn 0.3.5).

    From ``data_config.preprocessing`` (``burn_in``, ``background_fill``,
    ``crop_centering``) and the head block (``detection_mode``, the pose
    carrier's centre: ``anchor_part`` / ``centroid_method`` / ``centroid_fallback``).
    The crop side is ``Preprocessing.crop_size``; the input ``scale`` is ignored
    for these crops, as sleap-nn ignores it.
    """

    detection_mode: str = "mask"  # mask | pose: the carrier tried first
    crop_centering: str = "auto"  # auto | mask_com | bbox (mask carrier)
    burn_in: bool = False  # mask the crop and standardise its foreground only
    background_fill: str = "black"  # black | grey | mean | noise (burn_in only)
    centroid_method: str = "center_of_mass"  # center_of_mass | bbox_center | anchor
    centroid_fallback: str = "center_of_mass"  # for a missing anchor node


@dataclass(frozen=True)
class BoxDetector:
    """What decoding a box detector needs (``head_configs.bbox_centernet`` / ``bbox_ssd``).

    ``style`` is ``"centernet"`` or ``"ssd"``. SSD anchors are not in the checkpoint:
    they are rebuilt from these numbers for every padded input size, so the
    ``anchor_sizes`` training wrote into the YAML are required.
    """

    style: str
    output_stride: int  # CenterNet grid stride; SSD finest level stride
    strides: tuple[int, ...] = ()  # SSD pyramid levels, finest first
    anchor_sizes: tuple[float, ...] = ()  # SSD: one base size per level, input pixels
    anchor_scales: tuple[float, ...] = (1.0, 1.26, 1.587)
    aspect_ratios: tuple[float, ...] = (0.5, 1.0, 2.0)  # h / w
    box_variances: tuple[float, ...] = (0.1, 0.1, 0.2, 0.2)
    head_channels: int = 128
    head_convs: int = 1

    @property
    def anchors_per_location(self) -> int:
        return len(self.anchor_scales) * len(self.aspect_ratios)


@dataclass(frozen=True)
class ModelConfig:
    """Everything inference needs to know about one trained model directory."""

    model_type: str
    backbone: BackboneConfig
    heads: tuple[HeadConfig, ...]
    preprocessing: Preprocessing
    node_names: tuple[str, ...]
    edges: tuple[tuple[int, int], ...]
    skeleton_name: str = "Skeleton-0"
    symmetries: tuple[tuple[int, int], ...] = ()
    part_names: tuple[str, ...] = ()
    anchor_part: str | None = None
    paf_edges: tuple[tuple[int, int], ...] = ()
    class_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()  # box detectors: class names of the boxes
    boxes: BoxDetector | None = None  # box detectors only
    embedding: EmbeddingSettings | None = None  # embedding models only
    total_params: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def backbone_type(self) -> str:
        return self.backbone.kind

    @property
    def in_channels(self) -> int:
        return self.backbone.in_channels

    @property
    def max_stride(self) -> int:
        """Stride the input must be padded to: the deepest downsampling of the backbone."""
        return self.backbone.max_stride

    def head(self, name: str) -> HeadConfig:
        for head in self.heads:
            if head.name == name:
                return head
        raise KeyError(name)

    def head_for(self, section: str) -> HeadConfig:
        """The head configured under ``head_configs.<model type>.<section>``."""
        for head in self.heads:
            if head.section == section:
                return head
        raise ConfigError(f"{self.model_type} model has no {section} head")

    @property
    def confmap_head(self) -> HeadConfig:
        """The confidence-map head: the one peaks are found on."""
        return self.head_for("confmaps")

    @property
    def anchor_index(self) -> int | None:
        if self.anchor_part is None:
            return None
        return self.node_names.index(self.anchor_part)
