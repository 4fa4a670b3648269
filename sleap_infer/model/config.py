"""Typed view of a sleap-nn ``training_config.yaml``.

Only the fields inference needs are parsed; everything else is kept in
``raw`` for provenance. Missing keys take sleap-nn's defaults, because
generated configs often omit them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sleap_infer.errors import ConfigError
from sleap_infer.model.backbone_configs import parse_convnext, parse_swint

MODEL_TYPES = (
    "single_instance",
    "centroid",
    "centered_instance",
    "bottomup",
    "multi_class_bottomup",
    "multi_class_topdown",
)
"""Head types we run, in the order sleap-nn lists them in ``head_configs``."""

UNSUPPORTED_MODEL_TYPES = (
    "bottomup_segmentation",
    "centered_instance_segmentation",
    "semantic_segmentation",
)

BACKBONE_TYPES = ("unet", "convnext", "swint")


@dataclass(frozen=True)
class Preprocessing:
    """How raw frames are turned into network input (``data_config.preprocessing``)."""

    ensure_rgb: bool = False
    ensure_grayscale: bool = False
    max_height: int | None = None
    max_width: int | None = None
    scale: float = 1.0
    crop_size: int | None = None


@dataclass(frozen=True)
class HeadConfig:
    """One output head: its sleap-nn class name (the key of its output), width and stride."""

    name: str
    channels: int
    output_stride: int
    # Class-vector heads only.
    num_fc_layers: int = 0
    num_fc_units: int = 0
    global_pool: bool = True

    @property
    def is_spatial(self) -> bool:
        return self.name != "ClassVectorsHead"


@dataclass(frozen=True)
class UNetConfig:
    """``backbone_config.unet`` with sleap-nn's defaults."""

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
class ModelConfig:
    """Everything inference needs to know about one trained model directory."""

    model_type: str
    backbone_type: str
    backbone: dict[str, Any]
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
    total_params: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def in_channels(self) -> int:
        return int(self.backbone.get("in_channels", 1))

    @property
    def unet(self) -> UNetConfig:
        """The UNet backbone config (raises for other backbones)."""
        if self.backbone_type != "unet":
            raise ConfigError(f"backbone is {self.backbone_type}, not unet")
        return parse_unet(self.backbone)

    @property
    def max_stride(self) -> int:
        """Stride the input must be padded to: the deepest downsampling of the backbone."""
        if self.backbone_type == "unet":
            return int(self.backbone.get("max_stride", 16))
        # ConvNeXt / Swin ignore the configured max_stride: 4 stages of 2x after the stem.
        return int(self.backbone.get("stem_patch_stride", 2)) * 16

    def head(self, name: str) -> HeadConfig:
        for head in self.heads:
            if head.name == name:
                return head
        raise KeyError(name)

    @property
    def confmap_head(self) -> HeadConfig:
        """The (first) confidence-map head: the one peaks are found on."""
        return self.heads[0]

    @property
    def anchor_index(self) -> int | None:
        if self.anchor_part is None:
            return None
        return self.node_names.index(self.anchor_part)


def _get(mapping: Any, key: str, default: Any = None) -> Any:
    if not isinstance(mapping, dict):
        return default
    value = mapping.get(key, default)
    return default if value is None else value


def parse_unet(raw: dict[str, Any]) -> UNetConfig:
    """Parse and validate a UNet block, rejecting layouts sleap-nn itself cannot run."""
    defaults = UNetConfig()
    cfg = UNetConfig(
        in_channels=int(_get(raw, "in_channels", defaults.in_channels)),
        kernel_size=int(_get(raw, "kernel_size", defaults.kernel_size)),
        filters=int(_get(raw, "filters", defaults.filters)),
        filters_rate=float(_get(raw, "filters_rate", defaults.filters_rate)),
        max_stride=int(_get(raw, "max_stride", defaults.max_stride)),
        stem_stride=raw.get("stem_stride"),
        middle_block=bool(raw.get("middle_block", True)),
        up_interpolate=bool(_get(raw, "up_interpolate", defaults.up_interpolate)),
        stacks=int(_get(raw, "stacks", defaults.stacks)),
        convs_per_block=int(_get(raw, "convs_per_block", defaults.convs_per_block)),
        output_stride=int(_get(raw, "output_stride", defaults.output_stride)),
    )
    # These layouts crash or mis-wire inside sleap-nn, so no valid checkpoint exists.
    if cfg.stem_stride is not None:
        raise ConfigError("unet.stem_stride is set: sleap-nn cannot run stem-strided UNets")
    if not cfg.middle_block:
        raise ConfigError("unet.middle_block is false: sleap-nn cannot run UNets without it")
    if cfg.stacks != 1:
        raise ConfigError(f"unet.stacks is {cfg.stacks}: only single-stack UNets are supported")
    if cfg.convs_per_block < 2:
        raise ConfigError("unet.convs_per_block < 2 is not supported (sleap-nn cannot build it)")
    for name in ("max_stride", "output_stride"):
        value = getattr(cfg, name)
        if value < 1 or not math.log2(value).is_integer():
            raise ConfigError(f"unet.{name} must be a power of two, got {value}")
    if cfg.output_stride > cfg.max_stride:
        raise ConfigError(
            f"unet.output_stride {cfg.output_stride} exceeds max_stride {cfg.max_stride}"
        )
    return cfg


def _parse_preprocessing(raw: dict[str, Any]) -> Preprocessing:
    scale = _get(raw, "scale", 1.0)
    if isinstance(scale, (list, tuple)):
        scale = scale[0]
    tiling = raw.get("tiling")
    if isinstance(tiling, dict) and tiling.get("enabled"):
        raise ConfigError("tiled inference (preprocessing.tiling.enabled) is not supported")
    crop = raw.get("crop_size", raw.get("crop_hw"))
    if isinstance(crop, (list, tuple)):
        crop = crop[0]
    return Preprocessing(
        ensure_rgb=bool(raw.get("ensure_rgb") or False),
        ensure_grayscale=bool(raw.get("ensure_grayscale") or False),
        max_height=None if raw.get("max_height") is None else int(raw["max_height"]),
        max_width=None if raw.get("max_width") is None else int(raw["max_width"]),
        scale=float(scale),
        crop_size=None if crop is None else int(crop),
    )


def _parse_skeleton(
    skeletons: Any,
) -> tuple[str, tuple[str, ...], tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    if not skeletons:
        raise ConfigError("data_config.skeletons is empty: cannot name the predicted nodes")
    sk = skeletons[0]
    try:
        names = tuple(str(node["name"]) for node in sk["nodes"])
        index = {n: i for i, n in enumerate(names)}
        edges = tuple(
            (index[e["source"]["name"]], index[e["destination"]["name"]])
            for e in sk.get("edges") or []
        )
        symmetries = tuple(
            (index[a["name"]], index[b["name"]]) for a, b in sk.get("symmetries") or []
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"data_config.skeletons[0] is malformed ({exc!r})") from exc
    return str(sk.get("name") or "Skeleton-0"), names, edges, symmetries


def _first_non_null(mapping: dict[str, Any], section: str) -> str:
    for key, value in mapping.items():
        if value is not None:
            return key
    raise ConfigError(f"{section} has no non-null entry")


def parse_config(raw: dict[str, Any], source: str = "training_config.yaml") -> ModelConfig:
    """Build a :class:`ModelConfig` from a parsed YAML dict."""
    try:
        data = raw["data_config"]
        model = raw["model_config"]
        head_configs = model["head_configs"]
        backbone_configs = model["backbone_config"]
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{source}: missing section {exc}") from exc

    model_type = _first_non_null(head_configs, f"{source}: model_config.head_configs")
    if model_type in UNSUPPORTED_MODEL_TYPES:
        raise ConfigError(f"{source}: model type {model_type!r} is not supported")
    if model_type not in MODEL_TYPES:
        raise ConfigError(f"{source}: unknown model type {model_type!r}")
    backbone_type = _first_non_null(backbone_configs, f"{source}: model_config.backbone_config")
    if backbone_type not in BACKBONE_TYPES:
        raise ConfigError(
            f"{source}: backbone {backbone_type!r} is not supported "
            f"(supported: {', '.join(BACKBONE_TYPES)})"
        )
    backbone = dict(backbone_configs[backbone_type])
    # Validate early, so a bad backbone is reported with the config's path.
    try:
        if backbone_type == "unet":
            parse_unet(backbone)
        elif backbone_type == "convnext":
            parse_convnext(backbone)
        else:
            parse_swint(backbone)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from exc

    sk_name, node_names, edges, symmetries = _parse_skeleton(data.get("skeletons"))
    head_cfg = head_configs[model_type]
    confmaps = head_cfg.get("confmaps") or {}
    part_names = tuple(confmaps.get("part_names") or node_names)
    if len(part_names) != len(node_names) and model_type != "centroid":
        raise ConfigError(
            f"{source}: head has {len(part_names)} parts but skeleton has {len(node_names)} nodes"
        )

    def stride(sub: dict[str, Any]) -> int:
        return int(_get(sub, "output_stride", 1))

    heads: list[HeadConfig] = []
    paf_edges: tuple[tuple[int, int], ...] = ()
    class_names: tuple[str, ...] = ()
    anchor_part = confmaps.get("anchor_part")
    n_parts = len(node_names)
    if model_type == "single_instance":
        heads.append(HeadConfig("SingleInstanceConfmapsHead", n_parts, stride(confmaps)))
    elif model_type == "centroid":
        heads.append(HeadConfig("CentroidConfmapsHead", 1, stride(confmaps)))
    elif model_type == "centered_instance":
        heads.append(HeadConfig("CenteredInstanceConfmapsHead", n_parts, stride(confmaps)))
    elif model_type == "bottomup":
        pafs = head_cfg.get("pafs") or {}
        raw_edges = pafs.get("edges")
        if raw_edges:
            index = {n: i for i, n in enumerate(node_names)}
            try:
                paf_edges = tuple((index[a], index[b]) for a, b in raw_edges)
            except KeyError as exc:
                raise ConfigError(f"{source}: PAF edge names unknown node {exc}") from exc
        else:
            paf_edges = edges
        heads.append(HeadConfig("MultiInstanceConfmapsHead", n_parts, stride(confmaps)))
        heads.append(HeadConfig("PartAffinityFieldsHead", 2 * len(paf_edges), stride(pafs)))
    elif model_type == "multi_class_bottomup":
        class_maps = head_cfg.get("class_maps") or {}
        class_names = tuple(class_maps.get("classes") or ())
        heads.append(HeadConfig("MultiInstanceConfmapsHead", n_parts, stride(confmaps)))
        heads.append(HeadConfig("ClassMapsHead", len(class_names), stride(class_maps)))
    elif model_type == "multi_class_topdown":
        vectors = head_cfg.get("class_vectors") or {}
        class_names = tuple(vectors.get("classes") or ())
        heads.append(HeadConfig("CenteredInstanceConfmapsHead", n_parts, stride(confmaps)))
        heads.append(
            HeadConfig(
                "ClassVectorsHead",
                len(class_names),
                stride(vectors),
                num_fc_layers=int(_get(vectors, "num_fc_layers", 1)),
                num_fc_units=int(_get(vectors, "num_fc_units", 64)),
                global_pool=bool(vectors.get("global_pool", True)),
            )
        )
    if model_type.startswith("multi_class") and not class_names:
        raise ConfigError(f"{source}: multi-class model lists no classes")
    if anchor_part is not None and anchor_part not in node_names:
        # sleap-nn tolerates an anchor named after head part_names that differ from the
        # skeleton (see the multiclass asset); map by position when possible.
        if anchor_part in part_names:
            anchor_part = node_names[part_names.index(anchor_part)]
        else:
            raise ConfigError(f"{source}: anchor_part {anchor_part!r} is not a skeleton node")

    total = model.get("total_params")
    return ModelConfig(
        model_type=model_type,
        backbone_type=backbone_type,
        backbone=backbone,
        heads=tuple(heads),
        preprocessing=_parse_preprocessing(data.get("preprocessing") or {}),
        node_names=node_names,
        edges=edges,
        skeleton_name=sk_name,
        symmetries=symmetries,
        part_names=part_names,
        anchor_part=anchor_part,
        paf_edges=paf_edges,
        class_names=class_names,
        total_params=None if total is None else int(total),
        raw=raw,
    )


def load_config(path: Path) -> ModelConfig:
    """Read and parse ``training_config.yaml``; every failure names the file."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        raise ConfigError(f"{path}: not valid YAML ({first})") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return parse_config(raw, source=str(path))
