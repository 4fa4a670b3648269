"""Every user-tunable postprocessing knob, with its default declared exactly once.

``PredictOptions`` is what a layer reads; ``DecodeSettings`` is the part of it
an exported graph bakes in (changing it needs a new export). Both take their
defaults from the constants below, and so do the CLI options of ``predict``,
``export`` and ``bench``: sleap-nn's defaults, in one place, so the three
commands can never drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sleap_infer.core.errors import OptionValueError, UsageError

PEAK_THRESHOLD = 0.2
INTEGRAL_PATCH_SIZE = 5
# Bottom-up PAF scoring and grouping (sleap-nn's PAFScorer defaults).
MAX_EDGE_LENGTH_RATIO = 0.25
DIST_PENALTY_WEIGHT = 1.0
N_POINTS = 10
MIN_INSTANCE_PEAKS = 0.0
MIN_LINE_SCORES = 0.25
MAX_PEAKS = 64
"""Local-peak candidates an exported graph keeps per channel (centroids; bottom-up: per node).

sleap-nn's exports keep 20, which the barely trained fixture models already exceed
(the multi-class bottom-up one finds up to 39 peaks of a node at threshold 0.05). The
bottom-up graph scores K x K pairs per edge, so K costs quadratically there, but 64^2
samples per edge are still cheap next to the network."""
BATCH_SIZE = 4
# Segmentation (sleap-nn's defaults).
FG_THRESHOLD = 0.5
CENTER_NMS_KERNEL = 3
MIN_MASK_AREA = 0
MASK_CLEANUP_RADIUS = 0
DISTANCE_GATE_ITERS = 3
MERGE_METHODS = ("greedy", "multicut")
MERGE_THRESHOLDS = (0.85, 0.6, 0.4)
MERGE_W_VALLEY = 1.0
MERGE_W_OFFSET = 0.25
MERGE_DILATE = 1
MASK_OUTPUTS = ("mask", "polygon", "both")
EMBED_CHOICES = ("false", "true", "auto")  # sleap-nn's --embed: frame images in the .slp
SAVE_EMBEDDINGS = ("slp", "none")  # sleap-nn's --save_embeddings: re-ID vectors in the .slp
CENTROID_OUTPUTS = ("instance", "centroid", "both")  # sleap-nn's --centroid-output
POLYGON_EPSILON = 0.01
MAX_INTEGRAL_PATCH_SIZE = 15
"""Refinement averages a patch of the confidence map around each peak. An even side has
no centre pixel (sleap-nn's patches are odd), and a wide patch averages in the
neighbouring animals' and nodes' peaks: 999 moved points by 80 px on the fixtures. 15
output pixels already spans several Gaussian sigmas at any usual stride."""


@dataclass(frozen=True)
class NumberRange:
    """Where a numeric option's value may lie (bounds inclusive unless ``*_open``)."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def holds(self, value: float) -> bool:
        low_ok = self.low is None or (value > self.low if self.low_open else value >= self.low)
        high_ok = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return low_ok and high_ok

    def describe(self) -> str:
        if self.low is not None and self.high is not None:
            left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
            return f"in {left}{self.low:g}, {self.high:g}{right}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {self.low:g}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {self.high:g}"
        return "finite"


_UNIT = NumberRange(0.0, 1.0)
_POSITIVE = NumberRange(0.0, low_open=True)
_NON_NEGATIVE = NumberRange(0.0)
NUMBER_RANGES: dict[str, NumberRange] = {
    # Peak thresholds stay unbounded: confidence maps are regressed, not probabilities, so
    # a negative threshold ("keep every peak") is a real use on under-trained models.
    "max_edge_length_ratio": _POSITIVE,
    "dist_penalty_weight": _NON_NEGATIVE,
    "min_instance_peaks": _NON_NEGATIVE,
    "n_points": NumberRange(2.0),  # samples along a PAF line: its two ends at least
    "min_new_track_points": _NON_NEGATIVE,
    "min_match_points": _NON_NEGATIVE,
    "fg_threshold": NumberRange(0.0, 1.0, high_open=True),
    "distance_gate_alpha": _POSITIVE,
    "merge_w_valley": _NON_NEGATIVE,
    "merge_w_offset": _NON_NEGATIVE,
    "polygon_epsilon": _NON_NEGATIVE,
    "bbox_nms_iou": _UNIT,
    "filter_overlapping_threshold": _UNIT,
    "filter_min_visible_node_fraction": _UNIT,
    "filter_min_mean_node_score": _NON_NEGATIVE,
    "filter_min_instance_score": _NON_NEGATIVE,
    "input_scale": _POSITIVE,
    "robust_quantile": NumberRange(0.0, 1.0, low_open=True),
    "oks_stddev": _POSITIVE,
    "of_img_scale": _POSITIVE,
    "track_high_threshold": _NON_NEGATIVE,
    "track_low_threshold": _NON_NEGATIVE,
    "new_track_threshold": _NON_NEGATIVE,
    "match_iou_threshold": _UNIT,
    "match_threshold": _UNIT,  # eval: OKS a match must exceed
    "oks_scale": _POSITIVE,  # eval: a fixed OKS area
    "progress_interval": _NON_NEGATIVE,
    "scale": _POSITIVE,  # render: output size factor
}
"""Ranges of numeric options by their Python name, shared by every command and the API.
Every other float option only has to be finite."""


def check_number(name: str, value: object, flag: str | None = None) -> None:
    """Refuse NaN, Inf and out-of-range values of option ``name`` with one line.

    Called where options are parsed (the command line's parameters, ``bind``'s keyword
    arguments), so ``--peak-threshold nan`` fails at once instead of after predicting.
    Non-numbers (and bools) pass: other checks own them.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    label = flag or "--" + name.replace("_", "-")
    allowed = NUMBER_RANGES.get(name, NumberRange())
    if not math.isfinite(value):
        extra = "" if allowed == NumberRange() else f" {allowed.describe()}"
        raise OptionValueError(f"{label} {value}: must be a finite number{extra}")
    if not allowed.holds(value):
        raise OptionValueError(f"{label} {value:g}: must be {allowed.describe()}")


def check_integral_patch_size(size: int) -> None:
    """One rule for ``predict``, ``export`` and ``bench``: odd, 1 to 15."""
    if size < 1 or size % 2 == 0 or size > MAX_INTEGRAL_PATCH_SIZE:
        raise UsageError(
            f"--integral-patch-size {size}: must be an odd number from 1 to "
            f"{MAX_INTEGRAL_PATCH_SIZE} (default {INTEGRAL_PATCH_SIZE})"
        )


@dataclass(frozen=True)
class PredictOptions:
    """Peak finding and grouping settings; a layer reads the ones that apply to it."""

    peak_threshold: float = PEAK_THRESHOLD
    refine: bool = True
    integral_patch_size: int = INTEGRAL_PATCH_SIZE
    # True: sleap-nn's integral refinement exactly, without our guard (a patch whose
    # weighted mean leaves it keeps its pixel by default; see ops.peaks.integral_offsets).
    refine_like_sleap_nn: bool = False
    max_instances: int | None = None
    centroid_peak_threshold: float | None = None  # top-down stage 1 override
    max_edge_length_ratio: float = MAX_EDGE_LENGTH_RATIO
    dist_penalty_weight: float = DIST_PENALTY_WEIGHT
    n_points: int = N_POINTS
    min_instance_peaks: float = MIN_INSTANCE_PEAKS
    min_line_scores: float = MIN_LINE_SCORES
    # Debug: keep the raw confidence maps in ``BatchPredictions.extras``.
    return_confmaps: bool = False
    # Segmentation: decoding (layers) ...
    fg_threshold: float = FG_THRESHOLD
    center_nms_kernel: int = CENTER_NMS_KERNEL
    min_mask_area: int = MIN_MASK_AREA
    mask_cleanup: bool = False
    mask_cleanup_radius: int = MASK_CLEANUP_RADIUS
    distance_gate_alpha: float | None = None
    merge_fragments: bool = False
    merge_method: str = "greedy"
    merge_thresholds: tuple[float, ...] = MERGE_THRESHOLDS
    merge_w_valley: float = MERGE_W_VALLEY
    merge_w_offset: float = MERGE_W_OFFSET
    merge_dilate: int = MERGE_DILATE
    full_res_masks: bool = False
    # ... and what the output holds (writers).
    mask_output: str = "mask"
    polygon_epsilon: float = POLYGON_EPSILON
    # Every predicted frame is written, the empty ones too, as sleap-nn 0.3.5 writes them
    # (downstream tools then see the frames that were looked at); True drops them
    # (sleap-nn's --no_empty_frames).
    no_empty_frames: bool = False
    # CSV alone: a row holding only frame_idx for each empty frame; off by default, as
    # sleap-io's CSV writer (its readers take such a row for an instance without points).
    csv_empty_frames: bool = False
    # .slp alone, as sleap-nn's flags: frame images embedded (true; auto: when the input is a
    # .pkg.slp), the original videos referenced instead of an input .pkg.slp, and whether
    # an embedding model's re-ID vectors are written (none: stripped from every format).
    embed: str = "false"
    restore_source_videos: bool = False
    save_embeddings: str = "slp"
    # A centroid model run alone: its centroids as instances (the default), as
    # sio.PredictedCentroid records (centroid), or both (sleap-nn's --centroid-output).
    centroid_output: str = "instance"
    # Box detectors: class-wise IoU NMS; None = the type's default (SSD 0.45, CenterNet
    # off), 1.0 suppresses nothing.
    bbox_nms_iou: float | None = None
    # Reading (sources): predict frames FFmpeg flags corrupt instead of recording them bad.
    keep_corrupt_frames: bool = False
    # HDF5 inputs (sleap-nn's --video_dataset / --video_input_format): which dataset, and
    # its axis order. Recorded in requests and journals only when set (HDF5_DEFAULTS).
    video_dataset: str | None = None
    video_input_format: str = "channels_last"

    def __post_init__(self) -> None:
        check_integral_patch_size(self.integral_patch_size)
        if self.video_input_format not in ("channels_last", "channels_first"):
            raise UsageError(
                f"--video-input-format {self.video_input_format}: choose channels_last or "
                "channels_first"
            )
        if self.max_instances is not None and self.max_instances < 1:
            raise UsageError("--max-instances must be >= 1")
        self._check_segmentation()

    def _check_segmentation(self) -> None:
        if not 0.0 <= self.fg_threshold < 1.0:
            raise UsageError(f"--fg-threshold {self.fg_threshold}: must be in [0, 1)")
        if self.center_nms_kernel < 1 or self.center_nms_kernel % 2 == 0:
            raise UsageError(f"--center-nms-kernel {self.center_nms_kernel}: must be odd and >= 1")
        if self.min_mask_area < 0:
            raise UsageError("--min-mask-area must be >= 0")
        if self.mask_cleanup_radius < 0:
            raise UsageError("--mask-cleanup-radius must be >= 0")
        if self.distance_gate_alpha is not None and self.distance_gate_alpha <= 0:
            raise UsageError("--distance-gate-alpha must be > 0")
        if self.merge_method not in MERGE_METHODS:
            raise UsageError(
                f"--merge-method {self.merge_method!r}: choose from {', '.join(MERGE_METHODS)}"
            )
        if not self.merge_thresholds or any(not 0 < t <= 1 for t in self.merge_thresholds):
            raise UsageError("--merge-thresholds: comma-separated numbers in (0, 1]")
        if self.mask_output not in MASK_OUTPUTS:
            raise UsageError(
                f"--mask-output {self.mask_output!r}: choose from {', '.join(MASK_OUTPUTS)}"
            )
        for flag, value, allowed in (
            ("--embed", self.embed, EMBED_CHOICES),
            ("--save-embeddings", self.save_embeddings, SAVE_EMBEDDINGS),
            ("--centroid-output", self.centroid_output, CENTROID_OUTPUTS),
        ):
            if value not in allowed:
                raise UsageError(f"{flag} {value!r}: choose from {', '.join(allowed)}")
        if self.polygon_epsilon < 0:
            raise UsageError("--polygon-epsilon must be >= 0")
        if self.bbox_nms_iou is not None and not 0.0 <= self.bbox_nms_iou <= 1.0:
            raise UsageError(f"--bbox-nms-iou {self.bbox_nms_iou}: must be in [0, 1]")

    def decode_settings(self) -> DecodeSettings:
        """The in-graph decoding these options need from an export.

        Local-peak graphs keep a fixed number of candidates; with ``max_instances``
        = m they need m + 1 (to tell "exactly m" from "overflowing"), else the default.
        """
        wanted = MAX_PEAKS
        if self.max_instances is not None:
            wanted = max(wanted, self.max_instances + 1)
        return DecodeSettings(
            refine=self.refine,
            integral_patch_size=self.integral_patch_size,
            refine_guard=not self.refine_like_sleap_nn,
            max_peaks=wanted,
            peak_threshold=self.peak_threshold,
            n_points=self.n_points,
            max_edge_length_ratio=self.max_edge_length_ratio,
            dist_penalty_weight=self.dist_penalty_weight,
        )


@dataclass(frozen=True)
class DecodeSettings:
    """Postprocessing that is traced into an exported graph.

    The peak threshold is *not* baked: graphs return every candidate with its
    value, and the host applies the user's threshold, so one export serves all.
    ``peak_threshold`` is only used for the convenience ``*_valid`` outputs.
    """

    refine: bool = True
    integral_patch_size: int = INTEGRAL_PATCH_SIZE
    refine_guard: bool = True  # False: --refine-like-sleap-nn
    max_peaks: int = MAX_PEAKS
    peak_threshold: float = PEAK_THRESHOLD
    # Bottom-up PAF line scoring; matching stays on the host.
    n_points: int = N_POINTS
    max_edge_length_ratio: float = MAX_EDGE_LENGTH_RATIO
    dist_penalty_weight: float = DIST_PENALTY_WEIGHT

    def __post_init__(self) -> None:
        check_integral_patch_size(self.integral_patch_size)
        if self.max_peaks < 1:
            raise UsageError("max peaks must be >= 1")
        if self.n_points < 2:
            raise UsageError("PAF line points (--n-points) must be >= 2")


def parse_thresholds(text: str) -> tuple[float, ...]:
    """``"0.85,0.6,0.4"`` -> ``(0.85, 0.6, 0.4)``."""
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise UsageError(f"--merge-thresholds {text!r}: expected comma-separated numbers") from None
    if not values:
        raise UsageError("--merge-thresholds: give at least one number")
    for value in values:
        check_number("merge_thresholds", value, "--merge-thresholds")
    return values


@dataclass(frozen=True)
class BackendOptions:
    """How the runtime runs the network (precision, compilation), not what it computes."""

    fp16: bool = False
    bf16: bool = False
    int8: bool = False
    compile: bool = False
    notify: Callable[[str], None] | None = (
        None  # told when an export is made (a few seconds, first use)
    )

    def __post_init__(self) -> None:
        # Conflicting flags are a usage error (exit 2), found before any model loads.
        if self.fp16 and self.bf16:
            raise UsageError("--fp16 and --bf16 conflict: choose one")

    def maker_kwargs(self) -> dict[str, Any]:
        """What :meth:`Runtime.maker` takes (each runtime refuses what it cannot do,
        e.g. ``compile`` outside torch)."""
        return {
            "fp16": self.fp16,
            "bf16": self.bf16,
            "int8": self.int8,
            "compile": self.compile,
            "notify": self.notify,
        }


HDF5_DEFAULTS: dict[str, Any] = {"video_dataset": None, "video_input_format": "channels_last"}
"""The HDF5-input options at their defaults: left out of a recorded request or journal, so
outputs written before these options existed still count as the same request."""


def recorded_options(options: dict[str, Any]) -> dict[str, Any]:
    """``asdict(PredictOptions)`` as recorded: the HDF5-input options only when set."""
    return {k: v for k, v in options.items() if not (k in HDF5_DEFAULTS and v == HDF5_DEFAULTS[k])}
