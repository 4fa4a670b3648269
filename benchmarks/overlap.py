#!/usr/bin/env python
"""Per-stage profile of ``infer predict`` with postprocessing overlapped, and without.

The runner finishes batch k (postprocess: peak finding, PAF grouping, crops and
a top-down second network) on a second thread while the network runs batch
k+1. This script predicts the same frames twice per case in one process, once
with ``Runner.overlap`` off (stages back to back, the old loop) and once on,
and prints each stage's seconds, their sum, and the wall time of the timed
batches: overlap shows as a wall below the sum. (On a 2-core CPU it slowed
runs down, 0.73-0.89x, so it is on by default only on cuda/mps; see docs/benchmarks.md.)

    .venv/bin/python benchmarks/overlap.py                       # torch, 300 frames
    .venv/bin/python benchmarks/overlap.py --backend onnx --frames 0-1099

Needs ../shared/fixtures.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from vs_sleap_nn import CASES  # the same models and videos per case

import sleap_infer

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))


def profile(case: str, backend: str, frames: str, overlap: bool, out: Path) -> dict[str, float]:
    models, video = CASES[case]
    pipe = sleap_infer.load(
        [FIXTURES / "models" / m for m in models], backend=backend, device="cpu", batch_size=4
    )
    pipe.runner.overlap = overlap
    result = pipe.predict_to_file(
        FIXTURES / "videos" / video, out / f"{case}-{overlap}.slp", frames=frames
    )
    stats = result.stats
    assert stats is not None
    row = dict(stats.stages)
    row["sum of stages"] = sum(stats.stages.values())
    row["wait for frames"] = stats.wait_s
    row["sink"] = stats.sink_s
    row["wall (timed batches)"] = stats.wall_s
    row["fps"] = stats.fps
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="single,topdown,bottomup,multiclass_bottomup")
    p.add_argument("--backend", default="torch")
    p.add_argument("--frames", default="0-299")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for case in args.cases.split(","):
            before = profile(case, args.backend, args.frames, False, Path(tmp))
            after = profile(case, args.backend, args.frames, True, Path(tmp))
            print(f"\n{case} ({args.backend}, frames {args.frames})")
            print("| stage | before (s) | after (s) |\n|---|---:|---:|")
            for name in dict.fromkeys([*before, *after]):
                b, a = before.get(name, 0.0), after.get(name, 0.0)
                print(f"| {name} | {b:.2f} | {a:.2f} |")
            speedup = before["wall (timed batches)"] / max(after["wall (timed batches)"], 1e-9)
            print(f"overlap speed-up (wall of timed batches): {speedup:.2f}x")


if __name__ == "__main__":
    main()
