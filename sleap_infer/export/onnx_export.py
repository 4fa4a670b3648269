"""Trace a wrapper to ONNX with the torch.export-based exporter, then check the file.

Why this exporter: in torch >= 2.9 it is the default and the TorchScript one
(``dynamo=False``) is deprecated (it warns on every call and is slated for
removal). It needs ``onnxscript`` and writes opset >= 18, which also gives
antialiased Resize if a future wrapper bakes input scaling. Two known,
harmless messages from torch's own internals are silenced around the call
(see ``_quiet_exporter``), nothing else.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from sleap_infer.core.errors import ExportError, plain, raise_if_interrupted
from sleap_infer.export.wrappers.base import ExportWrapper

INPUT_NAME = "image"


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """Silence what torch's exporter says about itself, not about our model.

    * ``FutureWarning: isinstance(treespec, LeafSpec) is deprecated``: raised
      inside torch's pytree code while torch.export copies its own spec objects
      (torch 2.13); nothing we call can avoid it.
    * ``torch.onnx`` log lines such as "torchvision is not installed. Skipping
      torchvision::nms": registry notes about ops we never use.
    """
    onnx_logger = logging.getLogger("torch.onnx")
    level = onnx_logger.level
    onnx_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings(
                "ignore",
                message=r"`isinstance\(treespec, LeafSpec\)` is deprecated",
                category=FutureWarning,
            )
            yield
    finally:
        onnx_logger.setLevel(level)


def require_onnx() -> None:
    """Fail with the install line when the export extra is missing."""
    missing = []
    for name in ("onnx", "onnxscript"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ExportError(
            f"ONNX export needs {', '.join(missing)}: pip install 'sleap-infer[onnx]'"
        )


def export_onnx(
    wrapper: ExportWrapper,
    input_shape: tuple[int, int, int, int],
    path: Path,
    opset: int,
    dynamic_batch: bool,
) -> None:
    """Write ``wrapper`` traced on a uint8 input of ``input_shape`` to ``path``."""
    require_onnx()
    wrapper = wrapper.eval()
    batch, channels, height, width = input_shape
    # torch.export specialises size-1 dims, so a dynamic batch is traced with 2.
    traced_batch = max(batch, 2) if dynamic_batch else batch
    example = torch.randint(0, 256, (traced_batch, channels, height, width), dtype=torch.uint8)
    dynamic_shapes = None
    if dynamic_batch:
        dynamic_shapes = {"image": {0: torch.export.Dim("batch", min=1, max=4096)}}
    try:
        with _quiet_exporter(), torch.no_grad():
            torch.onnx.export(
                wrapper,
                (example,),
                str(path),
                dynamo=True,
                verbose=False,
                opset_version=opset,
                input_names=[INPUT_NAME],
                output_names=list(wrapper.output_names),
                dynamic_shapes=dynamic_shapes,
                external_data=False,
            )
    except Exception as exc:  # the exporter raises many types; all mean the same to a user
        raise_if_interrupted(exc)  # torch.export wraps Ctrl-C in its own error
        text = plain(str(exc)).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        raise ExportError(f"{path}: ONNX export of {wrapper.model_type} failed ({first})") from exc
    check_onnx(path, opset)


def check_onnx(path: Path, opset: int | None = None) -> None:
    """``onnx.checker`` plus the opset we asked for (the exporter may silently keep another)."""
    import onnx

    try:
        proto = onnx.load(str(path))
        onnx.checker.check_model(proto, full_check=True)
    except Exception as exc:
        raise_if_interrupted(exc)
        raise ExportError(f"{path}: not a valid ONNX model ({plain(str(exc))})") from exc
    if opset is not None:
        written = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
        if written != opset:
            raise ExportError(f"{path}: asked for opset {opset} but the exporter wrote {written}")


def embed_metadata(path: Path, entries: dict[str, str]) -> None:
    """Store strings in the model's ``metadata_props`` (readable by any ONNX runtime)."""
    import onnx

    proto = onnx.load(str(path))
    existing = {p.key: p for p in proto.metadata_props}
    for key, value in entries.items():
        prop = existing.get(key) or proto.metadata_props.add()
        prop.key, prop.value = key, value
    onnx.save(proto, str(path))


def verify_numerics(
    wrapper: ExportWrapper, path: Path, input_shape: tuple[int, int, int, int], seed: int = 0
) -> dict[str, float]:
    """Run torch and ONNX Runtime on one random batch; the worst gap of each float output.

    Catches graphs that are valid but compute something else. Only entries
    finite on both sides are compared (empty local-peak slots are -inf); slot
    values are compared sorted (see ``ExportWrapper.slot_values``). Raw maps'
    gaps are relative to ``max(1, largest |value|)`` of the map, since offset maps
    run to tens of pixels, where fp16 steps alone exceed an absolute tolerance.
    """
    import onnxruntime as ort

    generator = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, input_shape, dtype=torch.uint8, generator=generator)
    with torch.no_grad():
        expected = wrapper(x)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(list(wrapper.output_names), {INPUT_NAME: x.numpy()})
    gaps: dict[str, float] = {}
    for name, ref, out in zip(wrapper.output_names, expected, got):
        ref_np = ref.numpy()
        if ref_np.shape != out.shape:
            raise ExportError(f"{path}: output {name} has shape {out.shape}, torch {ref_np.shape}")
        if ref_np.dtype == np.bool_:
            continue  # flags of values sitting at the threshold may legitimately flip
        if name in wrapper.slot_values:
            ref_np, out = np.sort(ref_np, axis=-1), np.sort(out, axis=-1)
        both = np.isfinite(ref_np) & np.isfinite(out)
        if not both.any():
            gaps[name] = 0.0
            continue
        gap = float(np.abs(ref_np[both] - out[both]).max())
        if wrapper.raw_maps:
            gap /= max(1.0, float(np.abs(ref_np[both]).max()))
        gaps[name] = gap
    return gaps
