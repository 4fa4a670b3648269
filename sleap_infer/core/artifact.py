"""The export-artifact contract: what an export folder holds and what input it accepts.

``infer export`` writes these folders and the ONNX / TensorRT backends read
them, so the contract sits below both: file names, the layout version, the
``export_metadata.json`` reader and writer, and the check that an export's
baked decoding can serve a run's options. The metadata is read back before
an export is used, so a stale, foreign or mis-shaped export is rejected with
a reason instead of producing wrong keypoints.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sleap_infer.core.errors import ExportError
from sleap_infer.core.files import (
    CONFIG_MAX_BYTES,
    WEIGHTS_MAX_BYTES,
    check_file,
    file_sha256,
    read_text_bounded,
)
from sleap_infer.core.options import DecodeSettings

EXPORT_LAYOUT_VERSION = 5
"""Bumped whenever graph outputs change meaning, so stale cache entries are never reused.
3: integral refinement keeps a peak on its pixel when the patch mean leaves the patch.
4: ``graph_outputs`` (decoded in-graph or raw maps) is required.
5: local peak slots include flat tops (equal pixels in a 2x2 block) at their mean, as sleap-nn."""

EXPORT_FOLDER = "exported"
"""Where ``infer export`` writes a model's export by default: ``<model>/exported``."""
METADATA_NAME = "export_metadata.json"
ONNX_NAME = "model.onnx"
ENGINE_NAME = "model.trt"
METADATA_PROP = "sleap_infer_metadata"
PIPELINE_NAME = "export_pipeline.json"
"""A top-down pair export's manifest: which subfolder holds which stage."""

CONFIG_OVERRIDES = "config_overrides"
"""Metadata key: the training-config values ``infer export --input-scale`` / ``--crop-size``
replaced (``{"input_scale": 0.5}``; absent when none did). The graph was traced with
them, so an export folder loads its copied training config with them put back."""
OVERRIDABLE = {"input_scale": "scale", "crop_size": "crop_size"}
"""The keys :data:`CONFIG_OVERRIDES` may hold, and the ``Preprocessing`` field each sets."""

GRAPH_OUTPUTS = "graph_outputs"
"""Metadata key saying what a graph returns: :data:`DECODED` or :data:`RAW_MAPS`."""
DECODED = "decoded"
"""The graph decodes in-graph (peaks, scores): an exported layer reads it."""
RAW_MAPS = "raw_maps"
"""The graph is the network only, one output per spatial head under the head's name: the
model type's ordinary layer decodes them on the host (segmentation, tiled models)."""


def pair_folder_name(pipeline: str) -> str:
    """Default folder of a two-stage export in the centroid model's directory (sleap-nn's
    names: ``exported_topdown``, ``exported_multi_class_topdown``)."""
    return f"{EXPORT_FOLDER}_{pipeline}"


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
    def raw_maps(self) -> bool:
        """True when the graph returns the heads' raw maps (decoding runs on the host).
        Exports written before raw maps existed lack the key: they decode in-graph."""
        return bool(self.data[GRAPH_OUTPUTS] == RAW_MAPS)

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

    def check_graph(self) -> None:
        """Refuse a graph file that is not the one this export wrote (see :func:`check_graph`)."""
        check_graph(self)

    def decode_misfit(self, want: DecodeSettings) -> str | None:
        """Why this export's baked decoding cannot serve ``want``, or None."""
        return decode_misfit(self.decode, want, self.decode_fields)


_VERIFIED: dict[tuple[str, int, int, int], str] = {}
"""Graph files already hashed in this process, by (path, inode, size, mtime): a backend
made again for the same unchanged file (each video of a batch) does not hash it again."""


def check_graph(info: ExportInfo) -> None:
    """Raise :class:`ExportError` unless ``model.onnx`` hashes to the ``onnx_sha256`` that
    ``infer export`` recorded.

    A graph swapped for another model's (copied over by hand, a sync gone wrong) ran
    silently with the other weights. Hashing costs about a second per few hundred MB,
    once per file and process, when a backend loads it. Metadata without the hash
    (written by hand) is not checked.
    """
    recorded = info.data.get("onnx_sha256")
    if not isinstance(recorded, str):
        return
    path = info.onnx_path
    st = path.stat()
    key = (str(path.absolute()), st.st_ino, st.st_size, st.st_mtime_ns)
    digest = _VERIFIED.get(key)
    if digest is None:
        digest = _VERIFIED[key] = file_sha256(path)
    if digest != recorded:
        source = info.data.get("source", {}).get("model_dir", "the model folder")
        raise ExportError(
            f"{path}: not the graph this export wrote (its SHA-256 is not the onnx_sha256 "
            f"recorded in {METADATA_NAME}); re-export it: infer export {source}"
        )


def write_metadata(directory: Path, data: dict[str, Any]) -> Path:
    path = directory / METADATA_NAME
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def read_export(directory: Path) -> ExportInfo:
    """Parse ``directory/export_metadata.json``; every failure names the file."""
    path = directory / METADATA_NAME
    if not path.exists():
        raise ExportError(f"{directory}: not an export directory (no {METADATA_NAME})")
    text = read_text_bounded(path, CONFIG_MAX_BYTES, ExportError)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ExportError(f"{path}: unreadable export metadata ({exc})") from exc
    required = ("model_type", "source", "input", "outputs", "decode", "files", "layout_version")
    required += (GRAPH_OUTPUTS,)
    missing = [k for k in required if not isinstance(data, dict) or k not in data]
    if missing:
        raise ExportError(f"{path}: export metadata lacks {', '.join(missing)}")
    if data["layout_version"] != EXPORT_LAYOUT_VERSION:
        raise ExportError(
            f"{path}: export layout {data['layout_version']} is not the {EXPORT_LAYOUT_VERSION} "
            "this sleap_infer reads; export the model again"
        )
    kind = data[GRAPH_OUTPUTS]
    if kind not in (DECODED, RAW_MAPS):
        raise ExportError(f"{path}: unknown {GRAPH_OUTPUTS} {kind!r}; export the model again")
    info = ExportInfo(directory, data)
    if not info.onnx_path.exists():
        raise ExportError(f"{directory}: metadata names {info.onnx_path.name}, which is missing")
    check_file(info.onnx_path, WEIGHTS_MAX_BYTES, ExportError)
    return info


def decode_misfit(have: DecodeSettings, want: DecodeSettings, fields: list[str]) -> str | None:
    """Why an export's baked decoding cannot serve ``want``, or None.

    Refinement and PAF scoring must match exactly; an export keeping more
    local-peak candidates than asked for is fine (the host keeps what it needs).
    ``fields`` are the settings the export's graph depends on; others are ignored.
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
    if "refine_guard" in fields and want.refine and have.refine_guard != want.refine_guard:
        state = "without" if have.refine_guard else "with"
        return f"it was exported {state} --refine-like-sleap-nn"
    if "max_peaks" in fields and have.max_peaks < want.max_peaks:
        return f"it keeps {have.max_peaks} peak candidates, fewer than the {want.max_peaks} needed"
    for name in ("n_points", "max_edge_length_ratio", "dist_penalty_weight"):
        if name in fields and getattr(have, name) != getattr(want, name):
            return f"its PAF scoring uses {name} {getattr(have, name)}, not {getattr(want, name)}"
    return None
