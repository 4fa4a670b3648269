"""Centroid models: local peaks of a one-channel map, one per animal.

Used alone (centroid-only output: the centroid is written on the anchor node,
or node 0 when the model was trained on bounding-box centres) and as stage 1
of top-down.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.layers.base import InferenceLayer, PreprocInfo, grid_to_frame


@dataclass
class Centroids:
    """Per-frame centroids, NaN-padded to a common count."""

    points: torch.Tensor  # (B, K, 2) in size-matched (not original) frame pixels
    values: torch.Tensor  # (B, K), 0 in padded slots
    valid: torch.Tensor  # (B, K) bool


def _slots(
    values: torch.Tensor, sample: torch.Tensor, counts: torch.Tensor, width: int
) -> torch.Tensor:
    """Output slot of each peak: raster rank, or value rank where a frame overflows ``width``."""
    starts = torch.cumsum(counts, 0) - counts
    raster_rank = torch.arange(len(sample), device=sample.device) - starts[sample]
    # Stable sort by value (desc), then by sample: peaks grouped per frame, strongest first.
    by_value = torch.sort(values, descending=True, stable=True).indices
    grouped = by_value[torch.sort(sample[by_value], stable=True).indices]
    value_rank = torch.empty_like(raster_rank)
    value_rank[grouped] = torch.arange(len(sample), device=sample.device) - starts[sample[grouped]]
    overflow = counts[sample] > width
    return torch.where(overflow, value_rank, raster_rank)


class CentroidLayer(InferenceLayer):
    model_type = "centroid"

    @property
    def threshold(self) -> float:
        return self.stage1_threshold

    def find_centroids(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> Centroids:
        """Local peaks -> size-matched frame pixels, top-``max_instances`` by value per frame.

        Frames with more peaks than ``max_instances`` keep the strongest (sorted by
        value); others keep raster order, as sleap-nn does.
        """
        opts = self.options
        points, values, sample, _ = self.local_peaks(outputs, self.threshold)
        points = points * (self.config.confmap_head.output_stride / info.input_scale)
        batch = len(info.eff_scale)
        counts = torch.bincount(sample, minlength=batch)
        width = int(counts.max()) if counts.numel() and len(sample) else 0
        if opts.max_instances is not None:
            width = min(width, opts.max_instances)
        width = max(width, 1)
        slot = _slots(values, sample, counts, width)
        keep = slot < width
        out_pts = torch.full(
            (batch, width, 2), float("nan"), dtype=points.dtype, device=points.device
        )
        out_val = torch.zeros((batch, width), dtype=values.dtype, device=values.device)
        out_ok = torch.zeros((batch, width), dtype=torch.bool, device=values.device)
        s, k = sample[keep], slot[keep]
        out_pts[s, k] = points[keep]
        out_val[s, k] = values[keep]
        out_ok[s, k] = True
        return Centroids(points=out_pts, values=out_val, valid=out_ok)

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        cents = self.find_centroids(outputs, info)
        pts = grid_to_frame(cents.points, 1, 1.0, info.eff_scale).cpu().numpy()
        vals = cents.values.cpu().numpy()
        valid = cents.valid.cpu().numpy()
        batch, width = valid.shape
        node = self.config.anchor_index or 0
        points = np.full((batch, width, self.n_nodes, 2), np.nan, np.float32)
        scores = np.full((batch, width, self.n_nodes), np.nan, np.float32)
        points[:, :, node] = pts
        scores[:, :, node] = np.where(valid, vals, np.nan)
        preds = BatchPredictions(
            points=points, point_scores=scores, instance_scores=vals, valid=valid
        )
        preds.extras["centroids"] = pts
        self._keep_maps(preds, outputs)
        return preds
