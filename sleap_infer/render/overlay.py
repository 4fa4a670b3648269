"""What one frame's predictions look like: masks, boxes, skeletons and scores in track colours.

Colours follow identity, not list order: a tracked instance (or mask, or box)
takes the colour of its track's position in ``labels.tracks``, so an animal
keeps its colour over the whole video and an identity switch shows as a colour
change. Untracked ones are coloured by their position within the frame,
which at least tells neighbours apart.

Coordinates are scaled to the output size with pixel centres kept in place
(``x' = (x + 0.5) * f - 0.5``), so a resized video still puts every node on
its pixel; masks map through their own ``scale``/``offset`` (sleap-io's
``image = mask / scale + offset``) and are sampled nearest-neighbour.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sleap_io as sio

import sleap_infer.render.draw as draw
from sleap_infer.render.draw import Color

# Tableau 10, then a few more: distinct on dark and bright backgrounds alike.
PALETTE: tuple[Color, ...] = (
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (188, 189, 34),
    (23, 190, 207),
    (255, 255, 255),
    (255, 221, 0),
    (0, 255, 127),
)
MASK_ALPHA = 0.4


def palette_color(index: int) -> Color:
    """The stable colour for track (or fallback) number ``index``."""
    return PALETTE[index % len(PALETTE)]


@dataclass(frozen=True)
class Style:
    """Stroke sizes for one output size: about 2 px lines at SLEAP's usual resolutions."""

    line: float
    node: float
    font: int

    @classmethod
    def for_size(cls, height: int, width: int) -> Style:
        longest = max(height, width)
        line = max(2.0, round(longest / 400))
        return cls(line=line, node=1.5 * line + 1, font=max(1, round(longest / 250)))


class FrameOverlay:
    """Draws a labels file's annotations of one frame onto an (optionally resized) image."""

    def __init__(
        self,
        tracks: Sequence[sio.Track],
        source_size: tuple[int, int],
        output_size: tuple[int, int],
    ) -> None:
        """``source_size`` and ``output_size`` are ``(height, width)``."""
        self._track_index = {id(t): k for k, t in enumerate(tracks)}
        self.fy = output_size[0] / source_size[0]
        self.fx = output_size[1] / source_size[1]
        self.style = Style.for_size(*output_size)

    def _color(self, track: sio.Track | None, fallback: int) -> Color:
        index = self._track_index.get(id(track)) if track is not None else None
        return palette_color(fallback if index is None else index)

    def _to_output(self, xy: np.ndarray) -> np.ndarray:
        """Source pixel coordinates -> output ones, pixel centres kept on pixel centres."""
        xy = np.asarray(xy, np.float64)
        x = (xy[..., 0] + 0.5) * self.fx - 0.5
        return np.stack([x, (xy[..., 1] + 0.5) * self.fy - 0.5], axis=-1)

    def draw(self, image: np.ndarray, frames: Sequence[sio.LabeledFrame]) -> tuple[int, int]:
        """Draw every annotation of ``frames`` (one video frame) onto ``image``; returns the
        numbers of instances and of masks and boxes drawn. Masks go first so that they
        never hide a skeleton."""
        masks = [m for lf in frames for m in getattr(lf, "masks", None) or ()]
        boxes = [b for lf in frames for b in getattr(lf, "bboxes", None) or ()]
        instances = [inst for lf in frames for inst in lf.instances]
        for k, mask in enumerate(masks):
            self._mask(image, mask, self._color(mask.track, k))
        for k, box in enumerate(boxes):
            self._box(image, box, self._color(box.track, k))
        for k, inst in enumerate(instances):
            self._skeleton(image, inst, self._color(inst.track, k))
        for k, inst in enumerate(instances):
            self._score(image, inst, self._color(inst.track, k))
        return len(instances), len(masks) + len(boxes)

    def _skeleton(self, image: np.ndarray, inst: sio.Instance, color: Color) -> None:
        points = self._to_output(inst.numpy())
        for i, j in inst.skeleton.edge_inds:
            draw.line(image, points[i], points[j], color, self.style.line)
        for point in points:
            draw.dot(image, point, color, self.style.node)

    def _score(self, image: np.ndarray, inst: sio.Instance, color: Color) -> None:
        """The instance score just above its topmost node (user instances have none)."""
        score = getattr(inst, "score", None)
        points = self._to_output(inst.numpy())
        seen = points[np.isfinite(points).all(axis=1)]
        if score is None or not math.isfinite(score) or not len(seen):
            return
        text = f"{score:.2f}"
        _, text_h = draw.text_size(text, self.style.font)
        x = round(seen[:, 0].min())
        y = round(seen[:, 1].min() - self.style.node - 1 - text_h)
        draw.label(image, x, y, text, color, self.style.font)

    def _box(self, image: np.ndarray, box: sio.BoundingBox, color: Color) -> None:
        corners = self._to_output(np.asarray(box.corners, np.float64))
        draw.polygon_outline(image, corners, color, self.style.line)
        score = getattr(box, "score", None)
        if score is not None and math.isfinite(score):
            x, y = corners.min(axis=0)
            _, text_h = draw.text_size("0", self.style.font)
            draw.label(image, round(x), round(y) - text_h, f"{score:.2f}", color, self.style.font)

    def _mask(self, image: np.ndarray, mask: sio.SegmentationMask, color: Color) -> None:
        """Tint the output pixels whose centre falls on a set mask pixel."""
        data = mask.data
        sx, sy = (float(v) for v in mask.scale)
        ox, oy = (float(v) for v in mask.offset)
        rows = self._span(oy, data.shape[0] / sy, self.fy, image.shape[0])
        cols = self._span(ox, data.shape[1] / sx, self.fx, image.shape[1])
        if rows is None or cols is None:
            return
        # Output pixel centre -> source pixel edge coordinates -> mask pixel.
        my = np.floor(((np.arange(rows.start, rows.stop) + 0.5) / self.fy - oy) * sy).astype(int)
        mx = np.floor(((np.arange(cols.start, cols.stop) + 0.5) / self.fx - ox) * sx).astype(int)
        ok_y = (my >= 0) & (my < data.shape[0])
        ok_x = (mx >= 0) & (mx < data.shape[1])
        where = data[np.clip(my, 0, data.shape[0] - 1)][:, np.clip(mx, 0, data.shape[1] - 1)]
        where &= ok_y[:, None] & ok_x[None, :]
        draw.tint(image, rows, cols, where, color, MASK_ALPHA)

    @staticmethod
    def _span(origin: float, extent: float, factor: float, size: int) -> slice | None:
        """Output pixels ``[origin, origin + extent)`` (source units) may cover, clipped."""
        lo = max(int(np.floor(origin * factor)) - 1, 0)
        hi = min(int(np.ceil((origin + extent) * factor)) + 1, size)
        return slice(lo, hi) if hi > lo else None
