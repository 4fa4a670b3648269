"""What an export bakes in, and how those choices become a stable cache key."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from sleap_infer.core.errors import UsageError
from sleap_infer.core.options import DecodeSettings

MIN_OPSET = 18
"""The torch.export-based exporter writes opset 18 and up (see ``onnx_export``)."""

DEFAULT_OPSET = 18

TRT_DYNAMIC_BATCH = (1, 4, 16)
"""TensorRT profile (min, opt, max) batch for a dynamic-batch export; opt = predict's default."""

FORMATS = ("onnx", "trt")


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
    # The engine's largest batch (dynamic batch only): sleap-nn's --max-batch-size.
    max_batch: int = TRT_DYNAMIC_BATCH[2]
    # sleap-nn's export --input-scale / --crop-size: replace the trained values in the
    # exported model's preprocessing (None: as trained). See ``exporter.export_overrides``.
    input_scale: float | None = None
    crop_size: int | None = None

    def __post_init__(self) -> None:
        unknown = [f for f in self.formats if f not in FORMATS]
        if unknown or not self.formats:
            raise UsageError(f"unknown export format {unknown} (choose onnx, trt or both)")
        if self.batch_size is not None and self.batch_size < 1:
            raise UsageError("--batch must be >= 1")
        if self.max_batch < 1:
            raise UsageError(f"--max-batch-size {self.max_batch}: must be >= 1")
        scale = self.input_scale
        if scale is not None and not (math.isfinite(scale) and scale > 0.0):
            raise UsageError(f"--input-scale {scale}: must be a number > 0")
        if self.crop_size is not None and self.crop_size < 1:
            raise UsageError(f"--crop-size {self.crop_size}: must be a whole number >= 1")
        if self.batch_size is not None and self.max_batch != TRT_DYNAMIC_BATCH[2]:
            raise UsageError(
                "--max-batch-size sizes a dynamic-batch engine; --batch N builds a static one"
            )

    @property
    def batch_profile(self) -> tuple[int, int, int]:
        """The engine's (min, opt, max) batch when the batch is dynamic."""
        low, opt, _ = TRT_DYNAMIC_BATCH
        return low, min(opt, self.max_batch), self.max_batch

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
        if self.max_batch == TRT_DYNAMIC_BATCH[2]:
            del out["max_batch"]  # the default: cache keys made before the flag still hold
        for name in ("input_scale", "crop_size"):  # likewise: as trained, not written
            if out[name] is None:
                del out[name]
        return out


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
