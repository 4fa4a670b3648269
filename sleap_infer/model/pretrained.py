"""``backbone_config.pretrained``: parse it, and find the encoder's HuggingFace config offline.

sleap-nn 0.3.5 writes only the HuggingFace model id (``model_name``) into
``training_config.yaml``; the checkpoint holds the weights (and the normalisation
mean/std buffers) but not the architecture, which sleap-nn re-reads with
``AutoConfig.from_pretrained(model_name)``, from the HF cache or the network. We never
use the network at prediction time, so the architecture comes from, in order:

1. ``<model folder>/pretrained_backbone/config.json`` (``AutoConfig.save_pretrained``
   writes it; it travels with the model folder);
2. ``model_name`` itself, when it is a local folder holding ``config.json`` (sleap-nn
   accepts a path there too);
3. the local HuggingFace cache (``local_files_only=True``), which needs ``transformers``.

Nothing found is one error line that says what to put where. A ``timm/...`` checkpoint's
config (``model_type: timm_wrapper``: a timm architecture name and its ``model_args``)
is found the same way; timm builds that architecture without downloading anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sleap_infer.core.config import PretrainedConfig
from sleap_infer.core.errors import ConfigError
from sleap_infer.core.files import CONFIG_MAX_BYTES, read_text_bounded

PRETRAINED_DIR = "pretrained_backbone"
HF_CONFIG = "config.json"
EXTRA = "pip install 'sleap-infer[hf]'"
MODES = ("auto", "decoder", "encoder")
VIT_NECKS = ("dpt", "sfp")


def _get(raw: dict[str, Any], key: str, default: Any) -> Any:
    value = raw.get(key)
    return default if value is None else value


def _read_json(path: Path) -> dict[str, Any]:
    text = read_text_bounded(path, CONFIG_MAX_BYTES, ConfigError)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: not a readable HuggingFace config ({exc})") from exc
    if isinstance(data, dict) and "model_type" not in data and "pretrained_cfg" in data:
        data["model_type"] = "timm_wrapper"  # a timm repo's own config (as transformers reads it)
    if not isinstance(data, dict) or "model_type" not in data:
        raise ConfigError(f"{path}: not a HuggingFace config (no model_type)")
    return data


def _from_cache(model_name: str, revision: str | None, folder: Path) -> dict[str, Any]:
    hint = (
        f"put the backbone's HuggingFace config at {folder / PRETRAINED_DIR / HF_CONFIG} "
        f"(transformers.AutoConfig.from_pretrained({model_name!r}).save_pretrained(...))"
    )
    try:
        from transformers import AutoConfig
    except ImportError as exc:
        raise ConfigError(
            f"pretrained backbone {model_name!r} needs transformers: {EXTRA}; or {hint}"
        ) from exc
    try:
        found = AutoConfig.from_pretrained(model_name, revision=revision, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"pretrained backbone {model_name!r} is not in the local HuggingFace cache and "
            f"predictions never download it: {hint}"
        ) from exc
    return found.to_dict()


def find_hf_config(
    model_name: str, revision: str | None, folder: Path
) -> tuple[dict[str, Any], str]:
    """The encoder's HuggingFace config as a dict, and where it was found."""
    for candidate in (folder / PRETRAINED_DIR / HF_CONFIG, Path(model_name) / HF_CONFIG):
        if candidate.is_file():
            return _read_json(candidate), str(candidate)
    return _from_cache(model_name, revision, folder), "HuggingFace cache"


def _ints(value: Any, key: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        return tuple(int(i) for i in value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"pretrained.{key} must list integers, got {value!r}") from exc


def parse_pretrained(raw: dict[str, Any], folder: Path) -> PretrainedConfig:
    """Typed ``backbone_config.pretrained``; the HF architecture is looked up offline."""
    model_name = raw.get("model_name")
    if not model_name:
        raise ConfigError("pretrained.model_name is not set")
    mode = str(_get(raw, "mode", "auto"))
    if mode not in MODES:
        raise ConfigError(f"pretrained.mode {mode!r} is not one of {', '.join(MODES)}")
    hf_config, source = find_hf_config(str(model_name), raw.get("revision"), folder)
    vit_neck = str(_get(raw, "vit_neck", "dpt"))
    if vit_neck not in VIT_NECKS:
        raise ConfigError(f"pretrained.vit_neck {vit_neck!r} is not one of {', '.join(VIT_NECKS)}")
    token_stride = raw.get("token_stride")
    return PretrainedConfig(
        model_name=str(model_name),
        hf_config=hf_config,
        hf_config_source=source,
        mode=mode,
        out_indices=_ints(raw.get("out_indices"), "out_indices"),
        in_channels=int(_get(raw, "in_channels", 3)),
        normalize=bool(_get(raw, "normalize", True)),
        filters_rate=float(_get(raw, "filters_rate", 2.0)),
        convs_per_block=int(_get(raw, "convs_per_block", 2)),
        kernel_size=int(_get(raw, "kernel_size", 3)),
        up_interpolate=bool(_get(raw, "up_interpolate", True)),
        output_stride=int(_get(raw, "output_stride", 2)),
        max_stride=int(_get(raw, "max_stride", 32)),
        frozen=bool(_get(raw, "freeze", False)),
        layers=_ints(raw.get("layers"), "layers"),
        vit_neck=vit_neck,
        neck_channels=_ints(raw.get("neck_channels"), "neck_channels"),
        token_stride=None if token_stride is None else int(token_stride),
        detail_stem=bool(_get(raw, "detail_stem", False)),
        detail_channels=_ints(raw.get("detail_channels"), "detail_channels") or (32, 64, 128),
    )
