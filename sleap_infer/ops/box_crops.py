"""Box-scaled crops (sleap-nn 0.3.5 ``data_config.preprocessing.crop_mode: bbox``).

A centered-instance model trained with ``crop_mode: bbox`` saw each animal's box
resized to the crop, not a fixed-size window around a centre, so top-down must cut
the same windows to get the same keypoints. The rules follow sleap-nn so training
and inference crops are the same pixels:

* keypoints and boxes put pixel centres at integers, windows are in pixel-*edge*
  coordinates (keypoint + 0.5), so a window ``[X1, X2]`` spans output edges
  ``[0, crop]`` exactly;
* each box is padded by ``padding`` times its longest side on every side; the
  window is the square on the padded box's longest side (``square``,
  ``letterbox``) or the padded box itself (``stretch``), floored at ``min_size``
  and 1 px, centred on the box centre;
* output pixel ``i`` is one bilinear sample at edge coordinate
  ``X1 + (i + 0.5) * (X2 - X1) / crop`` with the frame's border pixels repeated,
  times the fraction of its footprint inside the frame (training's antialiased
  draw fades an overhanging window to zero);
* ``letterbox`` then zeroes what lies outside the padded box.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

CROP_MODES = ("fixed", "bbox")
ASPECTS = ("square", "letterbox", "stretch")


@dataclass(frozen=True)
class BoxCropSpec:
    """How a ``crop_mode: bbox`` model's crops are cut (its saved preprocessing)."""

    aspect: str = "square"
    padding: float = 0.1
    min_size: float | None = None

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> BoxCropSpec | None:
        """The spec in a ``training_config.yaml`` dict, or None for fixed-size crops.

        Unset (null) keys take sleap-nn's defaults.
        """
        pre = ((raw or {}).get("data_config") or {}).get("preprocessing") or {}
        mode = pre.get("crop_mode") or "fixed"
        if mode not in CROP_MODES:
            raise ValueError(f"preprocessing.crop_mode must be one of {CROP_MODES}, got {mode!r}")
        if mode == "fixed":
            return None
        aspect = pre.get("crop_bbox_aspect") or "square"
        if aspect not in ASPECTS:
            raise ValueError(
                f"preprocessing.crop_bbox_aspect must be one of {ASPECTS}, got {aspect!r}"
            )
        padding = pre.get("crop_bbox_padding")
        min_size = pre.get("crop_bbox_min_size")
        return cls(
            aspect=str(aspect),
            padding=0.1 if padding is None else float(padding),
            min_size=None if min_size is None else float(min_size),
        )


def box_windows(
    boxes: torch.Tensor,
    crop_size: int,
    aspect: str = "square",
    padding: float = 0.1,
    min_size: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Windows that resize ``(n, 4)`` boxes ``x1, y1, x2, y2`` to ``crop_size`` squares.

    Returns ``(windows, scales, keep_half)``, all float32: ``(n, 4)`` edge-coordinate
    windows, ``(n, 2)`` frame-to-crop scales ``(sx, sy)``, and ``(n, 2)`` the
    half-extent (crop pixels) of the padded box around the crop centre, which a
    letterbox crop keeps.
    """
    if aspect not in ASPECTS:
        raise ValueError(f"aspect must be one of {ASPECTS}, got {aspect!r}")
    boxes = torch.as_tensor(boxes, dtype=torch.float32).reshape(-1, 4)
    lo, hi = boxes[:, :2], boxes[:, 2:]
    size = (hi - lo).clamp(min=0)  # (n, 2) w, h
    margin = 2.0 * float(padding) * size.max(dim=1, keepdim=True).values
    padded = size + margin
    sides = padded if aspect == "stretch" else padded.max(dim=1, keepdim=True).values.expand(-1, 2)
    sides = sides.clamp(min=max(float(min_size or 0.0), 1.0))
    centre = (lo + hi) / 2 + 0.5
    windows = torch.cat([centre - sides / 2, centre + sides / 2], dim=1)
    scales = float(crop_size) / sides
    # A floored window is larger than the padded box: keep only the box's share.
    keep_half = torch.minimum(padded * scales, sides * scales) / 2
    return windows, scales, keep_half


def _footprint_inside(lo: torch.Tensor, hi: torch.Tensor, n: int, extent: int) -> torch.Tensor:
    """``(m, n)`` share of each output pixel's footprint within ``[0, extent]`` (edge coords)."""
    step = (hi - lo) / n
    start = lo[:, None] + torch.arange(n, device=lo.device, dtype=torch.float32) * step[:, None]
    inside = (torch.clamp(start + step[:, None], max=float(extent)) - start.clamp(min=0.0)).clamp(
        min=0.0
    )
    return (inside / step[:, None]).clamp(max=1.0)


def _sample_grid(windows: torch.Tensor, crop_size: int, height: int, width: int) -> torch.Tensor:
    """``(m, crop, crop, 2)`` grid_sample coordinates of each window's output pixel centres."""
    m = windows.shape[0]
    centres = torch.arange(crop_size, device=windows.device, dtype=torch.float32) + 0.5
    step = (windows[:, 2:] - windows[:, :2]) / crop_size
    xs = windows[:, 0:1] + centres[None, :] * step[:, 0:1]
    ys = windows[:, 1:2] + centres[None, :] * step[:, 1:2]
    # align_corners=False: -1 / +1 are the frame's outer pixel edges, as edge coordinates.
    gx = (2 * xs / width - 1)[:, None, :].expand(m, crop_size, crop_size)
    gy = (2 * ys / height - 1)[:, :, None].expand(m, crop_size, crop_size)
    return torch.stack([gx, gy], dim=-1)


def crop_windows(
    images: torch.Tensor, windows: torch.Tensor, frame: torch.Tensor, crop_size: int
) -> torch.Tensor:
    """``(m, C, crop, crop)`` float32 crops of ``images[frame]`` ``(B, C, H, W)`` over ``windows``.

    One ``grid_sample`` call for the whole batch: each frame samples a grid holding
    all of its windows stacked (frames with fewer windows sample unused rows), so
    no frame is copied per crop.
    """
    m, channels = windows.shape[0], images.shape[1]
    height, width = images.shape[-2:]
    if m == 0:
        return torch.zeros((0, channels, crop_size, crop_size), device=images.device)
    windows = windows.to(images.device, torch.float32)
    frame = frame.to(images.device, torch.long)
    batch = images.shape[0]
    counts = torch.bincount(frame, minlength=batch)
    # Position of each window among its frame's windows (frame-sorted or not).
    order = torch.argsort(frame, stable=True)
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.empty_like(frame)
    rank[order] = torch.arange(m, device=frame.device) - starts[frame[order]]
    per_frame = int(counts.max())
    grid = images.new_zeros((batch, per_frame, crop_size, crop_size, 2), dtype=torch.float32)
    grid[frame, rank] = _sample_grid(windows, crop_size, height, width)
    sampled = F.grid_sample(
        images.float(),
        grid.reshape(batch, per_frame * crop_size, crop_size, 2),
        mode="bilinear",
        padding_mode="border",
        align_corners=False,
    )  # (B, C, per_frame * crop, crop)
    sampled = sampled.reshape(batch, channels, per_frame, crop_size, crop_size).transpose(1, 2)
    crops = sampled[frame, rank]
    cover_x = _footprint_inside(windows[:, 0], windows[:, 2], crop_size, width)
    cover_y = _footprint_inside(windows[:, 1], windows[:, 3], crop_size, height)
    return crops * (cover_y[:, None, :, None] * cover_x[:, None, None, :])


def letterbox(crops: torch.Tensor, keep_half: torch.Tensor) -> torch.Tensor:
    """Zero the pixels of ``(m, C, h, w)`` crops outside the centred padded box."""
    m, _, height, width = crops.shape
    if m == 0:
        return crops
    xs = (torch.arange(width, device=crops.device, dtype=torch.float32) + 0.5 - width / 2).abs()
    ys = (torch.arange(height, device=crops.device, dtype=torch.float32) + 0.5 - height / 2).abs()
    half = keep_half.to(crops.device, torch.float32)
    keep = (ys[None, :, None] <= half[:, 1, None, None]) & (
        xs[None, None, :] <= half[:, 0, None, None]
    )
    return crops * keep[:, None].to(crops.dtype)


def _per_window(values: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """Broadcast ``(m, 2)`` per-window values over ``(m, ..., 2)`` points."""
    shape = (points.shape[0],) + (1,) * (points.ndim - 2) + (2,)
    return values.reshape(shape).to(points)


def points_to_crop(points: torch.Tensor, windows: torch.Tensor, scales: torch.Tensor):
    """Frame keypoints ``(m, ..., 2)`` in the crops of their windows."""
    origin, s = _per_window(windows[:, :2], points), _per_window(scales, points)
    return (points + 0.5 - origin) * s - 0.5


def points_from_crop(points: torch.Tensor, windows: torch.Tensor, scales: torch.Tensor):
    """Crop keypoints ``(m, ..., 2)`` back in the frame (inverse of :func:`points_to_crop`)."""
    origin, s = _per_window(windows[:, :2], points), _per_window(scales, points)
    return (points + 0.5) / s + origin - 0.5


def cut_box_crops(
    images: torch.Tensor,
    boxes: torch.Tensor,
    frame: torch.Tensor,
    crop_size: int,
    spec: BoxCropSpec,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Crops of ``boxes`` (frame pixels of ``images``) as ``spec`` cuts them.

    Returns ``(crops, windows, scales)``; crops keep ``images``' dtype (uint8 frames
    give rounded uint8 crops, like the uint8 training crops).
    """
    windows, scales, keep_half = box_windows(
        boxes, crop_size, spec.aspect, spec.padding, spec.min_size
    )
    crops = crop_windows(images, windows, frame, crop_size)
    if spec.aspect == "letterbox":
        crops = letterbox(crops, keep_half)
    if not torch.is_floating_point(images):
        crops = crops.round().clamp(0, 255).to(images.dtype)
    return crops, windows, scales
