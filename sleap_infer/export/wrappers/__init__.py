"""Export wrappers by model type: the network plus the decoding traced after it.

A wrapper is an ``nn.Module`` taking the uint8 network input and returning
decoded peaks (see :class:`ExportWrapper`); its host-side counterpart is the
model type's exported layer in :mod:`sleap_infer.layers.exported`. Both are
named in the type's entry in :mod:`sleap_infer.model.registry`. Segmentation
types and tiled models export the network alone (:class:`RawMapsWrapper`): the
type's ordinary layer decodes the maps on the host.
"""

from __future__ import annotations

from sleap_infer.core.errors import UsageError
from sleap_infer.export.wrappers.base import ExportWrapper, OutputSpec
from sleap_infer.export.wrappers.raw_maps import RawMapsWrapper
from sleap_infer.model.loader import LoadedModel
from sleap_infer.model.registry import MODEL_TYPES, named_class


def wrapper_for(model_type: str) -> type[ExportWrapper]:
    """The export wrapper of ``model_type`` (from its registry entry), or a UsageError."""
    cls, exportable = named_class(model_type, "wrapper")
    if cls is None:
        raise UsageError(
            f"model type {model_type!r} cannot be exported yet "
            f"(exportable: {', '.join(exportable)})"
        )
    return cls


def exports_raw_maps(model: LoadedModel) -> bool:
    """Whether ``model``'s graph returns raw maps: types whose entry says so
    (segmentation), and tiled models, whose tiles' maps are stitched on the host before
    anything is decoded. The same rule as ``sleap_infer.layers.build.decodes_in_graph``,
    which picks the host-decoding layer for these models."""
    entry = MODEL_TYPES.get(model.model_type)
    raw = entry is not None and entry.raw_export
    return raw or model.config.preprocessing.tiling is not None


def wrapper_for_model(model: LoadedModel) -> type[ExportWrapper]:
    """:class:`RawMapsWrapper` for models exported as raw maps, else the type's wrapper."""
    return RawMapsWrapper if exports_raw_maps(model) else wrapper_for(model.model_type)


__all__ = [
    "ExportWrapper",
    "OutputSpec",
    "RawMapsWrapper",
    "exports_raw_maps",
    "wrapper_for",
    "wrapper_for_model",
]
