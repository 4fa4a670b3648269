"""Parse a sleap-nn ``training_config.yaml`` into a typed :class:`ModelConfig`, once.

Only the fields inference needs are read; the whole dict is kept in ``raw``
for provenance. Missing keys take sleap-nn's defaults, because generated
configs often omit them. Which heads a model type has comes from its entry in
:mod:`sleap_infer.model.registry`, so this parser has no per-type branches.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from sleap_infer.core.config import (
    BoxDetector,
    EmbeddingSettings,
    HeadConfig,
    ModelConfig,
    Preprocessing,
    PretrainedConfig,
    Tiling,
)
from sleap_infer.core.errors import ConfigError
from sleap_infer.core.files import CONFIG_MAX_BYTES, read_text_bounded
from sleap_infer.model.backbones import first_non_null, get, parse_backbone
from sleap_infer.model.config_values import check_config_values
from sleap_infer.model.registry import (
    CLASSES,
    EMBEDDING_DIM,
    MODEL_TYPES,
    NODES,
    ONE,
    PAF_COMPONENTS,
    TWO,
    HeadSpec,
    model_type,
    tileable_types,
)
from sleap_infer.model.schema import check_keys


@dataclass(frozen=True)
class _Skeleton:
    name: str
    nodes: tuple[str, ...]
    edges: tuple[tuple[int, int], ...]
    symmetries: tuple[tuple[int, int], ...]

    def index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.nodes)}


def _sections(raw: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``data_config``, ``model_config.head_configs`` and ``.backbone_config``."""
    try:
        model = raw["model_config"]
        return raw["data_config"], model["head_configs"], model["backbone_config"]
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"missing section {exc}") from exc


def _parse_preprocessing(raw: dict[str, Any]) -> Preprocessing:
    scale = get(raw, "scale", 1.0)
    if isinstance(scale, (list, tuple)):
        scale = scale[0]
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
        tiling=_parse_tiling(raw.get("tiling")),
    )


_BLENDS = ("gaussian", "pyramid", "constant")


def _parse_tiling(raw: Any) -> Tiling | None:
    """The tiling block when it is switched on, else None (sleap-nn tiles only then)."""
    if not isinstance(raw, dict) or not raw.get("enabled"):
        return None
    size = raw.get("tile_size")
    if size is None or int(size) < 1:
        raise ConfigError("preprocessing.tiling is enabled but tile_size is not set")
    blend = str(raw.get("blend") or "gaussian")
    if blend not in _BLENDS:
        raise ConfigError(
            f"preprocessing.tiling.blend {blend!r} is not one of {', '.join(_BLENDS)}"
        )
    return Tiling(
        tile_size=int(size),
        overlap=int(raw.get("overlap") or 0),
        min_overlap_fraction=float(get(raw, "min_overlap_fraction", 0.25)),
        blend=blend,
        sigma_scale=float(get(raw, "sigma_scale", 0.125)),
        tile_batch_size=int(get(raw, "tile_batch_size", 8)),
    )


def _parse_skeleton(skeletons: Any, optional: bool = False) -> _Skeleton:
    if not skeletons and optional:  # box detectors can be trained on boxes alone
        return _Skeleton("Skeleton-0", (), (), ())
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
    return _Skeleton(str(sk.get("name") or "Skeleton-0"), names, edges, symmetries)


def _paf_edges(
    specs: tuple[HeadSpec, ...], head_raw: dict[str, Any], skeleton: _Skeleton
) -> tuple[tuple[int, int], ...]:
    """Edges of the PAF head: its own ``edges`` list, else the skeleton's."""
    spec = next((s for s in specs if s.channels == PAF_COMPONENTS), None)
    if spec is None:
        return ()
    raw_edges = (head_raw.get(spec.section) or {}).get("edges")
    if not raw_edges:
        return skeleton.edges
    index = skeleton.index()
    try:
        return tuple((index[a], index[b]) for a, b in raw_edges)
    except KeyError as exc:
        raise ConfigError(f"PAF edge names unknown node {exc}") from exc


def _class_names(specs: tuple[HeadSpec, ...], head_raw: dict[str, Any]) -> tuple[str, ...]:
    spec = next((s for s in specs if s.channels == CLASSES), None)
    if spec is None:
        return ()
    names = tuple((head_raw.get(spec.section) or {}).get("classes") or ())
    if not names:
        raise ConfigError("multi-class model lists no classes")
    return names


DEFAULT_CATEGORY = "object"


def _categories(specs: tuple[HeadSpec, ...], head_raw: dict[str, Any]) -> tuple[str, ...]:
    """Box classes from the per-category head's block; sleap-nn's ``["object"]`` when unset."""
    spec = next((s for s in specs if s.per_category), None)
    if spec is None:
        return ()
    names = (head_raw.get(spec.section) or {}).get("categories")
    return tuple(str(n) for n in names) if names else (DEFAULT_CATEGORY,)


def _level_strides(spec: HeadSpec, sub: dict[str, Any]) -> tuple[int, ...]:
    if not spec.multiscale:
        return ()
    first = int(get(sub, "output_stride", spec.stride))
    return tuple(first * 2**i for i in range(int(get(sub, "num_levels", 3))))


def _floats(sub: dict[str, Any], key: str, default: tuple[float, ...]) -> tuple[float, ...]:
    value = sub.get(key)
    return default if value is None else tuple(float(v) for v in value)


def _box_detector(
    name: str, heads: tuple[HeadConfig, ...], head_raw: dict[str, Any]
) -> BoxDetector:
    """CenterNet reads one grid; SSD also needs its anchors' numbers (written at training)."""
    first = heads[0]
    if not first.strides:
        return BoxDetector("centernet", first.output_stride)
    sub = head_raw.get(first.section) or {}
    sizes = sub.get("anchor_sizes")
    if not sizes or len(sizes) != len(first.strides):
        raise ConfigError(
            f"{name}.{first.section}.anchor_sizes must give one size per pyramid level "
            f"({len(first.strides)}), got {sizes!r}"
        )
    base = BoxDetector("ssd", first.output_stride)
    return BoxDetector(
        "ssd",
        first.output_stride,
        strides=first.strides,
        anchor_sizes=tuple(float(s) for s in sizes),
        anchor_scales=_floats(sub, "anchor_scales", base.anchor_scales),
        aspect_ratios=_floats(sub, "aspect_ratios", base.aspect_ratios),
        box_variances=_floats(sub, "box_variances", base.box_variances),
        head_channels=int(get(sub, "head_channels", base.head_channels)),
        head_convs=int(get(sub, "head_convs", base.head_convs)),
    )


_POOLS = ("gem", "avg", "max")


def _embedding_head(spec: HeadSpec, sub: dict[str, Any], frozen_encoder: bool) -> HeadConfig:
    """sleap-nn's defaults; an unset ``pool`` is GeM, or ``avg`` for a frozen pretrained
    encoder (``pretrained.freeze`` or the head's ``freeze_backbone``), as sleap-nn resolves it."""
    pool = str(sub.get("pool") or ("avg" if frozen_encoder else "gem"))
    if pool not in _POOLS:
        raise ConfigError(f"embedding.pool {pool!r} is not one of {', '.join(_POOLS)}")
    return HeadConfig(
        spec.name,
        int(get(sub, "embedding_dim", 128)),
        int(get(sub, "output_stride", spec.stride)),
        section=spec.section,
        vector=True,
        num_fc_layers=int(get(sub, "num_fc_layers", 1)),
        num_fc_units=int(get(sub, "num_fc_units", 256)),
        pool=pool,
        normalize=bool(get(sub, "normalize", True)),
    )


_DETECTION_MODES = ("mask", "pose")
_CENTERINGS = ("auto", "mask_com", "bbox")
_FILLS = ("black", "grey", "mean", "noise")
_CENTROID_METHODS = ("center_of_mass", "bbox_center", "anchor")


def _choice(value: Any, default: str, allowed: tuple[str, ...], key: str) -> str:
    out = default if value is None else str(value)
    if out not in allowed:
        raise ConfigError(f"{key} {out!r} is not one of {', '.join(allowed)}")
    return out


def _embedding_settings(
    sub: dict[str, Any], pre: dict[str, Any], anchor: str | None
) -> EmbeddingSettings:
    """The crop recipe. ``geometric_median`` centroids are refused (not implemented here)."""
    method = sub.get("centroid_method") or ("anchor" if anchor is not None else None)
    return EmbeddingSettings(
        detection_mode=_choice(
            sub.get("detection_mode"), "mask", _DETECTION_MODES, "detection_mode"
        ),
        crop_centering=_choice(pre.get("crop_centering"), "auto", _CENTERINGS, "crop_centering"),
        burn_in=bool(pre.get("burn_in") or False),
        background_fill=_choice(pre.get("background_fill"), "black", _FILLS, "background_fill"),
        centroid_method=_choice(method, "center_of_mass", _CENTROID_METHODS, "centroid_method"),
        centroid_fallback=_choice(
            sub.get("centroid_fallback"),
            "center_of_mass",
            _CENTROID_METHODS[:2],
            "centroid_fallback",
        ),
    )


def _activation(spec: HeadSpec, sub: dict[str, Any]) -> str:
    """The head's output activation: its type's, or a sigmoid the block asks for.

    ``use_sigmoid_activation: true`` (sleap-nn 0.3.5, centroid heads trained with focal
    loss) puts ``nn.Sigmoid`` after the 1x1 conv; without it the maps would be logits,
    and peak thresholds and refinement would read the wrong numbers.
    """
    if spec.sigmoid_option and bool(sub.get("use_sigmoid_activation") or False):
        return "sigmoid"
    return spec.activation


def _head(
    spec: HeadSpec, sub: dict[str, Any], channels: int, frozen_encoder: bool = False
) -> HeadConfig:
    if spec.channels == EMBEDDING_DIM:
        return _embedding_head(spec, sub, frozen_encoder)
    vector: dict[str, Any] = {}
    if spec.vector:
        vector = {
            "num_fc_layers": int(get(sub, "num_fc_layers", 1)),
            "num_fc_units": int(get(sub, "num_fc_units", 64)),
            "global_pool": bool(sub.get("global_pool", True)),
        }
    return HeadConfig(
        spec.name,
        channels,
        int(get(sub, "output_stride", spec.stride)),
        section=spec.section,
        activation=_activation(spec, sub),
        vector=spec.vector,
        strides=_level_strides(spec, sub),
        **vector,
    )


def _frozen_encoder(backbone: Any, sub: dict[str, Any]) -> bool:
    """A pretrained encoder frozen in training (only those change an unset embedding pool)."""
    if not isinstance(backbone, PretrainedConfig):
        return False
    return backbone.frozen or bool(sub.get("freeze_backbone") or False)


def _anchor(anchor: str | None, nodes: tuple[str, ...], parts: tuple[str, ...]) -> str | None:
    if anchor is None or anchor in nodes:
        return anchor
    # sleap-nn tolerates an anchor named after head part_names that differ from the
    # skeleton (see the multiclass asset); map by position when possible.
    if anchor in parts:
        return nodes[parts.index(anchor)]
    raise ConfigError(f"anchor_part {anchor!r} is not a skeleton node")


def _parse(raw: dict[str, Any], folder: Path) -> ModelConfig:
    data, head_configs, backbone_configs = _sections(raw)
    entry = model_type(first_non_null(head_configs, "model_config.head_configs"))
    backbone = parse_backbone(backbone_configs, folder)
    skeleton = _parse_skeleton(data.get("skeletons"), optional=entry.boxes or entry.embeds)
    head_raw = head_configs[entry.name] or {}
    confmaps = head_raw.get("confmaps") or {}
    if entry.embeds:
        if not isinstance(head_raw.get("embedding"), dict):
            raise ConfigError("head_configs.embedding has no 'embedding' block")
        confmaps = head_raw["embedding"]  # its anchor_part is the pose carrier's anchor
    parts = tuple(confmaps.get("part_names") or skeleton.nodes)
    per_node = any(s.channels == NODES for s in entry.heads)
    if per_node and len(parts) != len(skeleton.nodes):
        raise ConfigError(
            f"head has {len(parts)} parts but skeleton has {len(skeleton.nodes)} nodes"
        )
    paf_edges = _paf_edges(entry.heads, head_raw, skeleton)
    class_names = _class_names(entry.heads, head_raw)
    categories = _categories(entry.heads, head_raw)
    counts = {
        NODES: len(skeleton.nodes),
        ONE: 1,
        PAF_COMPONENTS: 2 * len(paf_edges),
        CLASSES: len(class_names),
        TWO: 2,
        EMBEDDING_DIM: 0,  # read from the block itself (_embedding_head)
    }
    heads = tuple(
        _head(
            s,
            head_raw.get(s.section) or {},
            counts[s.channels] * (len(categories) if s.per_category else 1),
            _frozen_encoder(backbone, head_raw.get(s.section) or {}),
        )
        for s in entry.heads
    )
    total = raw["model_config"].get("total_params")
    preprocessing = _parse_preprocessing(data.get("preprocessing") or {})
    if preprocessing.tiling is not None and not entry.tileable:
        raise ConfigError(
            f"preprocessing.tiling is enabled, but {entry.name} models cannot be tiled "
            f"(sleap-nn tiles {', '.join(tileable_types())})"
        )
    anchor = _anchor(confmaps.get("anchor_part"), skeleton.nodes, parts)
    embedding = None
    if entry.embeds:
        embedding = _embedding_settings(confmaps, data.get("preprocessing") or {}, anchor)
    return ModelConfig(
        model_type=entry.name,
        backbone=backbone,
        heads=heads,
        preprocessing=preprocessing,
        node_names=skeleton.nodes,
        edges=skeleton.edges,
        skeleton_name=skeleton.name,
        symmetries=skeleton.symmetries,
        part_names=parts,
        anchor_part=anchor,
        paf_edges=paf_edges,
        class_names=class_names,
        categories=categories,
        boxes=_box_detector(entry.name, heads, head_raw) if entry.boxes else None,
        embedding=embedding,
        total_params=None if total is None else int(total),
        raw=raw,
    )


def parse_config(
    raw: dict[str, Any], source: str = "training_config.yaml", audit: bool = True
) -> ModelConfig:
    """Build a :class:`ModelConfig` from a parsed YAML dict; every error names ``source``.

    Every key is checked against sleap-nn 0.3.5's schema first (:mod:`.schema`): one that
    would change predictions in a way not reproduced here is refused by name, and an
    unknown one is warned about, not dropped silently. ``audit=False`` for configs we
    translated ourselves (SLEAP 1.x: :mod:`sleap_infer.model.legacy` judges their keys).
    """
    try:
        if audit:
            check_keys(raw, source, frozenset(MODEL_TYPES))
        check_config_values(raw)
        return _parse(raw, Path(source).parent)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from exc


# libyaml's safe loader when PyYAML was built with it: the same mapping, 6x faster (a
# sleap-nn config took 8.7 ms in pure Python, 1.5 ms in C; a run reads each one twice).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_config(path: Path) -> ModelConfig:
    """Read and parse ``training_config.yaml``; every failure names the file."""
    text = read_text_bounded(path, CONFIG_MAX_BYTES, ConfigError)
    try:
        raw = yaml.load(text, Loader=_YAML_LOADER)  # a safe loader, C or Python
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        raise ConfigError(f"{path}: not valid YAML ({first})") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return parse_config(raw, source=str(path))
