"""Identity tracking, online: one frame at a time, in frame order, state saved per batch.

One folder per tracker family, each kept apart from the others by an
import-linter contract:

- ``classic/``: sleap-nn's candidate-window tracker (the default);
- ``mot/``: sleap-nn's SORT family (sort, bytetrack, botsort, ocsort, deepsort,
  strongsort, deepocsort) on one Kalman-box core, each giving sleap-nn's
  assignments on the same detections;
- ``infer_bytetrack/``: infer's own ByteTrack variant, which never drops a
  detection;
- ``linking/``: sleap-nn's identity linking at a video's end (``--link_tracklets``);
- ``common/``: what two families share (boxes, body size, the calibration
  pre-pass, appearance memories).

At this level: :mod:`~sleap_infer.tracking.registry` (one entry per ``--tracker``
value), :mod:`~sleap_infer.tracking.options` (``TrackingOptions``), the tracker
protocol (:mod:`~sleap_infer.tracking.base`), the automatic choices
(:mod:`~sleap_infer.tracking.resolve`), the steps around any tracker
(:mod:`~sleap_infer.tracking.cleanup`) and tracking inside the prediction stream
(:mod:`~sleap_infer.tracking.online`). :func:`make_tracker` builds the tracker
an options record asks for.
"""

from __future__ import annotations

from sleap_infer.tracking import registry
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
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.tracking.resolve import resolve_options

__all__ = [
    "MASKS",
    "POSES",
    "Assignment",
    "Detections",
    "LateLabel",
    "MaskBitmap",
    "Tracker",
    "TrackerState",
    "TrackingOptions",
    "make_tracker",
    "resolve_options",
    "track_name",
]


def make_tracker(
    options: TrackingOptions, carrier: str, n_nodes: int, has_embeddings: bool = False
) -> Tracker:
    """A fresh tracker for one video (``carrier``: :data:`POSES` or :data:`MASKS`).

    Each family's class is built from what it reads: the MOT trackers from their
    config (sleap-nn's preset under the options' overrides), the others from the
    options with every automatic choice made."""
    entry = registry.entry(options.tracker)
    cls = registry.tracker_class(entry.name)
    if entry.family == registry.MOT:
        # The registry types its classes as the Tracker protocol, which says nothing of how
        # one is built: the MOT classes' from_options and the others' (options, carrier).
        return cls.from_options(options, carrier, n_nodes)  # type: ignore[attr-defined]
    resolved = resolve_options(options, carrier, n_nodes, has_embeddings)
    return cls(resolved, carrier)  # type: ignore[call-arg]
