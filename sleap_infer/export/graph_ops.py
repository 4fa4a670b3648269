"""Peak finding and integral refinement written for tracing into a static ONNX graph.

The host versions in :mod:`sleap_infer.ops.peaks` use ``nonzero`` and
boolean indexing, whose output sizes depend on the data; ONNX and TensorRT
want every shape known from the input shape alone. So here:

* global peaks are two ``argmax`` reductions (x from the column maxima, y from
  the row maxima): the host's own :func:`~sleap_infer.ops.peaks.global_peak_indices`;
* local peaks keep the host's (sleap-nn's) test: above the 4 neighbours before
  and ``>=`` the 4 after, flat tops checked densely with the host's own
  :func:`~sleap_infer.ops.peaks.flat_tops` on shifted maps; then ``topk`` to a fixed ``K``
  per channel; empty slots carry value ``-inf``, and the value of the first
  maximum that did not fit is returned too, so the host can tell a full channel;
* refinement gathers a fixed ``k x k`` patch around every candidate with one
  ``GatherElements`` on the zero-padded, flattened map, then takes the
  confidence-weighted mean offset with the host's own
  :func:`~sleap_infer.ops.peaks.integral_offsets`, including its guard (a mean
  that leaves the patch keeps the integer peak), so both paths fall back on
  the same peaks. As on the host, a flat top's fractional point is floored to
  the pixel the patch is centred on.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from sleap_infer.ops.peaks import flat_tops, integral_offsets, neighbour_max_split


class LocalPeaks(NamedTuple):
    """The ``k`` strongest local maxima of every channel, each field ``(B, C, k)``.

    ``x`` and ``y`` are float positions in grid units: integers, or a flat top's
    mean (fractional).

    ``dropped`` ``(B, C)`` is the value of the strongest maximum that did not fit
    (``-inf`` when all fit): the host compares it with its own threshold to
    notice a saturated channel, whatever threshold the user picks.
    """

    x: torch.Tensor
    y: torch.Tensor
    values: torch.Tensor
    dropped: torch.Tensor


def local_peak_candidates(cms: torch.Tensor, k: int) -> LocalPeaks:
    """The ``k`` strongest local maxima per channel, in raster order of their first pixel.

    Slots beyond the number of maxima have value ``-inf``, sort last and sit at
    ``(0, 0)`` (a fixed position, so every runtime returns the same empty slots).
    Raster order (row-major position) is what the host path emits, so the host
    can apply sleap-nn's "raster order unless a frame overflows" rule unchanged.
    """
    batch, channels, height, width = cms.shape
    size = height * width
    k = min(k, size)
    before, after = neighbour_max_split(cms)
    padded = F.pad(cms, (2, 2, 2, 2), value=float("-inf"))

    def value_at(dy: int, dx: int) -> torch.Tensor:
        return padded[..., 2 + dy : 2 + dy + height, 2 + dx : 2 + dx + width]

    keep, offsets = flat_tops(cms, value_at)
    is_peak = (cms > before) & (cms >= after) & keep
    masked = torch.where(is_peak, cms, torch.full_like(cms, float("-inf")))
    flat = masked.reshape(batch, channels, size)
    # One more than kept: the extra one tells the host whether anything was cut off.
    values, index = torch.topk(flat, min(k + 1, size), dim=2)
    no_more = torch.full_like(values[:, :, 0], float("-inf"))
    dropped = values[:, :, k] if k < size else no_more
    values, index = values[:, :, :k], index[:, :, :k]
    empty = torch.isinf(values)
    index = torch.where(empty, torch.zeros_like(index), index)
    # Re-sort the k winners by position; empty slots get keys past the map.
    key = torch.where(empty, index + size, index)
    _, order = torch.topk(key, k, dim=2, largest=False)
    index = torch.gather(index, 2, order)
    values = torch.gather(values, 2, order)
    # A flat top's offset to its mean; empty slots stay exactly at (0, 0).
    shift = torch.gather(
        offsets.reshape(batch, channels, size, 2), 2, index[..., None].expand(-1, -1, -1, 2)
    )
    shift = torch.where(torch.isinf(values)[..., None], torch.zeros_like(shift), shift)
    x = (index % width).to(cms.dtype) + shift[..., 0]
    y = torch.div(index, width, rounding_mode="floor").to(cms.dtype) + shift[..., 1]
    return LocalPeaks(x, y, values, dropped)


def gather_patches(cms: torch.Tensor, x: torch.Tensor, y: torch.Tensor, size: int) -> torch.Tensor:
    """``size x size`` patches around integer points ``(B, C, P)``; outside the map is 0.

    The patch starts at ``p - size // 2`` (as on the host). Returns ``(B, C, P, size, size)``.
    """
    batch, channels, _, width = cms.shape
    padded = F.pad(cms, (size, size, size, size))
    padded_width = width + 2 * size
    flat = padded.reshape(batch, channels, -1)
    steps = torch.arange(size, device=cms.device)
    start = size - size // 2
    rows = (y + start).unsqueeze(-1) + steps  # (B, C, P, size)
    cols = (x + start).unsqueeze(-1) + steps
    index = rows.unsqueeze(-1) * padded_width + cols.unsqueeze(-2)  # (B, C, P, size, size)
    points = x.shape[-1]
    patches = torch.gather(flat, 2, index.reshape(batch, channels, points * size * size))
    return patches.reshape(batch, channels, points, size, size)


def refined_points(
    cms: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    refine: bool,
    patch_size: int,
    guard: bool = True,
) -> torch.Tensor:
    """``x``/``y`` ``(B, C, P)`` -> float ``(B, C, P, 2)`` points, refined if asked.

    Refinement centres the patch on the floored point (sleap-nn's rule for flat
    tops; integer points are their own floor).
    """
    points = torch.stack([x, y], dim=-1).to(cms.dtype)
    if not refine:
        return points
    anchors = torch.floor(points)
    ix, iy = anchors[..., 0].long(), anchors[..., 1].long()
    return anchors + integral_offsets(gather_patches(cms, ix, iy, patch_size), guard)
