"""What an export bakes in, and how those choices become a stable cache key."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from sleap_infer.errors import UsageError

MIN_OPSET = 18
"""The torch.export-based exporter writes opset 18 and up (see ``onnx_export``)."""

DEFAULT_OPSET = 18
DEFAULT_MAX_PEAKS = 64
"""Local-peak candidates kept per channel (centroids; bottom-up: per node).

sleap-nn's exports keep 20, which the barely trained fixture models already exceed
(the multi-class bottom-up one finds up to 39 peaks of a node at threshold 0.05). The
bottom-up graph scores K x K pairs per edge, so K costs quadratically there, but 64^2
samples per edge are still cheap next to the network."""

TRT_DYNAMIC_BATCH = (1, 4, 16)
"""TensorRT profile (min, opt, max) batch for a dynamic-batch export; opt = predict's default."""

EXPORT_LAYOUT_VERSION = 2
"""Bumped whenever wrapper outputs change meaning, so stale cache entries are never reused."""

FORMATS = ("onnx", "trt")


@dataclass(frozen=True)
class DecodeSettings:
    """Postprocessing that is traced into the graph (changing it needs a new export).

    The peak threshold is *not* here: graphs return every candidate with its
    value, and the host applies the user's threshold, so one export serves all.
    ``peak_threshold`` is only used for the convenience ``*_valid`` outputs.
    """

    refine: bool = True
    integral_patch_size: int = 5
    max_peaks: int = DEFAULT_MAX_PEAKS
    peak_threshold: float = 0.2
    # Bottom-up PAF line scoring (sleap-nn's defaults); matching stays on the host.
    n_points: int = 10
    max_edge_length_ratio: float = 0.25
    dist_penalty_weight: float = 1.0

    def __post_init__(self) -> None:
        if self.integral_patch_size < 1:
            raise UsageError("integral patch size must be >= 1")
        if self.max_peaks < 1:
            raise UsageError("max peaks must be >= 1")
        if self.n_points < 2:
            raise UsageError("PAF line points (--n-points) must be >= 2")


@dataclass(frozen=True)
class ExportSettings:
    """Everything ``infer export`` lets the user choose."""

    formats: tuple[str, ...] = ("onnx",)
    opset: int = DEFAULT_OPSET
    fp16: bool = False
    batch_size: int | None = None  # None: dynamic batch; N: static batch of N
    frame_size: tuple[int, int] | None = None  # frames (H, W) before preprocessing
    decode: DecodeSettings = field(default_factory=DecodeSettings)
    workspace_gb: float = 2.0

    def __post_init__(self) -> None:
        unknown = [f for f in self.formats if f not in FORMATS]
        if unknown or not self.formats:
            raise UsageError(f"unknown export format {unknown} (choose onnx, trt or both)")
        if self.batch_size is not None and self.batch_size < 1:
            raise UsageError("--batch must be >= 1")

    @property
    def dynamic_batch(self) -> bool:
        return self.batch_size is None

    @property
    def wants_trt(self) -> bool:
        return "trt" in self.formats

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["formats"] = list(self.formats)
        out["frame_size"] = None if self.frame_size is None else list(self.frame_size)
        return out


def parse_formats(text: str) -> tuple[str, ...]:
    """``--format``: the engine is built from the ONNX file, so trt keeps that file too."""
    key = text.strip().lower()
    if key == "onnx":
        return ("onnx",)
    if key in ("trt", "tensorrt", "both"):
        return ("onnx", "trt")
    raise UsageError(f"--format {text!r}: choose onnx, trt or both")


def parse_size(text: str) -> tuple[int, int]:
    """``"480x640"`` -> ``(480, 640)`` (height first, like numpy shapes)."""
    match = re.fullmatch(r"\s*(\d+)\s*[x×,]\s*(\d+)\s*", text)
    if not match or int(match[1]) < 1 or int(match[2]) < 1:
        raise UsageError(f"--input-size {text!r}: expected HEIGHTxWIDTH, e.g. 480x640")
    return int(match[1]), int(match[2])


def check_opset(opset: int) -> int:
    """Reject opsets the installed exporter cannot write, with the supported range."""
    import onnx.defs

    highest = onnx.defs.onnx_opset_version()
    if opset < MIN_OPSET or opset > highest:
        why = (
            "the torch.export-based ONNX exporter writes opset 18 or newer"
            if opset < MIN_OPSET
            else f"the installed onnx {onnx.__version__} knows opsets up to {highest}"
        )
        raise UsageError(f"--opset {opset} is not supported: {why} (use {MIN_OPSET}-{highest})")
    return opset


def stable_key(payload: dict[str, Any], length: int = 20) -> str:
    """Short hex digest of a JSON-able dict, independent of key order."""
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]
