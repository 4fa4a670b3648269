"""Tracking knobs, declared once for ``infer predict --tracking`` and ``infer track``.

``None`` on ``features``, ``scoring``, ``candidates`` and ``window_size`` means
"choose as sleap-nn does" (:func:`sleap_infer.tracking.resolve_options`): a
one-node skeleton tracks centroids by euclidean distance, masks by mask IoU in
local queues of 25, re-ID vectors by cosine similarity, and a ``max_tracks`` cap
needs local queues. The resolved options, not these, go into a run's
fingerprint and provenance, so a resumed run can never silently change them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from sleap_infer.core.errors import UsageError

TRACKERS = ("classic", "bytetrack")
FEATURES = ("keypoints", "centroids", "bboxes", "masks", "embeddings")
SCORINGS = ("oks", "iou", "mask_iou", "euclidean_dist", "cosine_sim")
REDUCTIONS = ("mean", "max", "robust_quantile")
CANDIDATES = ("fixed_window", "local_queues")
MATCHINGS = ("hungarian", "greedy")
WINDOW_SIZE = 5  # sleap-nn's tracking_window_size
MASK_WINDOW_SIZE = 25  # sleap-nn's DEFAULT_MASK_WINDOW_SIZE
OKS_STDDEV = 0.025
# ByteTrack (Zhang et al. 2022) defaults, as its reference implementation ships them.
TRACK_HIGH_THRESHOLD = 0.5
TRACK_LOW_THRESHOLD = 0.1
NEW_TRACK_THRESHOLD = 0.6
MATCH_IOU_THRESHOLD = 0.2  # minimum IoU of a first-stage match (ByteTrack: 1 - 0.8 cost)
TRACK_BUFFER = 30  # frames a lost track is kept for re-association


@dataclass(frozen=True)
class TrackingOptions:
    """What the tracker does; the fields not named for ByteTrack are the classic tracker's."""

    tracker: str = "classic"
    features: str | None = None
    scoring: str | None = None
    reduction: str = "mean"
    robust_quantile: float = 1.0  # sleap-nn's robust_best_instance (1 = max)
    candidates: str | None = None
    window_size: int | None = None
    matching: str = "hungarian"
    max_tracks: int | None = None
    min_new_track_points: int = 0  # no new track for a pose with fewer visible points
    min_match_points: int = 0  # candidates need more visible points than this
    oks_stddev: float = OKS_STDDEV
    use_flow: bool = False  # shift candidates by pyramidal Lucas-Kanade optical flow
    of_img_scale: float = 1.0
    of_window_size: int = 21
    of_max_levels: int = 3
    track_high_threshold: float = TRACK_HIGH_THRESHOLD
    track_low_threshold: float = TRACK_LOW_THRESHOLD
    new_track_threshold: float = NEW_TRACK_THRESHOLD
    match_iou_threshold: float = MATCH_IOU_THRESHOLD
    track_buffer: int = TRACK_BUFFER
    # Before and after tracking, any tracker (sleap-nn's cull/clean/connect; see
    # sleap_infer.tracking.cleanup): the known animal count, a per-frame cap before
    # tracking (0 = off) and after it (0 = off), and single-frame break joining.
    tracking_target_instance_count: int | None = None
    tracking_pre_cull_to_target: int = 0
    tracking_pre_cull_iou_threshold: float = 0.0
    tracking_clean_instance_count: int = 0
    tracking_clean_iou_threshold: float = 0.0
    post_connect_single_breaks: bool = False

    def __post_init__(self) -> None:
        for name, allowed in (
            ("tracker", TRACKERS),
            ("features", FEATURES),
            ("scoring", SCORINGS),
            ("reduction", REDUCTIONS),
            ("candidates", CANDIDATES),
            ("matching", MATCHINGS),
        ):
            value = getattr(self, name)
            if value is not None and value not in allowed:
                flag = name.replace("_", "-")
                raise UsageError(f"--{flag} {value!r}: choose one of {', '.join(allowed)}")
        if self.window_size is not None and self.window_size < 1:
            raise UsageError(f"--window-size {self.window_size}: must be at least 1")
        if self.max_tracks is not None and self.max_tracks < 1:
            raise UsageError(f"--max-tracks {self.max_tracks}: must be at least 1")
        if not 0 < self.robust_quantile <= 1:
            raise UsageError(f"--robust-quantile {self.robust_quantile}: must be in (0, 1]")
        if self.of_img_scale <= 0 or self.of_window_size < 3 or self.of_max_levels < 0:
            raise UsageError("optical flow: image scale > 0, window >= 3, levels >= 0")
        if self.track_buffer < 0:
            raise UsageError(f"--track-buffer {self.track_buffer}: must be at least 0")
        for name in ("tracking_target_instance_count", "tracking_clean_instance_count"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise UsageError(f"--{name.replace('_', '-')} {value}: must be at least 0")
        if self.needs_target and not self.tracking_target_instance_count:
            raise UsageError(
                "--tracking-pre-cull-to-target and --post-connect-single-breaks need"
                " --tracking-target-instance-count (or --max-instances)"
            )

    @property
    def needs_target(self) -> bool:
        """sleap-nn refuses pre-cull and break joining without a target count."""
        return bool(self.tracking_pre_cull_to_target) or self.post_connect_single_breaks

    @property
    def has_cleanup(self) -> bool:
        """Any of the steps around the tracker (:mod:`sleap_infer.tracking.cleanup`)."""
        return self.needs_target or self.tracking_clean_instance_count > 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
