"""One registry of model types: adding a type is one entry here plus its layer.

An entry says everything the floors above need to know about a model type:
which ``head_configs`` blocks it has and what each head outputs (the config
parser builds the heads from this, the networks their output layers), which
layer runs it on a backend that returns raw maps, which layer runs it on an
exported graph that decodes in-graph, which wrapper traces that graph, and
what of the decoding runs in the graph versus on the host (written into every
export's metadata).

Classes are named as ``"module:Class"`` and imported on first use, by the
floor that owns them (:func:`sleap_infer.layers.registry.layer_class`,
:func:`sleap_infer.export.wrappers.wrapper_for`): the registry sits below
layers and export, so it may name them but never imports them.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sleap_infer.core.errors import ConfigError

# What a head's channels count (HeadSpec.channels).
NODES = "nodes"  # one per skeleton node
ONE = "one"  # a single map (centroids)
PAF_COMPONENTS = "paf_components"  # x and y per PAF edge
CLASSES = "classes"  # one per identity class
TWO = "two"  # a (dx, dy) vector field (center offsets)
EMBEDDING_DIM = "embedding_dim"  # the head block's ``embedding_dim`` (appearance vectors)

_LAYERS = "sleap_infer.layers"
_WRAPPERS = "sleap_infer.export.wrappers"


@dataclass(frozen=True)
class HeadSpec:
    """One output head of a model type."""

    name: str  # sleap-nn's head class: the key of its output and of its weights
    section: str  # its block under ``head_configs.<model type>``
    channels: str = NODES
    activation: str = "none"  # "sigmoid": class maps are probabilities
    vector: bool = False  # pooled to one vector per image (class vectors)
    # Box detectors: ``channels`` counts per category (one center map per category; SSD:
    # one foreground logit per category, its background logit and 4 deltas implied).
    per_category: bool = False
    multiscale: bool = False  # reads several feature strides (SSD pyramid levels)
    stride: int = 1  # sleap-nn's default output_stride when the block omits it
    # The block may set ``use_sigmoid_activation`` (sleap-nn 0.3.5: centroid heads trained
    # with focal loss put a sigmoid after the 1x1 conv, so the maps are probabilities).
    sigmoid_option: bool = False


@dataclass(frozen=True)
class PairSpec:
    """Top-down: a detector model (centroids) finds the animals, this type poses each crop."""

    name: str  # the combined pipeline's type, e.g. "topdown"
    layer: str  # "module:Class" of the layer running both stages
    detector: str = "centroid"  # the model type that finds the animals


@dataclass(frozen=True)
class ModelType:
    """Everything the floors above need to run, export and describe one model type."""

    name: str
    heads: tuple[HeadSpec, ...]
    layer: str  # "module:Class": decodes raw maps on the host (torch backend)
    exported_layer: str | None = None  # the same model type on a graph that decodes in-graph
    wrapper: str | None = None  # the export wrapper that traces that graph
    in_graph: tuple[str, ...] = ()  # decoding steps inside the exported graph
    on_host: tuple[str, ...] = ()  # type-specific steps the host runs around the graph
    pair: PairSpec | None = None  # set for top-down stage-2 types: they need a centroid model
    tileable: bool = False  # runs tiled when its config enables preprocessing.tiling
    raw_export: bool = False  # its exported graph returns the raw maps: ``layer`` decodes them
    masks: bool = False  # predicts segmentation masks, not keypoint instances
    boxes: bool = False  # predicts bounding boxes, not keypoint instances
    # Turns crops of given detections into appearance vectors (re-ID). Runs alone on the
    # detections of a labels file, or after a centroid model (``pair``) on a video.
    embeds: bool = False

    @property
    def needs_centroids(self) -> bool:
        return self.pair is not None


def load_class(path: str) -> Any:
    """Import ``"package.module:Class"`` (called by the floor that owns the class)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def named_class(model_type: str, role: str) -> tuple[Any | None, list[str]]:
    """The class an entry names for ``role`` (``layer``, ``exported_layer``, ``wrapper``),
    or None; plus the types that name one, for the error message when it is None."""
    having = sorted(t.name for t in MODEL_TYPES.values() if getattr(t, role))
    entry = MODEL_TYPES.get(model_type)
    path = None if entry is None else getattr(entry, role)
    return (None if path is None else load_class(path)), having


def tileable_types() -> tuple[str, ...]:
    return tuple(t.name for t in MODEL_TYPES.values() if t.tileable)


# ----------------------------------------------------------------- descriptions
_NETWORK = ("uint8 -> float32 / 255", "network")
_REFINE = "integral refinement (fixed-size patch gather)"
_LOCAL_PEAKS = (
    "local peaks (strict 8-neighbour maxima, top-K, raster order; "
    "value of the first maximum that did not fit)"
)
_GLOBAL_PEAKS = "global peaks (argmax of column / row maxima)"
_SCALE = "coordinates x output_stride / input_scale"
_CROP_HOST = (
    "crops of crop_size around each centroid, cut from the size-matched frame",
    "crop keypoints + the box's float top-left",
)

_SEGMENTATION_NETWORK = (*_NETWORK, "sigmoid of the foreground logits")
_MASK_HOST = (
    "masks packed at output stride (cut to the frame), or upsampled to full resolution",
    "run-length encoding (sleap-io's)",
)

# ------------------------------------------------------------------------ heads
_FOREGROUND = HeadSpec("SegmentationHead", "segmentation", channels=ONE, activation="sigmoid")
_BOX_HOST = (
    "corners / input scale / size-matcher scale, clipped to the original frame",
    "slots left without area dropped (score order kept)",
)

_CONFMAPS_MULTI = HeadSpec("MultiInstanceConfmapsHead", "confmaps")
_CONFMAPS_CROP = HeadSpec("CenteredInstanceConfmapsHead", "confmaps")

MODEL_TYPES: dict[str, ModelType] = {
    t.name: t
    for t in (
        ModelType(
            "single_instance",
            heads=(HeadSpec("SingleInstanceConfmapsHead", "confmaps"),),
            layer=f"{_LAYERS}.single_instance:SingleInstanceLayer",
            exported_layer=f"{_LAYERS}.exported:ExportedSingleInstanceLayer",
            wrapper=f"{_WRAPPERS}.single_instance:SingleInstanceWrapper",
            in_graph=(*_NETWORK, _GLOBAL_PEAKS, _REFINE, _SCALE),
            tileable=True,
        ),
        ModelType(
            "centroid",
            heads=(
                HeadSpec("CentroidConfmapsHead", "confmaps", channels=ONE, sigmoid_option=True),
            ),
            layer=f"{_LAYERS}.centroid:CentroidLayer",
            exported_layer=f"{_LAYERS}.exported:ExportedCentroidLayer",
            wrapper=f"{_WRAPPERS}.centroid:CentroidWrapper",
            in_graph=(*_NETWORK, _LOCAL_PEAKS, _REFINE, _SCALE),
        ),
        ModelType(
            "centered_instance",
            heads=(_CONFMAPS_CROP,),
            layer=f"{_LAYERS}.centered_instance:CenteredInstanceLayer",
            exported_layer=f"{_LAYERS}.exported:ExportedCenteredInstanceLayer",
            wrapper=f"{_WRAPPERS}.centered_instance:CenteredInstanceWrapper",
            in_graph=(*_NETWORK, f"{_GLOBAL_PEAKS} on one crop", _REFINE, _SCALE),
            on_host=_CROP_HOST,
            pair=PairSpec("topdown", f"{_LAYERS}.topdown:TopDownLayer"),
        ),
        ModelType(
            "multi_class_topdown",
            heads=(
                _CONFMAPS_CROP,
                HeadSpec("ClassVectorsHead", "class_vectors", channels=CLASSES, vector=True),
            ),
            layer=f"{_LAYERS}.centered_instance:MultiClassCenteredInstanceLayer",
            exported_layer=f"{_LAYERS}.exported:ExportedMultiClassCenteredInstanceLayer",
            wrapper=f"{_WRAPPERS}.centered_instance:MultiClassTopDownWrapper",
            in_graph=(
                *_NETWORK,
                f"{_GLOBAL_PEAKS} on one crop",
                _REFINE,
                _SCALE,
                "class probabilities of the crop (softmax of the class-vector head)",
            ),
            on_host=(*_CROP_HOST, "Hungarian assignment of each frame's crops to classes"),
            pair=PairSpec("multi_class_topdown", f"{_LAYERS}.topdown:TopDownMultiClassLayer"),
        ),
        ModelType(
            "bottomup",
            heads=(
                _CONFMAPS_MULTI,
                HeadSpec("PartAffinityFieldsHead", "pafs", channels=PAF_COMPONENTS),
            ),
            layer=f"{_LAYERS}.bottomup:BottomUpLayer",
            exported_layer=f"{_LAYERS}.exported:ExportedBottomUpLayer",
            wrapper=f"{_WRAPPERS}.bottomup:BottomUpWrapper",
            in_graph=(
                *_NETWORK,
                f"{_LOCAL_PEAKS}, per node",
                _REFINE,
                "PAF line scores of all K x K slot pairs per edge (n_points samples rounded "
                "to PAF pixels, distance penalty)",
                _SCALE,
            ),
            on_host=(
                "Hungarian matching per edge, instance assembly, min_line_scores, "
                "min_instance_peaks (sleap_infer.ops.grouping)",
            ),
        ),
        ModelType(
            "multi_class_bottomup",
            heads=(
                _CONFMAPS_MULTI,
                HeadSpec("ClassMapsHead", "class_maps", channels=CLASSES, activation="sigmoid"),
            ),
            layer=f"{_LAYERS}.bottomup_multiclass:BottomUpMultiClassLayer",
            exported_layer=f"{_LAYERS}.exported:ExportedBottomUpMultiClassLayer",
            wrapper=f"{_WRAPPERS}.bottomup:MultiClassBottomUpWrapper",
            in_graph=(
                *_NETWORK,
                f"{_LOCAL_PEAKS}, per node",
                _REFINE,
                "class maps sampled at each peak slot (nearest class-map pixel)",
                _SCALE,
            ),
            on_host=(
                "Hungarian assignment of each node's peaks to classes (sleap_infer.ops.identity)",
            ),
        ),
        ModelType(
            "bottomup_segmentation",
            heads=(
                _FOREGROUND,
                HeadSpec("InstanceCenterHead", "center", channels=ONE),
                HeadSpec("CenterOffsetHead", "offsets", channels=TWO),
            ),
            layer=f"{_LAYERS}.segmentation:BottomUpSegmentationLayer",
            in_graph=_SEGMENTATION_NETWORK,
            on_host=(
                "center peaks (max-pool NMS, 4-connected plateaus collapsed to their first "
                "maximum)",
                "foreground pixels grouped to the nearest offset-predicted center",
                *_MASK_HOST,
            ),
            tileable=True,
            raw_export=True,
            masks=True,
        ),
        ModelType(
            "semantic_segmentation",
            heads=(_FOREGROUND,),
            layer=f"{_LAYERS}.segmentation:SemanticSegmentationLayer",
            in_graph=_SEGMENTATION_NETWORK,
            on_host=("one foreground mask per frame, scored by its mean probability", *_MASK_HOST),
            tileable=True,
            raw_export=True,
            masks=True,
        ),
        ModelType(
            "centered_instance_segmentation",
            heads=(_FOREGROUND,),
            layer=f"{_LAYERS}.segmentation:CenteredInstanceMaskLayer",
            in_graph=_SEGMENTATION_NETWORK,
            on_host=(
                _CROP_HOST[0],
                "one mask per crop, scored by its mean probability, offset by the crop corner",
                _MASK_HOST[1],
            ),
            pair=PairSpec(
                "topdown_segmentation", f"{_LAYERS}.topdown_segmentation:TopDownSegmentationLayer"
            ),
            raw_export=True,
            masks=True,
        ),
        ModelType(
            "bbox_centernet",
            heads=(
                HeadSpec(
                    "BBoxCenterHead",
                    "center",
                    channels=ONE,
                    activation="sigmoid",
                    per_category=True,
                    stride=4,
                ),
                HeadSpec("BBoxSizeHead", "size", channels=TWO, stride=4),
                HeadSpec("BBoxOffsetHead", "offset", channels=TWO, stride=4),
            ),
            layer=f"{_LAYERS}.boxes:CenterNetLayer",
            in_graph=(*_NETWORK, "sigmoid of the center logits"),
            on_host=(
                "center peaks (3x3 max-pool equality, plateaus kept), top-k before the "
                "score threshold",
                "boxes from size / offset at each peak x output_stride, clipped to the input",
                "optional class-wise IoU NMS (--bbox-nms-iou)",
                *_BOX_HOST,
            ),
            raw_export=True,
            boxes=True,
        ),
        ModelType(
            "bbox_ssd",
            heads=(
                HeadSpec(
                    "SSDHead",
                    "ssd",
                    channels=ONE,
                    per_category=True,
                    multiscale=True,
                    stride=8,
                ),
            ),
            layer=f"{_LAYERS}.boxes:SSDLayer",
            in_graph=(*_NETWORK, "per-level towers and predictors, anchors of all levels"),
            on_host=(
                "softmax over classes (background dropped), anchor deltas decoded",
                "score threshold, top 1000 candidates, class-wise IoU NMS (0.45), max detections",
                *_BOX_HOST,
            ),
            raw_export=True,
            boxes=True,
        ),
        ModelType(
            "embedding",
            heads=(
                HeadSpec(
                    "EmbeddingHead", "embedding", channels=EMBEDDING_DIM, vector=True, stride=32
                ),
            ),
            layer=f"{_LAYERS}.embedding:EmbeddingLayer",
            in_graph=(
                "uint8 crop -> float32 0..255 (no / 255)",
                "per crop and channel standardisation (std + 1e-5, floored at 1)",
                "network, bottleneck pooling (GeM / avg / max), FC layers, L2 norm",
            ),
            on_host=(
                "crop centres: mask centre of mass (or box midpoint) on the image grid, "
                "or the pose centroid",
                "crop_size squares sampled bilinearly at crop / (crop - 1) magnification, "
                "zero beyond the frame with a coverage fade (sleap-nn's Skia crop)",
            ),
            pair=PairSpec("topdown_embedding", f"{_LAYERS}.embedding:TopDownEmbeddingLayer"),
            raw_export=True,
            embeds=True,
        ),
    )
}

NOT_YET_SUPPORTED: tuple[str, ...] = ()
"""sleap-nn head types we recognise but cannot run yet (a clearer error than "unknown")."""


def model_type(name: str) -> ModelType:
    """The registry entry for ``name``, or a ConfigError saying whether it is known at all."""
    entry = MODEL_TYPES.get(name)
    if entry is not None:
        return entry
    if name in NOT_YET_SUPPORTED:
        raise ConfigError(f"model type {name!r} is not supported")
    raise ConfigError(f"unknown model type {name!r}")


def pair_roles(types: Sequence[str]) -> tuple[int, int] | None:
    """Positions of the detector and the crop model in ``types``, given in either order,
    or None when the types do not form a two-stage (top-down) pair."""
    if len(types) != 2:
        return None
    for detector, instance in ((0, 1), (1, 0)):
        entry = MODEL_TYPES.get(types[instance])
        pair = None if entry is None else entry.pair
        if pair is not None and seeds_crops(types[detector], pair):
            return detector, instance
    return None


def seeds_crops(model_type: str, pair: PairSpec) -> bool:
    """Whether ``model_type`` can find the animals for ``pair``: its detector (centroids), or
    any box detector (crops centred on the boxes, as sleap-nn 0.3.5 does)."""
    entry = MODEL_TYPES.get(model_type)
    return model_type == pair.detector or (entry is not None and entry.boxes)


def pipeline_names() -> tuple[str, ...]:
    """Names of the two-stage pipelines (``topdown``, ``multi_class_topdown``)."""
    return tuple(t.pair.name for t in MODEL_TYPES.values() if t.pair is not None)
