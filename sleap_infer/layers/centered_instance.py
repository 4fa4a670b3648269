"""Centered-instance models: one animal per crop, one global peak per node.

Used as stage 2 of top-down (see :mod:`sleap_infer.layers.topdown`); on its
own it treats every input image as a crop. Crops get the model's own channel
coercion, input scale and stride padding, but no size matcher (sleap-nn does
the same).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.timing import stage
from sleap_infer.layers.base import InferenceLayer, PreprocInfo


@dataclass
class CropPeaks:
    """Per-crop results, coordinates in crop pixels (before any crop offset)."""

    points: torch.Tensor  # (n, N, 2), NaN below threshold
    values: torch.Tensor  # (n, N), 0 below threshold
    class_probs: torch.Tensor | None = None  # (n, n_classes), multi-class models only


class CenteredInstanceLayer(InferenceLayer):
    model_type = "centered_instance"

    def run_crops(self, crops: torch.Tensor) -> CropPeaks:
        """Crops ``(n, C, h, w)`` uint8 -> peaks in crop pixels."""
        with stage("crop preprocess"):
            x = self.crop_input(crops)
        with stage("network"):
            outputs = self.call_backend(x)
        return self.decode(outputs, self.preprocessing.scale)

    def decode(self, outputs: dict[str, torch.Tensor], input_scale: float) -> CropPeaks:
        points, values = self.global_peaks(outputs)
        stride = self.config.confmap_head.output_stride
        return CropPeaks(points=points * (stride / input_scale), values=values)

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        """Each input image is one crop holding (at most) one animal."""
        peaks = self.decode(outputs, info.input_scale)
        scale = torch.as_tensor(info.eff_scale, dtype=peaks.points.dtype)
        pts = (peaks.points.cpu() / scale[:, None, None]).numpy()[:, None]
        vals = peaks.values.cpu().numpy()[:, None]
        valid = ~(pts != pts).all(axis=(2, 3))  # an all-NaN instance is dropped
        preds = BatchPredictions(
            points=pts, point_scores=vals, instance_scores=vals.sum(axis=2), valid=valid
        )
        self._keep_maps(preds, outputs)
        return preds


class MultiClassCenteredInstanceLayer(CenteredInstanceLayer):
    """Centered-instance confmaps plus one class-probability vector per crop."""

    model_type = "multi_class_topdown"

    def decode(self, outputs: dict[str, torch.Tensor], input_scale: float) -> CropPeaks:
        peaks = super().decode(outputs, input_scale)
        peaks.class_probs = outputs[self.config.head_for("class_vectors").name]
        return peaks
