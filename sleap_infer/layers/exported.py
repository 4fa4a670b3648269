"""Adapter layers for exported graphs (ONNX Runtime, TensorRT) that decode in-graph.

Each subclasses the torch layer of its model type, so preprocessing
(channels, size matcher, input scale, stride padding, all on uint8) and
packaging are shared; only the decode step is replaced: instead of finding
peaks on confidence maps, it reads the graph's peaks, applies the user's
threshold, and finishes the coordinate ladder (the graph already multiplied
by ``output_stride / input_scale``; the host divides by the size-matcher factor).

Top-down needs no class of its own: its two stages are an exported centroid
layer and an exported centered-instance layer (two graphs), and the crops
between them are cut on the host exactly as on the torch path. Bottom-up
adapters turn the graph's fixed per-node peak slots back into the torch
path's flat peak list, so grouping (``ops.grouping``, ``ops.identity``) runs
unchanged. Where a frame has more peaks than the graph has slots, the host
sees it (the graph reports the first value left out) and warns
(:class:`PeakOverflowWarning`) instead of silently differing.

Adding a model type: subclass its layer, override its decode method, and name
the class as ``exported_layer`` in the type's registry entry
(:mod:`sleap_infer.model.registry`), next to its export wrapper.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch

from sleap_infer.backends.base import GraphBackend
from sleap_infer.core.config import ModelConfig, Preprocessing
from sleap_infer.core.errors import UsageError
from sleap_infer.core.options import PredictOptions
from sleap_infer.layers.base import PreprocInfo, grid_to_frame
from sleap_infer.layers.bottomup import BottomUpLayer, ScoredPeaks
from sleap_infer.layers.bottomup_multiclass import BottomUpMultiClassLayer, ClassPeaks
from sleap_infer.layers.centered_instance import (
    CenteredInstanceLayer,
    CropPeaks,
    MultiClassCenteredInstanceLayer,
)
from sleap_infer.layers.centroid import CentroidLayer, Centroids
from sleap_infer.layers.single_instance import SingleInstanceLayer
from sleap_infer.ops.paf import Candidates


class PeakOverflowWarning(UserWarning):
    """A frame had more local peaks above the threshold than the exported graph keeps."""


class BakedDecodeMixin:
    """Tells the backend which decoding the graph must contain, before the first batch."""

    decodes_in_graph = True
    options: PredictOptions
    config: ModelConfig
    model_type: str

    def __init__(
        self,
        config: ModelConfig,
        backend: GraphBackend,
        options: PredictOptions | None = None,
        preprocessing: Preprocessing | None = None,
    ) -> None:
        super().__init__(config, backend, options, preprocessing)  # type: ignore[call-arg]
        if self.options.return_confmaps:
            raise UsageError("exported graphs do not return confidence maps; use --backend torch")
        backend.bind_decode(self.options.decode_settings())
        self.overflow_frames = 0  # frames in which some channel had more peaks than kept

    def check_overflow(
        self, dropped: torch.Tensor, threshold: float, kept: int, channels: Sequence[str]
    ) -> None:
        """Warn (once per layer) when a channel's first left-out peak passes ``threshold``.

        ``dropped`` is ``(B, C)``: the strongest local maximum the graph had no slot for.
        Such frames lose their weakest peaks, so they can differ from the torch path.
        """
        over = dropped.reshape(dropped.shape[0], -1) > threshold
        frames = int(over.any(dim=1).sum())
        if not frames:
            return
        first = self.overflow_frames == 0
        self.overflow_frames += frames
        if first:
            names = ", ".join(channels[int(c)] for c in torch.nonzero(over.any(dim=0)).flatten())
            warnings.warn(
                f"{self.model_type} export: {names} had more than {kept} local peaks above "
                f"{threshold:g} in {frames} frame(s) of a batch; the exported graph keeps "
                f"the strongest {kept}, so those frames can differ from --backend torch "
                "(raise the peak threshold, export with a larger --max-peaks, "
                "or use --backend torch)",
                PeakOverflowWarning,
                stacklevel=3,
            )


def threshold_global_peaks(
    points: torch.Tensor, values: torch.Tensor, threshold: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The host's rule for global peaks: below ``threshold`` (strict) -> NaN point, value 0."""
    points, values = points.float(), values.float()
    below = values < threshold
    points = torch.where(below[..., None], torch.full_like(points, float("nan")), points)
    return points, torch.where(below, torch.zeros_like(values), values)


def flatten_slots(
    outputs: dict[str, torch.Tensor], threshold: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-node peak slots ``(B, N, K)`` -> the torch path's flat peak list.

    Keeps slots whose value passes ``threshold`` (strict, as ``find_local_peaks``),
    ordered by frame, node, slot: within a frame and node that is raster order.
    Returns ``(b, n, k)`` of each kept slot and ``slot_id`` ``(B, N, K)``, the
    kept slot's position in the flat list (-1 where not kept).
    """
    valid = outputs["peak_vals"].float() > threshold
    b, n, k = torch.nonzero(valid, as_tuple=True)
    slot_id = torch.full(valid.shape, -1, dtype=torch.long, device=valid.device)
    slot_id[b, n, k] = torch.arange(b.numel(), device=valid.device)
    return b, n, k, slot_id, valid


class ExportedSingleInstanceLayer(BakedDecodeMixin, SingleInstanceLayer):
    """Reads ``peaks`` / ``peak_vals`` from the graph."""

    def find_peaks(
        self, outputs: dict[str, torch.Tensor], info: PreprocInfo
    ) -> tuple[torch.Tensor, torch.Tensor]:
        points, values = threshold_global_peaks(
            outputs["peaks"], outputs["peak_vals"], self.options.peak_threshold
        )
        return grid_to_frame(points, 1, 1.0, info.eff_scale), values


class ExportedCentroidLayer(BakedDecodeMixin, CentroidLayer):
    """Reads ``centroids`` / ``centroid_vals`` (raster-ordered candidates) from the graph."""

    def find_centroids(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> Centroids:
        """Same rule as the torch layer: raster order, or value order for overflowing frames."""
        points = outputs["centroids"].float()
        values = outputs["centroid_vals"].float()
        batch, slots = values.shape
        if self.options.max_instances is None:  # else the graph keeps max_instances + 1
            self.check_overflow(
                outputs["dropped_centroid_vals"].float(), self.threshold, slots, ["centroid"]
            )
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


class ExportedCenteredInstanceLayer(BakedDecodeMixin, CenteredInstanceLayer):
    """Top-down stage 2: reads each crop's ``peaks`` / ``peak_vals`` (crop pixels)."""

    def decode(self, outputs: dict[str, torch.Tensor], input_scale: float) -> CropPeaks:
        points, values = threshold_global_peaks(
            outputs["peaks"], outputs["peak_vals"], self.options.peak_threshold
        )
        return CropPeaks(points=points, values=values)


class ExportedMultiClassCenteredInstanceLayer(
    ExportedCenteredInstanceLayer, MultiClassCenteredInstanceLayer
):
    """As :class:`ExportedCenteredInstanceLayer`, plus each crop's ``class_probs``."""

    model_type = MultiClassCenteredInstanceLayer.model_type

    def decode(self, outputs: dict[str, torch.Tensor], input_scale: float) -> CropPeaks:
        peaks = super().decode(outputs, input_scale)
        peaks.class_probs = outputs["class_probs"].float()
        return peaks


class ExportedBottomUpLayer(BakedDecodeMixin, BottomUpLayer):
    """Reads peak slots and all-pairs ``line_scores``; grouping is the torch layer's."""

    def score_connections(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> ScoredPeaks:
        threshold = self.options.peak_threshold
        scores = outputs["line_scores"].float()
        dropped = outputs["dropped_peak_vals"].float()
        self.check_overflow(dropped, threshold, scores.shape[-1], self.config.node_names)
        b, n, k, slot_id, valid = flatten_slots(outputs, threshold)
        edge, src, dst, line = [], [], [], []
        for e, (src_node, dst_node) in enumerate(self.paf_edges):
            pair = valid[:, src_node, :, None] & valid[:, dst_node, None, :]
            pb, i, j = torch.nonzero(pair, as_tuple=True)
            edge.append(torch.full_like(pb, e))
            src.append(slot_id[pb, src_node, i])
            dst.append(slot_id[pb, dst_node, j])
            line.append(scores[pb, e, i, j])
        empty = torch.zeros(0, dtype=torch.long)
        cands = Candidates(
            torch.cat(edge) if edge else empty,
            torch.cat(src) if src else empty,
            torch.cat(dst) if dst else empty,
        )
        return ScoredPeaks(
            points=outputs["peaks"].float()[b, n, k],
            values=outputs["peak_vals"].float()[b, n, k],
            sample=b,
            channel=n,
            cands=cands,
            line_scores=torch.cat(line) if line else torch.zeros(0),
        )


class ExportedBottomUpMultiClassLayer(BakedDecodeMixin, BottomUpMultiClassLayer):
    """Reads peak slots and the ``class_probs`` sampled at them; assignment is the torch layer's."""

    def find_class_peaks(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> ClassPeaks:
        threshold = self.options.peak_threshold
        slots = outputs["peak_vals"].shape[-1]
        self.check_overflow(
            outputs["dropped_peak_vals"].float(), threshold, slots, self.config.node_names
        )
        b, n, k, _, _ = flatten_slots(outputs, threshold)
        return ClassPeaks(
            points=outputs["peaks"].float()[b, n, k],
            values=outputs["peak_vals"].float()[b, n, k],
            sample=b,
            channel=n,
            class_probs=outputs["class_probs"].float()[b, n, k],
        )
