"""Put predict-time :class:`ConfigOverrides` onto the loaded models, by sleap-nn 0.3.5's rules.

sleap-nn resolves one *shared* preprocessing config per run: the flags first,
then the stage-1 (centroid / box detector) training config, then the crop
model's. The shared one feeds only the whole-frame stage, so in a top-down
pair not every flag reaches every model:

* ``max_height`` / ``max_width`` / ``ensure_rgb`` / ``ensure_grayscale``: the
  whole-frame model (stage 1, or the lone model). The crop model keeps its own:
  crops are cut from frames sized by stage 1 (box-seeded: by the crop model's
  *trained* size), and sleap-nn's crop stage coerces no channels.
* ``input_scale``: every model (both stages use it), except embedding pairs,
  whose centroid and embedder keep their trained scales.
* ``crop_size``: the crop model (centered-instance, multi-class top-down,
  centered-instance segmentation, embedding); inert elsewhere, as in sleap-nn.
* ``anchor_part``: both models of a pair and a lone centroid model; it must name
  a node of the crop model's skeleton (the centroid's when alone). Inert for
  other lone models, as in sleap-nn.

A lone embedding model refuses every override (sleap-nn's embedding route
does: its crop geometry and channels come from the trained config).
"""

from __future__ import annotations

from dataclasses import replace

from sleap_infer.core.config import ModelConfig, Preprocessing
from sleap_infer.core.errors import UsageError
from sleap_infer.core.overrides import FLAGS, ConfigOverrides
from sleap_infer.model.loader import LoadedModel
from sleap_infer.model.registry import MODEL_TYPES, pair_roles

_FRAME_FIELDS = ("max_height", "max_width", "ensure_rgb", "ensure_grayscale")


def _embeds(model: LoadedModel) -> bool:
    entry = MODEL_TYPES.get(model.model_type)
    return entry is not None and entry.embeds


def _preprocessing(
    pre: Preprocessing, overrides: ConfigOverrides, fields: tuple[str, ...]
) -> Preprocessing:
    """``pre`` with the named override fields that are set (``input_scale`` is ``scale``)."""
    changes = {}
    for name in fields:
        value = getattr(overrides, name)
        if value is not None:
            changes["scale" if name == "input_scale" else name] = value
    return replace(pre, **changes) if changes else pre


def _check_channels(model: LoadedModel, pre: Preprocessing, overrides: ConfigOverrides) -> None:
    """sleap-nn keeps the trained flag a user left unset, so ``--ensure-rgb`` on a model
    trained with ``ensure_grayscale: true`` asks for both, which it refuses."""
    if pre.ensure_rgb and pre.ensure_grayscale:
        given = "--ensure-rgb" if overrides.ensure_rgb else "--ensure-grayscale"
        other = "--no-ensure-grayscale" if overrides.ensure_rgb else "--no-ensure-rgb"
        raise UsageError(
            f"{given}: {model.path} was trained with the other channel flag set; "
            f"add {other} as well"
        )


def _anchor_config(config: ModelConfig, anchor: str) -> ModelConfig:
    """The anchor part set; an embedding model's pose centre switches to that node,
    as sleap-nn's explicit anchor overrides the trained ``centroid_method``."""
    emb = config.embedding
    if emb is not None:
        return replace(config, anchor_part=anchor, embedding=replace(emb, centroid_method="anchor"))
    return replace(config, anchor_part=anchor)


def _check_anchor(model: LoadedModel, anchor: str) -> None:
    nodes = model.config.node_names
    if nodes and anchor not in nodes:
        raise UsageError(
            f"--anchor-part {anchor!r} is not a node of {model.path}: "
            f"choose one of {', '.join(nodes)}"
        )


def _with(
    model: LoadedModel,
    overrides: ConfigOverrides,
    fields: tuple[str, ...],
    anchor: bool,
) -> LoadedModel:
    """A copy of ``model`` whose config has ``fields`` (and, if ``anchor``, the anchor) set."""
    config = model.config
    pre = _preprocessing(config.preprocessing, overrides, fields)
    _check_channels(model, pre, overrides)
    if pre is not config.preprocessing:
        config = replace(config, preprocessing=pre)
    if anchor and overrides.anchor_part is not None:
        config = _anchor_config(config, overrides.anchor_part)
    return model if config is model.config else replace(model, config=config)


def _single(model: LoadedModel, overrides: ConfigOverrides) -> LoadedModel:
    if _embeds(model):
        flags = ", ".join(FLAGS[k] for k in overrides.preprocessing)
        raise UsageError(
            f"{flags}: an embedding model's crop geometry and channels come from its trained config"
        )
    anchor = model.model_type == "centroid"
    if anchor and overrides.anchor_part is not None:
        _check_anchor(model, overrides.anchor_part)
    return _with(model, overrides, (*_FRAME_FIELDS, "input_scale"), anchor)


def _pair(
    detector: LoadedModel, instance: LoadedModel, overrides: ConfigOverrides
) -> tuple[LoadedModel, LoadedModel]:
    if overrides.anchor_part is not None:
        _check_anchor(instance, overrides.anchor_part)
    scale: tuple[str, ...] = () if _embeds(instance) else ("input_scale",)
    stage1 = _with(detector, overrides, (*_FRAME_FIELDS, *scale), anchor=True)
    stage2 = _with(instance, overrides, (*scale, "crop_size"), anchor=True)
    return stage1, stage2


def apply_overrides(models: list[LoadedModel], overrides: ConfigOverrides) -> list[LoadedModel]:
    """Copies of ``models`` (same order) whose configs carry ``overrides``.

    Inactive overrides return the same objects. Networks and checksums are shared,
    not copied: only the frozen config changes. (The checkpoint overrides are
    :mod:`sleap_infer.model.weights`' business.)
    """
    if not overrides.preprocessing:
        return list(models)
    if len(models) == 1:
        return [_single(models[0], overrides)]
    roles = pair_roles([m.model_type for m in models])
    if roles is None:  # build_layer refuses the combination with the full message
        return list(models)
    out = list(models)
    out[roles[0]], out[roles[1]] = _pair(models[roles[0]], models[roles[1]], overrides)
    return out
