"""Single-instance models: one global peak per node, one animal per frame."""

from __future__ import annotations

import torch

from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.layers.base import InferenceLayer, PreprocInfo, grid_to_frame


class SingleInstanceLayer(InferenceLayer):
    model_type = "single_instance"

    def find_peaks(
        self, outputs: dict[str, torch.Tensor], info: PreprocInfo
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, N, 2)`` points in original frame pixels (NaN below threshold), ``(B, N)`` values.

        The decode step alone, so exported graphs (which decode in-graph) can replace it.
        """
        points, values = self.global_peaks(outputs)
        stride = self.config.confmap_head.output_stride
        return grid_to_frame(points, stride, info.input_scale, info.eff_scale), values

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        points, values = self.find_peaks(outputs, info)
        pts = points.cpu().numpy()[:, None]  # (B, 1, N, 2)
        vals = values.cpu().numpy()[:, None]
        valid = ~(pts != pts).all(axis=(2, 3))  # NaN != NaN: an all-NaN instance is dropped
        # sleap-nn scores a single instance by the sum of its node confidences.
        scores = vals.sum(axis=2)
        preds = BatchPredictions(points=pts, point_scores=vals, instance_scores=scores, valid=valid)
        self._keep_maps(preds, outputs)
        return preds
