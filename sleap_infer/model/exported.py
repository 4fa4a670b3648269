"""A folder written by ``infer export``, run on its own: no model directory, no checkpoint.

``infer export`` writes everything a run needs into the folder: the graph
(``model.onnx``, and ``model.trt`` for TensorRT), ``export_metadata.json``
(model type, input contract, baked decoding, the checkpoint's hash) and a copy
of the training config (skeleton, preprocessing, heads). So a lab can export
once and copy the folder to the machine that predicts, as with sleap-nn's
``predict -m EXPORT_DIR --runtime onnx``. Such a folder loads into a
:class:`~sleap_infer.model.loader.LoadedModel` without a network
(``network is None``, ``export_dir`` set): it can only run on the runtime it
was exported for, from its own files, never be exported again.

A top-down pair export (``export_pipeline.json`` and one folder per stage)
stands for its two stages, centroid first.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleap_infer.core.artifact import (
    CONFIG_OVERRIDES,
    METADATA_NAME,
    OVERRIDABLE,
    PIPELINE_NAME,
    read_export,
)
from sleap_infer.core.errors import ExportError, ModelError
from sleap_infer.core.files import CONFIG_MAX_BYTES, read_text_bounded

if TYPE_CHECKING:
    from sleap_infer.model.loader import LoadedModel

CONFIG_NAMES = ("training_config.yaml", "training_config.json")  # sleap-nn, SLEAP 1.x
CHECKPOINTS = ("best.ckpt", "best_model.h5")


def is_export_dir(path: str | Path) -> bool:
    """An ``infer export`` folder (one model, or a top-down pair) with no checkpoint in it."""
    p = Path(path).expanduser()
    if not p.is_dir() or any((p / name).exists() for name in CHECKPOINTS):
        return False
    return (p / METADATA_NAME).exists() or (p / PIPELINE_NAME).exists()


def stage_dirs(path: str | Path) -> list[Path]:
    """The export folders ``path`` stands for: itself, or a pair's stages (centroid first)."""
    p = Path(path).expanduser()
    manifest = p / PIPELINE_NAME
    if not manifest.exists():
        return [p]
    try:
        stages = json.loads(read_text_bounded(manifest, CONFIG_MAX_BYTES, ModelError))["stages"]
        order = sorted(stages, key=lambda s: s.get("role") != "centroid")
        return [p / str(stage["dir"]) for stage in order]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"{manifest}: unreadable top-down export manifest ({exc})") from exc


def expand(paths: list[str] | tuple[str, ...]) -> list[str]:
    """``paths`` with each pair export replaced by its two stage folders."""
    out: list[str] = []
    for path in paths:
        out += [str(p) for p in stage_dirs(path)] if is_export_dir(path) else [str(path)]
    return out


def export_runtime(paths: list[str] | tuple[str, ...]) -> str | None:
    """The runtime export folders were made for (``trt`` when they hold engines, else
    ``onnx``); None when ``paths`` are model directories (or mix the two)."""
    if not paths or not all(is_export_dir(p) for p in paths):
        return None
    folders = [d for p in paths for d in stage_dirs(p)]
    engines = [_engine(d) for d in folders]
    return "trt" if all(engines) else "onnx"


def _engine(folder: Path) -> bool:
    try:
        data = json.loads(read_text_bounded(folder / METADATA_NAME, CONFIG_MAX_BYTES, OSError))
        return bool(data.get("files", {}).get("tensorrt"))
    except (OSError, ValueError, AttributeError):
        return False


def load_exported(folder: Path) -> LoadedModel:
    """The model of an export folder: its training config and checkpoint hash, no network."""
    from sleap_infer.model.loader import LoadedModel

    _refuse_sleap_nn_export(folder)
    try:
        info = read_export(folder)
    except ExportError as exc:
        raise ModelError(str(exc)) from exc
    config_file = next((folder / n for n in CONFIG_NAMES if (folder / n).exists()), None)
    if config_file is None:
        raise ModelError(
            f"{folder}: export folder without its training config ({CONFIG_NAMES[0]}); "
            "export the model again with this version of infer"
        )
    config = _with_overrides(_config(config_file, info.data), info.data, folder)
    if config.model_type != info.model_type:
        raise ModelError(
            f"{folder}: {config_file.name} is a {config.model_type} model but the export "
            f"is a {info.model_type} one"
        )
    return LoadedModel(
        path=folder,
        config=config,
        network=None,  # type: ignore[arg-type]
        checkpoint_sha256=info.checkpoint_sha256,
        legacy=config_file.suffix == ".json",
        export_dir=folder,
    )


def _with_overrides(config: Any, data: dict[str, Any], folder: Path) -> Any:
    """``config`` with the values ``infer export --input-scale`` / ``--crop-size`` traced
    the graph with (metadata ``config_overrides``): the copied training config keeps the
    trained ones, and the host must resize and crop as the graph expects."""
    overrides = data.get(CONFIG_OVERRIDES) or {}
    unknown = sorted(set(overrides) - set(OVERRIDABLE)) if isinstance(overrides, dict) else [""]
    if unknown:
        raise ModelError(
            f"{folder / METADATA_NAME}: unknown {CONFIG_OVERRIDES} {unknown}; "
            "export the model again"
        )
    if not overrides:
        return config
    fields = {OVERRIDABLE[k]: v for k, v in overrides.items()}
    return replace(config, preprocessing=replace(config.preprocessing, **fields))


def _refuse_sleap_nn_export(folder: Path) -> None:
    """sleap-nn's own exports (``sleap-nn export``) share the file names, not the graphs:
    theirs decode differently (one top-down graph, their output names), so they are named
    and refused rather than misread."""
    try:
        data = json.loads(read_text_bounded(folder / METADATA_NAME, CONFIG_MAX_BYTES, OSError))
    except (OSError, ValueError):
        return  # read_export names the problem
    if isinstance(data, dict) and "sleap_nn_version" in data:
        raise ModelError(
            f"{folder}: exported by sleap-nn {data['sleap_nn_version']} "
            f"({data.get('model_type', '?')}); infer runs folders written by 'infer export': "
            "export the model directory with 'infer export MODEL_DIR -o DIR'"
        )


def _config(config_file: Path, data: dict[str, Any]) -> Any:
    from sleap_infer.model.config import load_config, parse_config

    if config_file.suffix != ".json":
        return load_config(config_file)
    from sleap_infer.model.legacy.config import to_sleap_nn
    from sleap_infer.model.legacy.errors import LegacyError

    try:
        raw = to_sleap_nn(json.loads(read_text_bounded(config_file, CONFIG_MAX_BYTES, ModelError)))
    except (OSError, ValueError, LegacyError) as exc:
        raise ModelError(f"{config_file}: cannot read the SLEAP 1.x config ({exc})") from exc
    # The Keras weights told the channels; the exported graph's input says them too.
    raw["model_config"]["backbone_config"]["unet"]["in_channels"] = int(data["input"]["shape"][1])
    return parse_config(raw, source=str(config_file))
