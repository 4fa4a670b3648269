"""``export_metadata.json``: what an export contains and what input it accepts.

Written next to ``model.onnx`` (and embedded in its ``metadata_props``), read
back before an export is used, so a stale, foreign or mis-shaped export is
rejected with a reason instead of producing wrong keypoints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sleap_infer.errors import ExportError
from sleap_infer.export.settings import EXPORT_LAYOUT_VERSION, DecodeSettings

METADATA_NAME = "export_metadata.json"
ONNX_NAME = "model.onnx"
ENGINE_NAME = "model.trt"
ENGINE_METADATA_NAME = "model.trt.json"
METADATA_PROP = "sleap_infer_metadata"
PIPELINE_NAME = "export_pipeline.json"
"""A top-down pair export's manifest: which subfolder holds which stage."""

_NETWORK = ["uint8 -> float32 / 255", "network"]
_REFINE = "integral refinement (fixed-size patch gather)"
_LOCAL_PEAKS = (
    "local peaks (strict 8-neighbour maxima, top-K, raster order; "
    "value of the first maximum that did not fit)"
)
_GLOBAL_PEAKS = "global peaks (argmax of column / row maxima)"
_SCALE = "coordinates x output_stride / input_scale"
IN_GRAPH = {
    "single_instance": [*_NETWORK, _GLOBAL_PEAKS, _REFINE, _SCALE],
    "centroid": [*_NETWORK, _LOCAL_PEAKS, _REFINE, _SCALE],
    "centered_instance": [*_NETWORK, f"{_GLOBAL_PEAKS} on one crop", _REFINE, _SCALE],
    "multi_class_topdown": [
        *_NETWORK,
        f"{_GLOBAL_PEAKS} on one crop",
        _REFINE,
        _SCALE,
        "class probabilities of the crop (softmax of the class-vector head)",
    ],
    "bottomup": [
        *_NETWORK,
        f"{_LOCAL_PEAKS}, per node",
        _REFINE,
        "PAF line scores of all K x K slot pairs per edge (n_points samples rounded to PAF "
        "pixels, distance penalty)",
        _SCALE,
    ],
    "multi_class_bottomup": [
        *_NETWORK,
        f"{_LOCAL_PEAKS}, per node",
        _REFINE,
        "class maps sampled at each peak slot (nearest class-map pixel)",
        _SCALE,
    ],
}
ON_HOST_BY_TYPE = {
    "centered_instance": [
        "crops of crop_size around each centroid, cut from the size-matched frame",
        "crop keypoints + the box's float top-left",
    ],
    "bottomup": [
        "Hungarian matching per edge, instance assembly, min_line_scores, "
        "min_instance_peaks (sleap_infer.ops.grouping)",
    ],
    "multi_class_bottomup": [
        "Hungarian assignment of each node's peaks to classes (sleap_infer.ops.identity)",
    ],
}
ON_HOST_BY_TYPE["multi_class_topdown"] = [
    *ON_HOST_BY_TYPE["centered_instance"],
    "Hungarian assignment of each frame's crops to classes",
]
ON_HOST = [
    "channel coercion (ensure_rgb / ensure_grayscale)",
    "size matcher (resize + pad to max_height x max_width)",
    "input scale resize (uint8, bit-identical to the torch path)",
    "pad to max_stride",
    "peak threshold",
    "divide by the size-matcher factor",
    "instance packaging (max_instances, scores)",
]


def shape_text(shape: tuple[int | str, ...] | list[int | str]) -> str:
    return "x".join(str(d) for d in shape)


@dataclass(frozen=True)
class ExportInfo:
    """A parsed export directory."""

    path: Path
    data: dict[str, Any]

    @property
    def model_type(self) -> str:
        return str(self.data["model_type"])

    @property
    def checkpoint_sha256(self) -> str:
        return str(self.data["source"]["checkpoint_sha256"])

    @property
    def input_shape(self) -> list[int | str]:
        return list(self.data["input"]["shape"])

    @property
    def dynamic_batch(self) -> bool:
        return self.input_shape[0] == "batch"

    @property
    def decode(self) -> DecodeSettings:
        return DecodeSettings(**self.data["decode"])

    @property
    def output_names(self) -> list[str]:
        return [o["name"] for o in self.data["outputs"]]

    @property
    def onnx_path(self) -> Path:
        return self.path / self.data["files"]["onnx"]

    @property
    def engine_path(self) -> Path | None:
        name = self.data["files"].get("tensorrt")
        return None if name is None else self.path / name

    @property
    def decode_fields(self) -> list[str]:
        return list(self.data.get("decode_fields", []))

    def output_shape(self, name: str, batch: int) -> tuple[int, ...]:
        for spec in self.data["outputs"]:
            if spec["name"] == name:
                return tuple(batch if d == "batch" else int(d) for d in spec["shape"])
        raise KeyError(name)

    def misfit(self, shape: tuple[int, ...]) -> str | None:
        """Why a ``(B, C, H, W)`` uint8 input cannot run on this export, or None."""
        expected = self.input_shape
        fixed = [int(d) for d in expected[1:]]
        if list(shape[1:]) != fixed:
            return (
                f"it was traced for {shape_text(expected)} input and these frames "
                f"preprocess to {shape_text(shape)}"
            )
        if not self.dynamic_batch and shape[0] != int(expected[0]):
            return f"it has a static batch of {expected[0]}, not {shape[0]}"
        return None


def write_metadata(directory: Path, data: dict[str, Any]) -> Path:
    path = directory / METADATA_NAME
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def read_export(directory: Path) -> ExportInfo:
    """Parse ``directory/export_metadata.json``; every failure names the file."""
    path = directory / METADATA_NAME
    if not path.is_file():
        raise ExportError(f"{directory}: not an export directory (no {METADATA_NAME})")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ExportError(f"{path}: unreadable export metadata ({exc})") from exc
    required = ("model_type", "source", "input", "outputs", "decode", "files", "layout_version")
    missing = [k for k in required if not isinstance(data, dict) or k not in data]
    if missing:
        raise ExportError(f"{path}: export metadata lacks {', '.join(missing)}")
    if data["layout_version"] != EXPORT_LAYOUT_VERSION:
        raise ExportError(
            f"{path}: export layout {data['layout_version']} is not the {EXPORT_LAYOUT_VERSION} "
            "this sleap_infer reads; export the model again"
        )
    info = ExportInfo(directory, data)
    if not info.onnx_path.is_file():
        raise ExportError(f"{directory}: metadata names {info.onnx_path.name}, which is missing")
    return info


def decode_misfit(have: DecodeSettings, want: DecodeSettings, fields: list[str]) -> str | None:
    """Why an export's baked decoding cannot serve ``want``, or None.

    Refinement and PAF scoring must match exactly; an export keeping more
    local-peak candidates than asked for is fine (the host keeps what it needs).
    """
    if "refine" in fields and have.refine != want.refine:
        state = "with" if have.refine else "without"
        return f"it was exported {state} integral refinement"
    if (
        "integral_patch_size" in fields
        and want.refine
        and have.integral_patch_size != want.integral_patch_size
    ):
        return f"its refinement patch is {have.integral_patch_size}, not {want.integral_patch_size}"
    if "max_peaks" in fields and have.max_peaks < want.max_peaks:
        return f"it keeps {have.max_peaks} peak candidates, fewer than the {want.max_peaks} needed"
    for name in ("n_points", "max_edge_length_ratio", "dist_penalty_weight"):
        if name in fields and getattr(have, name) != getattr(want, name):
            return f"its PAF scoring uses {name} {getattr(have, name)}, not {getattr(want, name)}"
    return None
