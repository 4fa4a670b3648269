#!/usr/bin/env python
"""Python API start-up: load a model and predict 10 frames, ours against sleap-nn's.

What a notebook user waits for on a first call: a fresh interpreter imports the
package, loads the model, and predicts the first 10 frames of a video in memory.

* ours: ``sleap_infer.load(models, device="cpu").predict(video, frames=range(10))``
  (the default backend, ``auto``: 10 frames on a first run stay on torch);
* sleap-nn 0.3.5: ``sleap_nn.inference.run.predict(video, model_paths=models,
  frames=list(range(10)), device="cpu")``, its Python predictor (returns
  ``sio.Labels``, no file written), in its own venv (``.bench-venv/sleap-nn``, made
  by ``benchmarks/vs_sleap_nn.py``).

Each tool runs ``--repeats`` times per case in fresh processes, alternating, after
one untimed run each (disk caches warm for both). Reported: the median wall of the
whole process and the median of the time inside it from the first import to the
result, and their ratios (> 1: ours faster). Needs ../shared/fixtures.

    .venv/bin/python benchmarks/api_startup.py
    .venv/bin/python benchmarks/api_startup.py --cases single,topdown --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bytecode import compile_package
from vs_sleap_nn import CASES as ALL_CASES
from vs_sleap_nn import KEYPOINT_CASES

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
SLEAP_NN_PYTHON = ROOT / ".bench-venv" / "sleap-nn" / "bin" / "python"
# vs_sleap_nn.py's keypoint cases: the same models and videos as the end-to-end runs.
CASES = {name: ALL_CASES[name] for name in KEYPOINT_CASES.split(",")}

OURS = """
import time; t0 = time.perf_counter()
import sys, sleap_infer
pipe = sleap_infer.load(*{models!r}, device="cpu")
pred = pipe.predict({video!r}, frames=range(10), progress=False)
print(repr((time.perf_counter() - t0, int(pred.valid.sum()), pipe.backend_name)))
"""
SLEAP_NN = """
import time; t0 = time.perf_counter()
import sys; sys.path.insert(0, {benchmarks!r})
from sleap_nn_batch import torchvision_shim; torchvision_shim()
from sleap_nn.inference.run import predict
labels = predict({video!r}, model_paths={models!r}, frames=list(range(10)), device="cpu")
n = sum(len(lf.instances) for lf in labels.labeled_frames)
print(repr((time.perf_counter() - t0, n, "torch")))
"""


def run(python: str, code: str) -> tuple[float, float, int, str]:
    """Whole-process wall, in-process seconds, instances found, backend."""
    t0 = time.perf_counter()
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}):\n{done.stderr[-3000:]}")
    inside, found, backend = eval(done.stdout.strip().splitlines()[-1])  # our own repr
    return wall, inside, found, backend


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sleap-nn-python", default=str(SLEAP_NN_PYTHON))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not Path(args.sleap_nn_python).is_file():
        raise SystemExit(f"{args.sleap_nn_python}: no sleap-nn venv (run vs_sleap_nn.py once)")
    compile_package()  # as installed: see bytecode.py
    report: dict[str, object] = {}
    print("| case | ours wall | sleap-nn wall | ratio | ours inside | sleap-nn inside | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case in args.cases.split(","):
        names, video_name = CASES[case]
        models = [str(FIXTURES / "models" / n) for n in names]
        video = str(FIXTURES / "videos" / video_name)
        ours = OURS.format(models=models, video=video)
        theirs = SLEAP_NN.format(models=models, video=video, benchmarks=str(ROOT / "benchmarks"))
        tools = {"ours": (sys.executable, ours), "sleap-nn": (args.sleap_nn_python, theirs)}
        for python, code in tools.values():  # untimed: file caches warm for both
            run(python, code)
        runs: dict[str, list[tuple[float, float, int, str]]] = {name: [] for name in tools}
        for _ in range(args.repeats):  # alternating, so drift hits both alike
            for name, (python, code) in tools.items():
                runs[name].append(run(python, code))
        row = {
            name: {
                "wall_s": statistics.median(r[0] for r in got),
                "inside_s": statistics.median(r[1] for r in got),
                "instances": got[0][2],
                "backend": got[0][3],
            }
            for name, got in runs.items()
        }
        report[case] = row
        o, t = row["ours"], row["sleap-nn"]
        print(
            f"| {case} | {o['wall_s']:.2f} s | {t['wall_s']:.2f} s | "
            f"{t['wall_s'] / o['wall_s']:.2f}x | {o['inside_s']:.2f} s | "
            f"{t['inside_s']:.2f} s | {t['inside_s'] / o['inside_s']:.2f}x |",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
