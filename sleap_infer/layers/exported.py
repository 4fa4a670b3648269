"""Adapter layers for exported graphs (ONNX Runtime, TensorRT) that decode in-graph.

Each subclasses the torch layer of its model type, so preprocessing
(channels, size matcher, input scale, stride padding, all on uint8) and
packaging are shared; only the decode step is replaced: instead of finding
peaks on confidence maps, it reads the graph's peaks, applies the user's
threshold, and finishes the coordinate ladder (the graph already multiplied
by ``output_stride / input_scale``; the host divides by the size-matcher factor).

Adding a model type: subclass its layer, override its decode method, register
the class in :data:`EXPORTED_LAYERS` (and its wrapper in ``export.wrappers``).
"""

from __future__ import annotations

from typing import Any

import torch

from sleap_infer.backends.base import ModelBackend
from sleap_infer.errors import UsageError
from sleap_infer.export.settings import DEFAULT_MAX_PEAKS, DecodeSettings
from sleap_infer.layers.base import InferenceLayer, PreprocInfo, grid_to_frame
from sleap_infer.layers.centroid import CentroidLayer, Centroids
from sleap_infer.layers.options import PredictOptions
from sleap_infer.layers.single_instance import SingleInstanceLayer
from sleap_infer.model.config import ModelConfig, Preprocessing


def decode_settings_for(options: PredictOptions) -> DecodeSettings:
    """The in-graph decoding a set of predict options needs.

    Local-peak graphs keep a fixed number of candidates; with ``max_instances``
    = m they need m + 1 (to tell "exactly m" from "overflowing"), else a default.
    """
    wanted = DEFAULT_MAX_PEAKS
    if options.max_instances is not None:
        wanted = max(wanted, options.max_instances + 1)
    return DecodeSettings(
        refine=options.refine,
        integral_patch_size=options.integral_patch_size,
        max_peaks=wanted,
        peak_threshold=options.peak_threshold,
    )


class BakedDecodeMixin:
    """Tells the backend which decoding the graph must contain, before the first batch."""

    options: PredictOptions

    def __init__(
        self,
        config: ModelConfig,
        backend: ModelBackend,
        options: PredictOptions | None = None,
        preprocessing: Preprocessing | None = None,
    ) -> None:
        super().__init__(config, backend, options, preprocessing)  # type: ignore[call-arg]
        if self.options.return_confmaps:
            raise UsageError("exported graphs do not return confidence maps; use --backend torch")
        bind: Any = getattr(backend, "bind_decode", None)
        if bind is not None:
            bind(decode_settings_for(self.options))


class ExportedSingleInstanceLayer(BakedDecodeMixin, SingleInstanceLayer):
    """Reads ``peaks`` / ``peak_vals`` from the graph."""

    def find_peaks(
        self, outputs: dict[str, torch.Tensor], info: PreprocInfo
    ) -> tuple[torch.Tensor, torch.Tensor]:
        points = outputs["peaks"].float()
        values = outputs["peak_vals"].float()
        below = values < self.options.peak_threshold
        points = torch.where(below[..., None], torch.full_like(points, float("nan")), points)
        values = torch.where(below, torch.zeros_like(values), values)
        return grid_to_frame(points, 1, 1.0, info.eff_scale), values


class ExportedCentroidLayer(BakedDecodeMixin, CentroidLayer):
    """Reads ``centroids`` / ``centroid_vals`` (raster-ordered candidates) from the graph."""

    def find_centroids(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> Centroids:
        """Same rule as the torch layer: raster order, or value order for overflowing frames."""
        points = outputs["centroids"].float()
        values = outputs["centroid_vals"].float()
        batch, slots = values.shape
        valid = values > self.threshold
        counts = valid.sum(dim=1)
        width = int(counts.max()) if batch else 0
        if self.options.max_instances is not None:
            width = min(width, self.options.max_instances)
        width = max(width, 1)
        raster_rank = torch.cumsum(valid.long(), dim=1) - 1
        ranked = torch.where(valid, values, torch.full_like(values, float("-inf")))
        order = torch.sort(ranked, dim=1, descending=True, stable=True).indices
        value_rank = torch.empty_like(order)
        value_rank.scatter_(1, order, torch.arange(slots, device=order.device).expand(batch, -1))
        slot = torch.where((counts > width)[:, None], value_rank, raster_rank)
        keep = valid & (slot < width)
        out_pts = torch.full((batch, width, 2), float("nan"), device=points.device)
        out_val = torch.zeros((batch, width), device=values.device)
        out_ok = torch.zeros((batch, width), dtype=torch.bool, device=values.device)
        b, j = torch.nonzero(keep, as_tuple=True)
        k = slot[b, j]
        out_pts[b, k] = points[b, j]
        out_val[b, k] = values[b, j]
        out_ok[b, k] = True
        return Centroids(points=out_pts, values=out_val, valid=out_ok)


EXPORTED_LAYERS: dict[str, type[InferenceLayer]] = {
    "single_instance": ExportedSingleInstanceLayer,
    "centroid": ExportedCentroidLayer,
}


def exported_layer_class(model_type: str) -> type[InferenceLayer]:
    cls = EXPORTED_LAYERS.get(model_type)
    if cls is None:
        raise UsageError(
            f"model type {model_type!r} cannot run on an exported backend yet "
            f"(supported: {', '.join(sorted(EXPORTED_LAYERS))}); use --backend torch"
        )
    return cls
