"""Static int8 quantisation of an exported graph, calibrated on the user's own inputs.

ONNX Runtime's quantiser writes a QDQ graph (QuantizeLinear/DequantizeLinear
pairs around each quantised op) that ONNX Runtime and OpenVINO both turn into
int8 kernels. Two choices keep keypoints where they were:

* Only the backbone is quantised. A decoding export also holds peak finding,
  refinement and grouping; quantising their MaxPool, Concat or Mul would snap
  peak scores and coordinates to 256 levels. The torch exporter tags every
  node with the module scopes it came from (``pkg.torch.onnx.name_scopes``),
  so the backbone's nodes are the ones under ``network.backbone``.
* The heads' convolutions stay float: their outputs are the maps that peaks
  are read from, and at 8 bits a map step is about 0.004 of the peak height,
  which integral refinement turns into tenths of a pixel. They are a few
  per cent of the FLOPs.

Calibration is min/max over the inputs seen (frames or crops, as the network
gets them), per-channel weights, unsigned activations.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sleap_infer.core.errors import ExportError, plain, raise_if_interrupted

BACKBONE_SCOPE = "network.backbone"
QUANTISED_OPS = ("Conv", "ConvTranspose", "Relu", "MaxPool", "Concat", "Resize", "Add")


def calibration_digest(samples: Sequence[np.ndarray]) -> str:
    """A short hash of the calibration inputs: the cache key of the quantised graph."""
    h = hashlib.sha256()
    for s in samples:
        h.update(str(s.shape).encode())
        h.update(np.ascontiguousarray(s).tobytes())
    return h.hexdigest()[:20]


def _scopes(node: object) -> list[str]:
    for prop in getattr(node, "metadata_props", ()):
        if prop.key == "pkg.torch.onnx.name_scopes":
            try:
                return [str(s) for s in ast.literal_eval(prop.value)]
            except (ValueError, SyntaxError):
                return []
    return []


def backbone_nodes(model: object) -> list[str]:
    """Names of the nodes to quantise: the backbone's convolutions and their neighbours."""
    return [
        node.name
        for node in model.graph.node  # type: ignore[attr-defined]
        if node.op_type in QUANTISED_OPS and BACKBONE_SCOPE in _scopes(node)
    ]


class _Reader:
    """ONNX Runtime's CalibrationDataReader protocol over recorded inputs."""

    def __init__(self, input_name: str, samples: Sequence[np.ndarray]) -> None:
        self._items = iter([{input_name: s[None]} for s in samples])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._items, None)

    def rewind(self) -> None:  # part of the protocol; calibration reads once
        pass


def quantize_int8(
    source: Path, target: Path, samples: Sequence[np.ndarray], input_name: str
) -> int:
    """Write an int8 QDQ copy of ``source`` to ``target``; returns the quantised node count.

    ``samples``: uint8 network inputs ``(C, H, W)``, each calibrated as a batch of one.
    """
    try:
        import onnx
        from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    except ImportError as exc:
        raise ExportError(
            "--int8 needs onnx and onnxruntime: pip install 'sleap-infer[onnx]'"
        ) from exc
    if not samples:
        raise ExportError(f"{source}: no calibration inputs for --int8")
    model = onnx.load(str(source))
    nodes = backbone_nodes(model)
    if not nodes:
        raise ExportError(
            f"{source}: cannot tell the backbone's nodes from the rest (no torch scope "
            "metadata); export it again with this version of sleap_infer"
        )
    try:
        quantize_static(
            str(source),
            str(target),
            _Reader(input_name, samples),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            per_channel=True,
            nodes_to_quantize=nodes,
        )
    except Exception as exc:  # the quantiser raises many kinds
        raise_if_interrupted(exc)
        raise ExportError(f"{source}: int8 quantisation failed ({plain(str(exc))})") from exc
    return len(nodes)
