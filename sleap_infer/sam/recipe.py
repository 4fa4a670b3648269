"""The SAM mask recipe of sleap-nn 0.3.5: prompts from poses, candidate pick, overlap rule.

Every constant and rounding here is sleap-nn's (``sleap_nn/inference/sam/prompts.py``
and ``backends.py``), because the masks must match it pixel for pixel:

* the keypoint box pads each axis by ``max(15, 0.6 * side)`` and clamps to the
  image, in float32;
* ``pose`` prompts are the visible keypoints plus that box; ``centroid`` is one
  point (``--sam-anchor-ind``'s node when visible, else the keypoints' mean)
  with the box kept only to reject candidates; ``box`` is the box alone;
* of SAM's three candidates, those larger than 1.5x the box area are dropped
  (SAM's whole-arena answer) and the best-scored survivor wins, else the
  smallest candidate;
* ``--sam-disjointify-masks`` gives a pixel claimed by two masks to the instance
  whose nearest keypoint is closest (a keypoint Voronoi split);
* the frame is equalised with CLAHE (clip 3, 8x8 tiles) before encoding: SAM
  was trained on natural images and lab video is often low-contrast.

No model here: :mod:`sleap_infer.sam.models` runs SAM on what these build.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BOX_MARGIN_FRAC = 0.6
BOX_MARGIN_MIN = 15.0
MAX_BOX_AREA_FACTOR = 1.5
CLAHE_CLIP_LIMIT = 3.0
CLAHE_TILE_GRID = (8, 8)
PROMPT_MODES = ("pose", "centroid", "box")
# The nominal predicted-IoU floors: masks under it are flagged on the overlay, never dropped.
IOU_FLOOR = {"sam": 0.88, "sam3": 0.5}


@dataclass(frozen=True)
class Prompt:
    """One instance's prompt, in frame pixels.

    ``reject_box`` sizes the candidate rejection and is never shown to SAM.
    """

    points: np.ndarray | None  # (n, 2) float32 xy, all positive
    box: np.ndarray | None  # [x0, y0, x1, y1] float32
    reject_box: np.ndarray
    mode: str


def visible(points: np.ndarray) -> np.ndarray:
    """The rows of ``(n, 2)`` keypoints whose x and y are both finite, as float32."""
    pts = np.asarray(points, dtype=np.float32).reshape(-1, 2)
    return pts[np.isfinite(pts).all(axis=1)]


def keypoint_box(points: np.ndarray, hw: tuple[int, int]) -> np.ndarray:
    """The padded keypoint box, clamped to ``[0, w-1] x [0, h-1]`` (float32, as sleap-nn)."""
    pts = np.asarray(points, dtype=np.float32).reshape(-1, 2)
    x0, y0 = pts.min(0)
    x1, y1 = pts.max(0)
    mx = max(BOX_MARGIN_MIN, BOX_MARGIN_FRAC * (x1 - x0))
    my = max(BOX_MARGIN_MIN, BOX_MARGIN_FRAC * (y1 - y0))
    return np.array(
        [
            max(0.0, x0 - mx),
            max(0.0, y0 - my),
            min(hw[1] - 1.0, x1 + mx),
            min(hw[0] - 1.0, y1 + my),
        ],
        np.float32,
    )


def _point_box(point: np.ndarray, hw: tuple[int, int]) -> np.ndarray:
    cx, cy = float(point[0, 0]), float(point[0, 1])
    m = BOX_MARGIN_MIN
    return np.array(
        [max(0.0, cx - m), max(0.0, cy - m), min(hw[1] - 1.0, cx + m), min(hw[0] - 1.0, cy + m)],
        np.float32,
    )


def anchor(points: np.ndarray, anchor_ind: int | None) -> np.ndarray | None:
    """The centroid prompt's point: node ``anchor_ind`` when it is visible, else the mean
    of the visible keypoints; ``None`` when nothing is visible."""
    pts = np.asarray(points, dtype=np.float32).reshape(-1, 2)
    if anchor_ind is not None and 0 <= anchor_ind < len(pts) and np.isfinite(pts[anchor_ind]).all():
        return pts[anchor_ind].astype(np.float32)
    vis = visible(pts)
    return vis.mean(0).astype(np.float32) if len(vis) else None


def prompt_for(
    mode: str, points: np.ndarray, hw: tuple[int, int], anchor_ind: int | None = None
) -> Prompt | None:
    """The prompt for one instance's ``(n, 2)`` keypoints, or ``None`` where the instance
    has nothing to prompt with (sleap-nn then leaves it without a mask)."""
    if mode not in PROMPT_MODES:
        raise ValueError(f"unknown SAM prompt mode {mode!r}; expected one of {PROMPT_MODES}")
    vis = visible(points)
    if len(vis) == 0:  # pose falls back to a centroid, but that needs a visible keypoint too
        return None
    box = keypoint_box(vis, hw)
    if mode == "pose":
        return Prompt(vis, box, box, "pose")
    if mode == "box":
        return Prompt(None, box, box, "box")
    center = anchor(points, anchor_ind)
    assert center is not None  # some keypoint is visible
    return Prompt(center.reshape(1, 2), None, box, "centroid")


def pick(masks: np.ndarray, scores: np.ndarray, reject_box: np.ndarray) -> int:
    """The chosen candidate of ``(c, H, W)`` masks (see the module docstring)."""
    box = reject_box
    box_area = max(1.0, (box[2] - box[0]) * (box[3] - box[1]))
    areas = masks.reshape(len(masks), -1).sum(1).astype(float)
    ok = areas <= MAX_BOX_AREA_FACTOR * box_area
    if ok.any():
        idx = np.where(ok)[0]
        return int(idx[int(np.argmax(scores[idx]))])
    return int(np.argmin(areas))


def disjointify(masks: Sequence[np.ndarray], keypoints: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Masks with every contested pixel given to the nearest instance's keypoints."""
    from scipy.ndimage import distance_transform_edt

    n = len(masks)
    if n == 0:
        return []
    h, w = masks[0].shape
    stack = np.stack(masks).astype(bool)
    contested = stack.sum(0) >= 2
    if not contested.any():
        return [m.copy() for m in masks]
    dists = np.full((n, h, w), 1e9, np.float32)
    for i, ks in enumerate(keypoints):
        seed = np.ones((h, w), np.uint8)
        for x, y in np.asarray(ks, dtype=np.float32).reshape(-1, 2):
            xi, yi = round(float(x)), round(float(y))
            if 0 <= yi < h and 0 <= xi < w:
                seed[yi, xi] = 0
        if seed.min() == 0:
            dists[i] = distance_transform_edt(seed)
    owner = np.argmin(dists, 0)
    return [np.where(contested & (owner != i), False, stack[i]) for i in range(n)]


def gray(image: np.ndarray) -> np.ndarray:
    """A frame as ``(H, W)`` uint8: the first channel (sleap-nn encodes channel 0)."""
    arr = np.asarray(image)
    if arr.ndim == 3:  # (C, H, W) with a small leading C, else (H, W, C)
        channels_first = arr.shape[0] in (1, 3) and arr.shape[0] < arr.shape[-1]
        arr = arr[0] if channels_first else arr[..., 0]
    if arr.dtype != np.uint8:
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(arr)


def clahe_rgb(image: np.ndarray) -> np.ndarray:
    """``(H, W)`` uint8 -> CLAHE -> ``(H, W, 3)`` uint8, SAM's input (OpenCV's CLAHE)."""
    try:
        import cv2
    except ImportError as exc:
        raise ImportError(
            "SAM masks need OpenCV for their CLAHE step: pip install 'sleap-infer[sam]'"
        ) from exc
    src = cv2.createCLAHE(CLAHE_CLIP_LIMIT, CLAHE_TILE_GRID).apply(gray(image))
    return np.stack([src] * 3, axis=-1).astype(np.uint8)
