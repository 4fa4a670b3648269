"""Identity assignment for multi-class models, as sleap-nn does it.

Both variants solve a small assignment problem with the Hungarian algorithm
(``scipy.optimize.linear_sum_assignment`` on negative probabilities), so no
two animals in a frame get the same class:

* top-down: crops of one frame vs classes, on the per-crop class vectors;
* bottom-up: peaks of one (frame, node) vs classes, on the class maps sampled
  at the peaks; a match is kept only if that class is the peak's best.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sleap_infer.ops.assignment import linear_sum_assignment


def assign_crop_classes(probs: np.ndarray, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Class of every crop, matched per frame; unmatched crops (more crops than classes) get -1.

    Args:
        probs: ``(n, n_classes)`` class probabilities of each crop.
        frame: ``(n,)`` frame each crop came from.

    Returns:
        ``class_ids (n,)`` int32 and ``class_scores (n,)`` float32 (the matched probability,
        NaN where unmatched).
    """
    class_ids = np.full(len(frame), -1, np.int32)
    scores = np.full(len(frame), np.nan, np.float32)
    for f in np.unique(frame):
        rows = np.flatnonzero(frame == f)
        crop_i, class_i = linear_sum_assignment(-probs[rows])
        class_ids[rows[crop_i]] = class_i
        scores[rows[crop_i]] = probs[rows[crop_i], class_i]
    return class_ids, scores


@dataclass
class ClassGroups:
    """Peaks grouped into one instance per class: ``(B, n_classes, n_nodes, ...)``."""

    points: np.ndarray  # (..., 2) NaN where no peak of that node got that class
    values: np.ndarray  # confidence-map values, NaN where missing
    class_probs: np.ndarray  # probability of the assigned class, NaN where missing


def sample_class_maps(
    class_maps: torch.Tensor, points: torch.Tensor, sample: torch.Tensor
) -> torch.Tensor:
    """Class probabilities at each peak: nearest class-map pixel, clamped to the map.

    ``points`` are ``(x, y)`` in class-map pixels; returns ``(P, n_classes)``.
    """
    height, width = class_maps.shape[-2:]
    col = torch.round(points[:, 0]).to(torch.long).clamp(0, width - 1)
    row = torch.round(points[:, 1]).to(torch.long).clamp(0, height - 1)
    return class_maps[sample, :, row, col]


def group_peaks_by_class(
    probs: np.ndarray,
    points: np.ndarray,
    values: np.ndarray,
    sample: np.ndarray,
    channel: np.ndarray,
    n_samples: int,
    n_nodes: int,
) -> ClassGroups:
    """Give each peak a class (Hungarian per frame and node) and slot it into that class's instance.

    Args:
        probs: ``(P, n_classes)`` class probabilities at each peak.
        points: ``(P, 2)`` peak coordinates (any unit; copied through).
        values: ``(P,)`` confidence-map values.
        sample, channel: ``(P,)`` frame and node of each peak.
    """
    n_classes = probs.shape[1]
    shape = (n_samples, n_classes, n_nodes)
    out_points = np.full((*shape, 2), np.nan, np.float32)
    out_values = np.full(shape, np.nan, np.float32)
    out_probs = np.full(shape, np.nan, np.float32)
    if len(sample) == 0:
        return ClassGroups(out_points, out_values, out_probs)
    # Peaks of one (frame, node) are contiguous after a stable sort on that key.
    key = sample.astype(np.int64) * n_nodes + channel
    order = np.argsort(key, kind="stable")
    bounds = np.flatnonzero(np.diff(key[order])) + 1
    for group in np.split(order, bounds):
        peak_i, class_i = linear_sum_assignment(-probs[group])
        chosen = group[peak_i]
        matched = probs[chosen, class_i]
        best = probs[chosen].max(axis=1)
        keep = matched == best
        chosen, class_i = chosen[keep], class_i[keep]
        s, n = sample[chosen], channel[chosen]
        out_points[s, class_i, n] = points[chosen]
        out_values[s, class_i, n] = values[chosen]
        out_probs[s, class_i, n] = probs[chosen, class_i]
    return ClassGroups(out_points, out_values, out_probs)


def nanmean_last(x: np.ndarray) -> np.ndarray:
    """Mean over the last axis ignoring NaNs; NaN where all are NaN (without numpy's warning)."""
    finite = ~np.isnan(x)
    count = finite.sum(axis=-1)
    total = np.where(finite, x, 0).sum(axis=-1)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan).astype(np.float32)
