"""Per-mask steps of the segmentation decoders: cleanup, and the geometry of packaging.

Follows sleap-nn 0.3.5 (``inference/segmentation.py::_clean_instance_mask``,
``inference/layers/segmentation.py::_mask_to_stride`` / ``_mask_to_original``) so
masks match it bit for bit:

* cleanup's optional open -> close uses OpenCV there; OpenCV is not a dependency
  here, so :func:`ellipse_kernel` rebuilds ``getStructuringElement(MORPH_ELLIPSE)``
  (rows rounded half to even, as ``cvRound``) and :func:`open_close` OpenCV's
  default border (outside counts as set when eroding, unset when dilating);
* the valid grid extent *rounds* ``original * scale`` while the resize in
  preprocessing floored it (``int(h * scale)``): a one-pixel quirk when the input
  scale is not 1, kept because the stored mask size depends on it;
* the stored scale is ``valid / original`` per axis, not ``scale / stride``;
* ``min_mask_area`` counts original pixels; on the stride grid it becomes
  ``ceil(floor * sx * sy)`` cells (never fewer than 1, so empty masks always go).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from scipy import ndimage


def ellipse_kernel(radius: int) -> np.ndarray:
    """OpenCV's ``MORPH_ELLIPSE`` structuring element of side ``2 * radius + 1`` (bool).

    Row ``i`` spans ``c +- rint(c * sqrt((r^2 - dy^2) / r^2))`` with ``dy = i - r``:
    the same float64 expression OpenCV evaluates, so the rounding agrees.
    """
    size = 2 * int(radius) + 1
    r = c = size // 2
    kernel = np.zeros((size, size), bool)
    inv_r2 = 1.0 / (r * r) if r else 0.0
    for i in range(size):
        dy = i - r
        if abs(dy) > r:
            continue
        dx = int(np.rint(c * math.sqrt((r * r - dy * dy) * inv_r2)))
        kernel[i, max(c - dx, 0) : min(c + dx + 1, size)] = True
    return kernel


def open_close(mask: np.ndarray, radius: int) -> np.ndarray:
    """``morphologyEx`` OPEN then CLOSE with :func:`ellipse_kernel` (OpenCV border rules).

    OpenCV pads erosion with the maximum and dilation with the minimum, so the
    frame edge neither eats into a mask nor grows one.
    """
    kernel = ellipse_kernel(radius)

    def erode(m: np.ndarray) -> np.ndarray:
        return ndimage.binary_erosion(m, structure=kernel, border_value=1)

    def dilate(m: np.ndarray) -> np.ndarray:
        return ndimage.binary_dilation(m, structure=kernel, border_value=0)

    opened = dilate(erode(np.asarray(mask, bool)))
    return erode(dilate(opened))


def clean_mask(mask: np.ndarray, radius: int = 0) -> np.ndarray:
    """``mask_cleanup``: optional open -> close, largest 4-connected component, holes filled.

    On equal sizes the component numbered first (raster order) wins.
    """
    if radius > 0:
        mask = open_close(mask, radius)
    labels, n = ndimage.label(mask)
    if n > 1:
        counts = np.bincount(labels.ravel())
        counts[0] = 0
        mask = labels == int(counts.argmax())
    return ndimage.binary_fill_holes(mask)


def _scaled(size: int, scale: float) -> int:
    """A frame side after scaling as the packaging sees it: Python's ``round`` (half to even)."""
    return max(1, round(size * scale))


def valid_grid_size(
    grid_hw: tuple[int, int], original_hw: tuple[int, int], scale: float, stride: int
) -> tuple[int, int]:
    """Stride cells covering the frame (not the padding): ``ceil(round(orig * scale) / stride)``.

    ``scale`` is size-matcher times input scale. ``round`` (not the preprocessing's
    floor) and the kept partial last cell are sleap-nn's.
    """
    out = []
    for grid, orig in zip(grid_hw, original_hw):
        out.append(min(grid, max(1, math.ceil(_scaled(orig, scale) / float(stride)))))
    return out[0], out[1]


def mask_to_stride(
    mask: np.ndarray, original_hw: tuple[int, int] | None, scale: float, stride: int
) -> tuple[np.ndarray, tuple[float, float]]:
    """A grid mask cut to the frame's cells, and its ``(sx, sy)`` (mask cells per image pixel).

    Without the original size the whole grid is kept at ``1 / stride``.
    """
    if original_hw is None or 0 in original_hw:
        return np.ascontiguousarray(mask, bool), (1.0 / stride, 1.0 / stride)
    vh, vw = valid_grid_size(mask.shape[:2], original_hw, scale, stride)
    sx = vw / float(original_hw[1])
    sy = vh / float(original_hw[0])
    return np.ascontiguousarray(mask[:vh, :vw], bool), (sx, sy)


def stride_area_floor(min_mask_area: int, sx: float, sy: float) -> int:
    """``min_mask_area`` (original pixels, at least 1) as a cell count on a ``(sx, sy)`` grid.

    ``ceil``, so no mask below the floor in original pixels survives.
    """
    return max(1, math.ceil(max(1, min_mask_area) * sx * sy))


def mask_to_original(
    mask: np.ndarray,
    processed_hw: tuple[int, int],
    original_hw: tuple[int, int] | None,
    scale: float,
) -> np.ndarray:
    """``full_res_masks``: a grid mask on the original frame's pixels.

    Nearest upsample to the padded network input, cut to the scaled frame
    (``round``, as :func:`valid_grid_size`), nearest resize to the original size,
    ``> 0.5``: torch's ``nearest`` (floor of ``dst * in / out``) as sleap-nn uses.
    """
    proc_h, proc_w = processed_hw
    orig_h, orig_w = (proc_h, proc_w) if original_hw is None or 0 in original_hw else original_hw
    t = torch.from_numpy(np.ascontiguousarray(mask)).float()[None, None]
    if tuple(t.shape[-2:]) != (proc_h, proc_w):
        t = F.interpolate(t, size=(proc_h, proc_w), mode="nearest")
    scaled_h = min(proc_h, _scaled(orig_h, scale))
    scaled_w = min(proc_w, _scaled(orig_w, scale))
    t = t[:, :, :scaled_h, :scaled_w]
    if (scaled_h, scaled_w) != (orig_h, orig_w):
        t = F.interpolate(t, size=(orig_h, orig_w), mode="nearest")
    return t[0, 0].numpy() > 0.5
