#!/usr/bin/env python
"""Whole ``infer predict`` commands of two checkouts, alternating: wall and CPU seconds.

For a change whose effect is on the whole process (start-up, exit, threads competing
for 2 cores) rather than on one stage: each round runs every case once per tree, the
order of the trees flipping every round, and the table gives the medians of the wall
and of the process's CPU time (user + system, its threads and children included) and
the ratios after / before. CPU time is the steadier of the two on a shared VM: steal
time stretches the wall, not the work. ``--before DIR`` is the other revision's
checkout (``git worktree add /tmp/before HEAD~1``); "after" is this one. Both trees'
bytecode is compiled first (bytecode.py), and both share one export cache
(``$SLEAP_INFER_CACHE``), so set it to a folder of the benchmark's own.

    python benchmarks/ab_predict.py --before /tmp/before --cases single,bottomup --rounds 5
    python benchmarks/ab_predict.py --before /tmp/before --cases topdown -- --backend onnx

Cases are vs_sleap_nn.py's, on its inputs (single instance on small_robot played twice);
``--frames`` (default 0-299) selects the frames; arguments after ``--`` go to both
commands. Needs ../shared/fixtures.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compile_package
from longer_video import longer_video
from vs_sleap_nn import CASES, FIXTURES

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout")
    parser.add_argument("--cases", default="single,bottomup,topdown")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--frames", default="0-299")
    parser.add_argument("extra", nargs="*", help="after --: more arguments for both")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": ROOT}
    seen: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="ab-predict-") as tmp:
        work = Path(tmp)
        envs = {name: {**os.environ, "PYTHONPATH": str(tree)} for name, tree in trees.items()}
        for env in envs.values():
            compile_package(env, work)
        robot_x2 = longer_video(FIXTURES / "videos" / "small_robot.mp4", 2, 1, work / "x2.mp4")
        cases = args.cases.split(",")
        for r in range(args.rounds):
            for case in cases:
                models, video_name = CASES[case][:2]
                video = robot_x2 if case == "single" else FIXTURES / "videos" / video_name
                order = list(trees) if r % 2 == 0 else list(reversed(trees))
                for name in order:
                    cmd = [sys.executable, "-m", "sleap_infer", "predict", str(video), "-q"]
                    cmd += ["--overwrite", "--frames", args.frames, "-o", str(work / "out.slp")]
                    for model in models:
                        cmd += ["-m", str(FIXTURES / "models" / model)]
                    got = timed(cmd + args.extra, envs[name], work)
                    seen.setdefault((case, name), []).append(got)
                    print(f"round {r + 1} {case} {name}: {got[0]:.2f} s, cpu {got[1]:.2f} s")
    print(
        "| case | wall before | wall after | after/before | CPU before | CPU after | after/before |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case in cases:
        b, a = seen[(case, "before")], seen[(case, "after")]
        wb, wa = (statistics.median(x[0] for x in t) for t in (b, a))
        cb, ca = (statistics.median(x[1] for x in t) for t in (b, a))
        print(
            f"| {case} | {wb:.2f} s | {wa:.2f} s | {wa / wb:.3f} | {cb:.2f} s | {ca:.2f} s "
            f"| {ca / cb:.3f} |"
        )


if __name__ == "__main__":
    main()
