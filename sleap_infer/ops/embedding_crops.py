"""Embedding crops: where they are centred, how they are sampled, how they are normalised.

sleap-nn 0.3.5 cuts re-ID crops differently from top-down crops (:mod:`sleap_infer.ops.crops`):

* the box is ``make_centered_bboxes``' ``c +- crop/2`` moved inward by 0.5, so it is
  ``crop - 1`` wide, and Skia draws it onto a ``crop``-sized canvas: a ``crop/(crop-1)``
  magnification. Output pixel ``j`` samples the source at ``c - crop/2 + (j + 0.5) *
  (crop - 1) / crop`` (pixel-centre coordinates), bilinearly, clamping at the frame
  edge; output pixels whose footprint leaves the frame fade to black by the fraction
  left inside (Skia's anti-aliased edge). :func:`sample_crops` does this in torch; it
  is within a grey level of Skia, not bit-exact (Skia's own rounding is not reproduced);
* crop centres come from the detection itself: the pose carrier's centroid (nan-mean of
  visible nodes, or an anchor node), or the mask carrier's centre of mass on the image
  pixel grid (:func:`mask_center`);
* the crop is NOT divided by 255: each crop and channel is standardised on the
  0..255 scale, ``std + 1e-5`` floored at one grey level (:func:`standardize_crops`).
"""

from __future__ import annotations

import numpy as np
import torch

STD_EPS = 1e-5
STD_FLOOR = 1.0  # one grey level: a flat crop is not blown up by 1 / 1e-5


def standardize_crops(
    crops: torch.Tensor,
    mask: torch.Tensor | None = None,
    background_fill: str = "black",
) -> torch.Tensor:
    """``(g - mean) / max(std + 1e-5, 1)`` per crop and channel of float ``(N, C, H, W)``
    on the 0..255 scale.

    With ``mask`` (burn-in models: ``(N, 1, H, W)`` of 0 / 1) the statistics are the
    foreground's and the background becomes the fill: 0 for ``black`` / ``mean`` /
    ``noise`` (noise is a training augmentation; inference fills 0, as sleap-nn does),
    raw mid-grey standardised for ``grey``. Sums over the pixels divided by the count,
    as sleap-nn writes it (``mean()`` rounds differently in float32).
    """
    m = torch.ones_like(crops[:, :1]) if mask is None else mask.to(crops.dtype)
    count = m.sum((2, 3), keepdim=True).clamp(min=1)
    mu = (crops * m).sum((2, 3), keepdim=True) / count
    std = (((crops - mu) ** 2 * m).sum((2, 3), keepdim=True) / count).sqrt() + STD_EPS
    std = std.clamp(min=STD_FLOOR)
    x = (crops - mu) / std
    if mask is None:
        return x
    fill = (127.5 - mu) / std if background_fill == "grey" else torch.zeros_like(x)
    return x * m + fill * (1 - m)


# -------------------------------------------------------------------------- centres
def _reduce(points: torch.Tensor, method: str) -> torch.Tensor:
    """Nan-aware centre of ``(n, N, 2)`` float32 points; NaN (or inf) when none is visible."""
    if method == "bbox_center":
        lo = torch.where(torch.isnan(points), torch.inf, points).amin(dim=1)
        hi = torch.where(torch.isnan(points), -torch.inf, points).amax(dim=1)
        return (lo + hi) / 2
    return torch.nanmean(points, dim=1)


def pose_centers(
    points: np.ndarray | torch.Tensor,
    method: str = "center_of_mass",
    anchor: int | None = None,
    fallback: str = "center_of_mass",
) -> np.ndarray:
    """``(n, 2)`` float32 crop centres of ``(n, N, 2)`` instances in original pixels.

    sleap-nn's ``generate_centroids`` on float32 points: the nan-mean of the visible
    nodes (``center_of_mass``), the nan bounding-box midpoint (``bbox_center``), or the
    ``anchor`` node with ``fallback`` for an instance whose anchor is missing.
    Non-finite centres mean "no crop" (the caller skips them, as sleap-nn does).
    """
    pts = torch.as_tensor(np.asarray(points, np.float32))
    if pts.shape[0] == 0:
        return np.zeros((0, 2), np.float32)
    if method != "anchor":
        return _reduce(pts, method).numpy()
    if anchor is None:
        raise ValueError("centroid_method 'anchor' needs an anchor node")
    centers = pts[:, anchor].clone()
    missing = torch.isnan(centers).any(dim=-1)
    if bool(missing.any()):
        centers[missing] = _reduce(pts[missing], fallback)
    return centers.numpy()


def mask_pixels(
    grid: np.ndarray,
    scale: tuple[float, float],
    offset: tuple[float, float],
    frame_hw: tuple[int, int],
) -> np.ndarray:
    """A mask on the image pixel grid of a ``frame_hw`` frame, as a bool array.

    sleap-io's decode to image resolution: a stride mask is nearest-resampled to its
    ``image_extent`` (``int(h / sy), int(w / sx)``), then placed at the offset rounded
    to whole pixels (Python ``round``); what falls outside the frame is dropped.
    """
    grid = np.asarray(grid, bool)
    height, width = grid.shape
    sx, sy = float(scale[0]), float(scale[1])
    if (sx, sy) != (1.0, 1.0):
        img_h, img_w = int(height / sy), int(width / sx)
        rows = (np.arange(img_h) * height / img_h).astype(int).clip(0, height - 1)
        cols = (np.arange(img_w) * width / img_w).astype(int).clip(0, width - 1)
        grid = grid[rows][:, cols]
    out = np.zeros(frame_hw, bool)
    oy, ox = round(float(offset[1])), round(float(offset[0]))
    src_y0, src_x0 = max(0, -oy), max(0, -ox)
    dst_y0, dst_x0 = max(0, oy), max(0, ox)
    h = min(grid.shape[0] - src_y0, frame_hw[0] - dst_y0)
    w = min(grid.shape[1] - src_x0, frame_hw[1] - dst_x0)
    if h > 0 and w > 0:
        out[dst_y0 : dst_y0 + h, dst_x0 : dst_x0 + w] = grid[
            src_y0 : src_y0 + h, src_x0 : src_x0 + w
        ]
    return out


def mask_center(pixels: np.ndarray, centering: str = "auto") -> tuple[float, float]:
    """``(cx, cy)`` of an image-grid mask: the centre of mass of its pixel indices
    (``auto`` / ``mask_com``) or the midpoint of their extremes (``bbox``).

    An empty mask centres on the frame (``(W / 2, H / 2)``), as sleap-nn falls back to.
    """
    ys, xs = np.nonzero(pixels)
    if xs.size == 0:
        return pixels.shape[1] / 2.0, pixels.shape[0] / 2.0
    if centering == "bbox":
        return (float(xs.min()) + float(xs.max())) / 2.0, (float(ys.min()) + float(ys.max())) / 2.0
    return float(xs.sum()) / xs.size, float(ys.sum()) / ys.size


# ------------------------------------------------------------------------- sampling
def _axis(
    center: torch.Tensor, size: int, extent: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-crop taps along one axis: ``(i0, i1, frac, coverage)``, each ``(n, size)``.

    ``center`` is ``(n,)`` float32; the box corners are computed in float32 in
    sleap-nn's order (``c - size/2 + 0.5``, ``c + size/2 - 0.5``).
    """
    c = center.to(torch.float32)[:, None]
    lo = (c - size / 2) + 0.5
    hi = (c + size / 2) - 0.5
    step = (hi - lo) / size  # source pixels per output pixel: (crop - 1) / crop
    j = torch.arange(size, dtype=torch.float32, device=c.device)[None, :]
    pos = lo + (j + 0.5) * step - 0.5  # pixel-centre coordinates
    base = torch.floor(pos)
    frac = pos - base
    i0 = base.to(torch.long)
    # Fraction of each output pixel's footprint that lies on the frame [0, extent).
    start = lo + j * step
    inside = (
        torch.minimum(start + step, torch.tensor(float(extent))) - start.clamp(min=0.0)
    ) / step
    coverage = inside.clamp(0.0, 1.0)
    return i0.clamp(0, extent - 1), (i0 + 1).clamp(0, extent - 1), frac, coverage


def sample_crops(
    frames: torch.Tensor, frame: torch.Tensor, centers: torch.Tensor, size: int
) -> torch.Tensor:
    """``(n, C, size, size)`` uint8 crops of ``frames[frame]`` (uint8 ``(B, C, H, W)``)
    centred on ``centers`` (``(n, 2)`` ``(x, y)`` in those frames' pixels).

    One gather for all crops; bilinear taps clamp to the frame edge; the result is
    scaled by the coverage and rounded half up (Skia's drawing over a black canvas).
    """
    n = int(centers.shape[0])
    channels, height, width = (int(d) for d in frames.shape[1:])
    if n == 0:
        return frames.new_zeros((0, channels, size, size))
    centers = centers.to(frames.device)
    x0, x1, fx, cx = _axis(centers[:, 0], size, width)
    y0, y1, fy, cy = _axis(centers[:, 1], size, height)
    f = frame.to(frames.device).to(torch.long)[:, None, None]
    src = frames.float()

    def tap(rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        return src[f, :, rows[:, :, None], cols[:, None, :]]  # (n, size, size, C)

    wx, wy = fx[:, None, :, None], fy[:, :, None, None]
    top = tap(y0, x0) * (1 - wx) + tap(y0, x1) * wx
    bottom = tap(y1, x0) * (1 - wx) + tap(y1, x1) * wx
    value = (top * (1 - wy) + bottom * wy) * (cy[:, :, None, None] * cx[:, None, :, None])
    out = torch.floor(value + 0.5).clamp(0, 255).to(torch.uint8)
    return out.permute(0, 3, 1, 2).contiguous()
