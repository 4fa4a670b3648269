"""Model-type layers and the dispatcher that picks one for a set of model directories."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sleap_infer.backends.base import ModelBackend
from sleap_infer.errors import UsageError
from sleap_infer.layers.base import InferenceLayer, PreprocInfo
from sleap_infer.layers.centroid import CentroidLayer
from sleap_infer.layers.options import PredictOptions
from sleap_infer.layers.single_instance import SingleInstanceLayer
from sleap_infer.model.loader import LoadedModel

BackendFactory = Callable[[LoadedModel], ModelBackend]

SINGLE_MODEL_LAYERS: dict[str, type[InferenceLayer]] = {
    "single_instance": SingleInstanceLayer,
    "centroid": CentroidLayer,
}


def build_layer(
    models: Sequence[LoadedModel], make_backend: BackendFactory, options: PredictOptions
) -> InferenceLayer:
    """One layer for the given model directories; two directories must form a top-down pair."""
    if len(models) == 1:
        model = models[0]
        backend = make_backend(model)
        if backend.does_baked_postproc:  # exported graph: peaks come out decoded
            from sleap_infer.layers.exported import exported_layer_class

            return exported_layer_class(model.model_type)(model.config, backend, options)
        cls = SINGLE_MODEL_LAYERS.get(model.model_type)
        if cls is None:
            raise UsageError(f"{model.path}: model type {model.model_type!r} is not supported yet")
        return cls(model.config, backend, options)
    types = sorted(m.model_type for m in models)
    raise UsageError(
        f"cannot combine models of types {', '.join(types)}: give one model, or a centroid "
        "model plus a centered-instance model for top-down"
    )


__all__ = [
    "CentroidLayer",
    "InferenceLayer",
    "PredictOptions",
    "PreprocInfo",
    "SingleInstanceLayer",
    "build_layer",
]
