"""Tracking knobs, declared once for ``infer predict --tracking`` and ``infer track``.

``None`` on ``features``, ``scoring``, ``candidates`` and ``window_size`` means
"choose as sleap-nn does" (:func:`sleap_infer.tracking.resolve_options`): a
one-node skeleton tracks centroids by euclidean distance, masks by mask IoU in
local queues of 25, re-ID vectors by cosine similarity, and a ``max_tracks`` cap
needs local queues. The resolved options, not these, go into a run's
fingerprint and provenance, so a resumed run can never silently change them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from sleap_infer.core.errors import UsageError
from sleap_infer.tracking import mot_param, registry
from sleap_infer.tracking.mot_param import MotParam

FEATURES = ("keypoints", "centroids", "bboxes", "masks", "embeddings")
SCORINGS = ("oks", "iou", "mask_iou", "euclidean_dist", "cosine_sim")
REDUCTIONS = ("mean", "max", "robust_quantile")
CANDIDATES = ("fixed_window", "local_queues")
MATCHINGS = ("hungarian", "greedy")
WINDOW_SIZE = 5  # sleap-nn's tracking_window_size
MASK_WINDOW_SIZE = 25  # sleap-nn's DEFAULT_MASK_WINDOW_SIZE
OKS_STDDEV = 0.025
MATCH_IOU_THRESHOLD = 0.2  # infer_bytetrack: minimum IoU of a first-stage match (1 - 0.8 cost)
# The knobs every tracker's options carry (the --mot_param keys that are options of their
# own), and their value where a tracker's config has no such field: sleap-nn's MOTParams
# class defaults, ByteTrack's published values. ``None`` on the options means "this
# tracker's own", filled by :meth:`TrackingOptions.with_tracker_defaults` from the
# tracker's config (:func:`sleap_infer.tracking.registry.preset`).
TRACKER_DEFAULTS: dict[str, float] = {k: mot_param.FIELDS[k] for k in mot_param.NAMED}


def tracker_defaults(tracker: str) -> dict[str, float]:
    """``tracker``'s own value of each :data:`TRACKER_DEFAULTS` knob: its config's default,
    else the shared one."""
    own = registry.preset(tracker)
    return {k: own.get(k, v) for k, v in TRACKER_DEFAULTS.items()}


@dataclass(frozen=True)
class TrackingOptions:
    """What the tracker does; the fields not named for ByteTrack are the classic tracker's."""

    tracker: str = registry.DEFAULT
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
    oks_stddev: float | None = None  # None: 0.1 with --kf-track-features keypoints, else 0.025
    use_flow: bool = False  # shift candidates by pyramidal Lucas-Kanade optical flow
    of_img_scale: float = 1.0
    of_window_size: int = 21
    of_max_levels: int = 3
    # None: the tracker's own value (tracker_defaults); filled before any tracker reads it.
    track_high_threshold: float | None = None
    track_low_threshold: float | None = None
    new_track_threshold: float | None = None
    match_iou_threshold: float = MATCH_IOU_THRESHOLD
    track_buffer: int | None = None
    min_hits: int | None = None
    min_match_similarity: float | None = None
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
    # with max_tracks, the closed set (sleap_infer.tracking.linking.link)
    link_tracklets: bool = False
    # sleap-nn's Kalman candidate shift (classic; sleap_infer.tracking.classic.kalman_shift).
    # None: sleap-nn's defaults (centroid, 10, all nodes, 5), filled when it is on.
    use_kalman: bool = False
    kf_track_features: str | None = None
    kf_init_frame_count: int | None = None
    kf_node_indices: tuple[int, ...] | None = None
    kf_reset_gap_size: int | None = None
    # sleap-nn's --mot_param overrides, checked (sleap_infer.tracking.mot_param): sorted
    # (key, value) pairs, so the options stay hashable and serialise the same.
    mot_param: MotParam = ()

    def __post_init__(self) -> None:
        if isinstance(self.kf_node_indices, (str, list)):
            object.__setattr__(self, "kf_node_indices", node_indices(self.kf_node_indices))
        named = {k: getattr(self, k) for k in mot_param.NAMED}
        object.__setattr__(
            self, "mot_param", mot_param.normalize(self.mot_param, self.tracker, named)
        )
        for name, allowed in (
            ("tracker", registry.NAMES),
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
        if self.track_buffer is not None and self.track_buffer < 0:
            raise UsageError(f"--track-buffer {self.track_buffer}: must be at least 0")
        if self.min_hits is not None and self.min_hits < 0:
            raise UsageError(f"--min_hits {self.min_hits}: must be at least 0")
        if self.min_match_similarity is not None and not 0 <= self.min_match_similarity <= 1:
            raise UsageError(
                f"--min_match_similarity {self.min_match_similarity}: must be in [0, 1]"
            )
        for name in ("tracking_target_instance_count", "tracking_clean_instance_count"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise UsageError(f"--{name.replace('_', '-')} {value}: must be at least 0")
        self._check_appearance()
        self._check_score_stages()
        self._check_kalman()
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

    def _check_kalman(self) -> None:
        """sleap-nn's ``Tracker.from_config`` rules for ``use_kalman``, and its options
        refused without it (they would change nothing)."""
        given = [k for k in _KALMAN_OPTIONS if getattr(self, k) is not None]
        if not self.use_kalman:
            if given:
                flags = ", ".join("--" + k.replace("_", "-") for k in given)
                raise UsageError(f"{flags} only apply with --use-kalman")
            return
        if self.tracker != "classic":
            raise UsageError(
                f"--use-kalman is an option of the classic tracker; --tracker {self.tracker}"
                " would ignore it"
            )
        if self.use_flow:
            raise UsageError(
                "--use-kalman and --use-flow are mutually exclusive; choose one (Kalman"
                " tracking does not use optical flow)"
            )
        if self.tracking_target_instance_count is None and self.max_tracks is None:
            raise UsageError(
                "--use-kalman needs a known number of animals: pass"
                " --tracking-target-instance-count (or --max-tracks / --max-instances)"
            )
        if self.kf_track_features not in (None, "centroid", "keypoints"):
            raise UsageError(
                f"--kf-track-features {self.kf_track_features!r}: choose centroid or keypoints"
            )

    def _check_score_stages(self) -> None:
        """sleap-nn's MOTParams rule: the low stage cannot start above the high one."""
        if registry.entry(self.tracker).family != registry.MOT:
            return
        filled = self.with_tracker_defaults()
        low, high = filled.track_low_threshold, filled.track_high_threshold
        if low is not None and high is not None and low > high:
            raise UsageError(
                f"--track_low_threshold {low} is above --track_high_threshold {high}"
                f" (--tracker {self.tracker}); the low stage must start at or below the high one"
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
            if self.tracker not in registry.appearance_names():
                raise UsageError(
                    f"--appearance-threshold only applies to the appearance trackers"
                    f" ({' / '.join(registry.appearance_names())}); --tracker {self.tracker}"
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
        if self.use_flow or self.use_kalman:
            raise UsageError(
                "--appearance-weight does not support the motion models (--use-flow /"
                " --use-kalman): they score shifted points"
            )

    def with_tracker_defaults(self) -> TrackingOptions:
        """These options with every unset :data:`TRACKER_DEFAULTS` knob at its
        ``--mot_param`` value, else the tracker's own, so an explicit ``--min_hits 3`` on
        botsort stays 3 (its default is 2)."""
        unset = {
            name: mot_param.lookup(self.mot_param, name, value)
            for name, value in tracker_defaults(self.tracker).items()
            if getattr(self, name) is None
        }
        if self.oks_stddev is None:  # sleap-nn: per-node Kalman predictions are noisier
            keypoints = self.use_kalman and self.kf_track_features == "keypoints"
            unset["oks_stddev"] = KALMAN_KEYPOINTS_OKS_STDDEV if keypoints else OKS_STDDEV
        if self.use_kalman:
            for name, value in _KALMAN_DEFAULTS.items():
                if getattr(self, name) is None:
                    unset[name] = value
        if not unset:
            return self
        # A knob set through --mot_param moves to its field (one place, one spelling).
        rest = tuple((k, v) for k, v in self.mot_param if k not in unset)
        return replace(self, **unset, mot_param=rest)

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
        """Every field, as a journal's fingerprint and the output's provenance hold them;
        unset thresholds read as the tracker's own values."""
        out = asdict(self.with_tracker_defaults())
        if out["kf_node_indices"] is not None:
            out["kf_node_indices"] = list(out["kf_node_indices"])
        out["mot_param"] = dict(out["mot_param"])
        return out


_KALMAN_OPTIONS = (
    "kf_track_features",
    "kf_init_frame_count",
    "kf_node_indices",
    "kf_reset_gap_size",
)
_KALMAN_DEFAULTS = dict(kf_track_features="centroid", kf_init_frame_count=10, kf_reset_gap_size=5)
KALMAN_KEYPOINTS_OKS_STDDEV = 0.1


def node_indices(text: str | list[int]) -> tuple[int, ...] | None:
    """``--kf-node-indices "0,1,2"`` as a tuple (empty: None, all nodes), as sleap-nn parses it."""
    if isinstance(text, list):
        return tuple(int(i) for i in text)
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        values = tuple(int(p) for p in parts)
    except ValueError:
        raise UsageError(
            f"--kf-node-indices {text!r}: comma-separated node indices, e.g. 0,1,2"
        ) from None
    return values or None


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
