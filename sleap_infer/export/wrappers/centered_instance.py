"""Top-down stage 2 exports: one crop in, one global peak per node out (plus classes).

The graph is traced at the crop size (after the model's own input scale and
stride padding). Crops are cut on the host from the size-matched frames,
exactly as on the torch path, so keypoints stay equal to it; coordinates come
out in crop pixels (the host adds each crop's top-left).
"""

from __future__ import annotations

import torch

from sleap_infer.export.wrappers.base import OutputSpec
from sleap_infer.export.wrappers.single_instance import SingleInstanceWrapper


class CenteredInstanceWrapper(SingleInstanceWrapper):
    """Outputs ``peaks`` (B, N, 2) in crop pixels, ``peak_vals`` (B, N), ``peak_valid`` (B, N)."""

    model_type = "centered_instance"


class MultiClassTopDownWrapper(CenteredInstanceWrapper):
    """As :class:`CenteredInstanceWrapper`, plus ``class_probs`` (B, n_classes) per crop.

    The class head ends in a softmax, so these are probabilities; the Hungarian
    matching of a frame's crops to classes needs all crops and stays on the host.
    """

    model_type = "multi_class_topdown"
    output_names = ("peaks", "peak_vals", "peak_valid", "class_probs")

    def forward(
        self, image: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        heads = self.head_outputs(image)  # one network pass for both heads
        points, values, valid = self.global_peaks(heads[self.confmap_name])
        return points, values, valid, heads[self.head_for("class_vectors")[0]]

    def output_specs(self, input_shape: tuple[int, int, int, int]) -> list[OutputSpec]:
        classes = self.config.head_for("class_vectors").channels
        return [
            *super().output_specs(input_shape),
            OutputSpec("class_probs", "float32", ("batch", classes)),
        ]
