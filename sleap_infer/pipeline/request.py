"""What a run asks for, stored in each output, so a rerun skips only the same request.

A finished output is skipped by a rerun (after a crash, or with videos added
to a folder), but only when it answers the same question: the same models
(by checkpoint hash, not path: a retrained model in the same folder is a new
request), the same options and the same frames. The record is built from the
spec before any model is loaded, so the batch can decide before loading; the
video job stores the same record in the output's provenance (``"request"``).

Device, backend and batch size are left out: they do not change what is asked,
and a rerun on another machine must still skip what is done.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sleap_infer.journal import fingerprint_changes
from sleap_infer.model.exported import is_export_dir, load_exported, stage_dirs
from sleap_infer.model.legacy import LEGACY_WEIGHTS
from sleap_infer.model.loader import CKPT_NAME, file_sha256, resolve_model_dir
from sleap_infer.pipeline.spec import PipelineSpec

REQUEST_KEY = "request"
_HASHES: dict[tuple[str, int, int], str] = {}  # (weights file, mtime, size) -> sha256


def weights_file(model_path: str | Path) -> Path:
    """The weights a model path loads (a :class:`ModelError` for a path that is no model)."""
    folder = resolve_model_dir(model_path)
    ckpt = folder / CKPT_NAME
    return ckpt if ckpt.exists() else folder / LEGACY_WEIGHTS


def checkpoint_hashes(model_paths: tuple[str, ...] | list[str]) -> list[str]:
    """sha256 of each model's weights, remembered per file version (one hash per run)."""
    out = []
    for given in model_paths:
        folder = resolve_model_dir(given)
        if is_export_dir(folder):  # no weights here: the hash the export recorded, per stage
            out.extend(load_exported(stage).checkpoint_sha256 for stage in stage_dirs(folder))
            continue
        path = weights_file(given)
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        if key not in _HASHES:
            _HASHES[key] = file_sha256(path)
        out.append(_HASHES[key])
    return out


def _plain(value: Any) -> Any:
    """As the value reads back from JSON (tuples as lists, enums as text)."""
    return json.loads(json.dumps(value, default=str))


def frames_text(frames: str | None) -> str:
    """``--frames`` as compared: ``all`` when none, else the ranges without spaces."""
    if frames is None or not frames.strip():
        return "all"
    return "".join(frames.split())


def request_record(spec: PipelineSpec, hashes: list[str], frames: str | None) -> dict[str, Any]:
    """The request: checkpoint hashes, every option that changes the output, the frames."""
    record: dict[str, Any] = {
        "checkpoint_sha256": list(hashes),
        "options": asdict(spec.options),
        "frames": frames_text(frames),
    }
    if spec.tracking is not None:
        record["tracking"] = spec.tracking.to_json()
    if spec.filters is not None:
        record["filters"] = spec.filters.to_json()
    if spec.overrides is not None:
        record["overrides"] = spec.overrides.given
    if spec.project is not None:
        record["project"] = asdict(spec.project)
    if spec.centroid_only:
        record["centroid_only"] = True
    return _plain(record)


def request_changes(stored: dict[str, Any] | None, wanted: dict[str, Any]) -> list[str]:
    """What differs between the request an output answers (its provenance) and ``wanted``.

    An output from before requests were recorded is judged by what it does record: its
    models' checkpoint hashes and whether it covers all frames. An output with no
    provenance at all (CSV) cannot be judged: no differences.
    """
    if stored is None:
        return []
    request = stored.get(REQUEST_KEY)
    if isinstance(request, dict):
        return _readable(request, wanted)
    old = {"checkpoint_sha256": stored.get("checkpoint_sha256", wanted["checkpoint_sha256"])}
    if "frame_selection" in stored:
        old["frames"] = "all" if stored["frame_selection"] == "all" else "a selection"
    new = {k: wanted[k] for k in old}
    if new.get("frames") not in (None, "all") and old.get("frames") == "a selection":
        new["frames"] = "a selection"  # which one is not recorded: give it the benefit
    return _readable(old, new)


def _readable(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """:func:`fingerprint_changes`, with other checkpoints named by short hashes."""
    changes = fingerprint_changes(
        {k: v for k, v in old.items() if k != "checkpoint_sha256"},
        {k: v for k, v in new.items() if k != "checkpoint_sha256"},
    )
    then, now = old.get("checkpoint_sha256"), new.get("checkpoint_sha256")
    if then != now:
        short = [", ".join(h[:12] for h in hashes or ()) or "none" for hashes in (then, now)]
        changes.insert(0, f"models: checkpoint sha256 {short[0]} then, {short[1]} now")
    return changes
