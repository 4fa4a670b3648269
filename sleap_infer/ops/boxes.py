"""Box decoding for the detectors: CenterNet peaks, SSD anchors, class-wise IoU NMS.

Everything runs in torch, with the same ops (and the same sorts) as sleap-nn 0.3.5's
``inference/bbox.py`` and torchvision's NMS, because ties decide the order of boxes:

* CenterNet peaks are cells equal to their 3x3 max pool, so a plateau of equal
  values gives several peaks (unlike :mod:`sleap_infer.ops.seg_group`); the top
  ``max_detections`` are taken *before* the score threshold;
* SSD keeps (anchor, class) pairs at or above the threshold, at most 1000 of them
  (``topk``), then NMS, then the first ``max_detections``;
* the final order is ``argsort(descending=True)`` of the scores, which is not a
  stable sort: kept as is so ties land where sleap-nn puts them.

Boxes are ``(x1, y1, x2, y2)`` in padded model-input pixels, pixel centres at
integers (CenterNet has no half-cell shift; SSD anchor centres sit at
``(i + 0.5) * stride``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

PRE_NMS_TOP_K = 1000
"""SSD (anchor, class) candidates entering NMS per frame (sleap-nn's fixed cap)."""
LOG_MAX_SCALE = math.log(1000.0)
"""SSD size deltas are clamped so an untrained head cannot overflow ``exp``."""
VANILLA_NMS_NUMEL = 4000
"""torchvision's batched NMS runs per class above this many box coordinates (on CPU)
and with shifted coordinates below it; the shift rounds, so both paths are kept."""


class Detections(NamedTuple):
    """One frame's boxes, sorted by descending score."""

    boxes: torch.Tensor  # (n, 4) float32 xyxy
    scores: torch.Tensor  # (n,) float32
    classes: torch.Tensor  # (n,) int64 category index


def clip_boxes(boxes: torch.Tensor, height: int | float, width: int | float) -> torch.Tensor:
    """Clamp x to ``[0, width - 1]`` and y to ``[0, height - 1]`` (last pixel centres)."""
    return torch.stack(
        [
            boxes[..., 0].clamp(0, width - 1),
            boxes[..., 1].clamp(0, height - 1),
            boxes[..., 2].clamp(0, width - 1),
            boxes[..., 3].clamp(0, height - 1),
        ],
        dim=-1,
    )


# --------------------------------------------------------------------------- NMS
def nms(
    boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float, limit: int | None = None
) -> torch.Tensor:
    """Greedy IoU suppression with torchvision's CPU semantics: indices kept, by score.

    IoU is computed in the boxes' dtype (``inter / (area_i + area_j - inter)``) and
    compared with the threshold as a double; a box is suppressed when IoU is strictly
    above it. The score order is ``sort(descending=True)``, as torchvision calls it.
    Only a kept box's row of IoUs is ever computed (elementwise, so the same floats as
    the full matrix), and with ``limit`` the scan stops once that many are kept: an
    under-trained SSD sends 1000 overlapping candidates per frame, and the full
    matrix made NMS most of the run.
    """
    n = boxes.shape[0]
    if n == 0:
        return torch.zeros(0, dtype=torch.long, device=boxes.device)
    order = scores.sort(0, descending=True)[1]
    b = boxes[order].cpu().numpy()
    x1, y1, x2, y2 = b[:, 0], b[:, 1], b[:, 2], b[:, 3]
    areas = (x2 - x1) * (y2 - y1)
    zero = np.zeros((), b.dtype)
    suppressed = np.zeros(n, bool)
    keep: list[int] = []
    for k in range(n):
        if suppressed[k]:
            continue
        keep.append(k)
        if limit is not None and len(keep) >= limit:
            break
        rest = slice(k + 1, n)
        w = np.maximum(zero, np.minimum(x2[k], x2[rest]) - np.maximum(x1[k], x1[rest]))
        h = np.maximum(zero, np.minimum(y2[k], y2[rest]) - np.maximum(y1[k], y1[rest]))
        inter = w * h
        iou = inter / (areas[k] + areas[rest] - inter)
        suppressed[rest] |= iou.astype(np.float64) > iou_threshold
    return order[torch.as_tensor(keep, dtype=torch.long, device=order.device)]


def batched_nms(
    boxes: torch.Tensor,
    scores: torch.Tensor,
    classes: torch.Tensor,
    iou_threshold: float,
    limit: int | None = None,
) -> torch.Tensor:
    """NMS within each class only (``torchvision.ops.batched_nms``), kept indices by score.

    Up to 1000 boxes torchvision shifts each class's boxes by ``class * (max + 1)``
    and runs one NMS; the shift changes the float rounding of IoU, so it is
    reproduced rather than replaced by an exact per-class loop.
    """
    if boxes.numel() == 0:
        return torch.zeros(0, dtype=torch.long, device=boxes.device)
    if boxes.numel() <= VANILLA_NMS_NUMEL:
        offsets = classes.to(boxes) * (boxes.max() + torch.tensor(1).to(boxes))
        return nms(boxes + offsets[:, None], scores, iou_threshold, limit)
    kept = torch.zeros_like(scores, dtype=torch.bool)
    for c in torch.unique(classes):
        members = torch.where(classes == c)[0]
        kept[members[nms(boxes[members], scores[members], iou_threshold)]] = True
    idx = torch.where(kept)[0]
    return idx[scores[idx].sort(descending=True)[1]]


def _filter(det: Detections, iou_threshold: float | None, limit: int | None = None) -> Detections:
    """Drop boxes without area (clipped away), then the optional class-wise NMS (which may
    stop after ``limit`` boxes: only that many are kept afterwards)."""
    boxes, scores, classes = det
    ok = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    boxes, scores, classes = boxes[ok], scores[ok], classes[ok]
    if iou_threshold is None or boxes.shape[0] == 0:
        return Detections(boxes, scores, classes)
    keep = batched_nms(boxes.float(), scores.float(), classes, float(iou_threshold), limit)
    return Detections(boxes[keep], scores[keep], classes[keep])


def _by_score(det: Detections, limit: int) -> Detections:
    """The first ``limit`` boxes by ``argsort(descending=True)`` (unstable, as sleap-nn)."""
    order = det.scores.argsort(descending=True)[: min(det.scores.shape[0], limit)]
    return Detections(det.boxes[order], det.scores[order], det.classes[order])


# --------------------------------------------------------------------- CenterNet
def decode_centernet(
    heatmap: torch.Tensor,
    size: torch.Tensor,
    offset: torch.Tensor | None,
    output_stride: int,
    score_threshold: float,
    max_detections: int,
    iou_threshold: float | None = None,
    input_hw: tuple[int, int] | None = None,
) -> list[Detections]:
    """Center probabilities ``(B, C, h, w)``, sizes and offsets ``(B, 2, h, w)`` in cells
    -> per-frame boxes in input pixels: ``((x + dx) -/+ w / 2) * stride``.

    Top-k comes first: a frame with more than ``max_detections`` peaks keeps the
    strongest even if weaker ones pass the threshold. Sizes are clamped at 0.
    """
    b, c, h, w = heatmap.shape
    pooled = F.max_pool2d(heatmap, 3, stride=1, padding=1)
    peaks = heatmap * (pooled == heatmap).to(heatmap.dtype)
    k = min(int(max_detections), c * h * w)
    scores, inds = peaks.reshape(b, -1).topk(k, dim=1)
    classes = inds // (h * w)
    cell = inds % (h * w)
    ys = (cell // w).to(heatmap.dtype)
    xs = (cell % w).to(heatmap.dtype)

    def at_peaks(maps: torch.Tensor) -> torch.Tensor:  # (B, 2, h, w) -> (B, k, 2)
        return maps.reshape(b, 2, -1).gather(2, cell[:, None, :].expand(b, 2, k)).permute(0, 2, 1)

    wh = at_peaks(size).clamp(min=0)
    if offset is not None:
        off = at_peaks(offset)
        xs, ys = xs + off[..., 0], ys + off[..., 1]
    s = float(output_stride)
    boxes = torch.stack(
        [
            (xs - wh[..., 0] / 2) * s,
            (ys - wh[..., 1] / 2) * s,
            (xs + wh[..., 0] / 2) * s,
            (ys + wh[..., 1] / 2) * s,
        ],
        dim=-1,
    )
    if input_hw is not None:
        boxes = clip_boxes(boxes, *input_hw)
    frames = []
    for i in range(b):
        keep = scores[i] >= score_threshold
        det = _filter(Detections(boxes[i][keep], scores[i][keep], classes[i][keep]), iou_threshold)
        frames.append(_by_score(det, k))
    return frames


# --------------------------------------------------------------------------- SSD
def anchor_shapes(
    size: float, scales: Sequence[float], aspect_ratios: Sequence[float]
) -> list[tuple[float, float]]:
    """``(w, h)`` per anchor of a level: scale-major, ratio ``h / w``, area ``(size*scale)^2``."""
    shapes = []
    for scale in scales:
        area = (size * scale) ** 2
        for ratio in aspect_ratios:
            w = math.sqrt(area / ratio)
            shapes.append((w, w * ratio))
    return shapes


def make_anchors(
    input_hw: tuple[int, int],
    strides: Sequence[int],
    sizes: Sequence[float],
    scales: Sequence[float],
    aspect_ratios: Sequence[float],
) -> torch.Tensor:
    """``(A, 4)`` float32 xyxy anchors in the SSD head's row order: level (finest
    first), row, column, shape; a level has ``ceil(H / stride) x ceil(W / stride)`` cells."""
    levels = []
    for stride, size in zip(strides, sizes):
        h, w = math.ceil(input_hw[0] / stride), math.ceil(input_hw[1] / stride)
        shapes = torch.tensor(anchor_shapes(size, scales, aspect_ratios), dtype=torch.float32)
        cy, cx = torch.meshgrid(
            (torch.arange(h, dtype=torch.float32) + 0.5) * stride,
            (torch.arange(w, dtype=torch.float32) + 0.5) * stride,
            indexing="ij",
        )
        centers = torch.stack([cx, cy], -1).reshape(-1, 1, 2)
        half = shapes[None] / 2
        levels.append(torch.cat([centers - half, centers + half], dim=-1).reshape(-1, 4))
    return torch.cat(levels, dim=0)


def decode_deltas(
    deltas: torch.Tensor, anchors: torch.Tensor, variances: Sequence[float]
) -> torch.Tensor:
    """SSD box coding, inverted: centre moves by ``d * v * anchor side``, sides scale by
    ``exp(min(d * v, ln 1000))``."""
    aw = anchors[..., 2] - anchors[..., 0]
    ah = anchors[..., 3] - anchors[..., 1]
    acx = anchors[..., 0] + aw / 2
    acy = anchors[..., 1] + ah / 2
    v = variances
    cx = acx + deltas[..., 0] * v[0] * aw
    cy = acy + deltas[..., 1] * v[1] * ah
    bw = aw * torch.exp((deltas[..., 2] * v[2]).clamp(max=LOG_MAX_SCALE))
    bh = ah * torch.exp((deltas[..., 3] * v[3]).clamp(max=LOG_MAX_SCALE))
    return torch.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], dim=-1)


def decode_ssd(
    raw: torch.Tensor,
    anchors: torch.Tensor,
    variances: Sequence[float],
    score_threshold: float,
    max_detections: int,
    iou_threshold: float | None,
    input_hw: tuple[int, int] | None = None,
    pre_nms_top_k: int = PRE_NMS_TOP_K,
) -> list[Detections]:
    """``(B, A, K + 4)`` head output (logit 0 = background) -> per-frame boxes.

    Class probabilities are a softmax over all K logits with the background column
    then dropped; candidates are flattened anchor-major (``anchor * C + class``).
    """
    n_logits = raw.shape[-1] - 4
    probs = torch.softmax(raw[..., :n_logits].float(), dim=-1)[..., 1:]
    boxes = decode_deltas(raw[..., n_logits:].float(), anchors.to(raw.device), variances)
    if input_hw is not None:
        boxes = clip_boxes(boxes, *input_hw)
    n_classes = probs.shape[-1]
    frames = []
    for i in range(raw.shape[0]):
        flat = probs[i].reshape(-1)
        cand = (flat >= score_threshold).nonzero(as_tuple=True)[0]
        if cand.numel() > pre_nms_top_k:
            cand = cand[flat[cand].topk(pre_nms_top_k).indices]
        anchor, cls = cand // n_classes, cand % n_classes
        det = _filter(Detections(boxes[i][anchor], flat[cand], cls), iou_threshold, max_detections)
        det = Detections(*(t[:max_detections] for t in det))
        frames.append(_by_score(det, max_detections))
    return frames
