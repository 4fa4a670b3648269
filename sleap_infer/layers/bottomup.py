"""Bottom-up models: all body-part peaks in the frame, grouped into animals by PAFs.

Peak finding and PAF line scoring of every candidate pair run batched on the
backend's device; the matching and assembly (small, sequential) run on the
host per frame. Coordinates and scores follow sleap-nn exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.layers.base import InferenceLayer, PreprocInfo
from sleap_infer.ops.grouping import FrameInstances, edge_order, group_frame
from sleap_infer.ops.paf import Candidates, connection_candidates, score_candidates


@dataclass
class ScoredPeaks:
    """A batch's peaks and scored candidate connections: what grouping needs.

    Peaks are sample-major (each frame a contiguous run) and, within a frame and
    node, in raster order, as the torch path finds them.
    """

    points: torch.Tensor  # (P, 2) (x, y) in size-matched frame pixels
    values: torch.Tensor  # (P,)
    sample: torch.Tensor  # (P,) frame of each peak
    channel: torch.Tensor  # (P,) node of each peak
    cands: Candidates  # indices into the peaks above
    line_scores: torch.Tensor  # (M,) one per candidate


def pack_instances(
    frames: list[FrameInstances],
    n_nodes: int,
    eff_scale: np.ndarray,
    max_instances: int | None,
) -> BatchPredictions:
    """Per-frame instance lists (size-matched pixels) -> padded batch, in original pixels.

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
        points[b, :n] = inst.points / eff_scale[b]
        values[b, :n] = inst.peak_values
        scores[b, :n] = inst.scores
        valid[b, :n] = True
    return BatchPredictions(points=points, point_scores=values, instance_scores=scores, valid=valid)


class BottomUpLayer(InferenceLayer):
    model_type = "bottomup"

    @property
    def paf_edges(self) -> tuple[tuple[int, int], ...]:
        return self.config.paf_edges

    def score_connections(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> ScoredPeaks:
        """Local peaks and the PAF line score of every same-frame pair along each edge.

        The decode step alone, so exported graphs (which score in-graph) can replace it.
        """
        paf_head = self.config.head_for("pafs")
        opts = self.options
        points, values, sample, channel = self.local_peaks(outputs)
        points = points * self.config.confmap_head.output_stride
        cands = connection_candidates(sample, channel, self.paf_edges)
        line_scores = score_candidates(
            outputs[paf_head.name],
            points,
            sample,
            cands,
            paf_stride=paf_head.output_stride,
            n_points=opts.n_points,
            max_edge_length_ratio=opts.max_edge_length_ratio,
            dist_penalty_weight=opts.dist_penalty_weight,
        )
        return ScoredPeaks(points / info.input_scale, values, sample, channel, cands, line_scores)

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        scored = self.score_connections(outputs, info)
        frames = self._group(
            scored.points.cpu().numpy(),
            scored.values.cpu().numpy(),
            scored.sample.cpu().numpy(),
            scored.channel.cpu().numpy(),
            scored.cands.edge.cpu().numpy(),
            scored.cands.src.cpu().numpy(),
            scored.cands.dst.cpu().numpy(),
            scored.line_scores.cpu().numpy(),
            batch=len(info.eff_scale),
        )
        preds = pack_instances(frames, self.n_nodes, info.eff_scale, self.options.max_instances)
        self._keep_maps(preds, outputs)
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
