"""What "torch", "onnx" and "trt" mean, said once.

A :class:`Runtime` is the single place that knows a runtime's device rules,
whether its backends decode in-graph, what an export for it must contain,
whether engines are built for a static batch, and how to open one. The CLI,
the export cache and the exporting backend ask it instead of comparing
strings. :meth:`Runtime.maker` resolves the device once and returns the
:class:`~sleap_infer.layers.build.BackendMaker` that ``build_layer`` uses.

This module imports torch and the backends only inside methods, so the CLI
can list runtime names without paying for them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from sleap_infer.core.errors import ExportError, UsageError
from sleap_infer.runtimes.contract import EngineTarget, Notify

if TYPE_CHECKING:
    import torch

    from sleap_infer.backends.base import ModelBackend
    from sleap_infer.core.artifact import ExportInfo
    from sleap_infer.layers.build import BackendMaker
    from sleap_infer.model.loader import LoadedModel


class Runtime(ABC):
    """One way to execute a network."""

    name: ClassVar[str]
    decodes_in_graph: ClassVar[bool]
    export_formats: ClassVar[tuple[str, ...]]  # what an export for it must hold; () = none
    static_batch: ClassVar[bool]  # engines are built for the exact batch (fastest)

    @property
    def export_key(self) -> str:
        """The runtime whose exports this one runs (cache keys, ``infer export`` choices):
        itself, unless it reads another's files (OpenVINO reads ONNX Runtime's)."""
        return self.name

    @abstractmethod
    def resolve_device(self, spec: str | torch.device = "auto") -> torch.device:
        """``auto|cpu|cuda|cuda:N|mps`` -> a device this runtime can use here, or raise."""

    @abstractmethod
    def maker(self, device: str | torch.device = "auto", **options: Any) -> BackendMaker:
        """A backend maker for this runtime on ``device`` (resolved now, once).

        ``options``: ``fp16``, ``bf16``, ``compile`` (torch only), ``notify`` (told
        when an export is made), and the backend's own settings.
        """

    def __repr__(self) -> str:
        return f"Runtime({self.name!r})"


@dataclass
class TorchMaker:
    """Builds :class:`~sleap_infer.backends.TorchBackend`\\ s on one resolved device."""

    device: torch.device
    options: dict[str, Any] = field(default_factory=dict)
    decodes_in_graph: ClassVar[bool] = False

    def __call__(self, model: LoadedModel, partners: Sequence[LoadedModel] = ()) -> ModelBackend:
        from sleap_infer.backends.torch_backend import TorchBackend

        if model.export_dir is not None:
            raise UsageError(f"{model.export_dir}: an exported model runs without torch")
        return TorchBackend(model.network, self.device, **self.options)


class TorchRuntime(Runtime):
    name = "torch"
    decodes_in_graph = False
    export_formats = ()
    static_batch = False

    def resolve_device(self, spec: str | torch.device = "auto") -> torch.device:
        from sleap_infer.backends.base import resolve_device

        return resolve_device(spec)

    def maker(
        self,
        device: str | torch.device = "auto",
        *,
        notify: Notify | None = None,  # torch never exports: nothing to announce
        int8: bool = False,
        **options: Any,
    ) -> TorchMaker:
        if int8:
            raise UsageError("--int8 applies to --backend onnx or openvino (use --bf16 on torch)")
        return TorchMaker(self.resolve_device(device), options)


@dataclass
class ExportingMaker:
    """Builds backends that find (or make, on first use) an export for each input shape.

    ``decodes_in_graph`` holds for the model types whose graphs decode; segmentation and
    tiled models get raw-maps graphs, which ``build_layer`` and the backend both know from
    the model itself (``decodes_in_graph`` there, ``does_baked_postproc`` here).
    """

    runtime: ExportedRuntime
    device: torch.device
    fp16: bool = False
    notify: Notify | None = None
    options: dict[str, Any] = field(default_factory=dict)
    int8: bool = False
    decodes_in_graph: ClassVar[bool] = True

    def __call__(self, model: LoadedModel, partners: Sequence[LoadedModel] = ()) -> ModelBackend:
        from sleap_infer.runtimes.auto import AutoExportBackend

        options = {**self.options, **(self.runtime.pair_options() if partners else {})}
        return AutoExportBackend(
            model,
            self.runtime,
            self.device,
            fp16=self.fp16,
            int8=self.int8,
            notify=self.notify,
            partners=[p.path for p in partners],
            **options,
        )


class ExportedRuntime(Runtime):
    """A runtime that runs our exported graphs (decoding in-graph, or raw maps for
    segmentation and tiled models)."""

    decodes_in_graph = True
    int8: ClassVar[bool] = False  # runs int8 QDQ graphs (--int8)
    bf16: ClassVar[bool] = False  # has a bfloat16 mode (--bf16)

    def target(self, device: torch.device) -> EngineTarget | None:
        """What its compiled artifacts are specific to (None: portable, like ONNX)."""
        return None

    @abstractmethod
    def open(self, info: ExportInfo, device: torch.device, **options: Any) -> ModelBackend:
        """A backend running export ``info`` on ``device``."""

    def pair_options(self) -> dict[str, Any]:
        """Backend options for each model of a top-down pair, whose two networks take turns
        on every batch (none by default)."""
        return {}

    def maker(
        self,
        device: str | torch.device = "auto",
        *,
        fp16: bool = False,
        bf16: bool = False,
        compile: bool = False,
        notify: Notify | None = None,
        opset: int | None = None,
        int8: bool = False,
        **options: Any,
    ) -> ExportingMaker:
        if compile:
            raise UsageError("--compile applies to --backend torch only")
        if bf16 and not self.bf16:
            raise UsageError(f"--bf16 applies to --backend torch or openvino, not {self.name}")
        if int8 and not self.int8:
            raise UsageError(f"--int8 applies to --backend onnx or openvino, not {self.name}")
        if sum((fp16, bf16, int8)) > 1:
            raise UsageError("choose one of --fp16, --bf16 and --int8")
        if bf16:
            options["precision"] = "bf16"
        if opset is not None:
            options["opset"] = opset
        # Checked now, so a machine without CUDA or TensorRT fails before any export.
        return ExportingMaker(self, self.resolve_device(device), fp16, notify, options, int8)


class OnnxRuntime(ExportedRuntime):
    name = "onnx"
    export_formats = ("onnx",)
    static_batch = False
    int8 = True

    def resolve_device(self, spec: str | torch.device = "auto") -> torch.device:
        from sleap_infer.backends.onnx_backend import resolve_onnx_device

        return resolve_onnx_device(spec)

    def open(self, info: ExportInfo, device: torch.device, **options: Any) -> ModelBackend:
        from sleap_infer.backends.onnx_backend import ONNXBackend

        return ONNXBackend(info, device, **options)

    def pair_options(self) -> dict[str, Any]:
        """Each session's CPU workers sleep when idle: with two sessions taking turns, one's
        spinning workers held the cores the other needed (top-down at 30 animals, 2 cores:
        37.8 -> 26.5 ms/frame; a lone bottom-up session is faster spinning, 18.4 vs 20.8;
        ``benchmarks/host_threads.py``)."""
        return {"spin": False}


class OpenVinoRuntime(ExportedRuntime):
    """OpenVINO on the CPU, from the same ONNX exports as ``onnx`` (shared cache entries)."""

    name = "openvino"
    export_formats = ("onnx",)
    static_batch = False
    int8 = True
    bf16 = True

    @property
    def export_key(self) -> str:
        return OnnxRuntime.name

    def resolve_device(self, spec: str | torch.device = "auto") -> torch.device:
        from sleap_infer.backends.openvino_backend import resolve_openvino_device

        return resolve_openvino_device(spec)

    def open(self, info: ExportInfo, device: torch.device, **options: Any) -> ModelBackend:
        from sleap_infer.backends.openvino_backend import OpenVINOBackend
        from sleap_infer.runtimes.cache import compiled_cache_dir

        return OpenVINOBackend(info, device, compiled_cache=compiled_cache_dir(), **options)


class TensorRTRuntime(ExportedRuntime):
    name = "trt"
    export_formats = ("onnx", "trt")  # the engine is built from the ONNX file, which stays
    static_batch = True

    def resolve_device(self, spec: str | torch.device = "auto") -> torch.device:
        from sleap_infer.backends.tensorrt_backend import require_cuda, require_tensorrt

        require_tensorrt()
        return require_cuda(spec)

    def target(self, device: torch.device) -> EngineTarget:
        from sleap_infer.backends.tensorrt_backend import GpuInfo, require_tensorrt

        return EngineTarget(require_tensorrt().__version__, GpuInfo.of(device))

    def open(self, info: ExportInfo, device: torch.device, **options: Any) -> ModelBackend:
        from sleap_infer.backends.tensorrt_backend import TensorRTBackend

        if info.engine_path is None:
            raise ExportError(f"{info.path}: export has no TensorRT engine")
        return TensorRTBackend(info.engine_path, device, export=info)


RUNTIMES: dict[str, Runtime] = {
    r.name: r for r in (TorchRuntime(), OnnxRuntime(), OpenVinoRuntime(), TensorRTRuntime())
}
RUNTIME_NAMES: tuple[str, ...] = tuple(RUNTIMES)


def get_runtime(name: str | Runtime) -> Runtime:
    """The runtime called ``name`` (case-insensitive), or a UsageError listing the choices."""
    if isinstance(name, Runtime):
        return name
    runtime = RUNTIMES.get(name.strip().lower())
    if runtime is None:
        raise UsageError(f"unknown backend {name!r} (choose from {', '.join(RUNTIMES)})")
    return runtime


def backend_maker(
    name: str | Runtime, device: str | torch.device = "auto", **options: Any
) -> BackendMaker:
    """The backend maker of runtime ``name`` on ``device``: what ``build_layer`` takes."""
    return get_runtime(name).maker(device, **options)
