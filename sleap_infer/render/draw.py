"""Raster primitives in plain numpy: thick lines, dots, translucent fills and score digits.

A rendered video is a quick visual check of a model, not a figure, so there is
no anti-aliasing and no font machinery (Pillow is not a dependency): shapes are
stamped as discs of precomputed pixel offsets, which costs the same for any
image size (a bounding-box distance test would touch the whole frame for one
long diagonal edge), and scores are drawn with a 3x5 bitmap font.

Everything draws in place on an ``(H, W, 3)`` uint8 image, in its own pixel
coordinates (integer = pixel centre); whatever falls outside is clipped.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

Color = tuple[int, int, int]

# 3x5 glyphs for what a score needs; anything else is drawn as a blank.
_GLYPHS = {
    "0": ("111", "101", "101", "101", "111"),
    "1": ("010", "110", "010", "010", "111"),
    "2": ("111", "001", "111", "100", "111"),
    "3": ("111", "001", "111", "001", "111"),
    "4": ("101", "101", "111", "001", "001"),
    "5": ("111", "100", "111", "001", "111"),
    "6": ("111", "100", "111", "101", "111"),
    "7": ("111", "001", "001", "001", "001"),
    "8": ("111", "101", "111", "101", "111"),
    "9": ("111", "101", "111", "001", "111"),
    ".": ("0", "0", "0", "0", "1"),
    "-": ("000", "000", "111", "000", "000"),
}
GLYPH_HEIGHT = 5


@lru_cache(maxsize=32)
def _disc(radius: float) -> tuple[np.ndarray, np.ndarray]:
    """``(dy, dx)`` offsets of the pixels within ``radius`` of a centre pixel."""
    reach = int(np.ceil(radius))
    dy, dx = np.mgrid[-reach : reach + 1, -reach : reach + 1]
    inside = dy * dy + dx * dx <= radius * radius + 1e-9
    return dy[inside], dx[inside]


def _stamp(image: np.ndarray, xs: np.ndarray, ys: np.ndarray, color: Color, radius: float) -> None:
    """A disc of ``radius`` at every ``(xs[i], ys[i])``, clipped to the image."""
    dy, dx = _disc(radius)
    cx = np.rint(xs).astype(np.int64)[:, None] + dx[None, :]
    cy = np.rint(ys).astype(np.int64)[:, None] + dy[None, :]
    height, width = image.shape[:2]
    keep = (cx >= 0) & (cx < width) & (cy >= 0) & (cy < height)
    image[cy[keep], cx[keep]] = color


def _clip_segment(
    p0: np.ndarray, p1: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Liang-Barsky: the part of ``p0-p1`` inside the box ``lo..hi``, or None.

    Keeps a segment to a point far off-screen (a wild prediction) from being
    sampled along its whole length.
    """
    d = p1 - p0
    t0, t1 = 0.0, 1.0
    for p, q in ((-d, p0 - lo), (d, hi - p0)):
        for k in range(2):
            if p[k] == 0:
                if q[k] < 0:
                    return None
                continue
            t = q[k] / p[k]
            if p[k] < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
    if t0 > t1:
        return None
    return p0 + t0 * d, p0 + t1 * d


def line(image: np.ndarray, p0: np.ndarray, p1: np.ndarray, color: Color, width: float) -> None:
    """A segment ``width`` pixels thick; nothing when an end is not finite."""
    p0, p1 = np.asarray(p0, np.float64), np.asarray(p1, np.float64)
    if not (np.isfinite(p0).all() and np.isfinite(p1).all()):
        return
    radius = width / 2
    height, width_px = image.shape[:2]
    lo = np.array([-radius - 1, -radius - 1])
    hi = np.array([width_px + radius, height + radius])
    clipped = _clip_segment(p0, p1, lo, hi)
    if clipped is None:
        return
    a, b = clipped
    n = int(np.ceil(np.hypot(*(b - a)) * 2)) + 1  # half-pixel steps leave no gaps
    t = np.linspace(0.0, 1.0, n)
    _stamp(image, a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), color, radius)


def dot(image: np.ndarray, center: np.ndarray, color: Color, radius: float) -> None:
    """A filled disc; nothing when the centre is not finite."""
    center = np.asarray(center, np.float64)
    if np.isfinite(center).all():
        _stamp(image, center[:1], center[1:2], color, radius)


def polygon_outline(image: np.ndarray, corners: np.ndarray, color: Color, width: float) -> None:
    """Closed outline through ``(n, 2)`` corners (a box, rotated or not)."""
    for k in range(len(corners)):
        line(image, corners[k], corners[(k + 1) % len(corners)], color, width)


def tint(
    image: np.ndarray, rows: slice, cols: slice, where: np.ndarray, color: Color, alpha: float
) -> None:
    """Blend ``color`` over ``image[rows, cols]`` where ``where`` is set (translucent masks)."""
    region = image[rows, cols]
    if not where.any():
        return
    blended = region[where].astype(np.float32) * (1 - alpha) + np.float32(alpha) * np.asarray(
        color, np.float32
    )
    region[where] = np.clip(np.rint(blended), 0, 255).astype(np.uint8)


def _bitmap(text: str) -> np.ndarray:
    """``(5, w)`` bool bitmap of ``text``, one blank column between glyphs."""
    columns: list[np.ndarray] = []
    for ch in text:
        rows = _GLYPHS.get(ch, ("000",) * GLYPH_HEIGHT)
        glyph = np.array([[c == "1" for c in row] for row in rows], dtype=bool)
        if columns:
            columns.append(np.zeros((GLYPH_HEIGHT, 1), dtype=bool))
        columns.append(glyph)
    return np.concatenate(columns, axis=1) if columns else np.zeros((GLYPH_HEIGHT, 0), bool)


def text_size(text: str, pixel: int) -> tuple[int, int]:
    """``(width, height)`` of :func:`label` for ``text`` including its dark backdrop."""
    return (_bitmap(text).shape[1] + 2) * pixel, (GLYPH_HEIGHT + 2) * pixel


def label(image: np.ndarray, x: int, y: int, text: str, color: Color, pixel: int) -> None:
    """``text`` in ``color`` on a black backdrop whose top-left is ``(x, y)``.

    ``pixel`` is the size of one font pixel; the label is moved inside the
    image when it would stick out, so a score at the frame edge stays legible.
    """
    bitmap = np.kron(_bitmap(text), np.ones((pixel, pixel), dtype=bool))
    box_w, box_h = text_size(text, pixel)
    height, width = image.shape[:2]
    if box_w > width or box_h > height:
        return
    x = int(min(max(x, 0), width - box_w))
    y = int(min(max(y, 0), height - box_h))
    image[y : y + box_h, x : x + box_w] = 0
    inner = image[y + pixel : y + box_h - pixel, x + pixel : x + box_w - pixel]
    inner[bitmap] = color
