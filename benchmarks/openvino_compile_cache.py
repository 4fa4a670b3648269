#!/usr/bin/env python
"""What OpenVINO's compiled-model cache saves a run: compile seconds, cold against cached.

For each keypoint fixture model, the ONNX export ``--backend openvino`` runs (made once
into a scratch cache by a 4-frame ``infer predict``), then, in fresh processes so that
nothing is warm in memory, OpenVINO compiles it for batch 4 as the backend does: once
with an empty ``CACHE_DIR`` (what the first run pays, the blob written) and once with
that blob present (what every later run pays). Alternating, ``--repeats`` times each;
medians. Needs ../shared/fixtures and the ``openvino`` extra.

    .venv/bin/python benchmarks/openvino_compile_cache.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
MODELS = {
    "single_instance": ("minimal_instance_single_instance", "small_robot.mp4"),
    "centroid": ("minimal_instance_centroid", "centered_pair_small.mp4"),
    "bottomup": ("minimal_instance_bottomup", "centered_pair_small.mp4"),
    "multi_class_bottomup": ("minimal_instance_multiclass_bottomup", "centered_pair_small.mp4"),
}

# One compile in a fresh process: what OpenVINOBackend does for the run's batch.
COMPILE = """
import json, os, sys, time
import openvino as ov
onnx, cache = sys.argv[1], sys.argv[2]
core = ov.Core()
model = core.read_model(onnx)
name = model.inputs[0].get_any_name()
shape = [4] + [d.get_length() for d in list(model.inputs[0].get_partial_shape())[1:]]
model.reshape({name: shape})
config = {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY",
          "INFERENCE_NUM_THREADS": len(os.sched_getaffinity(0))}
if cache:
    config["CACHE_DIR"] = cache
t0 = time.perf_counter()
core.compile_model(model, "CPU", config)
print(json.dumps(time.perf_counter() - t0))
"""


def compile_s(onnx: Path, cache: Path | None) -> float:
    args = [sys.executable, "-c", COMPILE, str(onnx), str(cache or "")]
    return float(json.loads(subprocess.run(args, check=True, capture_output=True).stdout))


def export_of(kind: str, work: Path) -> Path:
    """The export a 4-frame openvino run makes for this model, in a scratch cache."""
    model, video = MODELS[kind]
    cache = work / f"exports-{kind}"
    cmd = [sys.executable, "-m", "sleap_infer", "predict", str(FIXTURES / "videos" / video)]
    cmd += ["-m", str(FIXTURES / "models" / model), "--backend", "openvino", "-q"]
    cmd += ["--frames", "0-3", "--batch-size", "4", "-o", str(work / f"{kind}.slp")]
    env = {**os.environ, "SLEAP_INFER_CACHE": str(cache)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    subprocess.run(cmd, check=True, env=env)
    (onnx,) = cache.glob("*/model.onnx")
    return onnx


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default=",".join(MODELS))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ov-compile-") as tmp:
        work = Path(tmp)
        print("| model | compile, cold s | compile, cached s | saved s |")
        print("|---|---:|---:|---:|")
        for kind in args.kinds.split(","):
            onnx = export_of(kind, work)
            cold, warm = [], []
            for i in range(args.repeats):
                cache = work / f"blobs-{kind}-{i}"
                cold.append(compile_s(onnx, cache))  # empty folder: compiles, writes the blob
                warm.append(compile_s(onnx, cache))  # the blob there: read back
            c, w = statistics.median(cold), statistics.median(warm)
            print(f"| {kind} | {c:.3f} | {w:.3f} | {c - w:.3f} |", flush=True)


if __name__ == "__main__":
    main()
