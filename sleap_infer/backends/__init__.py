"""Runtime backends: how a network is executed (torch, ONNX Runtime, TensorRT).

Which backend a run uses, and how exports are found or made for it, is
decided one floor up, in :mod:`sleap_infer.runtimes`.
"""

from __future__ import annotations

from sleap_infer.backends.base import GraphBackend, ModelBackend, resolve_device
from sleap_infer.backends.torch_backend import TorchBackend

__all__ = ["GraphBackend", "ModelBackend", "TorchBackend", "resolve_device"]
