"""Postprocessing cost as animals grow, and on empty 2048 px frames (issue 32, item 3).

Times the layers' ``postprocess`` alone (peaks, PAF scoring, grouping; top-down: centroid
peaks and crops) on network outputs computed once, so the number is not buried under the
network. Cases:

* ``bottomup nN``: ``examples/models/crowd_bottomup`` on a 512 px crowd scene
  (``examples/synthetic/crowd.py``, seed 0) of N animals, batch 4, ``--max-instances N``;
* ``bottomup empty 2048`` / ``topdown empty 2048``: a 2048 px frame, heads' outputs set
  to zero (no peak anywhere), crowd models.

With ``--against DIR`` (a checkout of another revision, e.g. ``git worktree add
/tmp/base main``) each round runs one child process per tree, alternating which goes
first, and the table gives the medians before / after and their ratio, so load on a
shared machine hits both alike::

    nice python benchmarks/postprocess_growth.py --against /tmp/base --rounds 5

Torch runs on one thread by default (``--threads``): on a machine shared by other work,
intra-op threads on these small tensors mostly measure the contention.
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
ANIMALS = (2, 10, 30, 60)


def cases(animals: tuple[int, ...]) -> list[str]:
    return [f"bottomup n{n}" for n in animals] + ["bottomup empty 2048", "topdown empty 2048"]


def _frames(case: str):  # numpy is imported late, as in the children
    import numpy as np

    sys.path.insert(0, str(ROOT / "examples" / "synthetic"))
    import crowd

    if "empty" in case:
        return np.zeros((1, 2048, 2048, 1), np.uint8), None
    n = int(case.split("n")[-1])
    frames = np.stack(crowd.frames(crowd.crowd(n, 4, 512, seed=0)))
    return (frames[..., None] if frames.ndim == 3 else frames), n


def measure(case: str, repeats: int) -> float:
    """Median ms per frame of ``postprocess`` for one case, in this process's tree."""
    import torch

    import sleap_infer

    frames, n = _frames(case)
    if case.startswith("topdown"):
        paths = [MODELS / "crowd_centroid", MODELS / "crowd_centered_instance"]
        pipeline = sleap_infer.load(paths, device="cpu")
    else:
        pipeline = sleap_infer.load(MODELS / "crowd_bottomup", device="cpu", max_instances=n)
    layer = pipeline.layer
    with torch.no_grad():
        x, info = layer.preprocess(frames)
        outputs = layer.call_backend(x)
        if "empty" in case:
            outputs = {k: torch.zeros_like(v) for k, v in outputs.items()}
        layer.postprocess(outputs, info)  # first call: lazy set-up
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            layer.postprocess(outputs, info)
            times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times) / len(frames)


def child(tree: Path, names: list[str], repeats: int, threads: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [sys.executable, __file__, "--child", "--repeats", str(repeats)]
    cmd += ["--threads", str(threads), "--cases", ",".join(names)]
    out = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(names: list[str], runs: dict[str, list[dict[str, float]]]) -> str:
    trees = list(runs)
    med = {t: {c: statistics.median(r[c] for r in runs[t]) for c in names} for t in trees}
    head = "| case | " + " | ".join(f"{t} ms/frame" for t in trees)
    lines = [head + (" | after / before |" if len(trees) == 2 else " |")]
    lines.append("|---" * (len(trees) + 1 + (len(trees) == 2)) + "|")
    for c in names:
        row = f"| {c} | " + " | ".join(f"{med[t][c]:.2f}" for t in trees)
        if len(trees) == 2:
            row += f" | {med[trees[1]][c] / med[trees[0]][c]:.2f}"
        lines.append(row + " |")
    for t in trees:
        base = med[t].get("bottomup n2")
        if base and all(f"bottomup n{n}" in med[t] for n in ANIMALS):
            growth = [f"n{n}: {med[t][f'bottomup n{n}'] / base:.2f}x" for n in ANIMALS[1:]]
            lines.append(f"\n{t}: growth vs 2 animals " + ", ".join(growth))
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", type=Path, help="a checkout of the 'before' revision")
    ap.add_argument("--rounds", type=int, default=3, help="child runs per tree (medians)")
    ap.add_argument("--repeats", type=int, default=20, help="postprocess calls per case")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--cases", help="comma-separated case names (default: all)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = args.cases.split(",") if args.cases else cases(ANIMALS)
    if args.child:
        import torch

        torch.set_num_threads(args.threads)
        print(json.dumps({c: measure(c, args.repeats) for c in names}))
        return
    runs = alternated_rounds(
        args.against, ROOT, args.rounds, lambda t: child(t, names, args.repeats, args.threads)
    )
    print(table(names, runs))


if __name__ == "__main__":
    main()
