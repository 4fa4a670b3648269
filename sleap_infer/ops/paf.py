"""Part-affinity-field line scores for every candidate connection, in one batched pass.

A candidate is a (source peak, destination peak) pair of one skeleton edge in
one frame. Its score is the mean, over ``n_points`` samples on the segment
between the peaks, of the PAF vector dotted with the segment's unit vector,
plus a penalty for segments longer than ``max_edge_length``. All candidates
of all frames and edges are scored together (no per-frame loop); the
formulas and rounding follow sleap-nn so scores match it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass
class Candidates:
    """All candidate connections of a batch: indices into the batch's peak list."""

    edge: torch.Tensor  # (M,) long, skeleton edge index
    src: torch.Tensor  # (M,) long, source peak
    dst: torch.Tensor  # (M,) long, destination peak

    def __len__(self) -> int:
        return int(self.edge.shape[0])


def connection_candidates(
    sample: torch.Tensor, channel: torch.Tensor, edges: Sequence[tuple[int, int]]
) -> Candidates:
    """Every same-frame (src node peak, dst node peak) pair, for every edge."""
    device = sample.device
    parts_e, parts_s, parts_d = [], [], []
    for k, (src_node, dst_node) in enumerate(edges):
        src = torch.nonzero(channel == src_node).flatten()
        dst = torch.nonzero(channel == dst_node).flatten()
        same = sample[src][:, None] == sample[dst][None, :]
        si, di = torch.nonzero(same, as_tuple=True)
        parts_e.append(torch.full((si.numel(),), k, dtype=torch.long, device=device))
        parts_s.append(src[si])
        parts_d.append(dst[di])
    if not parts_e:
        empty = torch.zeros(0, dtype=torch.long, device=device)
        return Candidates(empty, empty, empty)
    return Candidates(torch.cat(parts_e), torch.cat(parts_s), torch.cat(parts_d))


def max_edge_length(pafs: torch.Tensor, paf_stride: int, ratio: float) -> float:
    """Length (input pixels) past which connections are penalised.

    Deliberately includes the channel count in the max, as sleap-nn does (it takes the
    max over all three dims of the channels-last PAF tensor).
    """
    channels, height, width = pafs.shape[-3:]
    return ratio * max(channels, height, width) * paf_stride


CHUNK = 1 << 18
"""Candidates scored per pass: bounds memory when an untrained model emits many peaks."""


def score_candidates(
    pafs: torch.Tensor,
    points: torch.Tensor,
    sample: torch.Tensor,
    cands: Candidates,
    paf_stride: int,
    n_points: int = 10,
    max_edge_length_ratio: float = 0.25,
    dist_penalty_weight: float = 1.0,
) -> torch.Tensor:
    """Line score of every candidate; NaN for zero-length pairs.

    Args:
        pafs: ``(B, 2E, H, W)``; channel ``2k`` is edge ``k``'s x component, ``2k+1`` its y.
        points: ``(P, 2)`` peaks as ``(x, y)`` in network-input pixels.
        sample: ``(P,)`` frame of each peak.
    """
    limit = max_edge_length(pafs, paf_stride, max_edge_length_ratio)
    parts = [
        _score(
            pafs,
            points,
            sample,
            Candidates(
                cands.edge[i : i + CHUNK], cands.src[i : i + CHUNK], cands.dst[i : i + CHUNK]
            ),
            paf_stride,
            n_points,
            limit,
            dist_penalty_weight,
        )
        for i in range(0, len(cands), CHUNK)
    ]
    if not parts:
        return torch.zeros(0, dtype=pafs.dtype, device=pafs.device)
    return torch.cat(parts)


def _score(
    pafs: torch.Tensor,
    points: torch.Tensor,
    sample: torch.Tensor,
    cands: Candidates,
    paf_stride: int,
    n_points: int,
    limit: float,
    dist_penalty_weight: float,
) -> torch.Tensor:
    height, width = pafs.shape[-2:]
    src = points[cands.src].to(torch.float32)
    dst = points[cands.dst].to(torch.float32)
    t = torch.linspace(0, 1, n_points, dtype=torch.float32, device=points.device)
    # sleap-nn interpolates with slope (dst - src) / (1 + eps); copied for identical rounding.
    slope = (dst - src) / (1.0 + torch.finfo(torch.float32).eps)
    # x and y sampled apart (same float32 operations as on (M, n_points, 2), without strided
    # views), then one flat gather per PAF component instead of four-tensor advanced
    # indexing: the same elements, several times faster once crowds make M (~n^2) large.
    col = _grid_index(src[:, 0], slope[:, 0], t, paf_stride, width)
    row = _grid_index(src[:, 1], slope[:, 1], t, paf_stride, height)
    plane = height * width
    x_plane = (sample[cands.src] * pafs.shape[1] + 2 * cands.edge) * plane
    flat_index = (row * width).add_(col).add_(x_plane[:, None])
    flat = pafs.reshape(-1)
    paf_x = flat[flat_index]
    paf_y = flat[flat_index.add_(plane)]

    vec = dst - src
    length = torch.linalg.vector_norm(vec, dim=1)
    unit = vec / length[:, None]
    dots = paf_x * unit[:, None, 0] + paf_y * unit[:, None, 1]  # (M, n_points)
    penalty = torch.clamp(limit / length - 1, max=0) * dist_penalty_weight
    return dots.mean(dim=1) + penalty


def _grid_index(
    start: torch.Tensor, slope: torch.Tensor, t: torch.Tensor, paf_stride: int, size: int
) -> torch.Tensor:
    """``(M, n_points)`` PAF grid index of one coordinate along each segment, clamped."""
    line = start[:, None] + slope[:, None] * t[None, :]
    return torch.round(line / paf_stride).to(torch.long).clamp_(0, size - 1)
