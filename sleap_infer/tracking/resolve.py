"""The tracking choices left open (``None``), made as sleap-nn makes them.

sleap-nn's order (``apply_tracking`` and the CLI's embedding route):

1. Re-ID vectors on the detections and no ``features``: track by appearance
   (``embeddings``). With ``embeddings``, an unset (or ``oks``) scoring
   becomes ``cosine_sim``, the candidates ``local_queues``, the window 5.
2. Otherwise masks: ``masks`` scored by ``mask_iou``, ``local_queues``, window
   25 (over-segmented masks need a longer memory). Nothing else can score a
   mask, and optical flow cannot move one.
3. Otherwise a one-node skeleton: ``centroids`` by ``euclidean_dist``.
4. Otherwise ``keypoints`` by ``oks``, ``fixed_window`` of 5.

A ``max_tracks`` cap is only kept by local queues, so it switches
``fixed_window`` to them (sleap-nn does so even when asked for fixed_window).
Unlike sleap-nn, an explicitly chosen window of 5 on masks stays 5 (sleap-nn
cannot tell it from its default). A combination whose scoring cannot read the
feature is refused in one line rather than failing mid-video. The Kalman-box
trackers (the SORT family and ``infer_bytetrack``) read none of the classic knobs:
their unset fields are filled the same way, unchecked.

An ``appearance_weight`` blend keeps the geometric choice (vectors on the
detections then do not switch to appearance-only tracking), needs vectors,
and a score bounded above by 1 (``euclidean_dist`` only with a scale).
"""

from __future__ import annotations

from dataclasses import replace

from sleap_infer.core.errors import UsageError
from sleap_infer.tracking import registry
from sleap_infer.tracking.base import MASKS
from sleap_infer.tracking.options import (
    MASK_WINDOW_SIZE,
    WINDOW_SIZE,
    TrackingOptions,
)

# Which scorings can read which feature (sleap-nn computes these without failing).
SCORABLE = {
    "keypoints": ("oks", "euclidean_dist", "cosine_sim"),
    "centroids": ("euclidean_dist", "cosine_sim"),
    "bboxes": ("iou", "euclidean_dist", "cosine_sim"),
    "masks": ("mask_iou",),
    "embeddings": ("cosine_sim", "euclidean_dist"),
}
_POSE_DEFAULT_SCORING = {"keypoints": "oks", "centroids": "euclidean_dist", "bboxes": "iou"}


def _embedding_choice(options: TrackingOptions, has_embeddings: bool) -> TrackingOptions:
    if not has_embeddings:
        raise UsageError("--features embeddings: the detections carry no re-ID vectors")
    if options.use_flow or options.use_kalman:
        flag = "--use-flow" if options.use_flow else "--use-kalman"
        raise UsageError(f"{flag} moves points, it cannot move re-ID vectors (--features)")
    scoring = options.scoring
    if scoring is None or scoring == "oks":
        scoring = "cosine_sim"
    return replace(
        options,
        features="embeddings",
        scoring=scoring,
        candidates=options.candidates or "local_queues",
        window_size=options.window_size or WINDOW_SIZE,
    )


def _mask_choice(options: TrackingOptions) -> TrackingOptions:
    features = options.features or "masks"
    if features != "masks":
        raise UsageError(f"--features {features}: the detections are masks (use masks)")
    if options.use_flow:
        raise UsageError("--use-flow cannot track masks: optical flow moves keypoints")
    if options.use_kalman:
        raise UsageError("--use-kalman cannot track masks: the Kalman shift moves keypoints")
    return replace(
        options,
        features="masks",
        scoring=options.scoring or "mask_iou",
        candidates=options.candidates or "local_queues",
        window_size=options.window_size or MASK_WINDOW_SIZE,
    )


def _pose_choice(options: TrackingOptions, n_nodes: int) -> TrackingOptions:
    features, scoring = options.features, options.scoring
    if features == "masks":
        raise UsageError("--features masks: the detections are poses, not masks")
    if n_nodes == 1:  # OKS is meaningless on one point
        features, scoring = features or "centroids", scoring or "euclidean_dist"
    else:
        features = features or "keypoints"
        scoring = scoring or _POSE_DEFAULT_SCORING[features]
    return replace(
        options,
        features=features,
        scoring=scoring,
        candidates=options.candidates or "fixed_window",
        window_size=options.window_size or WINDOW_SIZE,
    )


def _bytetrack_fill(options: TrackingOptions, carrier: str, n_nodes: int) -> TrackingOptions:
    masks = carrier == MASKS
    features = options.features or (
        "masks" if masks else "centroids" if n_nodes == 1 else "keypoints"
    )
    default_scoring = {**_POSE_DEFAULT_SCORING, "masks": "mask_iou", "embeddings": "cosine_sim"}
    return replace(
        options,
        features=features,
        scoring=options.scoring
        or ("euclidean_dist" if n_nodes == 1 and not masks else default_scoring[features]),
        candidates=options.candidates or ("local_queues" if masks else "fixed_window"),
        window_size=options.window_size or (MASK_WINDOW_SIZE if masks else WINDOW_SIZE),
    )


def _fill(
    options: TrackingOptions, carrier: str, n_nodes: int, has_embeddings: bool
) -> TrackingOptions:
    blend = options.appearance_weight > 0
    if options.features == "embeddings" or (
        options.features is None and has_embeddings and not blend
    ):
        return _embedding_choice(options, has_embeddings)
    if carrier == MASKS:
        return _mask_choice(options)
    return _pose_choice(options, n_nodes)


def resolve_options(
    options: TrackingOptions, carrier: str, n_nodes: int, has_embeddings: bool = False
) -> TrackingOptions:
    """``options`` with every automatic choice made for this carrier and skeleton.

    Unset thresholds become the tracker's own (sleap-nn's preset for its SORT family,
    ByteTrack's for the others); a value given explicitly is kept, whatever it equals.
    """
    options = options.with_tracker_defaults()
    check_node_indices(options, n_nodes)
    entry = registry.entry(options.tracker)
    if entry.vectors == registry.NEEDS_VECTORS and not has_embeddings:
        raise UsageError(
            f"--tracker {options.tracker} associates by appearance, but no detection"
            " carries a re-ID vector: add an embedding model to the run, track a .slp"
            " saved with its vectors, or track by geometry (--tracker ocsort / sort)"
        )
    if entry.family != registry.CLASSIC:
        return _bytetrack_fill(options, carrier, n_nodes)
    resolved = _fill(options, carrier, n_nodes, has_embeddings)
    features, scoring = str(resolved.features), str(resolved.scoring)
    if scoring not in SCORABLE[features]:
        raise UsageError(
            f"--scoring {scoring} cannot score --features {features}"
            f" (use {' or '.join(SCORABLE[features])})"
        )
    if resolved.appearance_weight > 0:
        _check_blend(resolved, has_embeddings)
    if resolved.max_tracks is not None and resolved.candidates == "fixed_window":
        resolved = replace(resolved, candidates="local_queues")
    return resolved


def check_node_indices(options: TrackingOptions, n_nodes: int) -> None:
    """``--kf-node-indices`` must name nodes of the skeleton tracked (``n_nodes``; 0:
    unknown, unchecked). The Kalman shift (as sleap-nn's) keeps only the indices below
    the node count, so ``99`` on a 2-node skeleton was dropped without a word while the
    provenance recorded ``[99]``: refused here, before the first frame. Negative
    indices count from the end, as in sleap-nn (a Python index)."""
    if not options.kf_node_indices or n_nodes <= 0:
        return
    bad = [i for i in options.kf_node_indices if not -n_nodes <= i < n_nodes]
    if bad:
        given = ",".join(str(i) for i in options.kf_node_indices)
        raise UsageError(
            f"--kf-node-indices {given}: node index {bad[0]} is out of range; the skeleton "
            f"has {n_nodes} node{'s' if n_nodes != 1 else ''} (indices 0 to {n_nodes - 1})"
        )


# Geometric scores a cosine can be blended with as they are (bounded above by 1).
BLENDABLE_SCORING = ("oks", "iou", "mask_iou")


def _check_blend(options: TrackingOptions, has_embeddings: bool) -> None:
    """sleap-nn's refusals of a blend that would be inert or meaningless."""
    w = options.appearance_weight
    if not has_embeddings:
        raise UsageError(
            f"--appearance-weight {w}: no detection carries a re-ID vector (run an"
            " embedding model, or track a .slp saved with its vectors)"
        )
    if options.scoring == "euclidean_dist":
        if options.euclidean_scale is None:
            raise UsageError(
                f"--appearance-weight {w} with --scoring euclidean_dist needs"
                " --euclidean-scale PIXELS (the typical step of one animal per frame)"
            )
    elif options.scoring not in BLENDABLE_SCORING:
        raise UsageError(
            f"--appearance-weight needs a bounded geometric score (oks, iou, mask_iou,"
            f" or euclidean_dist with --euclidean-scale), not {options.scoring}"
        )
