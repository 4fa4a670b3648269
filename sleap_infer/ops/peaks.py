"""Peak finding on confidence maps, with integral sub-pixel refinement.

Conventions follow sleap-nn so outputs match it exactly:

* points are ``(x, y)`` in confmap grid units;
* global peaks below the threshold (strict ``<``) get NaN coordinates and value 0;
* local peaks must be strictly greater than the threshold and than all 8
  neighbours, except for flat tops (sleap-nn 0.3.5, its #781): equal pixels that
  fit in a 2x2 block (a pair, an L of 3 or all 4) and are higher than every
  pixel around them make one peak at the mean of their coordinates (so it can
  be fractional); a wider flat top, or one touching an equal or higher pixel
  outside it, gives none.
  Peaks are returned in raster order of ``(sample, row, col, channel)`` of the
  top's first pixel.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F


def refine_integral(
    maps: torch.Tensor,
    map_index: torch.Tensor,
    points: torch.Tensor,
    patch_size: int = 5,
    guard: bool = True,
) -> torch.Tensor:
    """Sub-pixel offsets: the confidence-weighted mean position in a patch around each peak.

    Args:
        maps: ``(M, H, W)`` confidence maps (one per sample-channel).
        map_index: ``(P,)`` which map each peak lies on.
        points: ``(P, 2)`` integer-valued ``(x, y)`` peak positions.
        patch_size: patch side; pixels outside the map count as zero.
        guard: see :func:`integral_offsets`.

    Returns:
        ``(P, 2)`` offsets to add to ``points``. The patch starts at
        ``p - patch_size // 2`` and offsets are measured from its centre, as in sleap-nn.
    """
    if points.shape[0] == 0:
        return points.new_zeros((0, 2))
    k = patch_size
    half = k // 2
    height, width = maps.shape[-2:]
    grid = torch.arange(k, device=maps.device)
    xi = points[:, 0].long() - half
    yi = points[:, 1].long() - half
    rows = (yi[:, None] + grid[None, :])[:, :, None]  # (P, k, 1)
    cols = (xi[:, None] + grid[None, :])[:, None, :]  # (P, 1, k)
    # Out-of-map pixels read as zero by masking, not by padding a copy of every map.
    inside = (rows >= 0) & (rows < height) & (cols >= 0) & (cols < width)  # (P, k, k)
    patches = maps[
        map_index.long()[:, None, None], rows.clamp(0, height - 1), cols.clamp(0, width - 1)
    ]
    patches = torch.where(inside, patches, torch.zeros((), dtype=maps.dtype, device=maps.device))
    return integral_offsets(patches, guard)


def _weighted_means(patches: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """sleap-nn's integral regression: ``dx``, ``dy`` (sum of offset x value / sum of values)
    and whether both lie inside the patch (``|d| <= (k - 1) / 2``; False for NaN)."""
    size = patches.shape[-1]
    half = (size - 1) / 2
    weights = torch.arange(size, dtype=patches.dtype, device=patches.device) - half
    total = patches.sum(dim=(-2, -1))
    dx = (patches.sum(dim=-2) * weights).sum(dim=-1) / total
    dy = (patches.sum(dim=-1) * weights).sum(dim=-1) / total
    # NaN compares False, so a zero sum is "outside" too; no isfinite (TensorRT-friendly).
    return dx, dy, torch.logical_and(dx.abs() <= half, dy.abs() <= half)


def integral_offsets(patches: torch.Tensor, guard: bool = True) -> torch.Tensor:
    """Confidence-weighted mean ``(dx, dy)`` of ``(..., k, k)`` patches, from their centre.

    sleap-nn's formula, with one guard: a mean of non-negative weights always
    lies inside the patch. Confidence maps of heads without an output
    activation can be negative, and when negative values cancel most of a
    patch its sum nears zero and the "mean" lands far outside it (x = -982 in
    a 384 px frame); a zero sum gives NaN. Such a patch says nothing about
    where the peak is, so its point keeps the integer peak (offset 0): a
    deliberate difference from sleap-nn, which writes the wild value. Patches
    whose mean lies inside are left exactly as sleap-nn computes them.
    ``guard=False`` (``--refine-like-sleap-nn``) drops the guard and returns
    sleap-nn's numbers, wild or NaN ones included.

    Shared by the host path and the exported graphs, so both round identically.
    """
    dx, dy, inside = _weighted_means(patches)
    offsets = torch.stack([dx, dy], dim=-1)
    if not guard:
        return offsets
    return torch.where(inside.unsqueeze(-1), offsets, torch.zeros_like(offsets))


def refinement_fallbacks(patches: torch.Tensor) -> torch.Tensor:
    """Bool mask of the ``(..., k, k)`` patches :func:`integral_offsets` does not refine.

    For diagnostics and tests: these are the points that deliberately differ
    from sleap-nn, which would put them outside their patch.
    """
    return ~_weighted_means(patches)[2]


def global_peak_indices(cms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(S, C, H, W)`` maps -> integer ``x``, ``y`` and the max value, each ``(S, C)``.

    x comes from the column maxima and y from the row maxima, computed separately
    (sleap-nn's rule; it differs from the argmax of the flat map on ties).
    """
    col_max = cms.amax(dim=2)  # (S, C, W)
    row_max = cms.amax(dim=3)  # (S, C, H)
    return col_max.argmax(dim=2), row_max.argmax(dim=2), col_max.amax(dim=2)


def find_global_peaks(
    cms: torch.Tensor,
    threshold: float,
    refine: bool = True,
    patch_size: int = 5,
    guard: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One peak per ``(sample, channel)``.

    A flat top needs no special case here (sleap-nn has none on this path
    either): x is the first column holding the maximum and y the first row, so
    a tied top gives its first column and row, and refinement centres the patch
    there.

    Args:
        cms: ``(S, C, H, W)`` confidence maps.
        guard: see :func:`integral_offsets`; ``False`` reproduces sleap-nn exactly.

    Returns:
        ``points (S, C, 2)`` as ``(x, y)`` (NaN below threshold) and ``values (S, C)``.
    """
    samples, channels, _, width = cms.shape
    x, y, values = global_peak_indices(cms)
    points = torch.stack([x, y], dim=-1).to(cms.dtype)
    if refine:
        flat = points.reshape(-1, 2)
        maps = cms.reshape(samples * channels, cms.shape[2], width)
        index = torch.arange(samples * channels, device=cms.device)
        offsets = refine_integral(maps, index, flat, patch_size, guard)
        points = (flat + offsets).reshape(points.shape)
    below = values < threshold
    points = torch.where(below[..., None], torch.full_like(points, float("nan")), points)
    values = torch.where(below, torch.zeros_like(values), values)
    return points, values


_NEIGHBOURS = tuple((dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0))

_BEFORE = ((-1, -1), (-1, 0), (-1, 1), (0, -1))
"""Neighbours before a pixel in raster order (NW, N, NE, W); a peak is strictly above them."""

_AFTER = ((0, 1), (1, -1), (1, 0), (1, 1))
"""Neighbours after a pixel (E, SW, S, SE); a peak is ``>=`` them, ties forming a flat top."""


def neighbour_max_split(cms: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Max over the 4 neighbours before and the 4 after every pixel (outside = -inf).

    A flat top's first pixel in raster order is above the ones before it and
    equal to some after it: that pixel stands for the whole top, as in sleap-nn.
    """
    height, width = cms.shape[-2:]
    padded = F.pad(cms, (1, 1, 1, 1), value=float("-inf"))

    def maximum(offsets: tuple[tuple[int, int], ...]) -> torch.Tensor:
        out = None
        for dy, dx in offsets:
            shifted = padded[..., 1 + dy : 1 + dy + height, 1 + dx : 1 + dx + width]
            out = shifted if out is None else torch.maximum(out, shifted)
        assert out is not None
        return out

    return maximum(_BEFORE), maximum(_AFTER)


def flat_tops(
    centre: torch.Tensor, value_at: Callable[[int, int], torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Which peak candidates stand for a valid flat top, and the offset to its mean.

    ``centre`` holds candidate values (``>`` the 4 neighbours before, ``>=`` the 4
    after); ``value_at(dy, dx)`` the values at that offset from each, same shape,
    ``-inf`` outside the map. Works elementwise, so the host passes gathered
    candidates and the exported graphs whole shifted maps (static shapes).

    sleap-nn's rule (0.3.5 ``_flat_tops``): the top is the candidate plus the
    after-neighbours equal to it; it counts if it fits in a 2x2 block (E, S, SE
    or SW, S) and no neighbour of a tied pixel outside the top is ``>=`` it.

    Returns:
        ``keep`` (bool) and ``offsets`` (``centre.shape + (2,)``, ``(dx, dy)`` to
        the mean of the top's pixels; zero for a one-pixel top).
    """
    tied = {d: value_at(*d) >= centre for d in _AFTER}
    east, south_west, south, south_east = (tied[d] for d in _AFTER)
    keep = ~(south_west & (east | south_east))
    cache: dict[tuple[int, int], torch.Tensor] = {}
    for k in _AFTER:
        around = torch.zeros_like(keep)
        for dy, dx in _NEIGHBOURS:
            d = (k[0] + dy, k[1] + dx)
            if d == (0, 0):
                continue
            if d not in cache:
                cache[d] = value_at(*d) >= centre
            around = around | (cache[d] & ~tied[d] if d in tied else cache[d])
        keep = keep & ~(tied[k] & around)
    dtype = centre.dtype if centre.is_floating_point() else torch.float32
    e, sw, s, se = (t.to(dtype) for t in (east, south_west, south, south_east))
    count: torch.Tensor = e + sw + s + se + 1
    # Sums of small integers are exact, so one division rounds as sleap-nn's table does.
    mean_x = (e - sw + se) / count
    mean_y = (sw + s + se) / count
    return keep, torch.stack([mean_x, mean_y], dim=-1)


DENSE_FRACTION = 8
"""Above one candidate pixel in this many, the dense 8-neighbour pass is cheaper than gathers."""


def _gather_at(
    cms: torch.Tensor, s: torch.Tensor, ch: torch.Tensor, row: torch.Tensor, col: torch.Tensor
) -> Callable[[int, int], torch.Tensor]:
    """``value_at(dy, dx)`` for the given pixels: the map value there, ``-inf`` outside."""
    height, width = cms.shape[-2:]
    flat = cms.reshape(-1)
    base = (s * cms.shape[1] + ch) * (height * width)
    minus_inf = torch.full((), float("-inf"), dtype=cms.dtype, device=cms.device)

    def value_at(dy: int, dx: int) -> torch.Tensor:
        r, c = row + dy, col + dx
        inside = (r >= 0) & (r < height) & (c >= 0) & (c < width)
        value = flat[base + r.clamp(0, height - 1) * width + c.clamp(0, width - 1)]
        return torch.where(inside, value, minus_inf)

    return value_at


def _candidates(centre: torch.Tensor, value_at: Callable[[int, int], torch.Tensor]) -> torch.Tensor:
    """Which of the given pixels are ``>`` the 4 neighbours before and ``>=`` the 4 after.

    Gathers the neighbours of the candidates only, so the cost follows the number of
    pixels above the threshold instead of the map size. Same comparisons as the dense
    pass (a NaN neighbour or centre makes it no peak).
    """
    keep = torch.ones_like(centre, dtype=torch.bool)
    for dy, dx in _BEFORE:
        keep &= centre > value_at(dy, dx)
    for dy, dx in _AFTER:
        keep &= centre >= value_at(dy, dx)
    return keep


def _peak_indices(
    cms: torch.Tensor, threshold: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``sample, row, col, channel`` of the local maxima above ``threshold`` (a flat
    top's first pixel) and each one's ``(dx, dy)`` offset to its flat top's mean."""
    if cms.numel() == 0 or bool(cms.amax() <= threshold):
        # A max is the cheapest full pass: an empty frame stops here (NaN maps go on).
        empty = torch.zeros(0, dtype=torch.long, device=cms.device)
        return empty, empty, empty, empty, torch.zeros(0, 2, dtype=cms.dtype, device=cms.device)
    above = cms > threshold
    if int(torch.count_nonzero(above)) * DENSE_FRACTION > above.numel():
        before, after = neighbour_max_split(cms)
        is_peak = (cms > before) & (cms >= after) & above
        s, row, col, ch = torch.nonzero(is_peak.permute(0, 2, 3, 1), as_tuple=True)
    else:
        # nonzero on the contiguous mask (a permuted view makes torch copy the whole map),
        # then the few peaks are put in sleap-nn's (sample, row, col, channel) raster order.
        channels, height, width = cms.shape[1:]
        flat = torch.nonzero(above.reshape(-1)).squeeze(1)
        col, row = flat % width, (flat // width) % height
        map_index = flat // (height * width)
        s, ch = map_index // channels, map_index % channels
        keep = _candidates(cms[s, ch, row, col], _gather_at(cms, s, ch, row, col))
        s, row, col, ch = s[keep], row[keep], col[keep], ch[keep]
        order = torch.argsort(((s * height + row) * width + col) * channels + ch)
        s, row, col, ch = s[order], row[order], col[order], ch[order]
    # Ties are rare in float32 (common in float16 or saturated sigmoids): the
    # flat-top check gathers the 5x5 neighbourhood of each candidate.
    keep, offsets = flat_tops(cms[s, ch, row, col], _gather_at(cms, s, ch, row, col))
    return s[keep], row[keep], col[keep], ch[keep], offsets[keep]


def find_local_peaks(
    cms: torch.Tensor,
    threshold: float,
    refine: bool = True,
    patch_size: int = 5,
    guard: bool = True,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """All local maxima above ``threshold``, flat tops included (see the module doc).

    Only the pixels above the threshold are compared with their neighbours (few,
    on trained maps: a 2048 px frame without animals costs one comparison pass
    instead of eight shifted copies); when many pixels pass, the dense shifted-max
    pass is used instead. Both give the same peaks.

    Refinement works on the pixel grid, as sleap-nn's does: a flat top's
    fractional point is floored to a pixel and the patch centred there gives the
    point (for a horizontal pair that is the left pixel, and the patch mean then
    lands near the pair's middle).

    Args:
        cms: ``(S, C, H, W)`` confidence maps.
        guard: see :func:`integral_offsets`; ``False`` reproduces sleap-nn exactly.

    Returns:
        ``points (P, 2)`` ``(x, y)``, ``values (P,)``, ``sample (P,)`` and
        ``channel (P,)`` indices, in raster order of ``(sample, row, col, channel)``.
    """
    samples, channels, height, width = cms.shape
    s, row, col, ch, offsets = _peak_indices(cms, threshold)
    values = cms[s, ch, row, col]
    points = torch.stack([col, row], dim=1).to(cms.dtype) + offsets
    if refine and points.shape[0]:
        maps = cms.reshape(samples * channels, height, width)
        anchors = torch.floor(points)
        points = anchors + refine_integral(maps, s * channels + ch, anchors, patch_size, guard)
    return points, values, s, ch
