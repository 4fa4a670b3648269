"""Score predictions against ground truth, with the numbers sleap-nn 0.3.5's ``eval`` gives.

Three of sleap-nn's matching modes, chosen as it chooses them (``auto``): poses
by OKS (frames pair up by matched video and frame index, :mod:`.pairing`;
instances match greedily by OKS, :mod:`.matching`; blocks in :mod:`.metrics`),
one point per animal by centroid distance when the predicted skeleton has one
node (:mod:`.centroids`), and boxes by COCO box AP when the predictions are
boxes only (:mod:`.boxes`). Every block keeps sleap-nn's keys, so its tools and
ours read each other's results. Its mask and semantic modes are refused with a
one-line error rather than scored differently.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sleap_io as sio

from sleap_infer.core.errors import UsageError
from sleap_infer.evaluation import boxes, centroids
from sleap_infer.evaluation.matching import Match, match_frame
from sleap_infer.evaluation.metrics import all_metrics
from sleap_infer.evaluation.nodes import node_order
from sleap_infer.evaluation.pairing import pair_frames
from sleap_infer.evaluation.report import headline, metrics_json, to_json_safe
from sleap_infer.sources.slp import FILE, read_slp

__all__ = ["evaluate", "evaluate_files", "headline", "metrics_json", "to_json_safe"]

MATCH_METHODS = ("auto", "oks", "centroid", "bbox")


def _node_names(labels: sio.Labels, side: str) -> list[str]:
    """Node names of the (first) skeleton."""
    if not labels.skeletons:
        raise UsageError(f"{side}: the file has no skeleton")
    return list(labels.skeletons[0].node_names)


def _check_inputs(
    ground_truth: sio.Labels,
    predictions: sio.Labels,
    oks_stddev: float | Sequence[float],
    oks_scale: float | None,
    node_map: Mapping[str, str] | None = None,
) -> np.ndarray:
    """Refuse what cannot be scored; return the predicted node index of each
    ground-truth node (:func:`~sleap_infer.evaluation.nodes.node_order`)."""
    if not any(len(lf.instances) for lf in predictions):
        raise UsageError(
            "predictions: no pose instances to score (mask- and centroid-annotation-only "
            "files are not supported by 'infer eval'; box-only files by --match-method bbox)"
        )
    pred_nodes = _node_names(predictions, "predictions")
    gt_nodes = _node_names(ground_truth, "ground truth")
    order = node_order(gt_nodes, pred_nodes, node_map)
    n_gt = len(gt_nodes)
    sigma = np.asarray(oks_stddev, dtype=np.float64)
    if sigma.ndim > 1 or (sigma.ndim == 1 and sigma.size != n_gt):
        raise UsageError(f"--oks-stddev: give one value or one per node ({n_gt})")
    if not (np.isfinite(sigma).all() and (sigma > 0).all()):
        raise UsageError("--oks-stddev: must be a finite number > 0")
    if oks_scale is not None and not (math.isfinite(oks_scale) and oks_scale > 0):
        raise UsageError("--oks-scale: must be a finite number > 0")
    return order


def evaluate(
    ground_truth: sio.Labels,
    predictions: sio.Labels,
    *,
    oks_stddev: float | Sequence[float] = 0.025,
    oks_scale: float | None = None,
    match_threshold: float = 0.0,
    user_labels_only: bool = True,
    node_map: Mapping[str, str] | None = None,
    match_method: str = "auto",
    anchor_part: str | None = None,
    centroid_method: str | None = None,
    centroid_fallback: str | None = None,
    bbox_source: str = "auto",
    bbox_padding: float = 0.0,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """Metrics of ``predictions`` against ``ground_truth``, as sleap-nn's ``eval`` computes them.

    Options keep sleap-nn's meaning and defaults: ``oks_stddev`` is the OKS
    sigma (one, or one per node), ``oks_scale`` a fixed OKS area instead of
    each ground truth's box, ``match_threshold`` the OKS a pair must exceed
    to match, ``user_labels_only`` scores only user-labeled ground truth. Nodes are
    matched by name; ``node_map`` (predicted name -> ground-truth name) says which
    correspond where the names differ.

    Returns sleap-nn's blocks (``voc_metrics``, ``mOKS``, ``distance_metrics``,
    ``pck_metrics``, ``visibility_metrics``) plus ``counts`` (frames and
    instances behind them). Raises :class:`UsageError` when nothing can be
    scored (no pose predictions, skeletons that differ, no frame in common).

    ``match_method`` picks sleap-nn's mode: ``auto`` is ``bbox`` when the predictions
    hold boxes and no instance, ``centroid`` when their skeleton has one node, else
    ``oks``. ``centroid`` returns ``detection_metrics`` and ``distance_metrics`` (see
    :func:`.centroids.centroid_metrics`; ``match_threshold`` is then a distance in
    pixels, 50 when left at 0, and ``anchor_part`` / ``centroid_method`` /
    ``centroid_fallback`` say how ground-truth centroids are derived); ``bbox``
    returns sleap-nn's flat box metrics (:mod:`.boxes`; ``bbox_source`` and
    ``bbox_padding`` say where ground-truth boxes come from). What sleap-nn only
    warns about goes to ``notes``.
    """
    if match_method not in MATCH_METHODS:
        raise UsageError(f"--match-method {match_method!r}: expected one of {MATCH_METHODS}")
    if not math.isfinite(bbox_padding):
        raise UsageError("--bbox-padding: must be a finite number")
    boxes_only = not any(len(lf.instances) for lf in predictions) and any(
        b.is_predicted for lf in predictions for b in lf.bboxes
    )
    if match_method == "auto" and boxes_only:
        match_method = "bbox"
    if match_method == "bbox":
        return boxes.evaluate_boxes(ground_truth, predictions, bbox_source, bbox_padding)
    if match_method == "auto" and predictions.skeletons:
        single = len(predictions.skeletons[0].node_names) == 1
        match_method = "centroid" if single else "oks"
    if match_method == "centroid":
        return _evaluate_centroids(
            ground_truth,
            predictions,
            match_threshold=match_threshold,
            user_labels_only=user_labels_only,
            anchor_part=anchor_part,
            method=centroid_method,
            fallback=centroid_fallback,
            notes=notes,
        )
    order = _check_inputs(ground_truth, predictions, oks_stddev, oks_scale, node_map)
    pairing = pair_frames(ground_truth, predictions, user_labels_only, order)
    if not pairing.frames:
        raise UsageError(
            "no frame in common: no ground-truth frame has a prediction in a matching "
            f"video ({pairing.videos_matched} of {pairing.videos_total} predicted videos matched)"
        )
    sigma = np.asarray(oks_stddev, dtype=np.float64)
    matches: list[Match] = []
    unmatched_gt = 0
    for frame in pairing.frames:
        found, missed = match_frame(
            frame.gt,
            frame.pred,
            frame.pred_scores,
            frame.video,
            frame.frame_idx,
            stddev=sigma,
            scale=oks_scale,
            threshold=match_threshold,
        )
        matches += found
        unmatched_gt += missed
    metrics = all_metrics(matches, unmatched_gt)
    n_pred = sum(len(f.pred) for f in pairing.frames)
    metrics["counts"] = {
        "videos_matched": pairing.videos_matched,
        "videos": pairing.videos_total,
        "frame_pairs": len(pairing.frames),
        "gt_instances": len(matches) + unmatched_gt,
        "pred_instances": n_pred,
        "matched": len(matches),
        "unmatched_gt": unmatched_gt,
        "unmatched_pred": n_pred - len(matches),
    }
    return metrics


def _evaluate_centroids(
    ground_truth: sio.Labels,
    predictions: sio.Labels,
    *,
    match_threshold: float,
    user_labels_only: bool,
    anchor_part: str | None,
    method: str | None,
    fallback: str | None,
    notes: list[str] | None,
) -> dict[str, Any]:
    """sleap-nn's centroid mode (see :mod:`.centroids`), with our ``counts``."""
    if not any(len(lf.instances) for lf in predictions):
        raise UsageError("predictions: no instances to score")
    if method is not None and method not in centroids.CENTROID_METHODS:
        raise UsageError(
            f"--centroid-method {method!r}: expected one of {centroids.CENTROID_METHODS}"
        )
    if fallback is not None and fallback not in centroids.REDUCE_METHODS:
        raise UsageError(
            f"--centroid-fallback {fallback!r}: expected one of {centroids.REDUCE_METHODS}"
        )
    if not math.isfinite(match_threshold):
        raise UsageError("--match-threshold: must be a finite number")
    gt_nodes = list(ground_truth.skeletons[0].node_names) if ground_truth.skeletons else []
    anchor, note = centroids.resolve_anchor(gt_nodes, anchor_part)
    if note and notes is not None:
        notes.append(note)
    if method == "anchor" and anchor is None:
        raise UsageError("--centroid-method anchor: give --anchor-part, a ground-truth node")
    frames = centroids.pair_centroid_frames(ground_truth, predictions, user_labels_only)
    if not frames:
        raise UsageError(
            "no frame in common: no ground-truth frame has a prediction in a matching video"
        )
    metrics = centroids.centroid_metrics(
        frames,
        anchor=anchor,
        method=method,
        fallback=fallback,
        max_distance=match_threshold or centroids.DEFAULT_DISTANCE,
    )
    det = metrics["detection_metrics"]
    metrics["counts"] = {
        "frame_pairs": len(frames),
        "gt_instances": det["n_tp"] + det["n_fn"],
        "pred_instances": sum(len(f.pred) for f in frames),
        "matched": det["n_tp"],
        "unmatched_gt": det["n_fn"],
        "unmatched_pred": det["n_fp"],
    }
    return metrics


def _load(path: Path, side: str) -> sio.Labels:
    if not path.exists():
        raise UsageError(f"{path}: no such file ({side})")
    if not path.is_file():
        raise UsageError(f"{path}: not a file ({side})")
    return read_slp(path, FILE)


def evaluate_files(ground_truth: Path, predictions: Path, **options: Any) -> dict[str, Any]:
    """:func:`evaluate` on two ``.slp`` files; a missing or unreadable file is a one-line error."""
    gt = _load(Path(ground_truth), "ground truth")
    pred = _load(Path(predictions), "predictions")
    return evaluate(gt, pred, **options)
