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

TRACKERS = (
    "classic",
    "bytetrack",
    "sort",
    "botsort",
    "ocsort",
    "deepsort",
    "strongsort",
    "deepocsort",
)
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
# sleap-nn's trackers that associate by appearance: only they read --appearance-threshold.
APPEARANCE_TRACKERS = ("botsort", "deepocsort", "deepsort", "strongsort")
# ... of which ours read the vectors (and refuse to run without any, as sleap-nn's CLI does);
# our botsort associates by geometry alone, so it takes no threshold.
VECTOR_TRACKERS = ("deepsort", "strongsort", "deepocsort")
MIN_HITS = 3  # sleap-nn's MOT trackers: matches before a track is confirmed
MIN_MATCH_SIMILARITY = 0.3  # sleap-nn's MOT trackers: weakest geometric match
# sleap-nn 0.3.5's "animal" preset per MOT tracker, for the knobs whose shared default
# (ByteTrack's, above) is not that tracker's; applied where the caller left the shared one.
MOT_PRESETS: dict[str, dict[str, float]] = {
    "sort": dict(track_high_threshold=0.1, track_low_threshold=0.1, new_track_threshold=0.1),
    "ocsort": dict(track_high_threshold=0.6),
    "deepsort": dict(new_track_threshold=0.1),
    "strongsort": dict(new_track_threshold=0.1),
    "deepocsort": dict(track_high_threshold=0.6),
    "botsort": dict(
        track_high_threshold=0.6, new_track_threshold=0.7, min_hits=2, min_match_similarity=0.2
    ),
}


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
    min_hits: int = MIN_HITS
    min_match_similarity: float = MIN_MATCH_SIMILARITY
    # Before and after tracking, any tracker (sleap-nn's cull/clean/connect; see
    # sleap_infer.tracking.cleanup): the known animal count, a per-frame cap before
    # tracking (0 = off) and after it (0 = off), and single-frame break joining.
    tracking_target_instance_count: int | None = None
    tracking_pre_cull_to_target: int = 0
    tracking_pre_cull_iou_threshold: float = 0.0
    tracking_clean_instance_count: int = 0
    tracking_clean_iou_threshold: float = 0.0
    post_connect_single_breaks: bool = False
    # Appearance blend on the classic tracker (sleap-nn's): score = (1 - w) * geometry
    # + w * re-ID cosine where both exist; euclidean_dist geometry is first mapped to
    # exp(-d / euclidean_scale). appearance_threshold: the appearance trackers' knob.
    appearance_weight: float = 0.0
    euclidean_scale: float | None = None
    appearance_threshold: str | None = None
    # sleap-nn's identity linking after each video (--link_tracklets): gap links and,
    # with max_tracks, the closed set (sleap_infer.tracking.linking)
    link_tracklets: bool = False

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
        if self.min_hits < 0:
            raise UsageError(f"--min_hits {self.min_hits}: must be at least 0")
        if not 0 <= self.min_match_similarity <= 1:
            raise UsageError(
                f"--min_match_similarity {self.min_match_similarity}: must be in [0, 1]"
            )
        for name in ("tracking_target_instance_count", "tracking_clean_instance_count"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise UsageError(f"--{name.replace('_', '-')} {value}: must be at least 0")
        self._check_appearance()
        if self.links and (
            self.tracking_clean_instance_count > 0 or self.post_connect_single_breaks
        ):
            raise UsageError(
                "--link-tracklets with --tracking-clean-instance-count or"
                " --post-connect-single-breaks: sleap-nn links before those steps, which run"
                " online here; not ported yet"
                if self.link_tracklets
                else f"--max-tracks with --tracker {self.tracker} links identities at the"
                " video's end; --tracking-clean-instance-count and"
                " --post-connect-single-breaks are the classic tracker's (sleap-nn refuses"
                " them with a MOT tracker)"
            )
        if self.needs_target and not self.tracking_target_instance_count:
            raise UsageError(
                "--tracking-pre-cull-to-target and --post-connect-single-breaks need"
                " --tracking-target-instance-count (or --max-instances)"
            )

    def _check_appearance(self) -> None:
        """sleap-nn's rules that need no detections (``validate_appearance_config``)."""
        w = self.appearance_weight
        if not 0.0 <= w <= 1.0:
            raise UsageError(f"--appearance-weight {w}: must be in [0, 1]")
        if self.euclidean_scale is not None and not self.euclidean_scale > 0:
            raise UsageError(f"--euclidean-scale {self.euclidean_scale}: must be > 0 pixels")
        if self.appearance_threshold is not None:
            appearance_threshold_value(self.appearance_threshold)
            if self.tracker in APPEARANCE_TRACKERS and self.tracker not in VECTOR_TRACKERS:
                raise UsageError(  # our botsort runs without re-ID vectors
                    f"--appearance-threshold: --tracker {self.tracker} runs without"
                    " appearance here (its re-ID part is not ported yet)"
                )
            if self.tracker not in VECTOR_TRACKERS:
                raise UsageError(
                    f"--appearance-threshold only applies to the appearance trackers"
                    f" ({' / '.join(APPEARANCE_TRACKERS)}); --tracker {self.tracker}"
                    " associates by geometry alone"
                )
        if w == 0.0:
            return
        if self.tracker != "classic":
            raise UsageError(
                f"--appearance-weight is an option of the classic tracker; --tracker"
                f" {self.tracker} would ignore it"
            )
        if self.features == "embeddings":
            raise UsageError(
                "--appearance-weight blends appearance into a geometric score; --features"
                " embeddings is appearance only (pick keypoints, centroids, bboxes or masks)"
            )
        if self.use_flow:
            raise UsageError("--appearance-weight does not support --use-flow (shifted points)")

    @property
    def links(self) -> bool:
        """Identity linking at each video's end: asked for, or a MOT tracker given the
        animal count, whose ``max_tracks`` only the closed set keeps (sleap-nn's
        ``MOTParams.link``); the classic tracker keeps it with local queues instead."""
        return self.link_tracklets or (self.tracker != "classic" and self.max_tracks is not None)

    @property
    def needs_target(self) -> bool:
        """sleap-nn refuses pre-cull and break joining without a target count."""
        return bool(self.tracking_pre_cull_to_target) or self.post_connect_single_breaks

    @property
    def has_cleanup(self) -> bool:
        """Any of the steps around the tracker (:mod:`sleap_infer.tracking.cleanup`)."""
        return self.needs_target or self.tracking_clean_instance_count > 0

    def to_json(self) -> dict[str, Any]:
        """The fields, less the appearance ones at their defaults: a journal's fingerprint
        holds these, so runs killed before those options existed still resume."""
        out = asdict(self)
        for name in _APPEARANCE_FIELDS:
            if out[name] == _APPEARANCE_DEFAULTS[name]:
                del out[name]
        return out


# (and linking: a journal's fingerprint from before --link-tracklets existed still matches)
_APPEARANCE_FIELDS = (
    "appearance_weight",
    "euclidean_scale",
    "appearance_threshold",
    "link_tracklets",
)
_APPEARANCE_DEFAULTS = {
    "appearance_weight": 0.0,
    "euclidean_scale": None,
    "appearance_threshold": None,
    "link_tracklets": False,
}


def appearance_threshold_value(text: str) -> float | str:
    """``"auto"`` or a minimum cosine in [-1, 1] (sleap-nn's converter)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not -1.0 <= value <= 1.0:
        raise UsageError(f"--appearance-threshold {text!r}: 'auto' or a cosine in [-1, 1]")
    return value
