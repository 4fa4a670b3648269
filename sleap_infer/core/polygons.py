"""Predicted masks as what an output holds: sleap-io masks, and sleap-nn's simplified polygons.

``--mask-output polygon|both`` adds one ``sio.PredictedROI`` per mask, built
the way sleap-nn 0.3.5 builds it (``segmentation_convert.build_predicted_roi``):
sleap-io's ``mask.to_polygon()`` (a union of one box per run, in image
coordinates through the mask's scale and offset), then Shapely's
Douglas-Peucker ``simplify`` with tolerance ``epsilon`` times the perimeter,
``preserve_topology=True``. A MultiPolygon (a fragmented mask) is simplified
part by part, each with its own perimeter, and parts that vanish are left
out; a simplification that comes out empty keeps the raw polygon; epsilon 0
keeps the raw polygon. ``tests/writers/test_mask_outputs.py`` compares the result
with sleap-nn's own ``--mask_output both`` file, geometry for geometry.

The polygon is as exact as the mask's scale: :class:`MaskSet` keeps it as
float32 (what the ``.slp`` stores), where sleap-nn used the float64 ratio, so
a scale that float32 cannot hold (not 0.5, 0.25, 1, ...) moves vertices by
about 1e-7 of their value.

Masks with no set pixel are never written (sleap-nn drops them when it
packages its outputs): :func:`packaged` is the one place that decides, and
the journal's counts use it too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import sleap_io as sio

from sleap_infer.core.masks import MaskSet
from sleap_infer.core.options import MASK_OUTPUTS

if TYPE_CHECKING:
    from shapely.geometry.base import BaseGeometry


def check_mask_output(mask_output: str) -> tuple[bool, bool]:
    """``(write masks, write polygons)`` for a ``--mask-output`` value."""
    if mask_output not in MASK_OUTPUTS:
        raise ValueError(f"mask_output {mask_output!r}: choose from {', '.join(MASK_OUTPUTS)}")
    return mask_output in ("mask", "both"), mask_output in ("polygon", "both")


def has_pixels(masks: MaskSet) -> np.ndarray:
    """(M,) whether each mask has a set pixel: a ones run (odd position) longer than 0.

    Vectorised over the concatenated runs, so counting a long journal stays cheap.
    """
    n = len(masks)
    if n == 0:
        return np.zeros(0, bool)
    lens = np.asarray(masks.rle_len, np.int64)
    starts = np.cumsum(lens) - lens
    position = np.arange(int(lens.sum())) - np.repeat(starts, lens)
    owner = np.repeat(np.arange(n), lens)
    ones = (position % 2 == 1) & (np.asarray(masks.rle) > 0)
    return np.bincount(owner[ones], minlength=n) > 0


def packaged(masks: MaskSet | None) -> MaskSet:
    """The masks an output holds, in its order: those with a set pixel, grouped by batch
    row (stable, so each frame keeps the layer's order)."""
    if masks is None or len(masks) == 0:
        return MaskSet.empty()
    keep = has_pixels(masks)
    if not keep.all():
        masks = masks.select(keep)
    frame = np.asarray(masks.frame)
    if len(frame) < 2 or (np.diff(frame) >= 0).all():
        return masks
    order = np.argsort(frame, kind="stable")
    starts = masks.rle_start
    pieces = [masks.rle[starts[k] : starts[k] + masks.rle_len[k]] for k in order]
    return MaskSet(
        frame=masks.frame[order],
        score=masks.score[order],
        size=masks.size[order],
        scale=masks.scale[order],
        offset=masks.offset[order],
        rle=np.concatenate(pieces).astype(np.uint32),
        rle_len=masks.rle_len[order],
        track=None if masks.track is None else masks.track[order],
        tracking_score=None if masks.tracking_score is None else masks.tracking_score[order],
    )


def sio_mask(
    masks: MaskSet, k: int, tracks: list[sio.Track] | None = None
) -> sio.PredictedSegmentationMask:
    """Mask ``k`` as sleap-io's object (its RLE is ours: same encoding, copied as is);
    a tracked mask links to ``tracks[its track id]``."""
    height, width = (int(v) for v in masks.size[k])
    track = None
    tracking_score = None
    if tracks and masks.track is not None and 0 <= int(masks.track[k]) < len(tracks):
        track = tracks[int(masks.track[k])]
        if masks.tracking_score is not None:
            tracking_score = float(masks.tracking_score[k])
    return sio.PredictedSegmentationMask(
        track=track,
        tracking_score=tracking_score,
        rle_counts=np.array(masks.runs(k), np.uint32),
        height=height,
        width=width,
        scale=(float(masks.scale[k, 0]), float(masks.scale[k, 1])),
        offset=(float(masks.offset[k, 0]), float(masks.offset[k, 1])),
        score=float(masks.score[k]),
    )


def simplified(geometry: BaseGeometry, epsilon: float) -> BaseGeometry:
    """Douglas-Peucker at ``epsilon`` x perimeter, per part for a MultiPolygon (a
    summed perimeter would over-simplify each small part)."""
    if not epsilon or epsilon <= 0:
        return geometry
    from shapely.geometry import MultiPolygon

    if isinstance(geometry, MultiPolygon):
        parts = (
            g.simplify(float(epsilon) * g.length, preserve_topology=True) for g in geometry.geoms
        )
        result = MultiPolygon([p for p in parts if not p.is_empty])
    else:
        result = geometry.simplify(float(epsilon) * geometry.length, preserve_topology=True)
    return geometry if result.is_empty else result


def mask_to_roi(
    mask: sio.SegmentationMask, score: float, epsilon: float
) -> sio.PredictedROI | None:
    """The simplified polygon of ``mask`` in image pixels; None when it has no silhouette."""
    geometry = mask.to_polygon().geometry
    if geometry is None or geometry.is_empty:
        return None
    return sio.PredictedROI(geometry=simplified(geometry, epsilon), score=float(score))


def mask_rois(masks: MaskSet, epsilon: float) -> list[tuple[int, sio.PredictedROI]]:
    """``(mask index, ROI)`` for every mask with a polygon, in mask order."""
    out = []
    for k in range(len(masks)):
        roi = mask_to_roi(sio_mask(masks, k), float(masks.score[k]), epsilon)
        if roi is not None:
            out.append((k, roi))
    return out
