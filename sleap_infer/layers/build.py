"""Pick the layer for a set of model directories and a runtime, then build it.

The runtime is known before any backend exists: a :class:`BackendMaker` says
whether the backends it makes return raw maps or in-graph decoded peaks, so
the right layer class is chosen from the model type's registry entry first
and the backend is built once, for it. Two model directories must form a
top-down pair (the registry says which types pose crops and which layer
combines them with a centroid model).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sleap_infer.backends.base import ModelBackend
from sleap_infer.core.errors import ConfigError, UsageError
from sleap_infer.core.options import PredictOptions
from sleap_infer.layers.base import InferenceLayer
from sleap_infer.model.loader import LoadedModel
from sleap_infer.model.registry import MODEL_TYPES, load_class, named_class, pair_roles


class BackendMaker(Protocol):
    """Builds the backend of one model for a runtime chosen up front.

    ``partners`` are the other models of a top-down pair: backends that find
    exports on disk also look in the pair's export folders.
    """

    @property
    def decodes_in_graph(self) -> bool: ...

    def __call__(
        self, model: LoadedModel, partners: Sequence[LoadedModel] = ()
    ) -> ModelBackend: ...


def layer_class(model_type: str, in_graph: bool = False) -> type[InferenceLayer]:
    """The layer running ``model_type`` on raw maps, or (``in_graph``) on an exported graph."""
    if in_graph:
        return exported_layer_class(model_type)
    cls, _ = named_class(model_type, "layer")
    if cls is None:
        raise UsageError(f"model type {model_type!r} is not supported")
    return cls


def exported_layer_class(model_type: str) -> type[InferenceLayer]:
    """The layer reading ``model_type``'s exported graph (its decode step replaced)."""
    cls, runnable = named_class(model_type, "exported_layer")
    if cls is None:
        raise UsageError(
            f"model type {model_type!r} cannot run on an exported backend yet "
            f"(supported: {', '.join(runnable)}); use --backend torch"
        )
    return cls


TILED_LAYER = "sleap_infer.layers.tiled:TiledLayer"


def decodes_in_graph(model: LoadedModel, make_backend: BackendMaker) -> bool:
    """Whether ``model`` runs on a graph that decodes in-graph: never for types whose
    exports return raw maps (segmentation) nor for tiled models (the maps of the
    tiles are stitched before anything is decoded)."""
    entry = MODEL_TYPES.get(model.model_type)
    raw = entry is not None and entry.raw_export
    tiled = model.config.preprocessing.tiling is not None
    return make_backend.decodes_in_graph and not raw and not tiled


def _make(
    model: LoadedModel,
    make_backend: BackendMaker,
    options: PredictOptions,
    partners: Sequence[LoadedModel] = (),
) -> InferenceLayer:
    cls = layer_class(model.model_type, decodes_in_graph(model, make_backend))
    layer = cls(model.config, make_backend(model, partners), options)
    tiling = model.config.preprocessing.tiling
    if tiling is None:
        return layer
    return load_class(TILED_LAYER)(layer, tiling)


def _single(
    model: LoadedModel, make_backend: BackendMaker, options: PredictOptions
) -> InferenceLayer:
    entry = MODEL_TYPES.get(model.model_type)
    if entry is not None and entry.embeds:
        raise UsageError(
            f"{model.path}: an embedding model describes animals found by another model: give "
            "a SLEAP project (.slp) holding the detections to embed, or add a centroid or box "
            "detector model (--model DIR) to find them"
        )
    if entry is not None and entry.pair is not None:
        raise UsageError(
            f"{model.path}: a {model.model_type} model only "
            f"{'segments' if entry.masks else 'poses'} animals in crops; "
            f"add a {entry.pair.detector} model (--model DIR) to find them (top-down; "
            "a box detector works too)"
        )
    return _make(model, make_backend, options)


def _pair(
    detector: LoadedModel,
    instance: LoadedModel,
    make_backend: BackendMaker,
    options: PredictOptions,
) -> InferenceLayer:
    crop = instance.config.preprocessing.crop_size
    if crop is None or crop < 1:
        raise ConfigError(
            f"{instance.path}: training_config.yaml has no preprocessing.crop_size "
            "(the top-down crop side)"
        )
    pair = MODEL_TYPES[instance.model_type].pair
    assert pair is not None  # pair_roles only pairs types that have one
    stage1 = _make(detector, make_backend, options, partners=(instance,))
    stage2 = _make(instance, make_backend, options, partners=(detector,))
    return load_class(pair.layer)(stage1, stage2, options)


def build_layer(
    models: Sequence[LoadedModel], make_backend: BackendMaker, options: PredictOptions
) -> InferenceLayer:
    """One layer for the given model directories; two directories must form a top-down pair."""
    if len(models) == 1:
        return _single(models[0], make_backend, options)
    roles = pair_roles([m.model_type for m in models])
    if roles is None:
        types = ", ".join(sorted(m.model_type for m in models))
        raise UsageError(
            f"cannot combine models of types {types}: give one model, or a centroid (or box "
            "detector) model plus a centered-instance, multi-class top-down or "
            "centered-instance segmentation model for top-down"
        )
    return _pair(models[roles[0]], models[roles[1]], make_backend, options)
