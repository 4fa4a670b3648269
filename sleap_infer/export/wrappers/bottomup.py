"""Bottom-up exports: per-node peak slots in the graph, grouping on the host.

Both wrappers keep the ``K = max_peaks`` strongest local maxima of every node
(refined, raster order, empty slots ``-inf``) and report the first value that
did not fit, so the host can warn when K was too small. Then:

* ``bottomup`` scores every ``K x K`` slot pair of every skeleton edge against
  the PAFs, with sleap-nn's distance penalty; the Hungarian matching and
  instance assembly (sequential, tiny) run on the host;
* ``multi_class_bottomup`` samples every class map at every slot; the per-node
  Hungarian assignment of peaks to classes runs on the host.

The arithmetic per peak and per pair is the torch path's, in the same order,
so the host's grouping sees the same numbers and makes the same choices.
"""

from __future__ import annotations

import torch

from sleap_infer.export.graph_ops import LocalPeaks, local_peak_candidates, refined_points
from sleap_infer.export.graph_scoring import paf_line_scores, sample_maps_at
from sleap_infer.export.wrappers.base import ExportWrapper, OutputSpec
from sleap_infer.ops.paf import max_edge_length

Outputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


class _PeakSlotsWrapper(ExportWrapper):
    """Shared part: the confidence-map head's peak slots, in confmap grid units."""

    slot_values = ("peak_vals",)

    def peak_slots(self, cms: torch.Tensor) -> tuple[LocalPeaks, torch.Tensor]:
        """Local peak slots and their refined ``(B, N, K, 2)`` grid positions."""
        peaks = local_peak_candidates(cms, self.decode.max_peaks)
        grid = refined_points(
            cms,
            peaks.x,
            peaks.y,
            self.decode.refine,
            self.decode.integral_patch_size,
            self.decode.refine_guard,
        )
        return peaks, grid

    def peak_specs(self, input_shape: tuple[int, int, int, int]) -> list[OutputSpec]:
        nodes, k = self.config.confmap_head.channels, self.slots(input_shape)
        return [
            OutputSpec("peaks", "float32", ("batch", nodes, k, 2)),
            OutputSpec("peak_vals", "float32", ("batch", nodes, k)),
            OutputSpec("peak_valid", "bool", ("batch", nodes, k)),
            OutputSpec("dropped_peak_vals", "float32", ("batch", nodes)),
        ]


class BottomUpWrapper(_PeakSlotsWrapper):
    """Outputs ``peaks`` (B, N, K, 2) in size-matched pixels, ``peak_vals`` (B, N, K),
    ``peak_valid`` (B, N, K), ``dropped_peak_vals`` (B, N) and ``line_scores`` (B, E, K, K).

    ``line_scores[b, e, i, j]`` scores slot ``i`` of edge ``e``'s source node against
    slot ``j`` of its destination node; only pairs of two valid slots mean anything.
    """

    model_type = "bottomup"
    output_names = ("peaks", "peak_vals", "peak_valid", "dropped_peak_vals", "line_scores")
    decode_fields = (
        "refine",
        "integral_patch_size",
        "refine_guard",
        "max_peaks",
        "n_points",
        "max_edge_length_ratio",
        "dist_penalty_weight",
    )

    def forward(self, image: torch.Tensor) -> Outputs:
        heads = self.head_outputs(image)
        paf_name, paf_stride = self.head_for("pafs")
        cms, pafs = heads[self.confmap_name], heads[paf_name]
        peaks, grid = self.peak_slots(cms)
        # Network-input pixels, as on the host.
        points = grid * self.config.confmap_head.output_stride
        scores = paf_line_scores(
            pafs,
            points,
            self.config.paf_edges,
            paf_stride=paf_stride,
            n_points=self.decode.n_points,
            max_edge_length=max_edge_length(pafs, paf_stride, self.decode.max_edge_length_ratio),
            dist_penalty_weight=self.decode.dist_penalty_weight,
        )
        valid = peaks.values > self.decode.peak_threshold
        scale = self.config.preprocessing.scale
        return points / scale, peaks.values, valid, peaks.dropped, scores

    def output_specs(self, input_shape: tuple[int, int, int, int]) -> list[OutputSpec]:
        k = self.slots(input_shape)
        edges = len(self.config.paf_edges)
        return [
            *self.peak_specs(input_shape),
            OutputSpec("line_scores", "float32", ("batch", edges, k, k)),
        ]


class MultiClassBottomUpWrapper(_PeakSlotsWrapper):
    """Outputs the peak slots as :class:`BottomUpWrapper` plus ``class_probs``
    (B, N, K, n_classes): the class maps at each slot's nearest class-map pixel."""

    model_type = "multi_class_bottomup"
    output_names = ("peaks", "peak_vals", "peak_valid", "dropped_peak_vals", "class_probs")
    decode_fields = ("refine", "integral_patch_size", "refine_guard", "max_peaks")

    def forward(self, image: torch.Tensor) -> Outputs:
        heads = self.head_outputs(image)
        class_name, class_stride = self.head_for("class_maps")
        cms, class_maps = heads[self.confmap_name], heads[class_name]
        peaks, grid = self.peak_slots(cms)
        # Into class-map pixels and back, in the torch path's order of operations.
        in_class_pixels = grid * self.config.confmap_head.output_stride / class_stride
        probs = sample_maps_at(class_maps, in_class_pixels)
        points = in_class_pixels * class_stride / self.config.preprocessing.scale
        valid = peaks.values > self.decode.peak_threshold
        return points, peaks.values, valid, peaks.dropped, probs

    def output_specs(self, input_shape: tuple[int, int, int, int]) -> list[OutputSpec]:
        nodes, k = self.config.confmap_head.channels, self.slots(input_shape)
        classes = self.config.head_for("class_maps").channels
        return [
            *self.peak_specs(input_shape),
            OutputSpec("class_probs", "float32", ("batch", nodes, k, classes)),
        ]
