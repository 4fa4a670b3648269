"""Load the weights out of a Lightning ``best.ckpt`` without sleap-nn installed.

A sleap-nn checkpoint pickles an omegaconf ``DictConfig`` of sleap-nn attrs
classes next to the ``state_dict``. ``torch.load(weights_only=True)`` rejects
those classes and ``weights_only=False`` would import (and run) whatever the
pickle names. We unpickle with an allow-list instead: tensor rebuild helpers
and plain containers resolve to the real objects; every other global becomes
an inert :class:`_Placeholder` that swallows its state, so no foreign callable
is ever executed. We then keep only the tensors under ``state_dict``.
"""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path
from typing import Any

import torch

from sleap_infer.core.errors import ModelError
from sleap_infer.core.files import WEIGHTS_MAX_BYTES, check_file

# (module, name) pairs that may be resolved for real. Everything here only builds
# tensors, storages, dtypes or plain containers.
_ALLOWED_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    {
        ("collections", "OrderedDict"),
        ("collections", "defaultdict"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("builtins", "slice"),
        ("builtins", "complex"),
        ("builtins", "bytearray"),
        ("builtins", "list"),
        ("builtins", "dict"),
        ("builtins", "tuple"),
        ("builtins", "int"),
        ("builtins", "float"),
        ("builtins", "str"),
        ("builtins", "bool"),
        ("_codecs", "encode"),
        ("torch._utils", "_rebuild_tensor"),
        ("torch._utils", "_rebuild_tensor_v2"),
        ("torch._utils", "_rebuild_tensor_v3"),
        ("torch._utils", "_rebuild_parameter"),
        ("torch._utils", "_rebuild_parameter_with_state"),
        ("torch._utils", "_rebuild_device_tensor_from_numpy"),
        ("torch", "Size"),
        ("torch", "device"),
        ("torch.nn.parameter", "Parameter"),
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
    }
)


class _Placeholder:
    """Stands in for any class the allow-list refuses; absorbs whatever state it is given."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._args = args

    def __call__(self, *args: Any, **kwargs: Any) -> _Placeholder:
        # A refused callable (e.g. a reduced ``getattr(os, "system")``) is "called" harmlessly.
        return _Placeholder()

    def __setstate__(self, state: Any) -> None:
        self._state = state

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def append(self, value: Any) -> None:
        pass

    def extend(self, values: Any) -> None:
        pass

    def update(self, *args: Any, **kwargs: Any) -> None:
        pass


def _placeholder_for(module: str, name: str) -> type:
    return type(name, (_Placeholder,), {"__module__": f"sleap_infer.placeholder.{module}"})


def _is_torch_type(module: str, name: str) -> bool:
    # Storage classes (torch.FloatStorage...) and dtypes (torch.float32) are data, not code.
    if module == "torch" and (name.endswith("Storage") or name in _TORCH_DTYPES):
        return True
    return module == "torch.storage" and name in {"UntypedStorage", "TypedStorage"}


_TORCH_DTYPES = {
    str(dt).split(".")[-1]
    for dt in (
        torch.float16,
        torch.float32,
        torch.float64,
        torch.bfloat16,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.bool,
    )
}


class _AllowListUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_GLOBALS or _is_torch_type(module, name):
            return super().find_class(module, name)
        return _placeholder_for(module, name)


class _SafePickleModule:
    """The ``pickle_module`` handed to :func:`torch.load`."""

    Unpickler = _AllowListUnpickler
    load = staticmethod(pickle.load)
    loads = staticmethod(pickle.loads)
    __name__ = "sleap_infer_safe_pickle"


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Unpickle a checkpoint with the allow-list; raise :class:`ModelError` naming the file."""
    if not path.exists():
        raise ModelError(f"{path}: checkpoint not found")
    check_file(path, WEIGHTS_MAX_BYTES, ModelError)
    if not zipfile.is_zipfile(path):
        raise ModelError(f"{path}: not a torch checkpoint (expected a zip archive)")
    try:
        ckpt = torch.load(
            path, map_location="cpu", weights_only=False, pickle_module=_SafePickleModule
        )
    except Exception as exc:  # torch raises many types for truncated/corrupt archives
        raise ModelError(f"{path}: corrupt checkpoint ({type(exc).__name__}: {exc})") from exc
    if not isinstance(ckpt, dict):
        raise ModelError(f"{path}: checkpoint is a {type(ckpt).__name__}, expected a dict")
    return ckpt


TRAIN_ONLY_KEYS: dict[str, frozenset[str]] = {
    # sleap-nn 0.3.5's embedding module keeps its contrastive projection head
    # (Linear, ReLU, Linear) next to the model; inference never runs it.
    "embedding": frozenset(f"projection.{i}.{p}" for i in (0, 2) for p in ("weight", "bias")),
}
"""Tensors outside ``model.`` that a model type's checkpoint may hold and inference drops.
Any other stray tensor makes the checkpoint fail to load (strict, like the rest)."""


def load_state_dict(path: Path, model_type: str | None = None) -> dict[str, torch.Tensor]:
    """The network weights of a sleap-nn checkpoint, with the ``model.`` prefix removed.

    Tensors outside ``model.`` are refused, except ``model_type``'s
    :data:`TRAIN_ONLY_KEYS`, which are dropped.
    """
    ckpt = load_checkpoint(path)
    state = ckpt.get("state_dict")
    if not isinstance(state, dict):
        raise ModelError(f"{path}: checkpoint has no state_dict")
    allowed = TRAIN_ONLY_KEYS.get(model_type or "", frozenset())
    stray = [
        key
        for key, value in state.items()
        if isinstance(value, torch.Tensor)
        and not (isinstance(key, str) and key.startswith("model."))
        and key not in allowed
    ]
    if stray:
        raise ModelError(
            f"{path}: state_dict has {len(stray)} tensor(s) outside 'model.' "
            f"(e.g. {stray[0]!r}) that a {model_type or 'sleap-nn'} model does not have"
        )
    weights = {
        key[len("model.") :]: value
        for key, value in state.items()
        if isinstance(key, str) and key.startswith("model.") and isinstance(value, torch.Tensor)
    }
    if not weights:
        raise ModelError(f"{path}: state_dict holds no 'model.*' tensors")
    return weights


def save_checkpoint(path: Path, state_dict: dict[str, torch.Tensor], **extra: Any) -> None:
    """Write weights in the layout sleap-nn's Lightning module uses (for our own tiny models)."""
    payload: dict[str, Any] = {
        "epoch": extra.pop("epoch", 0),
        "global_step": extra.pop("global_step", 0),
        "pytorch-lightning_version": extra.pop("lightning_version", "n/a"),
        "state_dict": {f"model.{k}": v.detach().cpu() for k, v in state_dict.items()},
    }
    payload.update(extra)
    torch.save(payload, path)
