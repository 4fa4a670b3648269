"""Read a Keras 2 ``.h5`` model with h5py: each layer's weights and the layer graph.

A whole-model save keeps weights as ``model_weights/<layer>/<layer>/kernel:0``;
each layer group's ``weight_names`` attribute lists its datasets in order (a
layer without weights lists an empty *float* array, not an empty string
list). The architecture is JSON in the file's ``model_config`` attribute
(bytes or str, depending on the h5py that wrote it). A ``save_weights`` file
keeps the layer groups at the root and has no graph: we can still load it,
but cannot check its layers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from sleap_infer.model.legacy.errors import LegacyError

FIRST_CONV = "stack0_enc0_conv0"  # SLEAP 1.x's first UNet convolution


@dataclass(frozen=True)
class KerasLayer:
    """One Keras layer: its class (``""`` without a graph), settings, inputs and weights."""

    name: str
    kind: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    inbound: tuple[str, ...] = ()
    weights: dict[str, np.ndarray] = field(default_factory=dict)  # "kernel", "bias", ...


@dataclass(frozen=True)
class KerasModel:
    """The layers of a Keras ``.h5`` file, in the file's order."""

    layers: dict[str, KerasLayer]
    has_graph: bool

    def consumers(self, name: str) -> list[str]:
        return [layer.name for layer in self.layers.values() if name in layer.inbound]

    @property
    def in_channels(self) -> int:
        """Input channels, from the first convolution's ``(kh, kw, in, out)`` kernel."""
        first = self.layers.get(FIRST_CONV)
        kernel = None if first is None else first.weights.get("kernel")
        if kernel is None or kernel.ndim != 4:
            raise LegacyError(f"best_model.h5 has no {FIRST_CONV} kernel (not a SLEAP UNet)")
        return int(kernel.shape[2])


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _weights(group: h5py.Group) -> dict[str, np.ndarray]:
    """``{"kernel": ..., "bias": ...}`` of one layer group, by its ``weight_names``."""
    out: dict[str, np.ndarray] = {}
    for raw_name in group.attrs.get("weight_names", []):
        path = _text(raw_name)
        short = path.rsplit("/", 1)[-1].split(":", 1)[0]
        stored = group[path]
        if stored.dtype.kind != "f":  # cast silently, integer or complex weights were junk
            raise LegacyError(
                f"weight {path!r} is {stored.dtype}, not a float; the file is damaged or "
                "was not saved by SLEAP"
            )
        out[short] = np.asarray(stored[()], dtype=np.float32)
    return out


def _inbound(spec: dict[str, Any]) -> tuple[str, ...]:
    """Input layer names of a Keras 2 layer spec (``[[[name, node, tensor, kwargs], ...]]``)."""
    nodes = spec.get("inbound_nodes") or []
    if not nodes or not isinstance(nodes[0], list):
        return ()
    return tuple(str(entry[0]) for entry in nodes[0] if isinstance(entry, list) and entry)


def _graph(attrs: h5py.AttributeManager) -> dict[str, dict[str, Any]]:
    if "model_config" not in attrs:
        return {}
    try:
        spec = json.loads(_text(attrs["model_config"]))
        layers = spec["config"]["layers"]
        return {str(layer["name"]): layer for layer in layers}
    except (ValueError, KeyError, TypeError) as exc:
        raise LegacyError(f"best_model.h5: unreadable Keras model_config ({exc!r})") from exc


def read_keras_model(path: Path) -> KerasModel:
    """Every layer of the file (weights as float32 arrays) and, when saved, the graph."""
    try:
        with h5py.File(path, "r") as f:
            graph = _graph(f.attrs)
            root = f.get("model_weights", f)
            names = [_text(n) for n in root.attrs.get("layer_names", [])]
            if not names:
                raise LegacyError("best_model.h5 holds no Keras layer weights")
            weights = {n: _weights(root[n]) if n in root else {} for n in names}
    except OSError as exc:
        raise LegacyError(f"best_model.h5 cannot be read ({exc})") from exc
    order = list(graph) + [n for n in names if n not in graph]
    layers = {
        name: KerasLayer(
            name,
            kind=str(graph.get(name, {}).get("class_name", "")),
            config=dict(graph.get(name, {}).get("config") or {}),
            inbound=_inbound(graph.get(name, {})),
            weights=weights.get(name, {}),
        )
        for name in order
    }
    return KerasModel(layers=layers, has_graph=bool(graph))
