"""Export wrappers by model type: the network plus the decoding traced after it.

A wrapper is an ``nn.Module`` taking the uint8 network input and returning
decoded peaks (see :class:`ExportWrapper`); its host-side counterpart is the
model type's exported layer in :mod:`sleap_infer.layers.exported`. Both are
named in the type's entry in :mod:`sleap_infer.model.registry`.
"""

from __future__ import annotations

from sleap_infer.export.wrappers.base import ExportWrapper, OutputSpec
from sleap_infer.model.registry import named_class
from sleap_infer.vocab.errors import UsageError


def wrapper_for(model_type: str) -> type[ExportWrapper]:
    """The export wrapper of ``model_type`` (from its registry entry), or a UsageError."""
    cls, exportable = named_class(model_type, "wrapper")
    if cls is None:
        raise UsageError(
            f"model type {model_type!r} cannot be exported yet "
            f"(exportable: {', '.join(exportable)})"
        )
    return cls


__all__ = ["ExportWrapper", "OutputSpec", "wrapper_for"]
