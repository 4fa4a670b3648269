"""Identity tracking, online: one frame at a time, in frame order, state saved per batch.

``classic`` is sleap-nn's candidate-window tracker and the SORT family
(:data:`MOT_TRACKERS`) its Kalman-box trackers, each giving sleap-nn's assignments
on the same detections; ``infer_bytetrack`` is infer's own ByteTrack variant, a
Kalman-motion, two-stage-by-score tracker that never drops a detection.
:func:`make_tracker` resolves the automatic choices (:func:`resolve_options`) and
builds the one asked for.
"""

from __future__ import annotations

from sleap_infer.core.tracking import TrackingOptions
from sleap_infer.tracking.base import (
    MASKS,
    POSES,
    Assignment,
    Detections,
    LateLabel,
    MaskBitmap,
    Tracker,
    TrackerState,
    track_name,
)
from sleap_infer.tracking.resolve import resolve_options

# sleap-nn's SORT family (tracking/mot_core.py); botsort and the last three read re-ID vectors.
MOT_TRACKERS = ("sort", "bytetrack", "botsort", "ocsort", "deepsort", "strongsort", "deepocsort")

__all__ = [
    "MASKS",
    "MOT_TRACKERS",
    "POSES",
    "Assignment",
    "Detections",
    "LateLabel",
    "MaskBitmap",
    "Tracker",
    "TrackerState",
    "make_tracker",
    "resolve_options",
    "track_name",
]


def make_tracker(
    options: TrackingOptions, carrier: str, n_nodes: int, has_embeddings: bool = False
) -> Tracker:
    """A fresh tracker for one video (``carrier``: :data:`POSES` or :data:`MASKS`)."""
    if options.tracker in MOT_TRACKERS:
        return _mot_tracker(options, carrier, n_nodes)
    resolved = resolve_options(options, carrier, n_nodes, has_embeddings)
    if resolved.tracker == "infer_bytetrack":
        from sleap_infer.tracking.bytetrack import ByteTracker

        return ByteTracker(resolved, carrier)
    from sleap_infer.tracking.classic import ClassicTracker

    return ClassicTracker(resolved, carrier)


def _mot_tracker(options: TrackingOptions, carrier: str, n_nodes: int) -> Tracker:
    from sleap_infer.tracking.botsort import BotSortTracker
    from sleap_infer.tracking.deepocsort import DeepOcSortTracker
    from sleap_infer.tracking.deepsort import DeepSortTracker, StrongSortTracker
    from sleap_infer.tracking.mot_byte import ByteTrackTracker
    from sleap_infer.tracking.mot_core import mot_params
    from sleap_infer.tracking.ocsort import OcSortTracker
    from sleap_infer.tracking.sort import SortTracker

    classes = {
        "sort": SortTracker,
        "bytetrack": ByteTrackTracker,
        "botsort": BotSortTracker,
        "ocsort": OcSortTracker,
        "deepsort": DeepSortTracker,
        "strongsort": StrongSortTracker,
        "deepocsort": DeepOcSortTracker,
    }
    return classes[options.tracker](mot_params(options), carrier, n_nodes)
