"""Model-type layers and the dispatcher that picks one for a set of model directories."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sleap_infer.backends.base import ModelBackend
from sleap_infer.errors import ConfigError, UsageError
from sleap_infer.layers.base import InferenceLayer, PreprocInfo
from sleap_infer.layers.bottomup import BottomUpLayer
from sleap_infer.layers.bottomup_multiclass import BottomUpMultiClassLayer
from sleap_infer.layers.centered_instance import (
    CenteredInstanceLayer,
    MultiClassCenteredInstanceLayer,
)
from sleap_infer.layers.centroid import CentroidLayer
from sleap_infer.layers.options import PredictOptions
from sleap_infer.layers.single_instance import SingleInstanceLayer
from sleap_infer.layers.topdown import TopDownLayer, TopDownMultiClassLayer
from sleap_infer.model.loader import LoadedModel

BackendFactory = Callable[[LoadedModel], ModelBackend]

SINGLE_MODEL_LAYERS: dict[str, type[InferenceLayer]] = {
    "single_instance": SingleInstanceLayer,
    "centroid": CentroidLayer,
    "bottomup": BottomUpLayer,
    "multi_class_bottomup": BottomUpMultiClassLayer,
}

INSTANCE_LAYERS: dict[str, type[CenteredInstanceLayer]] = {
    "centered_instance": CenteredInstanceLayer,
    "multi_class_topdown": MultiClassCenteredInstanceLayer,
}
"""Top-down stage-2 model types (they need a centroid model to find the animals)."""


def _make_layer(
    model: LoadedModel,
    cls: type[InferenceLayer],
    make_backend: BackendFactory,
    options: PredictOptions,
) -> InferenceLayer:
    """``cls`` on a torch backend, or its export adapter when the backend decodes in-graph."""
    backend = make_backend(model)
    if backend.does_baked_postproc:
        from sleap_infer.layers.exported import exported_layer_class

        cls = exported_layer_class(model.model_type)
    return cls(model.config, backend, options)


def _pair_exports(backend: ModelBackend, partner: LoadedModel) -> None:
    """Exporting backends also look in the partner's folder (``infer export`` of a pair)."""
    search_also = getattr(backend, "search_also", None)
    if search_also is not None:
        search_also(partner.path)


def build_layer(
    models: Sequence[LoadedModel], make_backend: BackendFactory, options: PredictOptions
) -> InferenceLayer:
    """One layer for the given model directories; two directories must form a top-down pair."""
    if len(models) == 1:
        model = models[0]
        if model.model_type in INSTANCE_LAYERS:
            raise UsageError(
                f"{model.path}: a {model.model_type} model only poses animals in crops; "
                "add a centroid model (--model CENTROID_DIR) to find them (top-down)"
            )
        cls = SINGLE_MODEL_LAYERS.get(model.model_type)
        if cls is None:
            raise UsageError(f"{model.path}: model type {model.model_type!r} is not supported")
        return _make_layer(model, cls, make_backend, options)
    types = sorted(m.model_type for m in models)
    if len(models) == 2:
        centroid = [m for m in models if m.model_type == "centroid"]
        instance = [m for m in models if m.model_type in INSTANCE_LAYERS]
        if len(centroid) == 1 and len(instance) == 1:
            c, i = centroid[0], instance[0]
            crop = i.config.preprocessing.crop_size
            if crop is None or crop < 1:
                raise ConfigError(
                    f"{i.path}: training_config.yaml has no preprocessing.crop_size "
                    "(the top-down crop side)"
                )
            stage1 = _make_layer(c, CentroidLayer, make_backend, options)
            stage2 = _make_layer(i, INSTANCE_LAYERS[i.model_type], make_backend, options)
            _pair_exports(stage1.backend, i)
            _pair_exports(stage2.backend, c)
            if i.model_type == "multi_class_topdown":
                return TopDownMultiClassLayer(stage1, stage2, options)
            return TopDownLayer(stage1, stage2, options)
    raise UsageError(
        f"cannot combine models of types {', '.join(types)}: give one model, or a centroid "
        "model plus a centered-instance (or multi-class top-down) model for top-down"
    )


__all__ = [
    "BottomUpLayer",
    "BottomUpMultiClassLayer",
    "CenteredInstanceLayer",
    "CentroidLayer",
    "InferenceLayer",
    "MultiClassCenteredInstanceLayer",
    "PredictOptions",
    "PreprocInfo",
    "SingleInstanceLayer",
    "TopDownLayer",
    "TopDownMultiClassLayer",
    "build_layer",
]
