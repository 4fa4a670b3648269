"""What the classic tracker compares: one feature per detection, computed as sleap-nn does.

Scores are only reproducible if the features are the same numbers, so each
one follows sleap-nn's arithmetic on the same dtypes: keypoints are the
``(N, 2)`` float64 points, a centroid their node-wise ``nanmedian``, a box
``[xmin, ymin, xmax, ymax]`` from ``nanmin``/``nanmax``. Points shifted by
optical flow stay float32 (sleap-nn scores them that way). A mask is
decoded onto the image-pixel grid (nearest resampling by ``scale``, then
placed at its rounded ``offset``) and cropped to its bounding box rounded
to whole pixels, exactly like sleap-nn's ``MaskFeature``, but the crop is
cut straight from the stored bitmap instead of from a frame-sized array.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from sleap_infer.tracking.base import MaskBitmap


@dataclass(frozen=True)
class MaskCrop:
    """A mask's foreground box on the image grid: the crop, its top-left, its area."""

    crop: np.ndarray  # (h, w) bool
    y0: int
    x0: int
    area: int  # foreground pixels inside ``crop``


EMPTY_CROP = MaskCrop(np.zeros((0, 0), bool), 0, 0, 0)
Feature = np.ndarray | MaskCrop | None  # a pose feature, a mask crop, or "no re-ID vector"


def quiet_nan_reduce(func: object, values: np.ndarray, axis: int) -> np.ndarray:
    """``func(values, axis)`` for a ``nan*`` reduction, without its all-NaN warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return func(values, axis=axis)  # type: ignore[operator]


def centroid(points: np.ndarray) -> np.ndarray:
    """Node-wise median of the visible points (NaN when none is visible)."""
    return quiet_nan_reduce(np.nanmedian, points, 0)


def bbox(points: np.ndarray) -> np.ndarray:
    """``[xmin, ymin, xmax, ymax]`` of the visible points."""
    lo = quiet_nan_reduce(np.nanmin, points, 0)
    hi = quiet_nan_reduce(np.nanmax, points, 0)
    return np.concatenate([lo, hi])


def pose_feature(kind: str, points: np.ndarray) -> np.ndarray:
    """The ``keypoints``, ``centroids`` or ``bboxes`` feature of one pose."""
    if kind == "centroids":
        return centroid(points)
    if kind == "bboxes":
        return bbox(points)
    return points


def visible_points(points: np.ndarray) -> np.ndarray:
    """Per pose, how many nodes have both coordinates (sleap-nn's support of a pose)."""
    return (~np.isnan(points).any(axis=-1)).sum(axis=-1).astype(np.int64)


def _is_identity(mask: MaskBitmap) -> tuple[bool, bool]:
    scale = (float(mask.scale[0]), float(mask.scale[1]))
    offset = (float(mask.offset[0]), float(mask.offset[1]))
    return scale == (1.0, 1.0), offset == (0.0, 0.0)


def _grid_extent(mask: MaskBitmap) -> tuple[int, int, int, int, int, int]:
    """Image-grid size before the offset, and the offset's (skip, pad) per axis."""
    h, w = mask.bitmap.shape
    unit_scale, _ = _is_identity(mask)
    if unit_scale:
        gh, gw = h, w
    else:
        gh, gw = int(h / float(mask.scale[1])), int(w / float(mask.scale[0]))
    ox, oy = round(float(mask.offset[0])), round(float(mask.offset[1]))
    return gh, gw, max(0, -oy), max(0, -ox), max(0, oy), max(0, ox)


def _grid_shape(mask: MaskBitmap) -> tuple[int, int]:
    gh, gw, skip_y, skip_x, pad_y, pad_x = _grid_extent(mask)
    return pad_y + max(0, gh - skip_y), pad_x + max(0, gw - skip_x)


def _source_index(out: np.ndarray, grid: int, size: int, skip: int, pad: int) -> np.ndarray:
    """Bitmap row (or column) of image-grid rows ``out``; -1 where there is none."""
    src = out - pad + skip  # index into the resampled (pre-offset) grid
    ok = (out >= pad) & (src < grid)
    # sleap-io's nearest resampling: floor(i * size / grid), clipped.
    mapped = src if grid == size else np.clip((src * size / grid).astype(int), 0, size - 1)
    return np.where(ok, mapped, -1)


def _window(mask: MaskBitmap, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
    """Rows ``y0:y1`` and columns ``x0:x1`` of the mask decoded onto the image grid."""
    gh, gw, skip_y, skip_x, pad_y, pad_x = _grid_extent(mask)
    h, w = mask.bitmap.shape
    rows = _source_index(np.arange(y0, y1), gh, h, skip_y, pad_y)
    cols = _source_index(np.arange(x0, x1), gw, w, skip_x, pad_x)
    out = mask.bitmap[np.ix_(np.maximum(rows, 0), np.maximum(cols, 0))].astype(bool)
    out[rows < 0, :] = False
    out[:, cols < 0] = False
    return out


def _scan(dense: np.ndarray) -> MaskCrop:
    """Crop a dense image-grid mask to its foreground by scanning it."""
    rows = np.any(dense, axis=1)
    if not rows.any():
        return EMPTY_CROP
    cols = np.any(dense, axis=0)
    y0 = int(np.argmax(rows))
    y1 = len(rows) - int(np.argmax(rows[::-1]))
    x0 = int(np.argmax(cols))
    x1 = len(cols) - int(np.argmax(cols[::-1]))
    crop = np.ascontiguousarray(dense[y0:y1, x0:x1])
    return MaskCrop(crop, y0, x0, int(np.count_nonzero(crop)))


def mask_bbox(mask: MaskBitmap) -> tuple[float, float, float, float]:
    """sleap-io's ``bbox``: ``(x, y, w, h)`` of the foreground in image pixels."""
    data = mask.bitmap
    rows, cols = np.any(data, axis=1), np.any(data, axis=0)
    if not np.any(rows):
        return (0.0, 0.0, 0.0, 0.0)
    rmin, rmax = np.where(rows)[0][[0, -1]]
    cmin, cmax = np.where(cols)[0][[0, -1]]
    sx, sy = float(mask.scale[0]), float(mask.scale[1])
    ox, oy = float(mask.offset[0]), float(mask.offset[1])
    return (
        float(cmin / sx + ox),
        float(rmin / sy + oy),
        float((cmax - cmin + 1) / sx),
        float((rmax - rmin + 1) / sy),
    )


def mask_crop(mask: MaskBitmap) -> MaskCrop:
    """sleap-nn's ``get_mask``: the image-grid mask cut to its rounded bounding box."""
    if not mask.bitmap.any():
        return EMPTY_CROP
    height, width = _grid_shape(mask)
    x, y, w, h = (round(v) for v in mask_bbox(mask))
    y0, x0 = max(0, y), max(0, x)
    y1, x1 = min(height, y + h), min(width, x + w)
    if y1 > y0 and x1 > x0:
        crop = _window(mask, y0, y1, x0, x1)
        return MaskCrop(crop, y0, x0, int(np.count_nonzero(crop)))
    return _scan(_window(mask, 0, height, 0, width))


def mask_area(mask: MaskBitmap) -> int:
    """Foreground pixels of the stored bitmap: sleap-nn's support of a mask."""
    return int(np.count_nonzero(mask.bitmap))


def embedding_rows(embeddings: np.ndarray | None, count: int) -> list[np.ndarray | None]:
    """Per detection its re-ID vector, or ``None`` where the row is all NaN (no vector)."""
    if embeddings is None:
        return [None] * count
    return [None if np.isnan(row).all() else row for row in embeddings]
