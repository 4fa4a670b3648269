#!/usr/bin/env python
"""Steady-state ms/frame beside another runtime's CPU pool, before and after a change.

ONNX Runtime's and OpenVINO's CPU workers spin for a while after each inference, and so
do torch's OpenMP workers after each of its parallel ops. With the network in one pool
and the layer's own torch work (preprocess, peak decoding, grouping, crops) in the other,
each waits on cores the other is spinning on. Since 2026-12-05 the layers run their own
torch work on one thread beside such a backend (``backend.host_threads``,
``sleap_infer.backends.threads.torch_threads``); this script measures what that changed.

Each case predicts the crowd scene (``examples/synthetic/crowd.py``, 512 px, seed 0) in
memory with ``Pipeline.predict``: ``--warm`` frames first (export, compile, and for
``int8`` the calibration and quantisation), then ``--frames`` frames timed. Cases are
``KIND BACKEND`` (``bottomup openvino``, ``topdown onnx``, ``bottomup openvino-int8``).
With ``--against DIR`` (another revision's checkout, e.g. ``git worktree add /tmp/before
HEAD~1``) every round runs one child process per tree, alternating which goes first, and
the table gives the medians and their ratio::

    python benchmarks/host_threads.py --against /tmp/before --rounds 3
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

from alternate import alternated_rounds

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "models"
KINDS = {
    "bottomup": ["crowd_bottomup"],
    "topdown": ["crowd_centroid", "crowd_centered_instance"],
}
CASES = [
    f"{kind} {backend}"
    for kind in KINDS
    for backend in ("openvino", "openvino-int8", "onnx", "onnx-int8")
]


def measure(case: str, animals: int, warm: int, frames: int) -> float:
    """ms per frame of ``Pipeline.predict`` on ``frames`` frames, in this process's tree."""
    import numpy as np

    import sleap_infer

    sys.path.insert(0, str(ROOT / "examples" / "synthetic"))
    import crowd

    kind, backend = case.split()
    runtime, _, precision = backend.partition("-")
    video = np.stack(crowd.frames(crowd.crowd(animals, warm + frames, 512, seed=0)))
    video = video[..., None] if video.ndim == 3 else video
    pipe = sleap_infer.load(
        [MODELS / m for m in KINDS[kind]],
        backend=runtime,
        device="cpu",
        int8=precision == "int8",
        max_instances=animals,
    )
    pipe.predict(video[:warm])
    t0 = time.perf_counter()
    pipe.predict(video[warm:])
    return 1000 * (time.perf_counter() - t0) / frames


def child(tree: Path, args: argparse.Namespace, names: list[str]) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, __file__, "--child", "--cases", ",".join(names)]
    cmd += ["--animals", str(args.animals), "--warm", str(args.warm)]
    cmd += ["--frames", str(args.frames)]
    out = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(names: list[str], runs: dict[str, list[dict[str, float]]]) -> str:
    trees = list(runs)
    both = len(trees) == 2
    lines = ["| case | " + " | ".join(f"{t} ms/frame (runs)" for t in trees)]
    lines[0] += " | after / before |" if both else " |"
    lines.append("|---" * (len(trees) + 1 + both) + "|")
    for c in names:
        cells = []
        for t in trees:
            values = [r[c] for r in runs[t]]
            spread = ", ".join(f"{v:.1f}" for v in values)
            cells.append(f"{statistics.median(values):.2f} ({spread})")
        row = f"| {c} | " + " | ".join(cells)
        if both:
            before, after = (statistics.median(r[c] for r in runs[t]) for t in trees)
            row += f" | {after / before:.2f}"
        lines.append(row + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", type=Path, help="a checkout of the 'before' revision")
    ap.add_argument("--rounds", type=int, default=3, help="child runs per tree (medians)")
    ap.add_argument("--animals", type=int, default=30)
    ap.add_argument("--warm", type=int, default=40, help="frames predicted before timing")
    ap.add_argument("--frames", type=int, default=100, help="frames timed")
    ap.add_argument("--cases", help=f"comma-separated (default: {', '.join(CASES)})")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = args.cases.split(",") if args.cases else CASES
    if args.child:
        print(json.dumps({c: measure(c, args.animals, args.warm, args.frames) for c in names}))
        return
    runs = alternated_rounds(args.against, ROOT, args.rounds, lambda t: child(t, args, names))
    print(f"{args.animals} animals, 512 px, {args.frames} frames timed after {args.warm}")
    print(table(names, runs))


if __name__ == "__main__":
    main()
