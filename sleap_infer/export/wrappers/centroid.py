"""Centroid export: up to ``max_peaks`` local maxima of the one-channel map."""

from __future__ import annotations

import torch

from sleap_infer.export.graph_ops import local_peak_candidates, refined_points
from sleap_infer.export.wrappers.base import ExportWrapper, OutputSpec


class CentroidWrapper(ExportWrapper):
    """Outputs ``centroids`` (B, K, 2), ``centroid_vals`` (B, K), ``instance_valid`` (B, K)
    and ``dropped_centroid_vals`` (B,).

    The K slots hold the strongest local maxima in raster order; empty slots
    have value ``-inf``. ``instance_valid`` marks values above the baked threshold.
    ``dropped_centroid_vals`` is the strongest maximum that did not fit (``-inf``
    if all did), so the host can tell when K was too small for a frame.
    """

    model_type = "centroid"
    output_names = ("centroids", "centroid_vals", "instance_valid", "dropped_centroid_vals")
    decode_fields = ("refine", "integral_patch_size", "refine_guard", "max_peaks")
    slot_values = ("centroid_vals",)

    def forward(
        self, image: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        cms = self.confmaps(image)
        peaks = local_peak_candidates(cms, self.decode.max_peaks)
        points = refined_points(
            cms,
            peaks.x,
            peaks.y,
            self.decode.refine,
            self.decode.integral_patch_size,
            self.decode.refine_guard,
        )
        points, values = points[:, 0], peaks.values[:, 0]  # one channel
        return (
            points * self.coordinate_scale,
            values,
            values > self.decode.peak_threshold,
            peaks.dropped[:, 0],
        )

    def output_specs(self, input_shape: tuple[int, int, int, int]) -> list[OutputSpec]:
        k = self.slots(input_shape)
        return [
            OutputSpec("centroids", "float32", ("batch", k, 2)),
            OutputSpec("centroid_vals", "float32", ("batch", k)),
            OutputSpec("instance_valid", "bool", ("batch", k)),
            OutputSpec("dropped_centroid_vals", "float32", ("batch",)),
        ]
