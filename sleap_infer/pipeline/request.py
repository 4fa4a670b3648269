"""What a run asks for, stored in each output, so a rerun skips only the same request.

A finished output is skipped by a rerun (after a crash, or with videos added
to a folder), but only when it answers the same question: the same models
(by checkpoint hash, not path: a retrained model in the same folder is a new
request; and by the hash of each ``training_config.yaml``: renamed nodes or a
new ``preprocessing.scale`` change the predictions as much as new weights), the
same options and the same frames. The record is built from the spec before any
model is loaded, so the batch can decide before loading; building it parses
each model's config, so a broken one fails the run instead of letting a stale
output be skipped. The video job stores the same record in the output's
provenance (``"request"``), with the video's frame count (``"video_frames"``):
frame selections are compared as the frame sets they resolve to on that video
(``0-165`` of a 166-frame video is every frame, ``0-9,10-19`` is ``0-19``),
never as text.

Device, backend and batch size are left out: they do not change what is asked,
and a rerun on another machine must still skip what is done.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sleap_infer.core.errors import OutputError
from sleap_infer.core.files import file_sha256
from sleap_infer.core.options import recorded_options
from sleap_infer.core.overrides import ConfigOverrides
from sleap_infer.journal import fingerprint_changes
from sleap_infer.model.config import load_config
from sleap_infer.model.exported import is_export_dir, load_exported, stage_dirs
from sleap_infer.model.legacy import LEGACY_CONFIG, LEGACY_WEIGHTS
from sleap_infer.model.loader import CKPT_NAME, CONFIG_NAME, resolve_model_dir
from sleap_infer.model.weights import weights_sha256
from sleap_infer.pipeline.spec import PipelineSpec
from sleap_infer.sources.frames import frame_ranges
from sleap_infer.writers.side_files import is_ours, write_json

SIDE_RECORD_SCHEMA = "sleap_infer.request/1"

REQUEST_KEY = "request"
VIDEO_FRAMES_KEY = "video_frames"  # the video's length when the output was written
_HASHES: dict[tuple[str, int, int], str] = {}  # (weights file, mtime, size) -> sha256


def weights_file(model_path: str | Path) -> Path:
    """The weights a model path loads (a :class:`ModelError` for a path that is no model)."""
    folder = resolve_model_dir(model_path)
    ckpt = folder / CKPT_NAME
    return ckpt if ckpt.exists() else folder / LEGACY_WEIGHTS


def checkpoint_hashes(
    model_paths: tuple[str, ...] | list[str], overrides: ConfigOverrides | None = None
) -> list[str]:
    """sha256 of each model's weights, remembered per file version (one hash per run).

    With ``--backbone-ckpt-path`` / ``--head-ckpt-path`` (``overrides``), the hash of the
    files each model actually runs (:func:`~sleap_infer.model.weights.weights_sha256`),
    the same the loaded model carries."""
    weights = overrides.weights if overrides is not None else {}
    out: list[str] = []
    for given in model_paths:
        folder = resolve_model_dir(given)
        if is_export_dir(folder):  # no weights here: the hash the export recorded, per stage
            out.extend(load_exported(stage).checkpoint_sha256 for stage in stage_dirs(folder))
            continue
        out.append(weights_sha256(_hash_once(weights_file(given)), weights, _hash_once))
    return out


def _hash_once(path: Path) -> str:
    """sha256 of ``path``, remembered per file version."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _HASHES:
        _HASHES[key] = file_sha256(path)
    return _HASHES[key]


def config_hashes(model_paths: tuple[str, ...] | list[str]) -> list[str]:
    """sha256 of each model's training config, after checking that it parses (a broken
    ``training_config.yaml`` is a :class:`ConfigError` line here, before any skip). An
    exported model carries its config inside its checkpoint hash: nothing to add."""
    out = []
    for given in model_paths:
        folder = resolve_model_dir(given)
        if is_export_dir(folder):
            continue
        config = folder / CONFIG_NAME
        if config.exists():
            load_config(config)  # raises one line naming the file
        else:
            config = folder / LEGACY_CONFIG
        out.append(_hash_once(config))
    return out


def _plain(value: Any) -> Any:
    """As the value reads back from JSON (tuples as lists, enums as text)."""
    return json.loads(json.dumps(value, default=str))


def _spans(frames: str) -> list[tuple[int, int | None]]:
    """``--frames`` as sorted, merged inclusive ranges (``hi`` None: to the end)."""
    merged: list[tuple[int, int | None]] = []
    for lo, hi in sorted(frame_ranges(frames), key=lambda r: r[0]):
        if merged:
            last_lo, last_hi = merged[-1]
            if last_hi is None:
                continue  # an open range already reaches the end
            if lo <= last_hi + 1:
                merged[-1] = (last_lo, None if hi is None else max(hi, last_hi))
                continue
        merged.append((lo, hi))
    return merged


def _text(spans: list[tuple[int, int | None]]) -> str:
    return ",".join(
        str(lo) if hi == lo else f"{lo}-" if hi is None else f"{lo}-{hi}" for lo, hi in spans
    )


def frames_text(frames: str | None) -> str:
    """``--frames`` as recorded: ``all`` when none, else its ranges sorted and merged
    (``10-19,0-9`` and ``0-9,10-19`` are both ``0-19``)."""
    if frames is None or not frames.strip():
        return "all"
    return _text(_spans(frames))


def resolved_frames(frames: str, n_frames: int) -> str:
    """A recorded selection on a video of ``n_frames``: ``all`` when it covers every
    frame, else its ranges clipped to the video (what was, or would be, predicted)."""
    if frames == "all":
        return frames
    clipped = []
    for lo, hi in _spans(frames):
        end = n_frames - 1 if hi is None else min(hi, n_frames - 1)
        if lo <= end:
            clipped.append((lo, end))
    if clipped == [(0, n_frames - 1)]:
        return "all"
    return _text(list(clipped)) or "none"


def request_record(spec: PipelineSpec, hashes: list[str], frames: str | None) -> dict[str, Any]:
    """The request: checkpoint hashes, every option that changes the output, the frames."""
    record: dict[str, Any] = {
        "checkpoint_sha256": list(hashes),
        "config_sha256": config_hashes(spec.model_paths),
        "options": recorded_options(asdict(spec.options)),
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
        request = dict(request)
        n_frames = request.pop(VIDEO_FRAMES_KEY, None)
        if isinstance(n_frames, int) and isinstance(request.get("frames"), str):
            wanted = dict(wanted)
            request["frames"] = resolved_frames(request["frames"], n_frames)
            wanted["frames"] = resolved_frames(str(wanted["frames"]), n_frames)
        return _readable(request, wanted)
    old = {"checkpoint_sha256": stored.get("checkpoint_sha256", wanted["checkpoint_sha256"])}
    if "frame_selection" in stored:
        old["frames"] = "all" if stored["frame_selection"] == "all" else "a selection"
    new = {k: wanted[k] for k in old}
    if new.get("frames") not in (None, "all") and old.get("frames") == "a selection":
        new["frames"] = "a selection"  # which one is not recorded: give it the benefit
    return _readable(old, new)


def _readable(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """:func:`fingerprint_changes`, with other checkpoints and configs named by short
    hashes (a config recorded before configs were part of the request: ``none``)."""
    hashed = {"checkpoint_sha256": "checkpoint", "config_sha256": "training config"}
    changes = fingerprint_changes(
        {k: v for k, v in old.items() if k not in hashed},
        {k: v for k, v in new.items() if k not in hashed},
    )
    for key, what in reversed(hashed.items()):
        then, now = old.get(key), new.get(key)
        if then != now:
            short = [", ".join(h[:12] for h in hashes or ()) or "none" for hashes in (then, now)]
            changes.insert(0, f"models: {what} sha256 {short[0]} then, {short[1]} now")
    return changes


def side_record_path(output: Path) -> Path:
    """Where the request record of an output that cannot hold one (CSV) goes."""
    return output.with_name(f".{output.name}.request.json")


def _stamp(path: Path) -> dict[str, int]:
    stat = path.stat()
    return {"bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def write_side_record(output: Path, request: dict[str, Any]) -> str | None:
    """Record ``request`` beside ``output`` just written; a warning line if it cannot be
    (the output stays: a rerun then refuses it as unverifiable rather than skip it)."""
    record = {"schema": SIDE_RECORD_SCHEMA, "output": output.name, **_stamp(output)}
    record[REQUEST_KEY] = request
    try:
        write_json(side_record_path(output), record, f"{output}: cannot record its request")
    except OutputError as exc:
        return f"{exc}; a rerun will not skip it"
    return None


def read_side_record(output: Path) -> dict[str, Any] | None:
    """The provenance-like ``{"request": ...}`` of ``output`` from its side record, or None
    when there is none, or it describes another file (the output was replaced since)."""
    path = side_record_path(output)
    if not is_ours(path, SIDE_RECORD_SCHEMA):
        return None
    try:
        record = json.loads(path.read_text())
        if record.get("output") != output.name or _stamp(output) != {
            "bytes": record.get("bytes"),
            "mtime_ns": record.get("mtime_ns"),
        }:
            return None
    except (OSError, ValueError, AttributeError):
        return None
    request = record.get(REQUEST_KEY)
    return {REQUEST_KEY: request} if isinstance(request, dict) else None
