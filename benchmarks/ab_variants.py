#!/usr/bin/env python
"""Two or more ``infer predict`` variants of one checkout, alternating: wall, CPU, start.

For a question ``vs_sleap_nn.py``'s median of three cannot settle on a shared VM: is
the default (``--backend auto``) slower than the explicit backend it ran on? Each round
runs every variant once, the order flipped every round, after one untimed round (the
export, if any, and the page cache); the table gives the medians of the wall, of the
process's CPU time (user + system, threads and children included) and of the seconds
from process start to the first batch's run (``SLEAP_INFER_STARTUP_TRACE``'s
``run_start``). Variants are ``LABEL`` or ``LABEL:ARGS`` as in ``vs_sleap_nn.py``'s
``--ours`` (``default``: no arguments). Commands and timing are ``ab_predict.py``'s
(``python -m sleap_infer predict -q``, its ``timed``), on one tree. Set
``$SLEAP_INFER_CACHE`` to a folder of the benchmark's own.

    python benchmarks/ab_variants.py --case single --frames 0-299 \\
        --variant default --variant "openvino:--backend openvino" --rounds 5

Cases are vs_sleap_nn.py's, on its inputs (single instance on small_robot played twice).
Needs ../shared/fixtures.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

from ab_predict import timed
from bytecode import compile_package
from longer_video import longer_video
from vs_sleap_nn import CASES, FIXTURES


def run_once(cmd: list[str], trace: Path, cwd: Path) -> tuple[float, float, float]:
    """(wall, CPU, seconds from process start to run start) of one child process."""
    env = {**os.environ, "SLEAP_INFER_STARTUP_TRACE": str(trace)}
    wall, cpu = timed(cmd, env, cwd)
    record = json.loads(trace.read_text())
    start = record["marks"].get("run_start", float("nan")) - record.get("process_start", 0.0)
    return wall, cpu, start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="single", help=f"of {', '.join(CASES)}")
    parser.add_argument("--frames", default="0-299")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--variant", action="append", required=True, metavar="LABEL[:ARGS]")
    args = parser.parse_args()
    names, video_name = CASES[args.case]
    video = FIXTURES / "videos" / video_name
    work = Path(tempfile.mkdtemp(prefix="ab_variants_"))
    if args.case == "single":  # 166 frames: played twice to reach 300, as vs_sleap_nn.py
        video = longer_video(video, 2, 1, work / "single_x2.mp4")
    variants = {}
    for text in args.variant:
        label, _, extra = text.partition(":")
        variants[label] = shlex.split(extra)
    compile_package()  # as an installed wheel: no run compiles our modules from source
    results: dict[str, list[tuple[float, float, float]]] = {label: [] for label in variants}
    for r in range(args.rounds + 1):
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for label in order:
            cmd = [sys.executable, "-m", "sleap_infer", "predict", str(video), "-q"]
            cmd += ["-o", str(work / f"{label}.slp"), "--overwrite"]
            cmd += ["--frames", args.frames, "--batch-size", str(args.batch_size)]
            for name in names:
                cmd += ["-m", str(FIXTURES / "models" / name)]
            measured = run_once(cmd + variants[label], work / f"{label}.trace.json", work)
            if r:  # round 0 is untimed
                results[label].append(measured)
    print(f"{args.case}, frames {args.frames}, {args.rounds} rounds (medians)")
    print("| variant | walls | wall | CPU | to run start |")
    print("|---|---|---:|---:|---:|")
    for label, rows in results.items():
        walls = ", ".join(f"{w:.2f}" for w, _, _ in rows)
        wall = statistics.median(w for w, _, _ in rows)
        cpu = statistics.median(c for _, c, _ in rows)
        start = statistics.median(s for _, _, s in rows)
        print(f"| {label} | {walls} | {wall:.2f} s | {cpu:.2f} s | {start:.2f} s |")


if __name__ == "__main__":
    main()
