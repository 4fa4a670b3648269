"""Bottom-up scoring with static shapes: PAF scores of all peak-slot pairs, class maps at peaks.

The host versions (:func:`sleap_infer.ops.paf.score_candidates`,
:func:`sleap_infer.ops.identity.sample_class_maps`) work on a data-dependent
list of peaks. Here every channel has ``K`` peak slots, so an edge has ``K x K``
candidate pairs, all scored; the host later reads only the pairs whose two
peaks pass its threshold. Per pair the arithmetic is the host's, in the same
float order (sampling positions, rounding to PAF pixels, the unit vector, the
distance penalty), so the scores agree to float rounding and matching on the
host gives the same connections.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def _finite_or_zero(x: torch.Tensor) -> torch.Tensor:
    """Positions used only as indices: an empty slot's NaN must not become a wild index."""
    return torch.where(torch.isfinite(x), x, torch.zeros_like(x))


def pixel_index(points: torch.Tensor, height: int, width: int, stride: float) -> torch.Tensor:
    """Flat index ``row * width + col`` of the map pixel nearest to ``points / stride``.

    ``points`` is ``(..., 2)`` as ``(x, y)``; the pixel is clamped to the map.
    """
    grid = torch.round(_finite_or_zero(points) / stride).to(torch.long)
    col = grid[..., 0].clamp(0, width - 1)
    row = grid[..., 1].clamp(0, height - 1)
    return row * width + col


def paf_line_scores(
    pafs: torch.Tensor,
    points: torch.Tensor,
    edges: Sequence[tuple[int, int]],
    paf_stride: int,
    n_points: int,
    max_edge_length: float,
    dist_penalty_weight: float,
) -> torch.Tensor:
    """Line score of every (source slot, destination slot) pair of every edge.

    Args:
        pafs: ``(B, 2E, H, W)``; channel ``2e`` is edge ``e``'s x component, ``2e+1`` its y.
        points: ``(B, N, K, 2)`` peak slots as ``(x, y)`` in network-input pixels.

    Returns:
        ``(B, E, K, K)``: entry ``[b, e, i, j]`` scores source slot ``i`` against
        destination slot ``j``; NaN for zero-length pairs (as on the host).
    """
    batch, _, height, width = pafs.shape
    n_edges, slots = len(edges), points.shape[2]
    src = points[:, [s for s, _ in edges]][:, :, :, None, :]  # (B, E, K, 1, 2)
    dst = points[:, [d for _, d in edges]][:, :, None, :, :]  # (B, E, 1, K, 2)
    vec = dst - src  # (B, E, K, K, 2)
    # The host interpolates with slope (dst - src) / (1 + eps); kept for identical rounding.
    slope = vec / (1.0 + torch.finfo(torch.float32).eps)
    t = torch.linspace(0, 1, n_points, dtype=torch.float32, device=points.device)
    line = src[..., None, :] + slope[..., None, :] * t[:, None]  # (B, E, K, K, P, 2)
    index = pixel_index(line, height, width, paf_stride).reshape(batch, n_edges, -1)
    components = pafs.reshape(batch, n_edges, 2, height * width)
    shape = (batch, n_edges, slots, slots, n_points)
    paf_x = torch.gather(components[:, :, 0], 2, index).reshape(shape)
    paf_y = torch.gather(components[:, :, 1], 2, index).reshape(shape)
    length = torch.linalg.vector_norm(vec, dim=-1)  # (B, E, K, K)
    unit = vec / length[..., None]
    dots = paf_x * unit[..., None, 0] + paf_y * unit[..., None, 1]
    penalty = torch.clamp(max_edge_length / length - 1, max=0) * dist_penalty_weight
    return dots.mean(dim=-1) + penalty


def sample_maps_at(maps: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """Every channel of ``maps`` at the pixel nearest to each point (clamped to the map).

    Args:
        maps: ``(B, M, H, W)``, e.g. one class map per identity.
        points: ``(B, N, K, 2)`` as ``(x, y)`` in map pixels.

    Returns:
        ``(B, N, K, M)``.
    """
    batch, channels, height, width = maps.shape
    nodes, slots = points.shape[1:3]
    index = pixel_index(points, height, width, 1.0).reshape(batch, 1, nodes * slots)
    flat = maps.reshape(batch, channels, height * width)
    values = torch.gather(flat, 2, index.expand(batch, channels, nodes * slots))
    return values.reshape(batch, channels, nodes, slots).permute(0, 2, 3, 1)
