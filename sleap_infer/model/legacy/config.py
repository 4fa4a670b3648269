"""Translate a SLEAP 1.x ``training_config.json`` into the dict a sleap-nn YAML would hold.

Only the spelling differs between the two, so :func:`sleap_infer.model.config.parse_config`
stays the one reader of model semantics. SLEAP 1.x quirks handled here:

* heads sit under ``model.heads``; ``single_instance``, ``centroid`` and
  ``centered_instance`` are flat (no ``confmaps`` block); bottom-up is ``multi_instance``;
* missing UNet keys mean SLEAP 1.x's defaults (64 filters, rate 2, transposed
  convolutions), not sleap-nn's;
* ``input_scaling`` is sleap-nn's ``scale``; ``target_height`` / ``target_width``
  are its ``max_height`` / ``max_width``, but only while ``resize_and_pad_to_target``
  is on (SLEAP 1.x sized frames to them only then); the crop size lives in
  ``data.instance_cropping``, whose ``center_on_part`` is the crop models' anchor
  when their head names none (SLEAP 1.x cut its training crops around it);
* skeletons are jsonpickle (``py/id`` back-references), decoded by sleap-io;
* ``pad_to_stride`` is dropped: frames are always padded to the max stride.

Settings our networks cannot run are refused by name (:class:`LegacyError`).
"""

from __future__ import annotations

from typing import Any

from sleap_infer.model.legacy.errors import LegacyError, unsupported
from sleap_infer.model.registry import model_type

# SLEAP 1.x head key -> (sleap-nn model type, sleap-nn section -> SLEAP 1.x sub-block or
# None when the head is flat).
HEAD_TYPES: dict[str, tuple[str, dict[str, str | None]]] = {
    "single_instance": ("single_instance", {"confmaps": None}),
    "centroid": ("centroid", {"confmaps": None}),
    "centered_instance": ("centered_instance", {"confmaps": None}),
    "multi_instance": ("bottomup", {"confmaps": "confmaps", "pafs": "pafs"}),
    "multi_class_bottomup": (
        "multi_class_bottomup",
        {"confmaps": "confmaps", "class_maps": "class_maps"},
    ),
    "multi_class_topdown": (
        "multi_class_topdown",
        {"confmaps": "confmaps", "class_vectors": "class_vectors"},
    ),
}

UNET_DEFAULTS: dict[str, Any] = {
    "stem_stride": None,
    "max_stride": 16,
    "output_stride": 1,
    "filters": 64,
    "filters_rate": 2.0,
    "middle_block": True,
    "up_interpolate": False,
    "stacks": 1,
}
"""SLEAP 1.x's ``UNetConfig`` defaults (they differ from sleap-nn's)."""

_OTHER_BACKBONES = ("leap", "hourglass", "resnet", "pretrained_encoder")


def _section(raw: Any, name: str) -> dict[str, Any]:
    value = raw.get(name) if isinstance(raw, dict) else None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LegacyError(f"training_config.json: {name} is not a mapping")
    return value


def _backbone(backbone: dict[str, Any]) -> dict[str, Any]:
    chosen = [k for k, v in backbone.items() if v is not None]
    if not chosen:
        raise LegacyError("training_config.json: model.backbone names no backbone")
    other = next((k for k in chosen if k != "unet"), None)
    if other is not None:
        known = "" if other in _OTHER_BACKBONES else "unknown "
        raise unsupported(f"{known}backbone {other!r}", "only UNet backbones can be loaded")
    given = _section(backbone, "unet")
    unet = {**UNET_DEFAULTS, **{k: v for k, v in given.items() if v is not None}}
    if unet["stem_stride"] is not None:
        raise unsupported(f"unet.stem_stride {unet['stem_stride']}", "UNets with stem blocks")
    if not unet["middle_block"]:
        raise unsupported("unet.middle_block false")
    if int(unet["stacks"]) != 1:
        raise unsupported(f"unet.stacks {unet['stacks']}", "only single-stack UNets")
    return {
        "unet": {
            "in_channels": None,  # the caller fills it in from the weights
            "kernel_size": 3,  # fixed in SLEAP 1.x
            "convs_per_block": 2,  # fixed in SLEAP 1.x
            "filters": int(unet["filters"]),
            "filters_rate": float(unet["filters_rate"]),
            "max_stride": int(unet["max_stride"]),
            "output_stride": int(unet["output_stride"]),
            "middle_block": True,
            "up_interpolate": bool(unet["up_interpolate"]),
            "stacks": 1,
        }
    }


def _heads(heads: dict[str, Any], cropping: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The sleap-nn model type and its ``head_configs`` block."""
    chosen = [k for k, v in heads.items() if v is not None]
    if len(chosen) != 1:
        raise LegacyError(
            f"training_config.json: model.heads must set exactly one head type, got {chosen}"
        )
    key = chosen[0]
    if key not in HEAD_TYPES:
        raise unsupported(f"head type {key!r}", f"known: {', '.join(HEAD_TYPES)}")
    kind, sections = HEAD_TYPES[key]
    block = heads[key]
    out = {
        section: dict(block if sub is None else _section(block, sub))
        for section, sub in sections.items()
    }
    vectors = out.get("class_vectors")
    if vectors is not None and vectors.get("global_pool") is False:
        raise unsupported("class_vectors.global_pool false", "flattened class-vector heads")
    confmaps = out["confmaps"]
    if model_type(kind).needs_centroids and confmaps.get("anchor_part") is None:
        confmaps["anchor_part"] = cropping.get("center_on_part")
    return kind, out


def _preprocessing(data: dict[str, Any]) -> dict[str, Any]:
    pre = _section(data, "preprocessing")
    if pre.get("imagenet_mode") is not None:
        raise unsupported(
            f"data.preprocessing.imagenet_mode {pre['imagenet_mode']!r}",
            "frames are only divided by 255",
        )
    sized = pre.get("resize_and_pad_to_target", True) is not False
    crop = _section(data, "instance_cropping").get("crop_size")
    return {
        "ensure_rgb": bool(pre.get("ensure_rgb") or False),
        "ensure_grayscale": bool(pre.get("ensure_grayscale") or False),
        "scale": float(pre.get("input_scaling") or 1.0),
        "max_height": pre.get("target_height") if sized else None,
        "max_width": pre.get("target_width") if sized else None,
        "crop_size": None if crop is None else int(crop),
    }


def _skeleton_dict(skeleton: Any) -> dict[str, Any]:
    """One sleap-io ``Skeleton`` as a sleap-nn ``data_config.skeletons`` item."""
    names = [node.name for node in skeleton.nodes]
    index = {name: i for i, name in enumerate(names)}
    pairs = sorted(
        tuple(sorted((node.name for node in sym.nodes), key=index.__getitem__))
        for sym in skeleton.symmetries
    )
    return {
        "name": skeleton.name,
        "nodes": [{"name": name} for name in names],
        "edges": [
            {"source": {"name": e.source.name}, "destination": {"name": e.destination.name}}
            for e in skeleton.edges
        ],
        "symmetries": [[{"name": a}, {"name": b}] for a, b in pairs],
    }


def _skeletons(raw: dict[str, Any]) -> list[dict[str, Any]]:
    if not _section(_section(raw, "data"), "labels").get("skeletons"):
        return []  # parse_config names the problem
    from sleap_io.io.skeleton import decode_training_config  # SLEAP 1.x models only

    try:
        decoded = decode_training_config(raw)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        raise LegacyError(
            f"training_config.json: data.labels.skeletons cannot be decoded ({exc})"
        ) from exc
    skeletons = decoded if isinstance(decoded, list) else [decoded]
    return [_skeleton_dict(s) for s in skeletons]


def to_sleap_nn(raw: Any) -> dict[str, Any]:
    """The sleap-nn config dict equivalent to SLEAP 1.x's ``raw``, except ``in_channels``.

    SLEAP 1.x never wrote the input channels down (an RGB video trains an RGB
    network even with ``ensure_rgb`` off): the caller reads them off the first
    kernel, once the backbone is known to be a UNet.
    """
    model = _section(raw, "model")
    if not model:
        raise LegacyError("training_config.json has no 'model' section")
    data = _section(raw, "data")
    kind, heads = _heads(_section(model, "heads"), _section(data, "instance_cropping"))
    preprocessing = _preprocessing(data)
    if model_type(kind).needs_centroids and preprocessing["crop_size"] is None:
        raise LegacyError(
            "training_config.json: data.instance_cropping.crop_size is not set "
            f"(a {kind} model needs its crop size)"
        )
    return {
        "data_config": {"preprocessing": preprocessing, "skeletons": _skeletons(raw)},
        "model_config": {
            "backbone_config": _backbone(_section(model, "backbone")),
            "head_configs": {kind: heads},
        },
        "sleap_1x": {"sleap_version": raw.get("sleap_version")},
    }
