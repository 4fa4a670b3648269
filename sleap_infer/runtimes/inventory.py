"""Which exports of a model exist already: next to it (``infer export``) and in the cache.

Looks where :func:`~sleap_infer.runtimes.cache.ensure_export` looks, in the same
order, so ``infer info`` lists exactly the folders a run could pick up. Cache
folders are named by a hash of the whole request, so they are matched to the
model by the checkpoint hash their metadata records. An export whose checkpoint
differs (the model was retrained since) is listed as stale rather than hidden:
it is the likely reason a run exports again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sleap_infer.core.artifact import METADATA_NAME, ExportInfo, read_export
from sleap_infer.core.errors import ExportError, UsageError
from sleap_infer.runtimes.cache import cache_root, candidates_next_to

NEXT_TO_MODEL, CACHE = "model", "cache"


def _describe(info: ExportInfo, where: str, checkpoint_sha256: str) -> dict[str, Any]:
    files = info.data.get("files", {})
    stale = info.checkpoint_sha256 != checkpoint_sha256
    return {
        "path": str(info.path),
        "where": where,
        "formats": [kind for kind in ("onnx", "tensorrt") if files.get(kind)],
        "input_shape": info.input_shape,
        "precision": info.data.get("precision"),
        "raw_maps": info.raw_maps,
        "usable": not stale,
        "why_not": "exported from a different checkpoint (stale)" if stale else None,
    }


def _unreadable(folder: Path, why: str) -> dict[str, Any]:
    return {
        "path": str(folder),
        "where": NEXT_TO_MODEL,
        "formats": [],
        "input_shape": None,
        "precision": None,
        "raw_maps": None,
        "usable": False,
        "why_not": why,
    }


def _cached(model_type: str) -> list[ExportInfo]:
    root = cache_root()
    if not root.is_dir():
        return []
    found = []
    for folder in sorted(root.iterdir()):
        if not (folder / METADATA_NAME).is_file():
            continue
        try:
            info = read_export(folder)
        except ExportError:
            continue  # damaged cache entries are rebuilt on use: not this model's problem
        if info.model_type == model_type:
            found.append(info)
    return found


def exports_of(
    model_dir: Path, model_type: str, checkpoint_sha256: str, partners: Sequence[Path] = ()
) -> list[dict[str, Any]]:
    """Exports of this model type next to ``model_dir`` (or a pair partner's) and in the
    cache; each says whether it was made from this checkpoint. Unreadable folders next to
    the model are listed with the reason, since a run would skip them too."""
    out: list[dict[str, Any]] = []
    for folder in candidates_next_to(model_dir, partners):
        try:
            info = read_export(folder)
        except ExportError as exc:
            out.append(_unreadable(folder, str(exc)))
            continue
        if info.model_type == model_type:  # a pair folder also holds the other stage
            out.append(_describe(info, NEXT_TO_MODEL, checkpoint_sha256))
    for info in _cached(model_type):
        if info.checkpoint_sha256 == checkpoint_sha256:
            out.append(_describe(info, CACHE, checkpoint_sha256))
    return out


def describe_models(
    paths: Sequence[str | Path], frame_size: tuple[int, int] | None = None
) -> list[dict[str, Any]]:
    """``infer info``'s facts, one dict per model: what :func:`describe_model` says plus
    ``exports`` (``frame_size``: see there). Every model loads first, so a bad path fails
    before anything is printed; the other models given are a model's pair partners (their
    pair exports hold its stage)."""
    from sleap_infer.model.info import describe_model
    from sleap_infer.model.loader import load_model

    models = [load_model(p) for p in paths]
    for model in models:
        if model.export_dir is not None:  # no network to count or trace
            raise UsageError(
                f"{model.export_dir}: an export folder; infer info describes model "
                f"directories (the folder's {METADATA_NAME} says what it holds)"
            )
    facts = []
    for model in models:
        partners = [other.path for other in models if other is not model]
        described = describe_model(model, frame_size)
        described["exports"] = exports_of(
            model.path, model.model_type, model.checkpoint_sha256, partners
        )
        facts.append(described)
    return facts


def usable_export(
    model_dir: Path,
    model_type: str,
    checkpoint_sha256: str,
    runtime: str,
    partners: Sequence[Path] = (),
) -> bool:
    """Whether an export ``runtime`` runs (ONNX for onnx and openvino, an engine for trt)
    of this checkpoint is there already: ``--backend auto`` counts no export cost then.
    Shape and decode settings are not matched (a run may still export for a new frame
    size): the cost it guards against is the first export of a model, not of a size."""
    fmt = "tensorrt" if runtime == "trt" else "onnx"
    return any(
        found["usable"] and fmt in found["formats"]
        for found in exports_of(model_dir, model_type, checkpoint_sha256, partners)
    )
