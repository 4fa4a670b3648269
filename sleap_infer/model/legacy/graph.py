"""Refuse Keras layers our PyTorch UNet cannot reproduce, before any weight is copied.

Weight shapes alone miss settings that change the maths but not a kernel's
shape: nearest-neighbour upsampling, strided, dilated or 'valid'
convolutions, an activation built into a layer, a head attached at another
depth, or a skip concatenated after the upsampled features (in a
transposed-conv UNet both halves are equally wide, so the swapped order would
load and be silently wrong). A file without a graph (``save_weights``) skips
these checks. Batch norm is allowed only right after the convolution or dense
layer it is folded into (see :mod:`sleap_infer.model.legacy.weights`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sleap_infer.core.config import ModelConfig
from sleap_infer.model.legacy.errors import LegacyError, unsupported
from sleap_infer.model.legacy.keras_file import KerasLayer, KerasModel

FOLDABLE = ("Conv2D", "Conv2DTranspose", "Dense")
"""Layers a following BatchNormalization can be folded into."""

# Built-in activations our heads apply; every other layer must be linear.
_HEAD_ACTIVATIONS = {"ClassMapsHead": "sigmoid", "ClassVectorsHead": "softmax"}
_STRIDE = re.compile(r"_to_s(\d+)_")


def base_name(name: str) -> str:
    """A head layer's name without SLEAP's stack suffix (``CentroidConfmapsHead_0``)."""
    return re.sub(r"_\d+$", "", name)


def _pair(layer: KerasLayer, key: str, default: tuple[int, int] = (1, 1)) -> tuple[int, int]:
    value = layer.config.get(key, default)
    if isinstance(value, int):
        return value, value
    return int(value[0]), int(value[1])


def _need(layer: KerasLayer, ok: bool, what: str) -> None:
    if not ok:
        raise unsupported(f"Keras layer {layer.name!r} ({layer.kind}) with {what}")


def _activation(layer: KerasLayer) -> None:
    expected = _HEAD_ACTIVATIONS.get(base_name(layer.name), "linear")
    got = layer.config.get("activation", "linear")
    _need(layer, got == expected, f"activation {got!r} (expected {expected!r})")


def _conv(layer: KerasLayer, _: KerasModel) -> None:
    _need(layer, _pair(layer, "strides") == (1, 1), f"strides {layer.config.get('strides')}")
    _need(layer, _pair(layer, "dilation_rate") == (1, 1), "dilation")
    _need(layer, layer.config.get("padding", "valid") == "same", "'valid' padding")
    _need(layer, int(layer.config.get("groups", 1)) == 1, "grouped convolution")
    _activation(layer)


def _transposed_conv(layer: KerasLayer, _: KerasModel) -> None:
    kernel, strides = _pair(layer, "kernel_size"), _pair(layer, "strides")
    _need(layer, strides == (2, 2), f"strides {strides}")
    _need(layer, kernel[0] >= 2 and kernel[1] >= 2, f"kernel {kernel}")
    _need(layer, layer.config.get("padding") == "same", "'valid' padding")
    _need(layer, layer.config.get("output_padding") is None, "output_padding")
    _need(layer, _pair(layer, "dilation_rate") == (1, 1), "dilation")
    _activation(layer)


def _dense(layer: KerasLayer, _: KerasModel) -> None:
    _activation(layer)


def _relu(layer: KerasLayer, _: KerasModel) -> None:
    got = layer.config.get("activation")
    _need(layer, got == "relu", f"activation {got!r}")


def _pool(layer: KerasLayer, _: KerasModel) -> None:
    ok = _pair(layer, "pool_size") == (2, 2) and _pair(layer, "strides", (2, 2)) == (2, 2)
    _need(layer, ok, "a pool other than 2x2 / 2")


def _upsample(layer: KerasLayer, _: KerasModel) -> None:
    method = layer.config.get("interpolation", "nearest")
    _need(layer, method == "bilinear", f"{method!r} interpolation (ours is bilinear)")
    _need(layer, _pair(layer, "size") == (2, 2), "a factor other than 2")


def _concat(layer: KerasLayer, _: KerasModel) -> None:
    skip_first = len(layer.inbound) == 2 and "_enc" in layer.inbound[0]
    _need(layer, skip_first and "_dec" in layer.inbound[1], "inputs other than [skip, upsampled]")
    _need(layer, layer.config.get("axis", -1) in (-1, 3), "a non-channel axis")


def _batch_norm(layer: KerasLayer, model: KerasModel) -> None:
    source = model.layers.get(layer.inbound[0]) if len(layer.inbound) == 1 else None
    if (
        source is None
        or source.kind not in FOLDABLE
        or model.consumers(source.name) != [layer.name]
    ):
        raise unsupported(
            f"Keras layer {layer.name!r} (BatchNormalization) after an activation or "
            "a shared layer",
            "only batch norm right after a convolution can be folded",
        )
    _need(layer, layer.config.get("axis", -1) in (-1, 3, [-1], [3]), "a non-channel axis")


def _no_op(layer: KerasLayer, _: KerasModel) -> None:
    return None


_CHECKS: dict[str, Callable[[KerasLayer, KerasModel], None]] = {
    "InputLayer": _no_op,
    "Flatten": _no_op,
    "GlobalMaxPooling2D": _no_op,
    "Conv2D": _conv,
    "Conv2DTranspose": _transposed_conv,
    "Dense": _dense,
    "Activation": _relu,
    "MaxPooling2D": _pool,
    "UpSampling2D": _upsample,
    "Concatenate": _concat,
    "BatchNormalization": _batch_norm,
}


def _head_stride(layer: KerasLayer, max_stride: int) -> int | None:
    """The stride of the features a spatial head reads, from its input layer's name."""
    if len(layer.inbound) != 1:
        return None
    source = layer.inbound[0]
    if "_middle_contract" in source:
        return max_stride
    found = _STRIDE.search(source)
    return None if found is None else int(found.group(1))


def _check_heads(model: KerasModel, config: ModelConfig) -> None:
    for head in config.heads:
        if head.vector:
            continue
        layer = next((la for la in model.layers.values() if base_name(la.name) == head.name), None)
        if layer is None:
            raise LegacyError(f"best_model.h5 has no {head.name} layer")
        stride = _head_stride(layer, config.max_stride)
        if stride is not None and stride != head.output_stride:
            raise LegacyError(
                f"best_model.h5 attaches {layer.name} at stride {stride}, but "
                f"training_config.json says {head.output_stride}"
            )


def check_graph(model: KerasModel, config: ModelConfig) -> None:
    """Raise :class:`LegacyError` naming the first layer our network cannot reproduce."""
    if not model.has_graph:
        return
    for layer in model.layers.values():
        check = _CHECKS.get(layer.kind)
        if check is None:
            raise unsupported(f"Keras layer {layer.name!r} ({layer.kind})")
        check(layer, model)
    _check_heads(model, config)
