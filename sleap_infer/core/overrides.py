"""Predict-time overrides of a trained model's preprocessing, as sleap-nn 0.3.5's
``--max_height`` / ``--max_width`` / ``--input_scale`` / ``--crop_size`` /
``--anchor_part`` / ``--[no-]ensure_rgb`` / ``--[no-]ensure_grayscale`` flags, and its
``--backbone_ckpt_path`` / ``--head_ckpt_path`` (weights from other checkpoints).

``None`` keeps the trained value, so ``False`` is a real override for the two
channel flags (sleap-nn's ``--no-ensure_rgb``). Which model of a top-down pair
each field lands on is decided by :func:`sleap_infer.model.overrides.apply_overrides`;
this record only holds the values and refuses the ones no model could use.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from sleap_infer.core.errors import UsageError

FLAGS = {
    "max_height": "--max-height",
    "max_width": "--max-width",
    "input_scale": "--input-scale",
    "crop_size": "--crop-size",
    "anchor_part": "--anchor-part",
    "ensure_rgb": "--ensure-rgb",
    "ensure_grayscale": "--ensure-grayscale",
    "backbone_ckpt_path": "--backbone-ckpt-path",
    "head_ckpt_path": "--head-ckpt-path",
}
"""Our spelling of each field's flag, for error messages."""

WEIGHT_FIELDS = ("backbone_ckpt_path", "head_ckpt_path")
"""The fields that name checkpoints rather than change the training config."""


@dataclass(frozen=True)
class ConfigOverrides:
    """Values that replace ``data_config.preprocessing`` (and the anchor part) at inference."""

    max_height: int | None = None
    max_width: int | None = None
    input_scale: float | None = None
    crop_size: int | None = None
    anchor_part: str | None = None
    ensure_rgb: bool | None = None
    ensure_grayscale: bool | None = None
    # Weights, not preprocessing: put on the networks by sleap_infer.model.weights.
    backbone_ckpt_path: str | None = None
    head_ckpt_path: str | None = None

    def __post_init__(self) -> None:
        # sleap-nn accepts any int/float and fails (or silently misbehaves) deep in
        # the resize; a one-line refusal here is kinder and changes no valid run.
        for name in ("max_height", "max_width", "crop_size"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
                raise UsageError(f"{FLAGS[name]} {value}: must be a whole number >= 1")
        scale = self.input_scale
        if scale is not None and not (math.isfinite(scale) and scale > 0.0):
            raise UsageError(f"--input-scale {scale}: must be a number > 0")
        if self.anchor_part is not None and not self.anchor_part.strip():
            raise UsageError("--anchor-part: give a node name")
        # sleap-nn's PreprocessConfig refuses the pair; refusing it here is earlier.
        if self.ensure_rgb and self.ensure_grayscale:
            raise UsageError("--ensure-rgb and --ensure-grayscale cannot both be set; choose one")
        for name in WEIGHT_FIELDS:
            value = getattr(self, name)
            if value is not None and not str(value).strip():
                raise UsageError(f"{FLAGS[name]}: give a .ckpt file")

    @property
    def active(self) -> bool:
        """Whether any field overrides the trained config."""
        return any(v is not None for v in asdict(self).values())

    @property
    def preprocessing(self) -> dict[str, Any]:
        """The set fields that change the trained config (not the weights)."""
        return {k: v for k, v in self.given.items() if k not in WEIGHT_FIELDS}

    @property
    def weights(self) -> dict[str, str]:
        """The set checkpoint overrides (``backbone_ckpt_path``, ``head_ckpt_path``)."""
        return {k: str(v) for k, v in self.given.items() if k in WEIGHT_FIELDS}

    @property
    def given(self) -> dict[str, Any]:
        """The fields that are set, by name (for messages and provenance)."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
