"""Bottom-up instance segmentation: center peaks, then each foreground pixel to its nearest center.

Follows sleap-nn 0.3.5 (``inference/segmentation.py``: ``find_center_peaks``,
``group_instances_from_offsets``) so masks match it bit for bit:

* a grid cell ``(x, y)`` stands for the input pixel ``(x*s + s/2, y*s + s/2)``, for
  pixels and centers alike (the half-cell convention the offsets were trained on);
* center peaks keep ties (``>=`` the max-pooled map, ``-inf`` padding, then a strict
  ``> threshold``) and collapse each 4-connected plateau to its first maximum in raster
  order: a flat-topped peak gives one center, not none (as a strict NMS would) or several;
* with ``max_instances``, ``torch.topk`` keeps the strongest centers and *reorders* them
  by value (otherwise they stay in component order);
* distances, the argmin (first center on ties) and the optional distance gate are
  float32 torch arithmetic in sleap-nn's operation order, on the CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from scipy import ndimage


@dataclass
class CenterPeaks:
    """One frame's instance centers on the head grid."""

    points: torch.Tensor  # (K, 2) float32 (x, y) grid cells
    values: torch.Tensor  # (K,) float32 raw heatmap value (the instance score)


@dataclass
class GridInstance:
    """One grouped instance: its mask on the padded head grid, its center and score."""

    mask: np.ndarray  # (h, w) bool
    center: tuple[float, float]  # (x, y) in network-input pixels
    score: float


def center_candidates(heatmaps: torch.Tensor, threshold: float, kernel: int) -> torch.Tensor:
    """``(B, 1, h, w)`` heatmaps -> ``(B, h, w)``: equal to the window max and above threshold."""
    pooled = F.max_pool2d(heatmaps, kernel_size=kernel, stride=1, padding=kernel // 2)
    return ((heatmaps >= pooled) & (heatmaps > threshold))[:, 0]


def plateau_peaks(heatmap: np.ndarray, candidates: np.ndarray) -> CenterPeaks:
    """One peak per 4-connected component of ``candidates``: its first maximum in raster order.

    Components come in ``scipy.ndimage.label`` order (raster order of their first pixel).
    """
    labels, n = ndimage.label(candidates)
    if n == 0:
        return CenterPeaks(torch.zeros((0, 2), dtype=torch.float32), torch.zeros(0))
    flat = labels.ravel()
    idx = np.flatnonzero(flat)
    lab = flat[idx]
    vals = heatmap.ravel()[idx]
    order = np.lexsort((idx, -vals, lab))  # by component, value descending, raster
    lab_sorted = lab[order]
    first = order[np.concatenate(([True], lab_sorted[1:] != lab_sorted[:-1]))]
    rows, cols = np.divmod(idx[first], heatmap.shape[1])
    points = np.stack([cols, rows], axis=1).astype(np.float32)
    return CenterPeaks(torch.from_numpy(points), torch.from_numpy(vals[first].astype(np.float32)))


def cap_peaks(peaks: CenterPeaks, max_instances: int | None) -> CenterPeaks:
    """At most ``max_instances`` centers, the strongest, in ``torch.topk`` order."""
    if max_instances is None or len(peaks.values) <= max_instances:
        return peaks
    values, keep = torch.topk(peaks.values, int(max_instances))
    return CenterPeaks(peaks.points[keep], values)


def find_center_peaks(
    heatmaps: torch.Tensor, threshold: float, kernel: int, max_instances: int | None = None
) -> list[CenterPeaks]:
    """Instance centers of every frame of ``(B, 1, h, w)`` heatmaps (pooling batched)."""
    cand = center_candidates(heatmaps, threshold, kernel).cpu().numpy()
    maps = heatmaps[:, 0].detach().cpu().numpy()
    return [cap_peaks(plateau_peaks(maps[b], cand[b]), max_instances) for b in range(len(maps))]


def assign_pixels(
    foreground: torch.Tensor,
    offsets: torch.Tensor,
    peaks: CenterPeaks,
    stride: int,
    gate_alpha: float | None = None,
    gate_iters: int = 3,
) -> torch.Tensor:
    """``(h, w)`` index of the center each foreground pixel is grouped to (-1: none).

    ``foreground`` is the ``(h, w)`` bool map, ``offsets`` the ``(2, h, w)`` (dx, dy)
    field in input pixels. Every pixel goes to the nearest offset-predicted center
    unless ``gate_alpha`` is set: then pixels farther than ``alpha * sqrt(area / pi)``
    cells (area = the center's current pixel count) are dropped, re-estimated
    ``gate_iters`` times as areas shrink.
    """
    h, w = foreground.shape
    label = torch.full((h, w), -1, dtype=torch.long)
    n = len(peaks.values)
    if n == 0:
        return label
    ys, xs = torch.nonzero(foreground, as_tuple=True)
    if len(ys) == 0:
        return label
    half = stride / 2.0
    pred_x = xs.float() * stride + half + offsets[0, ys, xs]
    pred_y = ys.float() * stride + half + offsets[1, ys, xs]
    center_x = peaks.points[:, 0] * stride + half
    center_y = peaks.points[:, 1] * stride + half
    dists = (pred_x[:, None] - center_x[None]) ** 2 + (pred_y[:, None] - center_y[None]) ** 2
    assign = dists.argmin(dim=1)
    keep = torch.ones_like(assign, dtype=torch.bool)
    if gate_alpha is not None:
        dmin = dists.gather(1, assign[:, None])[:, 0]
        for _ in range(max(1, int(gate_iters))):
            counts = torch.bincount(assign[keep], minlength=n)
            r_grid = float(gate_alpha) * torch.sqrt(counts.float() / math.pi)
            keep = dmin <= ((r_grid * float(stride)) ** 2)[assign]
    label[ys[keep], xs[keep]] = assign[keep]
    return label


def group_instances(
    foreground: torch.Tensor,
    offsets: torch.Tensor,
    peaks: CenterPeaks,
    stride: int,
    gate_alpha: float | None = None,
    gate_iters: int = 3,
) -> list[GridInstance]:
    """One frame's instances, in center order; centers that got no pixel are skipped."""
    label = assign_pixels(foreground, offsets, peaks, stride, gate_alpha, gate_iters)
    if not bool((label >= 0).any()):
        return []
    half = stride / 2.0
    center_x = peaks.points[:, 0] * stride + half
    center_y = peaks.points[:, 1] * stride + half
    label_np = label.numpy()
    out = []
    for k in range(len(peaks.values)):
        mask = label_np == k
        if mask.any():
            center = (float(center_x[k]), float(center_y[k]))
            out.append(GridInstance(mask, center, float(peaks.values[k])))
    return out
