"""Single-instance export: one global peak per node."""

from __future__ import annotations

import torch

from sleap_infer.export.graph_ops import refined_points
from sleap_infer.export.wrappers.base import ExportWrapper, OutputSpec
from sleap_infer.ops.peaks import global_peak_indices


class SingleInstanceWrapper(ExportWrapper):
    """Outputs ``peaks`` (B, N, 2) ``(x, y)``, ``peak_vals`` (B, N), ``peak_valid`` (B, N).

    Points are never NaN'd in the graph: the host applies its own threshold to
    ``peak_vals``; ``peak_valid`` (value >= the baked threshold) is for other consumers.
    """

    model_type = "single_instance"
    output_names = ("peaks", "peak_vals", "peak_valid")

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.global_peaks(self.confmaps(image))

    def global_peaks(self, cms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Maps ``(B, N, H, W)`` -> refined, scaled peaks, their values and validity flags."""
        x, y, values = global_peak_indices(cms)
        decode = self.decode
        points = refined_points(
            cms,
            x[..., None],
            y[..., None],
            decode.refine,
            decode.integral_patch_size,
            decode.refine_guard,
        )[:, :, 0]
        return points * self.coordinate_scale, values, values >= self.decode.peak_threshold

    def output_specs(self, input_shape: tuple[int, int, int, int]) -> list[OutputSpec]:
        nodes = self.config.confmap_head.channels
        return [
            OutputSpec("peaks", "float32", ("batch", nodes, 2)),
            OutputSpec("peak_vals", "float32", ("batch", nodes)),
            OutputSpec("peak_valid", "bool", ("batch", nodes)),
        ]
