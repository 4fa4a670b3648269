"""Load a SLEAP 1.x model folder into the same config and network a sleap-nn one gives.

Order matters for the error a user sees: the JSON is translated and the Keras
graph vetted before a network is built, so an unsupported feature is named
(``LegacyError``, re-raised here with the folder) rather than surfacing as
a shape mismatch; every refusal happens at load time, before any video opens.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import h5py
from torch import nn

from sleap_infer.core.config import ModelConfig
from sleap_infer.core.errors import ModelError
from sleap_infer.core.files import (
    CONFIG_MAX_BYTES,
    WEIGHTS_MAX_BYTES,
    check_file,
    read_text_bounded,
)
from sleap_infer.model.config import parse_config
from sleap_infer.model.legacy.config import to_sleap_nn
from sleap_infer.model.legacy.errors import LegacyError
from sleap_infer.model.legacy.graph import check_graph
from sleap_infer.model.legacy.keras_file import read_keras_model
from sleap_infer.model.legacy.upsampling import use_keras_transposed_convs
from sleap_infer.model.legacy.weights import keras_state_dict
from sleap_infer.nets import build_network

LEGACY_CONFIG = "training_config.json"
LEGACY_WEIGHTS = "best_model.h5"
WHAT = "legacy SLEAP 1.x model"


def check_legacy_dir(model_dir: Path) -> None:
    """Raise unless ``model_dir`` holds a SLEAP 1.x config next to an HDF5 ``best_model.h5``."""
    weights = model_dir / LEGACY_WEIGHTS
    if not weights.exists():
        raise ModelError(f"{model_dir}: {WHAT} without {LEGACY_WEIGHTS}")
    check_file(weights, WEIGHTS_MAX_BYTES, ModelError)
    if not h5py.is_hdf5(weights):
        raise ModelError(f"{model_dir}: {WHAT}, but {LEGACY_WEIGHTS} is not an HDF5 file")


def _read_json(path: Path) -> Any:
    text = read_text_bounded(path, CONFIG_MAX_BYTES, ModelError)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise LegacyError(f"{path.name} is not valid JSON ({exc})") from exc


def _load(model_dir: Path) -> tuple[ModelConfig, nn.Module]:
    raw = to_sleap_nn(_read_json(model_dir / LEGACY_CONFIG))
    keras = read_keras_model(model_dir / LEGACY_WEIGHTS)
    raw["model_config"]["backbone_config"]["unet"]["in_channels"] = keras.in_channels
    config = parse_config(raw, source=str(model_dir / LEGACY_CONFIG), audit=False)
    check_graph(keras, config)
    network = build_network(config)
    use_keras_transposed_convs(network)
    network.load_state_dict(keras_state_dict(network, keras), strict=True)
    total = sum(p.numel() for p in network.parameters())
    raw["model_config"]["total_params"] = total
    return replace(config, total_params=total), network


def load_legacy(model_dir: Path) -> tuple[ModelConfig, nn.Module]:
    """The parsed config and the network with the Keras weights loaded (strictly)."""
    try:
        return _load(model_dir)
    except LegacyError as exc:
        raise ModelError(f"{model_dir}: {WHAT}: {exc}") from exc
