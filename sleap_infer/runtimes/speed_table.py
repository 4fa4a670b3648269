"""What ``--backend auto`` knows about speed: one measured table, per model kind, on the CPU.

Each row is a kind of run (:func:`~sleap_infer.runtimes.choose.kind_of`: the model
types, detector first) and, per runtime: ``per_frame_ms`` and ``fixed_s`` (what a
whole 10-frame ``infer predict`` process costs beyond its frames with the export
cached: start-up, model load, session creation, OpenVINO's compile); plus
``export_s``, the one-off cost of the first export (ONNX graph written and checked;
OpenVINO reads the same file). Written by ``benchmarks/auto_table.py``, which prints
these rows (its docstring says how each figure is taken): rerun it and paste them when
a runtime, the exporter or a layer changes speed. ``per_frame_ms`` of the six keypoint
kinds comes from whole processes (the video decoding beside the network slows torch
more than OpenVINO on 2 cores), of the others from ``infer bench`` (``--per-frame
bench``: steadier, the same ranking wherever both were taken); ``fixed_s`` of the
keypoint kinds is then a 300-frame process's wall less its frames. The figures are one
machine's (``MEASURED_ON``); what matters is the ranking and the size of a first
export against what it saves.

CUDA has no rows: no GPU was lent to measure one, so there ``auto`` takes TensorRT
when it is installed and torch otherwise (``choose.py``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cost:
    fixed_s: float
    per_frame_ms: float


@dataclass(frozen=True)
class KindCosts:
    runtimes: dict[str, Cost]
    export_s: float


def _row(torch: tuple[float, float], onnx: tuple[float, float],
         openvino: tuple[float, float], export_s: float) -> KindCosts:  # fmt: skip
    return KindCosts(
        {"torch": Cost(*torch), "onnx": Cost(*onnx), "openvino": Cost(*openvino)}, export_s
    )


MEASURED_ON = (
    "2026-12-07 (keypoint kinds; the rest 2026-12-06), 2 vCPUs (Intel Xeon, AVX-512), "
    "batch 4, benchmarks/auto_table.py"
)
CPU_ORDER = ("openvino", "onnx", "torch")  # a kind not in the table: the order
"""Preference among equals, and for kinds the table lacks."""

# kind: (fixed_s, per_frame_ms) for torch, onnx, openvino; export_s. The six keypoint
# kinds: auto_table.py's default (--per-frame trace: five interleaved rounds of traced
# 300-frame processes, OpenVINO's compiled model cached as a second run finds it), one
# run on 2026-12-07 after the start-up cuts of that day (the collector held off during
# imports, one swscale thread, OpenVINO without its converter), which lowered every
# runtime's fixed_s by 0.5-1.2 s against the day before; the rest one round of
# --per-frame bench on 2026-12-06, with fixed_s and export_s from whole processes, so
# compare within a row.
CPU_COSTS: dict[str, KindCosts] = {
    "single_instance": _row((1.669, 8.41), (1.853, 7.01), (1.7, 5.58), 4.845),
    "centroid": _row((1.581, 21.71), (1.8, 18.82), (1.66, 16.12), 8.247),
    "centroid+centered_instance": _row((1.675, 27.26), (1.905, 25.29), (1.916, 22.35), 9.301),
    "bottomup": _row((1.709, 32.22), (2.052, 34.54), (1.878, 26.98), 9.177),
    "multi_class_bottomup": _row((1.492, 6.52), (1.75, 6.82), (1.698, 4.99), 8.125),
    "centroid+multi_class_topdown": _row((1.711, 26.29), (1.913, 26.16), (1.914, 21.95), 10.772),
    "bottomup_segmentation": _row((2.603, 2.5), (2.781, 2.57), (2.646, 1.89), 4.486),
    "semantic_segmentation": _row((2.465, 1.97), (2.517, 2.0), (2.642, 1.46), 5.024),
    "centroid+centered_instance_segmentation": _row(
        (2.461, 3.28), (2.525, 3.33), (3.051, 2.0), 9.367
    ),
    "bottomup_segmentation/tiled": _row((2.457, 38.46), (2.55, 38.3), (2.576, 24.63), 4.694),
    "semantic_segmentation/tiled": _row((2.527, 32.49), (2.747, 39.35), (2.605, 18.76), 4.237),
    "single_instance/tiled": _row((2.336, 33.17), (2.614, 33.28), (2.648, 18.98), 4.241),
    "bbox_centernet": _row((2.706, 2.9), (2.417, 1.91), (2.608, 1.79), 4.581),
    "bbox_ssd": _row((2.751, 5.34), (2.709, 6.9), (3.475, 4.79), 5.272),
    "bbox_centernet+centered_instance_segmentation": _row(
        (2.912, 3.24), (3.132, 4.23), (3.525, 2.55), 8.402
    ),
    "centroid+embedding": _row((2.842, 4.01), (2.99, 4.52), (3.445, 3.54), 11.641),
}
