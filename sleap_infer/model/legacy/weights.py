"""Copy Keras weights into our network's state dict, by layer name.

sleap-nn named its modules after SLEAP 1.x's Keras layers, so the layer of a
state-dict key is the module that owns it (``...blocks.stack0_enc0_conv0.weight``
-> ``stack0_enc0_conv0``; a head's ``head_layers.0.CentroidConfmapsHead.0.weight``
-> ``CentroidConfmapsHead``, which Keras may suffix with its stack, ``_0``).
Layouts: Conv2D kernels are ``(kh, kw, in, out)`` -> torch ``(out, in, kh, kw)``;
Conv2DTranspose kernels are ``(kh, kw, out, in)`` -> torch ``(in, out, kh, kw)``,
the same axis permutation, no spatial flip (both are the gradient of a
cross-correlation); Dense kernels are ``(in, out)`` -> ``(out, in)``. A batch
norm right after a layer is folded into that layer's kernel and bias (eval
mode, so it is an affine map per output channel). SLEAP's offset-refinement
head is dropped, as sleap-nn drops it: peaks are refined the integral way.
Any other Keras layer left unused, or any key left unfilled, is an error.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from sleap_infer.model.legacy.errors import LegacyError
from sleap_infer.model.legacy.graph import FOLDABLE, base_name
from sleap_infer.model.legacy.keras_file import KerasLayer, KerasModel

DROPPED_HEADS = ("OffsetRefinementHead",)
"""Keras heads with no counterpart in our networks (their weights are skipped)."""

# Output-channel axis of each foldable Keras kernel.
_OUT_AXIS = {"Conv2D": 3, "Conv2DTranspose": 2, "Dense": 1}


def _fold(layer: KerasLayer, norm: KerasLayer) -> dict[str, np.ndarray]:
    """``layer``'s kernel and bias with the batch norm ``norm`` applied after it folded in."""
    kernel = layer.weights["kernel"]
    axis = _OUT_AXIS[layer.kind]
    n = kernel.shape[axis]
    w = norm.weights
    eps = float(norm.config.get("epsilon", 1e-3))
    gain = w.get("gamma", np.ones(n, np.float32)) / np.sqrt(w["moving_variance"] + eps)
    shift = w.get("beta", np.zeros(n, np.float32)) - w["moving_mean"] * gain
    shape = [1] * kernel.ndim
    shape[axis] = n
    bias = layer.weights.get("bias", np.zeros(n, np.float32))
    return {
        "kernel": (kernel * gain.reshape(shape)).astype(np.float32),
        "bias": (bias * gain + shift).astype(np.float32),
    }


def layer_arrays(model: KerasModel) -> dict[str, dict[str, np.ndarray]]:
    """Weights per layer name, batch norms folded into the layer before them."""
    arrays = {name: dict(layer.weights) for name, layer in model.layers.items() if layer.weights}
    for name, layer in model.layers.items():
        kernel = layer.weights.get("kernel")
        if kernel is not None and "bias" not in layer.weights and layer.kind in _OUT_AXIS:
            # use_bias=False: our layers always have one, so it is zero.
            arrays[name]["bias"] = np.zeros(kernel.shape[_OUT_AXIS[layer.kind]], np.float32)
    for layer in model.layers.values():
        if layer.kind != "BatchNormalization":
            continue
        source = model.layers[layer.inbound[0]]  # graph.check_graph vetted the pairing
        if source.kind not in FOLDABLE:
            raise LegacyError(f"best_model.h5: cannot fold {layer.name} into {source.name}")
        arrays[source.name] = _fold(source, layer)
        arrays.pop(layer.name, None)
    if not model.has_graph:
        stray = [n for n, w in arrays.items() if "moving_mean" in w]
        if stray:
            raise LegacyError(
                f"best_model.h5 has batch norm {stray[0]!r} but no graph to place it by"
            )
    return arrays


def _layer_name(key: str, arrays: dict[str, dict[str, np.ndarray]]) -> str:
    """The Keras layer holding state-dict ``key``, or the name it should have had."""
    parts = key.split(".")[:-1]
    name = parts[-2] if parts[-1].isdigit() else parts[-1]
    if name in arrays or parts[0] != "head_layers":
        return name
    suffixed = [n for n in arrays if base_name(n) == name and n != name]
    return suffixed[0] if len(suffixed) == 1 else name


def _convert(module: nn.Module, param: str, name: str, arrays: dict[str, np.ndarray]) -> np.ndarray:
    if param == "bias":
        if "bias" not in arrays:
            raise LegacyError(f"best_model.h5 layer {name!r} has a kernel but no bias")
        return arrays["bias"]
    kernel = arrays["kernel"]
    if isinstance(module, nn.Linear):
        return kernel.T
    if isinstance(module, nn.Conv2d | nn.ConvTranspose2d):
        return kernel.transpose(3, 2, 0, 1)
    raise LegacyError(f"no Keras counterpart for {name!r}, a {type(module).__name__}")


def keras_state_dict(network: nn.Module, model: KerasModel) -> dict[str, torch.Tensor]:
    """Every tensor of ``network``'s state dict, filled from ``model``'s layers."""
    arrays = layer_arrays(model)
    state: dict[str, torch.Tensor] = {}
    used: set[str] = set()
    for key, expected in network.state_dict().items():
        name = _layer_name(key, arrays)
        if name not in arrays or "kernel" not in arrays[name]:
            raise LegacyError(
                f"best_model.h5 has no weights for layer {name!r} "
                "(training_config.json describes another network)"
            )
        module_path, _, param = key.rpartition(".")
        value = _convert(network.get_submodule(module_path), param, name, arrays[name])
        if tuple(value.shape) != tuple(expected.shape):
            raise LegacyError(
                f"best_model.h5 layer {name!r} {param} has shape {tuple(value.shape)}, "
                f"training_config.json implies {tuple(expected.shape)}"
            )
        state[key] = torch.from_numpy(np.ascontiguousarray(value)).to(expected.dtype)
        used.add(name)
    left = [n for n in arrays if n not in used and base_name(n) not in DROPPED_HEADS]
    if left:
        raise LegacyError(
            f"best_model.h5 has {len(left)} layer(s) with weights our network has no "
            f"place for (e.g. {left[0]!r})"
        )
    return state
