"""Centered-instance models: one animal per crop, one global peak per node.

Used as stage 2 of top-down (see :mod:`sleap_infer.layers.topdown`); on its
own it treats every input image as a crop. Crops get the model's own channel
coercion, input scale and stride padding, but no size matcher (sleap-nn does
the same).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sleap_infer.errors import ConfigError
from sleap_infer.layers.base import InferenceLayer, PreprocInfo
from sleap_infer.ops.peaks import find_global_peaks
from sleap_infer.ops.preprocess import coerce_channels
from sleap_infer.predictions import BatchPredictions
from sleap_infer.timing import stage


@dataclass
class CropPeaks:
    """Per-crop results, coordinates in crop pixels (before any crop offset)."""

    points: torch.Tensor  # (n, N, 2), NaN below threshold
    values: torch.Tensor  # (n, N), 0 below threshold
    class_probs: torch.Tensor | None = None  # (n, n_classes), multi-class models only


class CenteredInstanceLayer(InferenceLayer):
    model_type = "centered_instance"
    head_name = "CenteredInstanceConfmapsHead"

    @property
    def crop_size(self) -> int:
        """Crop side from the training config (``preprocessing.crop_size``)."""
        size = self.preprocessing.crop_size
        if size is None or size < 1:
            raise ConfigError(
                f"{self.model_type} model has no preprocessing.crop_size in its config"
            )
        return size

    def crop_input(self, crops: torch.Tensor) -> torch.Tensor:
        """uint8 crops -> network input: channel coercion, input scale, stride padding."""
        pre = self.preprocessing
        return self.network_input(coerce_channels(crops, pre.ensure_rgb, pre.ensure_grayscale))

    def run_crops(self, crops: torch.Tensor) -> CropPeaks:
        """Crops ``(n, C, h, w)`` uint8 -> peaks in crop pixels."""
        with stage("crop preprocess"):
            x = self.crop_input(crops)
        with stage("network"):
            outputs = self.backend(x)
        return self.decode(outputs, self.preprocessing.scale)

    def decode(self, outputs: dict[str, torch.Tensor], input_scale: float) -> CropPeaks:
        cms = outputs[self.head_name]
        opts = self.options
        points, values = find_global_peaks(
            cms, opts.peak_threshold, refine=opts.refine, patch_size=opts.integral_patch_size
        )
        stride = self.config.head(self.head_name).output_stride
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
        if self.head_name in outputs:
            self._maybe_keep(preds, "confmaps", outputs[self.head_name])
        return preds


class MultiClassCenteredInstanceLayer(CenteredInstanceLayer):
    """Centered-instance confmaps plus one class-probability vector per crop."""

    model_type = "multi_class_topdown"
    class_head = "ClassVectorsHead"

    def decode(self, outputs: dict[str, torch.Tensor], input_scale: float) -> CropPeaks:
        peaks = super().decode(outputs, input_scale)
        peaks.class_probs = outputs[self.class_head]
        return peaks
