"""Multi-class bottom-up models: peaks grouped by identity class maps instead of PAFs.

Instance slot ``i`` of every frame *is* class ``i`` (``BatchPredictions.class_ids``),
so the writer can attach the class's track. Instance score = mean node peak value,
class score = mean class probability over the instance's nodes (sleap-nn's choice).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.layers.base import InferenceLayer, PreprocInfo
from sleap_infer.ops.identity import group_peaks_by_class, nanmean_last, sample_class_maps


def keep_best_classes(valid: np.ndarray, scores: np.ndarray, max_instances: int) -> np.ndarray:
    """Mask out the lowest-scoring present classes of frames with more than ``max_instances``.

    Slots are not reordered, so each survivor keeps its class.
    """
    keep = valid.copy()
    for b in np.flatnonzero(valid.sum(axis=1) > max_instances):
        present = np.flatnonzero(valid[b])
        ranked = present[np.argsort(scores[b, present], kind="stable")[::-1]]
        keep[b, ranked[max_instances:]] = False
    return keep


@dataclass
class ClassPeaks:
    """A batch's peaks with the class probabilities at each: what identity grouping needs."""

    points: torch.Tensor  # (P, 2) (x, y) in size-matched frame pixels
    values: torch.Tensor  # (P,)
    sample: torch.Tensor  # (P,) frame of each peak, sample-major
    channel: torch.Tensor  # (P,) node of each peak (raster order within a frame and node)
    class_probs: torch.Tensor  # (P, n_classes)


class BottomUpMultiClassLayer(InferenceLayer):
    model_type = "multi_class_bottomup"

    @property
    def n_classes(self) -> int:
        return self.config.head_for("class_maps").channels

    def find_class_peaks(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> ClassPeaks:
        """Local peaks and the class maps sampled at them.

        The decode step alone, so exported graphs (which sample in-graph) can replace it.
        """
        class_head = self.config.head_for("class_maps")
        points, values, sample, channel = self.local_peaks(outputs)
        class_stride = class_head.output_stride
        # Into class-map pixels and back again, in sleap-nn's order of operations.
        points = points * self.config.confmap_head.output_stride / class_stride
        probs = sample_class_maps(outputs[class_head.name], points, sample)
        points = points * class_stride / info.input_scale
        return ClassPeaks(points, values, sample, channel, probs)

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        peaks = self.find_class_peaks(outputs, info)
        groups = group_peaks_by_class(
            peaks.class_probs.cpu().numpy(),
            peaks.points.cpu().numpy(),
            peaks.values.cpu().numpy(),
            peaks.sample.cpu().numpy(),
            peaks.channel.cpu().numpy(),
            n_samples=len(info.eff_scale),
            n_nodes=self.n_nodes,
        )
        eff = info.eff_scale.astype(np.float32)[:, None, None, None]
        pts = groups.points / eff
        valid = ~np.isnan(groups.values).all(axis=2)
        inst_scores = nanmean_last(groups.values)
        class_scores = nanmean_last(groups.class_probs)
        if self.options.max_instances is not None:
            valid = keep_best_classes(valid, inst_scores, self.options.max_instances)
        class_ids = np.broadcast_to(np.arange(self.n_classes, dtype=np.int32), valid.shape).copy()
        class_ids[~valid] = -1
        preds = BatchPredictions(
            points=np.where(valid[..., None, None], pts, np.nan).astype(np.float32),
            point_scores=groups.values,
            instance_scores=np.where(valid, inst_scores, 0).astype(np.float32),
            valid=valid,
            class_ids=class_ids,
            class_scores=class_scores,
        )
        preds.extras["node_class_probs"] = groups.class_probs
        self._keep_maps(preds, outputs)
        return preds
