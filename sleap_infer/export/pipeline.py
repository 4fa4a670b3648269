"""Top-down pair exports: both stages in one folder, two graphs, crops cut on the host.

Layout of the output folder (default ``<centroid model>/exported_topdown``, or
``exported_multi_class_topdown``, sleap-nn's names; ``exported_topdown_segmentation``
for a centered-instance segmentation model, which sleap-nn cannot export)::

    export_pipeline.json      which subfolder holds which stage, and what runs between them
    centroid/                 a complete export of the centroid model (frames in)
    centered_instance/        a complete export of the instance model (crops in);
                              multi_class_topdown/ for a multi-class model,
                              centered_instance_segmentation/ for masks (a raw-maps
                              graph: the crops' foreground maps, masks made on the host)

Why two graphs and not one: the crops the torch path cuts (integer origins,
sleap-nn's float top-left, zeros beyond the frame) are what keep keypoints
equal to it; an in-graph ``grid_sample`` crop would resample and differ.
The instance stage always has a dynamic batch, because the number of crops
per batch follows the number of animals. ``infer predict --backend onnx`` finds
the stages here when the folder sits in either model's directory.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from sleap_infer.core.artifact import (
    DECODED,
    EXPORT_LAYOUT_VERSION,
    GRAPH_OUTPUTS,
    PIPELINE_NAME,
    RAW_MAPS,
    ExportInfo,
    pair_folder_name,
    read_export,
)
from sleap_infer.core.errors import UsageError
from sleap_infer.export.exporter import Notify, export_model, load_for_export, staged_directory
from sleap_infer.export.settings import ExportSettings
from sleap_infer.model.loader import LoadedModel
from sleap_infer.model.registry import MODEL_TYPES, PairSpec, pair_roles

_CROPS = [
    "threshold, order and max_instances of the centroid stage's candidates",
    "one crop_size box per centroid in the size-matched frame: float top-left "
    "c - crop/2 + 0.5, pixels from trunc(top_left + e//2) - e//2, zeros outside",
    "instance stage input: crops after its own channel coercion, input scale, stride padding",
]
BETWEEN_STAGES = [
    *_CROPS,
    "keypoints = crop keypoints + the box's float top-left, then / size-matcher factor",
    "instance score = centroid value",
]
BETWEEN_STAGES_MASKS = [
    *_CROPS,
    "mask of each crop: its foreground map (the instance stage's raw output) thresholded "
    "on the host, placed at the box's integer top-left, then / size-matcher factor",
    "mask score = mean foreground probability inside the mask (not the centroid value)",
]


def split_pair(models: Sequence[LoadedModel]) -> tuple[LoadedModel, LoadedModel, PairSpec]:
    """``(centroid, instance, pipeline)`` from two models in either order, or a UsageError."""
    roles = pair_roles([m.model_type for m in models])
    if roles is None:
        types = ", ".join(m.model_type for m in models)
        raise UsageError(
            f"cannot export models of types {types} together: give one model, or a centroid "
            "model plus a centered-instance (multi-class top-down, centered-instance "
            "segmentation) model"
        )
    centroid, instance = models[roles[0]], models[roles[1]]
    pair = MODEL_TYPES[instance.model_type].pair
    assert pair is not None  # pair_roles only pairs types that have one
    return centroid, instance, pair


def _stage_entry(role: str, info: ExportInfo, folder: str) -> dict[str, Any]:
    data = info.data
    return {
        "role": role,
        "dir": folder,
        "model_type": info.model_type,
        "model_dir": data["source"]["model_dir"],
        "checkpoint_sha256": info.checkpoint_sha256,
        "input": data["input"],
        GRAPH_OUTPUTS: RAW_MAPS if info.raw_maps else DECODED,
        "outputs": data["outputs"],
    }


def export_topdown(
    models: Sequence[str | Path | LoadedModel],
    out_dir: str | Path | None = None,
    settings: ExportSettings | None = None,
    device: str = "auto",
    notify: Notify | None = None,
) -> tuple[Path, ExportInfo, ExportInfo]:
    """Export a centroid + instance pair; returns the folder and both stages' exports.

    ``settings.frame_size`` and ``batch_size`` apply to the centroid stage (frames);
    the instance stage is traced at its crop size with a dynamic batch (a raw-maps
    graph for a segmentation model: the centroid stage still decodes in-graph).
    """
    settings = settings or ExportSettings()
    loaded = [load_for_export(m) for m in models]
    centroid, instance, pair = split_pair(loaded)
    out = (
        Path(out_dir).expanduser()
        if out_dir is not None
        else centroid.path / pair_folder_name(pair.name)
    )
    crop_settings = replace(settings, frame_size=None, batch_size=None)
    # --crop-size is the crop model's; --input-scale reaches both stages (sleap-nn's rule).
    centroid_settings = replace(settings, crop_size=None)
    pipeline = pair.name
    with staged_directory(out) as staging:
        stages = []
        for role, model, stage_settings in (
            ("centroid", centroid, centroid_settings),
            ("instance", instance, crop_settings),
        ):
            folder = model.model_type
            info = export_model(
                model,
                staging / folder,
                stage_settings,
                device=device,
                notify=notify,
                extra_metadata={"pipeline": {"name": pipeline, "role": role}},
            )
            stages.append(_stage_entry(role, info, folder))
            crop_size = info.data.get("crop_size")  # the instance stage's, --crop-size's
        manifest = {
            "layout_version": EXPORT_LAYOUT_VERSION,
            "pipeline": pipeline,
            "stages": stages,
            "crop_size": crop_size,
            "between_stages_on_host": (
                BETWEEN_STAGES_MASKS if MODEL_TYPES[instance.model_type].masks else BETWEEN_STAGES
            ),
        }
        (staging / PIPELINE_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return out, read_export(out / centroid.model_type), read_export(out / instance.model_type)
