"""Box matching: sleap-nn 0.3.5's ``eval --match_method bbox`` (COCO box AP).

A detector (``bbox_centernet``, ``bbox_ssd``) predicts boxes, not poses, so it
is scored the way detectors are: per class and IoU threshold (0.50:0.05:0.95)
each frame's detections, best score first, take the unmatched ground-truth box
they overlap most; AP is the 101-point interpolated area under the precision /
recall curve, AR the recall reached. Ground truth without boxes (the pose labels
a detector was trained from) gets them derived as the detector's training did:
``--bbox-source instances`` draws the tight box around each user instance's
visible points, ``masks`` around each user mask, both grown by ``--bbox-padding``
pixels a side, so a model trained with padding is not scored against boxes it
never learnt. The operating point (precision, recall, F1, mean IoU) is taken at
IoU 0.5 and the score threshold that maximises F1, because a fixed threshold
would favour whichever model's scores happen to be calibrated to it. All of it
follows sleap-nn's ``compute_bbox_metrics`` line for line, so its numbers and ours
can be quoted side by side.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sleap_io as sio

from sleap_infer.core.errors import UsageError

BBOX_SOURCES = ("auto", "bboxes", "instances", "masks")
IOU_THRESHOLDS = np.round(np.arange(0.5, 0.96, 0.05), 2)
MAX_DETECTIONS = 100  # per frame, best scores first (COCO's cap)
DEFAULT_CATEGORY = "object"  # a box without a category (sleap-nn's name for it)


def _usable(box: Any) -> bool:
    return not box.is_empty and box.width > 0 and box.height > 0


def user_boxes(frame: sio.LabeledFrame) -> list[Any]:
    """A frame's ground-truth boxes: user (not predicted), not degenerate."""
    return [b for b in (frame.bboxes or []) if not b.is_predicted and _usable(b)]


def category(box: Any) -> str:
    cat = getattr(box, "category", None)
    if cat is None:
        return DEFAULT_CATEGORY
    name = getattr(cat, "name", cat)
    return str(name) if name else DEFAULT_CATEGORY


def resolve_source(labels: sio.Labels, source: str) -> str:
    """``auto``: the file's user boxes when it has any, else boxes from its user
    instances, else from its user masks (sleap-nn's order)."""
    if source not in BBOX_SOURCES:
        raise UsageError(f"--bbox-source {source!r}: expected one of {', '.join(BBOX_SOURCES)}")
    if source != "auto":
        return source
    if any(user_boxes(lf) for lf in labels):
        return "bboxes"
    if any(lf.has_user_instances for lf in labels):
        return "instances"
    return "masks"


def derive_boxes(labels: sio.Labels, source: str, padding: float) -> str:
    """Give each ground-truth frame the boxes ``source`` names (in memory, on the
    labels we loaded; the file is never written). Returns the resolved source."""
    resolved = resolve_source(labels, source)
    if resolved == "bboxes":
        return resolved
    for lf in labels:
        derived = []
        if resolved == "instances":
            for inst in lf.user_instances:
                if not inst.is_empty:
                    derived.append(inst.to_bbox(mode="tight", padding=padding))
        else:
            for mask in lf.masks or []:
                if not mask.is_predicted:
                    derived.append(mask.to_bbox(padding=padding))
        lf.bboxes = [b for b in lf.bboxes if b.is_predicted] + [b for b in derived if _usable(b)]
    return resolved


def _arrays(boxes: list[Any], categories: list[str]) -> tuple[np.ndarray, ...]:
    xyxy, cls, score = [], [], []
    for box in boxes:
        if box.is_empty:
            continue
        name = category(box)
        if name not in categories:
            categories.append(name)
        xyxy.append(box.bounds)
        cls.append(categories.index(name))
        score.append(float(getattr(box, "score", 1.0)))
    return (
        np.asarray(xyxy, dtype=np.float64).reshape(-1, 4),
        np.asarray(cls, dtype=np.int64),
        np.asarray(score, dtype=np.float64),
    )


def box_frames(
    ground_truth: sio.Labels, predictions: sio.Labels
) -> tuple[list[dict[str, Any]], list[str]]:
    """One record per ground-truth frame with boxes (its predictions may be none: all
    misses), videos matched as for poses. Class-agnostic when each side names at most
    one category: a one-class detector's class is whatever its one class is called."""
    categories: list[str] = []
    match = ground_truth.match(predictions)
    gt_to_pr = {id(gt): pr for pr, gt in match.video_map.items() if gt is not None}
    gt_names = {category(b) for lf in ground_truth for b in user_boxes(lf)}
    pr_names = {category(b) for lf in predictions for b in lf.bboxes if b.is_predicted}
    agnostic = len(gt_names) <= 1 and len(pr_names) <= 1
    frames = []
    for lf in ground_truth.labeled_frames:
        gt_boxes = user_boxes(lf)
        if not gt_boxes:
            continue
        pred_boxes: list[Any] = []
        video_pr = gt_to_pr.get(id(lf.video))
        if video_pr is not None:
            for lf_pr in predictions.find(video_pr, frame_idx=lf.frame_idx):
                pred_boxes.extend(b for b in lf_pr.bboxes if b.is_predicted)
        gt_b, gt_c, _ = _arrays(gt_boxes, categories)
        pr_b, pr_c, pr_s = _arrays(pred_boxes, categories)
        if agnostic:
            gt_c, pr_c = np.zeros_like(gt_c), np.zeros_like(pr_c)
        frames.append(
            {"gt_bboxes": gt_b, "gt_classes": gt_c, "pred_bboxes": pr_b}
            | {"pred_scores": pr_s, "pred_classes": pr_c}
        )
    return frames, ([DEFAULT_CATEGORY] if agnostic else categories)


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise IoU of ``(n, 4)`` and ``(m, 4)`` xyxy boxes."""
    if a.shape[0] == 0 or b.shape[0] == 0:
        return np.zeros((a.shape[0], b.shape[0]))
    x1 = np.maximum(a[:, None, 0], b[None, :, 0])
    y1 = np.maximum(a[:, None, 1], b[None, :, 1])
    x2 = np.minimum(a[:, None, 2], b[None, :, 2])
    y2 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)


def greedy_match(iou: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Each detection (rows, best score first) takes the free ground truth it overlaps
    most at ``threshold`` or more: matched index (-1: false positive) and its IoU."""
    n_det, n_gt = iou.shape
    gt_idx = np.full(n_det, -1, dtype=np.int64)
    matched = np.zeros(n_det)
    taken = np.zeros(n_gt, dtype=bool)
    for d in range(n_det):
        free = np.where(~taken & (iou[d] >= threshold))[0]
        if free.size:
            g = free[np.argmax(iou[d, free])]
            taken[g] = True
            gt_idx[d], matched[d] = g, iou[d, g]
    return gt_idx, matched


def ap_and_recall(
    scores: np.ndarray, is_tp: np.ndarray, n_gt: int, grid: np.ndarray
) -> tuple[float, float]:
    """101-point interpolated AP and the recall reached (NaN, NaN without ground truth)."""
    if n_gt <= 0:
        return float("nan"), float("nan")
    if scores.size == 0:
        return 0.0, 0.0
    order = np.argsort(-scores, kind="mergesort")
    hits = is_tp[order]
    tp, fp = np.cumsum(hits), np.cumsum(~hits)
    rc = tp / n_gt
    pr = tp / np.maximum(tp + fp, np.spacing(1))
    for i in range(pr.size - 1, 0, -1):  # precision never rises with recall
        pr[i - 1] = max(pr[i - 1], pr[i])
    idx = np.searchsorted(rc, grid, side="left")
    precision = np.zeros(grid.shape)
    valid = idx < pr.size
    precision[valid] = pr[idx[valid]]
    return float(precision.mean()), float(rc[-1])


def _nanmean(x: np.ndarray) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.nanmean(x)) if np.isfinite(x).any() else float("nan")


def box_metrics(frames: list[dict[str, Any]], num_classes: int) -> dict[str, Any]:
    """sleap-nn's ``compute_bbox_metrics``: its keys, its arrays, its numbers."""
    grid = np.linspace(0.0, 1.0, 101)
    thresholds = IOU_THRESHOLDS.astype(float)
    n_t = len(thresholds)
    scores: list[list[list[np.ndarray]]] = [[[] for _ in range(n_t)] for _ in range(num_classes)]
    tps: list[list[list[np.ndarray]]] = [[[] for _ in range(n_t)] for _ in range(num_classes)]
    ious: list[list[list[np.ndarray]]] = [[[] for _ in range(n_t)] for _ in range(num_classes)]
    n_gt_class = np.zeros(num_classes, dtype=np.int64)
    n_pred = 0
    for f in frames:
        pr_b, pr_s, pr_c = f["pred_bboxes"], f["pred_scores"], f["pred_classes"]
        keep = np.isfinite(pr_s) & np.isfinite(pr_b).all(axis=1)
        pr_b, pr_s, pr_c = pr_b[keep], pr_s[keep], pr_c[keep]
        order = np.argsort(-pr_s, kind="mergesort")[:MAX_DETECTIONS]
        pr_b, pr_s, pr_c = pr_b[order], pr_s[order], pr_c[order]
        n_pred += len(pr_s)
        for c in range(num_classes):
            g = f["gt_bboxes"][f["gt_classes"] == c]
            p, s = pr_b[pr_c == c], pr_s[pr_c == c]
            n_gt_class[c] += len(g)
            iou = iou_matrix(p, g)
            for t, thr in enumerate(thresholds):
                gt_idx, m_iou = greedy_match(iou, thr)
                scores[c][t].append(s)
                tps[c][t].append(gt_idx >= 0)
                ious[c][t].append(m_iou)
    ap = np.full((num_classes, n_t), np.nan)
    ar = np.full((num_classes, n_t), np.nan)
    for c in range(num_classes):
        for t in range(n_t):
            s = np.concatenate(scores[c][t]) if scores[c][t] else np.zeros(0)
            tp = np.concatenate(tps[c][t]) if tps[c][t] else np.zeros(0, bool)
            ap[c, t], ar[c, t] = ap_and_recall(s, tp, int(n_gt_class[c]), grid)
    t50 = int(np.argmin(np.abs(thresholds - 0.5)))
    t75 = int(np.argmin(np.abs(thresholds - 0.75)))
    s50 = np.concatenate([np.concatenate(scores[c][t50]) for c in range(num_classes)])
    tp50 = np.concatenate([np.concatenate(tps[c][t50]) for c in range(num_classes)])
    iou50 = np.concatenate([np.concatenate(ious[c][t50]) for c in range(num_classes)])
    n_gt = int(n_gt_class.sum())
    order = np.argsort(-s50, kind="mergesort")
    s50, tp50, iou50 = s50[order], tp50[order], iou50[order]
    cum_tp, cum_fp = np.cumsum(tp50), np.cumsum(~tp50)
    precision = cum_tp / np.maximum(cum_tp + cum_fp, 1)
    recall = cum_tp / max(n_gt, 1)
    f1 = 2 * precision * recall / np.maximum(precision + recall, 1e-12)
    if f1.size:
        best = int(np.argmax(f1))
        n_tp, n_fp = int(cum_tp[best]), int(cum_fp[best])
        hits = iou50[: best + 1][tp50[: best + 1]]
        point = {
            "bbox_precision": float(precision[best]),
            "bbox_recall": float(recall[best]) if n_gt else float("nan"),
            "bbox_f1": float(f1[best]),
            "bbox_f1_threshold": float(s50[best]),
            "bbox_mean_iou": float(hits.mean()) if n_tp else 0.0,
            "bbox_n_tp": n_tp,
            "bbox_n_fp": n_fp,
            "bbox_n_fn": n_gt - n_tp,
        }
    else:
        point = {
            "bbox_precision": float("nan"),
            "bbox_recall": 0.0 if n_gt else float("nan"),
            "bbox_f1": 0.0,
            "bbox_f1_threshold": float("nan"),
            "bbox_mean_iou": float("nan"),
            "bbox_n_tp": 0,
            "bbox_n_fp": 0,
            "bbox_n_fn": n_gt,
        }
    return {
        "bbox_mAP": _nanmean(ap),
        "bbox_AP50": _nanmean(ap[:, t50]),
        "bbox_AP75": _nanmean(ap[:, t75]),
        "bbox_AR": _nanmean(ar),
        **point,
        "n_frames": len(frames),
        "n_gt": n_gt,
        "n_pred": int(n_pred),
        "iou_thresholds": thresholds,
        "ap_per_class": ap,
        "ar_per_class": ar,
        "pr_curve": {"scores": s50, "precision": precision, "recall": recall},
    }


def evaluate_boxes(
    ground_truth: sio.Labels, predictions: sio.Labels, source: str, padding: float
) -> dict[str, Any]:
    """The whole bbox mode: ground-truth boxes for ``source``, frames, metrics."""
    if not any(b.is_predicted for lf in predictions for b in lf.bboxes):
        raise UsageError("predictions: no predicted boxes to score (--match-method bbox)")
    resolved = derive_boxes(ground_truth, source, padding)
    frames, categories = box_frames(ground_truth, predictions)
    if not frames:
        raise UsageError(
            f"no frame in common: no ground-truth frame has boxes (from {resolved}) in a "
            "video the predictions match"
        )
    metrics = box_metrics(frames, len(categories))
    metrics["categories"] = categories
    metrics["counts"] = {  # ours (sleap-nn only logs these); left out of its .npz
        "bbox_source": resolved,
        "frame_pairs": metrics["n_frames"],
        "gt_boxes": metrics["n_gt"],
        "pred_boxes": metrics["n_pred"],
    }
    return metrics
