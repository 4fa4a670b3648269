"""What the export cache and the auto-exporting backends need of a runtime.

``runtime.py`` builds those backends (an exported runtime's maker makes one per
model), so they may not import it back: they see a runtime only through the
:class:`ExportTarget` protocol below, which every
:class:`~sleap_infer.runtimes.runtime.ExportedRuntime` satisfies. Imports run one
way: runtime -> auto -> cache / int8 -> contract.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch

    from sleap_infer.backends.base import ModelBackend
    from sleap_infer.backends.tensorrt_backend import GpuInfo
    from sleap_infer.core.artifact import ExportInfo

Notify = Callable[[str], None]  # told, in one line, when an export is made (first use)


@dataclass(frozen=True)
class EngineTarget:
    """What a serialised engine is specific to: the TensorRT version and the GPU."""

    trt_version: str
    gpu: GpuInfo


class ExportTarget(Protocol):
    """A runtime that runs exported graphs, as the cache and auto-exporter use it."""

    name: str
    export_formats: tuple[str, ...]  # what an export for it must hold
    static_batch: bool  # engines are built for the exact batch

    @property
    def export_key(self) -> str: ...

    def target(self, device: torch.device) -> EngineTarget | None: ...

    def open(self, info: ExportInfo, device: torch.device, **options: Any) -> ModelBackend: ...
