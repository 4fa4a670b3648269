"""Which predicted instances to throw away, as sleap-nn 0.3.5's ``--filter_*`` flags do.

sleap-nn filters each batch right after the model (before grouping into frames,
before tracking), in a fixed order, cheap to expensive: node count, then scores,
then overlap suppression. ``--no-empty-frames`` is not an instance filter: it
drops frames left without instances *after* tracking, when the output is
written, so it is carried here but ignored by :attr:`InstanceFilters.active`.

Off is ``None`` / ``False``. A zero threshold is also off, as in sleap-nn,
whose defaults are zeros.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from sleap_infer.core.errors import UsageError

OVERLAP_METHODS = ("iou", "oks")


@dataclass(frozen=True)
class InstanceFilters:
    """The knobs of sleap-nn's post-inference instance filters (validated on creation)."""

    overlapping: bool = False
    overlapping_method: str = "iou"
    overlapping_threshold: float = 0.8
    min_visible_nodes: int | None = None
    min_visible_node_fraction: float | None = None
    min_mean_node_score: float | None = None
    min_instance_score: float | None = None
    min_centroid_distance: float | None = None  # pixels; centroid and top-down models

    def __post_init__(self) -> None:
        if self.overlapping_method not in OVERLAP_METHODS:
            raise UsageError(
                f"--filter-overlapping-method {self.overlapping_method!r}: "
                f"choose one of {', '.join(OVERLAP_METHODS)}"
            )
        if not 0.0 <= self.overlapping_threshold <= 1.0:
            raise UsageError(
                f"--filter-overlapping-threshold {self.overlapping_threshold}: must be in [0, 1]"
            )
        if self.min_visible_nodes is not None and self.min_visible_nodes < 0:
            raise UsageError(
                f"--filter-min-visible-nodes {self.min_visible_nodes}: must be at least 0"
            )
        fraction = self.min_visible_node_fraction
        if fraction is not None and not 0.0 <= fraction <= 1.0:
            raise UsageError(f"--filter-min-visible-node-fraction {fraction}: must be in [0, 1]")
        for flag, value in (
            ("--filter-min-mean-node-score", self.min_mean_node_score),
            ("--filter-min-instance-score", self.min_instance_score),
            ("--filter-min-centroid-distance", self.min_centroid_distance),
        ):
            # Bottom-up instance scores are PAF sums, so no upper bound here.
            if value is not None and not (math.isfinite(value) and value >= 0.0):
                raise UsageError(f"{flag} {value}: must be a number >= 0")

    @property
    def active(self) -> bool:
        """Whether any filter can drop an instance."""
        return self.overlapping or any(
            v
            for v in (
                self.min_visible_nodes,
                self.min_visible_node_fraction,
                self.min_mean_node_score,
                self.min_instance_score,
                self.min_centroid_distance,
            )
        )

    def op_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`sleap_infer.ops.instance_filters.filter_instances`."""
        return {
            "overlap_method": self.overlapping_method if self.overlapping else None,
            "overlap_threshold": self.overlapping_threshold,
            "min_visible_nodes": self.min_visible_nodes or 0,
            "min_visible_node_fraction": self.min_visible_node_fraction or 0.0,
            "min_mean_node_score": self.min_mean_node_score or 0.0,
            "min_instance_score": self.min_instance_score or 0.0,
            "min_centroid_distance": self.min_centroid_distance or 0.0,
        }

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
