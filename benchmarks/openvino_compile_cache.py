#!/usr/bin/env python
"""What OpenVINO's compiled-model cache saves a run: compile seconds, cold against cached.

For each keypoint fixture model, the ONNX export ``--backend openvino`` runs (made once
into a scratch cache by a 4-frame ``infer predict``), then, in fresh processes so that
nothing is warm in memory, the backend (``OpenVINOBackend._compiled_for``, its own
settings and cache use) compiles it for batch 4: once
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

# One compile in a fresh process, by the backend itself (its settings, its cache use): what
# OpenVINOBackend does for the run's batch before the first one runs.
COMPILE = """
import json, sys, time
from pathlib import Path
from sleap_infer.backends.openvino_backend import OpenVINOBackend
from sleap_infer.core.artifact import read_export
folder, cache = Path(sys.argv[1]), sys.argv[2]
backend = OpenVINOBackend(read_export(folder), compiled_cache=Path(cache) if cache else None)
dims = list(backend.model.inputs[0].get_partial_shape())[1:]
shape = (4, *(d.get_length() for d in dims))
t0 = time.perf_counter()
backend._compiled_for(shape)
print(json.dumps(time.perf_counter() - t0))
"""


def child_env() -> dict[str, str]:
    """This checkout's package first on the path, whatever is installed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def compile_s(export: Path, cache: Path | None) -> float:
    args = [sys.executable, "-c", COMPILE, str(export), str(cache or "")]
    run = subprocess.run(args, check=True, capture_output=True, env=child_env())
    return float(json.loads(run.stdout))


def export_of(kind: str, work: Path) -> Path:
    """The export folder a 4-frame openvino run makes for this model, in a scratch cache."""
    model, video = MODELS[kind]
    cache = work / f"exports-{kind}"
    cmd = [sys.executable, "-m", "sleap_infer", "predict", str(FIXTURES / "videos" / video)]
    cmd += ["-m", str(FIXTURES / "models" / model), "--backend", "openvino", "-q"]
    cmd += ["--frames", "0-3", "--batch-size", "4", "-o", str(work / f"{kind}.slp")]
    subprocess.run(cmd, check=True, env={**child_env(), "SLEAP_INFER_CACHE": str(cache)})
    (onnx,) = cache.glob("*/model.onnx")
    return onnx.parent


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
            export = export_of(kind, work)
            cold, warm = [], []
            for i in range(args.repeats):
                cache = work / f"blobs-{kind}-{i}"
                cold.append(compile_s(export, cache))  # empty folder: compiles, writes the blob
                warm.append(compile_s(export, cache))  # the blob there: read back
            c, w = statistics.median(cold), statistics.median(warm)
            print(f"| {kind} | {c:.3f} | {w:.3f} | {c - w:.3f} |", flush=True)


if __name__ == "__main__":
    main()
