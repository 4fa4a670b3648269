"""Bottom-up models: all body-part peaks in the frame, grouped into animals by PAFs.

Peak finding and PAF line scoring of every candidate pair run batched on the
backend's device; the matching and assembly (small, sequential) run on the
host per frame. Coordinates and scores follow sleap-nn exactly.
"""

from __future__ import annotations

import numpy as np
import torch

from sleap_infer.layers.base import InferenceLayer, PreprocInfo
from sleap_infer.ops.grouping import FrameInstances, edge_order, group_frame
from sleap_infer.ops.paf import connection_candidates, score_candidates
from sleap_infer.ops.peaks import find_local_peaks
from sleap_infer.predictions import BatchPredictions


def pack_instances(
    frames: list[FrameInstances],
    n_nodes: int,
    eff_scale: np.ndarray,
    input_scale: float,
    max_instances: int | None,
) -> BatchPredictions:
    """Per-frame instance lists -> padded batch, in original pixels.

    Frames with more instances than ``max_instances`` keep the best-scoring ones (in
    descending score order, as sleap-nn); others keep their grouping order.
    """
    kept: list[FrameInstances] = []
    for inst in frames:
        if max_instances is not None and len(inst.scores) > max_instances:
            order = np.argsort(inst.scores)[::-1][:max_instances]
            inst = FrameInstances(inst.points[order], inst.peak_values[order], inst.scores[order])
        kept.append(inst)
    width = max([len(f.scores) for f in kept] + [1])
    batch = len(kept)
    points = np.full((batch, width, n_nodes, 2), np.nan, np.float32)
    values = np.full((batch, width, n_nodes), np.nan, np.float32)
    scores = np.zeros((batch, width), np.float32)
    valid = np.zeros((batch, width), bool)
    for b, inst in enumerate(kept):
        n = len(inst.scores)
        points[b, :n] = inst.points / input_scale / eff_scale[b]
        values[b, :n] = inst.peak_values
        scores[b, :n] = inst.scores
        valid[b, :n] = True
    return BatchPredictions(points=points, point_scores=values, instance_scores=scores, valid=valid)


class BottomUpLayer(InferenceLayer):
    model_type = "bottomup"
    head_name = "MultiInstanceConfmapsHead"
    paf_head = "PartAffinityFieldsHead"

    @property
    def paf_edges(self) -> tuple[tuple[int, int], ...]:
        return self.config.paf_edges

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        cms = outputs[self.head_name]
        pafs = outputs[self.paf_head]
        opts = self.options
        points, values, sample, channel = find_local_peaks(
            cms, opts.peak_threshold, refine=opts.refine, patch_size=opts.integral_patch_size
        )
        points = points * self.config.head(self.head_name).output_stride
        edges = self.paf_edges
        cands = connection_candidates(sample, channel, edges)
        line_scores = score_candidates(
            pafs,
            points,
            sample,
            cands,
            paf_stride=self.config.head(self.paf_head).output_stride,
            n_points=opts.n_points,
            max_edge_length_ratio=opts.max_edge_length_ratio,
            dist_penalty_weight=opts.dist_penalty_weight,
        )
        frames = self._group(
            points.cpu().numpy(),
            values.cpu().numpy(),
            sample.cpu().numpy(),
            channel.cpu().numpy(),
            cands.edge.cpu().numpy(),
            cands.src.cpu().numpy(),
            cands.dst.cpu().numpy(),
            line_scores.cpu().numpy(),
            batch=cms.shape[0],
        )
        preds = pack_instances(
            frames, self.n_nodes, info.eff_scale, info.input_scale, opts.max_instances
        )
        self._maybe_keep(preds, "confmaps", cms)
        self._maybe_keep(preds, "pafs", pafs)
        return preds

    def _group(
        self,
        points: np.ndarray,
        values: np.ndarray,
        sample: np.ndarray,
        channel: np.ndarray,
        cand_edge: np.ndarray,
        cand_src: np.ndarray,
        cand_dst: np.ndarray,
        cand_score: np.ndarray,
        batch: int,
    ) -> list[FrameInstances]:
        """Per-frame grouping; peaks are sample-major, so each frame is a contiguous slice."""
        edges = self.paf_edges
        order = edge_order(edges)
        starts = np.searchsorted(sample, np.arange(batch + 1))
        cand_frame = sample[cand_src] if len(cand_src) else np.zeros(0, np.int64)
        frames = []
        for b in range(batch):
            lo, hi = starts[b], starts[b + 1]
            sel = cand_frame == b
            frames.append(
                group_frame(
                    points[lo:hi],
                    values[lo:hi],
                    channel[lo:hi],
                    cand_edge[sel],
                    cand_src[sel] - lo,
                    cand_dst[sel] - lo,
                    cand_score[sel],
                    n_nodes=self.n_nodes,
                    edges=edges,
                    order=order,
                    min_line_scores=self.options.min_line_scores,
                    min_instance_peaks=self.options.min_instance_peaks,
                )
            )
        return frames
