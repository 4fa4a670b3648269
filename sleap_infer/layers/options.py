"""User-tunable postprocessing knobs shared by every layer (sleap-nn's defaults)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PredictOptions:
    """Peak finding and grouping settings; a layer reads the ones that apply to it."""

    peak_threshold: float = 0.2
    refine: bool = True
    integral_patch_size: int = 5
    max_instances: int | None = None
    centroid_peak_threshold: float | None = None  # top-down stage 1 override
    # Bottom-up PAF grouping.
    max_edge_length_ratio: float = 0.25
    dist_penalty_weight: float = 1.0
    n_points: int = 10
    min_instance_peaks: float = 0.0
    min_line_scores: float = 0.25
    # Debug: keep the raw confidence maps in ``BatchPredictions.extras``.
    return_confmaps: bool = False

    def __post_init__(self) -> None:
        if self.integral_patch_size < 1:
            raise ValueError("integral_patch_size must be >= 1")
        if self.max_instances is not None and self.max_instances < 1:
            raise ValueError("max_instances must be >= 1")
