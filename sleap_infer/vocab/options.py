"""Every user-tunable postprocessing knob, with its default declared exactly once.

``PredictOptions`` is what a layer reads; ``DecodeSettings`` is the part of it
an exported graph bakes in (changing it needs a new export). Both take their
defaults from the constants below, and so do the CLI options of ``predict``,
``export`` and ``bench``: sleap-nn's defaults, in one place, so the three
commands can never drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from sleap_infer.vocab.errors import UsageError

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
MAX_INTEGRAL_PATCH_SIZE = 15
"""Refinement averages a patch of the confidence map around each peak. An even side has
no centre pixel (sleap-nn's patches are odd), and a wide patch averages in the
neighbouring animals' and nodes' peaks: 999 moved points by 80 px on the fixtures. 15
output pixels already spans several Gaussian sigmas at any usual stride."""


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
    max_instances: int | None = None
    centroid_peak_threshold: float | None = None  # top-down stage 1 override
    max_edge_length_ratio: float = MAX_EDGE_LENGTH_RATIO
    dist_penalty_weight: float = DIST_PENALTY_WEIGHT
    n_points: int = N_POINTS
    min_instance_peaks: float = MIN_INSTANCE_PEAKS
    min_line_scores: float = MIN_LINE_SCORES
    # Debug: keep the raw confidence maps in ``BatchPredictions.extras``.
    return_confmaps: bool = False

    def __post_init__(self) -> None:
        check_integral_patch_size(self.integral_patch_size)
        if self.max_instances is not None and self.max_instances < 1:
            raise UsageError("--max-instances must be >= 1")

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
