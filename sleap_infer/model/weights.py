"""sleap-nn 0.3.5's ``--backbone_ckpt_path`` / ``--head_ckpt_path``: weights from other files.

A lab fine-tunes a head on a shared backbone, or compares an epoch's checkpoint
with ``best.ckpt``, without copying folders around. sleap-nn builds each model
from its folder (``training_config.yaml`` + ``best.ckpt``) and then, for every
model of the run (both of a top-down pair), loads on top of it:

* ``--backbone_ckpt_path`` alone: the whole ``state_dict`` of that file;
* both flags: the keys containing ``.backbone`` from the backbone file, then the
  keys containing ``.head_layers`` from the head file;
* ``--head_ckpt_path`` alone: the ``.head_layers`` keys of that file.

sleap-nn loads with ``strict=False``: a key the network lacks is skipped and a
tensor it does not find keeps ``best.ckpt``'s value, so a checkpoint of another
architecture half-loads silently. Here the load is strict: the file must hold
exactly the backbone (or head, or whole-network) tensors of the model, with the
model's shapes, or the run stops with one line naming the file. What the model
then carries as its checkpoint hash is a hash of the files actually used, so a
rerun with other weights is another request and an ONNX/TensorRT cache entry is
never reused across weights (see :func:`weights_sha256`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import torch

from sleap_infer.core.errors import ModelError, UsageError
from sleap_infer.core.files import file_sha256
from sleap_infer.core.overrides import FLAGS, ConfigOverrides
from sleap_infer.model.checkpoint import load_state_dict
from sleap_infer.model.loader import LoadedModel, first_non_finite

BACKBONE = "backbone_ckpt_path"
HEAD = "head_ckpt_path"


def _part(key: str, part: str) -> bool:
    """sleap-nn's test on its Lightning keys (``model.backbone...``): ``.backbone`` or
    ``.head_layers`` anywhere in the key."""
    return f".{part}" in f"model.{key}"


def sources(weights: Mapping[str, str]) -> dict[str, str]:
    """Which file gives which tensors: ``{"all": f}``, ``{"backbone": f, "head": g}`` or
    ``{"head": g}`` (the rest then stays ``best.ckpt``'s)."""
    backbone, head = weights.get(BACKBONE), weights.get(HEAD)
    if backbone is not None and head is None:
        return {"all": backbone}
    out = {"backbone": backbone} if backbone is not None else {}
    if head is not None:
        out["head"] = head
    return out


def weights_sha256(
    best_sha256: str,
    weights: Mapping[str, str],
    hash_file: Callable[[Path], str] = file_sha256,
) -> str:
    """The hash a model carries when ``weights`` override its checkpoint: one sha256 over
    the sha256 of each file whose tensors it runs (``best.ckpt`` too where the head file
    alone replaces only the heads). No override: ``best_sha256`` itself."""
    used = sources(weights)
    if not used:
        return best_sha256
    parts = {role: hash_file(Path(path)) for role, path in used.items()}
    if "all" not in used and "backbone" not in used:
        parts["best"] = best_sha256
    text = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _load(flag: str, path: str, model: LoadedModel) -> dict[str, torch.Tensor]:
    file = Path(path).expanduser()
    if not file.is_file():
        raise UsageError(f"{FLAGS[flag]} {path}: no such file")
    try:
        return load_state_dict(file, model.model_type)
    except ModelError as exc:
        raise ModelError(f"{FLAGS[flag]}: {exc}") from exc


def _take(
    flag: str,
    path: str,
    state: dict[str, torch.Tensor],
    expected: dict[str, torch.Tensor],
    part: str | None,
    model: LoadedModel,
) -> dict[str, torch.Tensor]:
    """The tensors of ``part`` (None: all) in ``state``, checked against the network's."""
    theirs = {k: v for k, v in state.items() if part is None or _part(k, part)}
    ours = {k: v for k, v in expected.items() if part is None or _part(k, part)}
    what = f"{part} weights" if part else "weights"
    missing = [k for k in ours if k not in theirs]
    unexpected = [k for k in theirs if k not in ours]
    wrong = [k for k in ours if k in theirs and tuple(theirs[k].shape) != tuple(ours[k].shape)]
    if missing or unexpected or wrong:
        if missing:
            detail = f"{len(missing)} missing, e.g. {missing[0]}"
        elif unexpected:
            detail = f"{len(unexpected)} not in the model, e.g. {unexpected[0]}"
        else:
            k = wrong[0]
            detail = (
                f"{len(wrong)} of another shape, e.g. {k}: {tuple(theirs[k].shape)} vs "
                f"{tuple(ours[k].shape)}"
            )
        raise ModelError(
            f"{FLAGS[flag]} {path}: its {what} do not fit {model.path} "
            f"({model.model_type}; {detail})"
        )
    bad = [
        k for k, v in theirs.items() if ours[k].is_floating_point() and not v.is_floating_point()
    ]
    if bad:
        raise ModelError(f"{FLAGS[flag]} {path}: weight {bad[0]!r} is not a float")
    return theirs


def _with_weights(model: LoadedModel, weights: Mapping[str, str]) -> LoadedModel:
    if model.export_dir is not None:
        flags = ", ".join(FLAGS[k] for k in weights)
        raise UsageError(
            f"{flags}: {model.export_dir} is an exported model (its weights are in its graph); "
            "give the model directory"
        )
    expected = model.network.state_dict()
    state = dict(expected)
    used = sources(weights)
    flag_of = {"all": BACKBONE, "backbone": BACKBONE, "head": HEAD}
    for role, path in used.items():
        flag = flag_of[role]
        part = {"all": None, "backbone": "backbone", "head": "head_layers"}[role]
        state.update(_take(flag, path, _load(flag, path, model), expected, part, model))
    model.network.load_state_dict(state, strict=True)
    bad = first_non_finite(model.network)
    if bad is not None:
        raise ModelError(f"{', '.join(used.values())}: NaN or Inf weights (first: {bad!r})")
    return replace(model, checkpoint_sha256=weights_sha256(model.checkpoint_sha256, weights))


def apply_weights(models: list[LoadedModel], overrides: ConfigOverrides) -> list[LoadedModel]:
    """``models`` with ``overrides``' checkpoint files loaded into every one, as sleap-nn
    loads them into every model of the run; strict (see the module docstring)."""
    weights = overrides.weights
    if not weights:
        return list(models)
    return [_with_weights(m, weights) for m in models]
