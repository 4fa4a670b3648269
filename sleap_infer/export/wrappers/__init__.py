"""Export wrappers by model type: adding a type means one class here plus one adapter layer.

A wrapper is an ``nn.Module`` taking the uint8 network input and returning
decoded peaks (see :class:`ExportWrapper`); its host-side counterpart lives in
:mod:`sleap_infer.layers.exported`.
"""

from __future__ import annotations

from sleap_infer.errors import UsageError
from sleap_infer.export.wrappers.base import ExportWrapper, OutputSpec
from sleap_infer.export.wrappers.bottomup import BottomUpWrapper, MultiClassBottomUpWrapper
from sleap_infer.export.wrappers.centered_instance import (
    CenteredInstanceWrapper,
    MultiClassTopDownWrapper,
)
from sleap_infer.export.wrappers.centroid import CentroidWrapper
from sleap_infer.export.wrappers.single_instance import SingleInstanceWrapper

WRAPPERS: dict[str, type[ExportWrapper]] = {}


def register_wrapper(cls: type[ExportWrapper]) -> type[ExportWrapper]:
    """Make ``cls`` the export wrapper for ``cls.model_type`` (usable as a decorator)."""
    WRAPPERS[cls.model_type] = cls
    return cls


for _wrapper in (
    SingleInstanceWrapper,
    CentroidWrapper,
    CenteredInstanceWrapper,
    MultiClassTopDownWrapper,
    BottomUpWrapper,
    MultiClassBottomUpWrapper,
):
    register_wrapper(_wrapper)


def wrapper_for(model_type: str) -> type[ExportWrapper]:
    cls = WRAPPERS.get(model_type)
    if cls is None:
        raise UsageError(
            f"model type {model_type!r} cannot be exported yet "
            f"(exportable: {', '.join(sorted(WRAPPERS))})"
        )
    return cls


__all__ = [
    "WRAPPERS",
    "BottomUpWrapper",
    "CenteredInstanceWrapper",
    "CentroidWrapper",
    "ExportWrapper",
    "MultiClassBottomUpWrapper",
    "MultiClassTopDownWrapper",
    "OutputSpec",
    "SingleInstanceWrapper",
    "register_wrapper",
    "wrapper_for",
]
