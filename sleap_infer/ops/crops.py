"""Top-down crops: fixed-size boxes around centroids, gathered in one indexing op.

Geometry follows sleap-nn so crops (and therefore keypoints) match it:

* a box's float top-left is ``c - size/2 + 0.5``; crop-local keypoints are
  offset by it afterwards;
* pixels are taken from the integer origin ``trunc(top_left + e//2) - e//2``
  (``e`` = the crop's extent), with zeros outside the image;
* sleap-nn 0.3.5 cuts every crop at the full ``crop_size``. The earlier release
  that made the parity goldens (``shared/fixtures/parity``) sized all crops of
  a frame from the float corners of the frame's first box, which float
  rounding made one pixel short (95 for 96) for a few percent of centroids.
  :func:`centered_boxes` still returns that extent, and :func:`first_box_extent`
  with :func:`zero_beyond_extent` rebuild such crops (a short crop is
  stride-padded back by the model layer, i.e. its missing row/column is zero),
  so outputs of those releases can still be compared with.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def centered_boxes(
    centers: torch.Tensor, height: int, width: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Float top-lefts and sleap-nn's ``(width, height)`` extents of boxes around ``centers``.

    ``centers`` is ``(n, 2)`` as ``(x, y)``; both results are ``(n, 2)``.
    """
    c = centers.to(torch.float32)
    half = torch.tensor([width / 2, height / 2], dtype=torch.float32, device=c.device)
    # The float32 operation order of sleap-nn's box corners: the extent depends on it.
    top_left = (c - half) + 0.5
    bottom_right = (c + half) - 0.5
    extent = (bottom_right - top_left).abs().to(torch.long) + 1
    return top_left, extent


def first_box_extent(extent: torch.Tensor, sample: torch.Tensor) -> torch.Tensor:
    """For every crop, the extent of the first crop of its frame (crops grouped by frame)."""
    if sample.numel() == 0:
        return extent
    first = torch.searchsorted(sample.contiguous(), sample.contiguous())
    return extent[first]


def crop_origin(top_left: torch.Tensor, extent: torch.Tensor) -> torch.Tensor:
    """Integer pixel each crop starts at (truncation toward zero, as sleap-nn)."""
    half = torch.div(extent, 2, rounding_mode="floor")
    return (top_left + half.to(top_left.dtype)).to(torch.long) - half


def gather_crops(
    images: torch.Tensor, sample: torch.Tensor, origin: torch.Tensor, height: int, width: int
) -> torch.Tensor:
    """``(n, C, height, width)`` crops of ``images[sample]`` starting at ``origin``, zero padded.

    One advanced-indexing gather for all crops (no per-crop loop).
    """
    n = origin.shape[0]
    if n == 0:
        return images.new_zeros((0, images.shape[1], height, width))
    padded = F.pad(images, (width, width, height, height))
    arange_h = torch.arange(height, device=images.device)
    arange_w = torch.arange(width, device=images.device)
    rows = (origin[:, 1, None] + height + arange_h).clamp(0, padded.shape[-2] - 1)  # (n, h)
    cols = (origin[:, 0, None] + width + arange_w).clamp(0, padded.shape[-1] - 1)  # (n, w)
    out = padded[sample[:, None, None], :, rows[:, :, None], cols[:, None, :]]  # (n, h, w, C)
    return out.permute(0, 3, 1, 2)


def zero_beyond_extent(crops: torch.Tensor, extent: torch.Tensor) -> torch.Tensor:
    """Zero the rows/columns of each crop past its ``(width, height)`` extent."""
    height, width = crops.shape[-2:]
    if crops.shape[0] == 0 or bool((extent[:, 0] >= width).all() & (extent[:, 1] >= height).all()):
        return crops
    cols = torch.arange(width, device=crops.device)[None, :] < extent[:, 0, None]
    rows = torch.arange(height, device=crops.device)[None, :] < extent[:, 1, None]
    keep = (rows[:, :, None] & cols[:, None, :])[:, None]
    return crops * keep.to(crops.dtype)
