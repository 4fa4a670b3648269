"""``AutoExportBackend``: ``--backend onnx|trt`` without a separate export step.

It satisfies ``ModelBackend`` but defers the export until the first batch,
because only then is the preprocessed input shape known (frame sizes vary
by video when the model has no size matcher). Each new shape resolves its
own export (next to the model, cached, or made now) and its own runtime
session. The layer declares the decoding it needs via ``bind_decode``.
Segmentation and tiled models get a raw-maps export instead (the network's
maps, decoded on the host by the type's ordinary layer), so for them the
backend reports ``does_baked_postproc = False``, as the torch backend does.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from sleap_infer.backends.base import ModelBackend
from sleap_infer.backends.threads import HOST_THREADS_BESIDE_POOL
from sleap_infer.core.artifact import ExportInfo
from sleap_infer.core.errors import ExportError
from sleap_infer.core.options import DecodeSettings
from sleap_infer.export.settings import DEFAULT_OPSET
from sleap_infer.export.wrappers import exports_raw_maps
from sleap_infer.model.loader import LoadedModel
from sleap_infer.runtimes.cache import ExportRequest, cache_root, ensure_export
from sleap_infer.runtimes.contract import ExportTarget, Notify
from sleap_infer.runtimes.int8 import CalibratingInt8Backend


class AutoExportBackend:
    """Resolves (or creates) the export for each input shape, then runs it.

    ``partners``: the other model directories of a top-down pair, whose pair
    export folders hold this model's stage too.
    """

    def __init__(
        self,
        model: LoadedModel,
        runtime: ExportTarget,
        device: torch.device,
        fp16: bool = False,
        int8: bool = False,
        opset: int = DEFAULT_OPSET,
        notify: Notify | None = None,
        partners: Sequence[Path] = (),
        **runtime_options: Any,
    ) -> None:
        self.model = model
        self.raw_maps = exports_raw_maps(model)
        # Per model: layers check it against the decoding they do (build_layer picks the
        # host-decoding layer for the same models, by the same rule).
        self.does_baked_postproc = not self.raw_maps
        self.host_threads = HOST_THREADS_BESIDE_POOL if device.type == "cpu" else None
        self.runtime = runtime
        self.device = device
        self.fp16 = fp16
        self.int8 = int8
        self.opset = opset
        self.notify = notify
        self.partners = list(partners)
        self.runtime_options = runtime_options
        self.decode = DecodeSettings()
        self.target = runtime.target(device)
        self._backends: dict[tuple[int, ...], ModelBackend] = {}
        self.exports: list[Path] = []

    def bind_decode(self, decode: DecodeSettings) -> None:
        """Called by exported layers: the in-graph decoding their postprocessing relies on."""
        self.decode = decode
        self._backends.clear()

    def _backend_for(self, shape: tuple[int, ...]) -> ModelBackend:
        key = shape if self.runtime.static_batch else shape[1:]
        backend = self._backends.get(key)
        if backend is not None:
            return backend
        request = ExportRequest(
            runtime=self.runtime,
            input_shape=(int(shape[0]), int(shape[1]), int(shape[2]), int(shape[3])),
            decode=self.decode,
            fp16=self.fp16,
            opset=self.opset,
            target=self.target,
            raw_maps=self.raw_maps,
        )
        info = ensure_export(self.model, request, str(self.device), self.notify, self.partners)
        try:
            backend = self._open(info)
        except ExportError as exc:  # its files are there but do not load: damaged
            info, backend = self._replace_damaged(info, request, exc)
        self._backends[key] = backend
        self.exports.append(info.path)
        return backend

    def _open(self, info: ExportInfo) -> ModelBackend:
        if self.int8:
            return CalibratingInt8Backend(
                info, self.runtime, self.device, self.notify, **self.runtime_options
            )
        return self.runtime.open(info, self.device, **self.runtime_options)

    def _replace_damaged(
        self, info: ExportInfo, request: ExportRequest, exc: ExportError
    ) -> tuple[ExportInfo, ModelBackend]:
        """Export again over a damaged cache entry (a disk that filled up mid-export, a
        half-copied cache); an export the user made next to the model is theirs to delete."""
        if not info.path.resolve().is_relative_to(cache_root().resolve()):
            raise ExportError(
                f"{exc}; the export in {info.path} is damaged: delete that folder (or run "
                "infer export again) and rerun"
            ) from exc
        if self.notify is not None:
            self.notify(f"cached export {info.path} is damaged ({exc}); exporting it again")
        shutil.rmtree(info.path, ignore_errors=True)
        info = ensure_export(self.model, request, str(self.device), self.notify, self.partners)
        return info, self._open(info)

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return self._backend_for(tuple(x.shape))(x)

    def warmup(self, shape: tuple[int, ...]) -> None:
        self._backend_for(tuple(shape)).warmup(tuple(shape))

    def provenance(self) -> dict[str, Any]:
        out: dict[str, Any] = {"runtime": self.runtime.name}
        out["exports"] = [str(p) for p in self.exports]
        if self.int8:
            quantised = [getattr(b, "int8_info", None) for b in self._backends.values()]
            out["exports"] += [str(info.path) for info in quantised if info is not None]
            calibrated = [b.calibrated for b in self._backends.values()]  # type: ignore[attr-defined]
            out["precision"] = "int8" if calibrated and all(calibrated) else "int8 (partly float32)"
        elif self.runtime_options.get("precision") == "bf16":
            out["precision"] = "bf16"
        return out
