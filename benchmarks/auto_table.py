#!/usr/bin/env python
"""Measure what ``--backend auto`` decides from: each runtime's cost per model kind.

For every fixture model kind (the keys of ``sleap_infer/runtimes/speed_table.py``)
and every CPU runtime (torch, onnx, openvino), with the export cached:

* ``per_frame_ms``: by default (``--per-frame trace``) from whole ``infer predict``
  processes of 300 frames (single instance: ``small_robot.mp4`` played twice, as
  ``vs_sleap_nn.py`` does; the synthetic video's whole 192) run with
  ``SLEAP_INFER_STARTUP_TRACE``: the seconds from the first batch handed on to the
  process's exit mark, over the frames after that batch, so the start-up's noise
  never enters it; ``fixed_s`` is then the same run's wall less its frames, so
  ``fixed + frames x ms`` is that run's wall exactly. Five rounds interleave the
  runtimes (on a shared VM a slow minute then hits each alike) and each figure is
  the median. The older methods: ``walls``, (200-frame wall - 10-frame wall) / the
  frames between, three rounds (the difference of two noisy walls: on single
  instance it had torch 1.5 ms/frame ahead of OpenVINO where every 300-frame run
  had OpenVINO ahead); ``bench``, ``infer bench``'s warm median at batch 4
  (steadier, but with no video decoding beside the network, which on 2 cores
  slows torch's thread pool more than OpenVINO's: multi-class bottom-up torch
  0.7 ms/frame behind OpenVINO in the bench, 6 ms in whole runs); with both,
  ``fixed_s`` is the 10-frame wall (median) less its frames: start-up, model
  load, session creation, OpenVINO's compile;

and, once per kind, ``export_s``: the first ONNX run on an empty cache minus the same
run with the export cached (the one-off cost ``auto`` weighs against the savings).
Prints the table as the rows ``speed_table.py`` holds, and ``--json`` writes every
figure. Needs ../shared/fixtures; a quiet machine (nothing else running).

    .venv/bin/python benchmarks/auto_table.py --json /tmp/auto_table.json
    .venv/bin/python benchmarks/auto_table.py --kinds bottomup,single_instance
    .venv/bin/python benchmarks/auto_table.py --per-frame walls   # the older estimate
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compile_package
from longer_video import longer_video

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
M, V = FIXTURES / "models", FIXTURES / "videos"
RUNTIMES = ("torch", "onnx", "openvino")
SHORT = 10
BATCH = 4
TRACED_FRAMES = 300  # the long input; the single-instance video has 166
ROUNDS = 5
SYNTHETIC = "synthetic_multi_x3.mp4"  # the 24-frame fixture at 384x384, played 8 times
ROBOT_X2 = "small_robot_x2.mp4"  # 166 frames played twice, as vs_sleap_nn.py reaches 300

# kind: (model folders, video, extra flags)
KINDS: dict[str, tuple[list[str], str, list[str]]] = {
    "single_instance": (["minimal_instance_single_instance"], ROBOT_X2, []),
    "centroid": (["minimal_instance_centroid"], "centered_pair_small.mp4", []),
    "centroid+centered_instance": (
        ["minimal_instance_centroid", "minimal_instance_centered_instance"],
        "centered_pair_small.mp4",
        [],
    ),
    "bottomup": (["minimal_instance_bottomup"], "centered_pair_small.mp4", []),
    "multi_class_bottomup": (
        ["minimal_instance_multiclass_bottomup"],
        "centered_pair_small.mp4",
        [],
    ),
    "centroid+multi_class_topdown": (
        ["minimal_instance_centroid", "minimal_instance_multiclass_centered_instance"],
        "centered_pair_small.mp4",
        ["--peak-threshold", "0.05"],
    ),
    "bottomup_segmentation": (["synthetic_bottomup_segmentation"], SYNTHETIC, []),
    "semantic_segmentation": (["synthetic_semantic_segmentation"], SYNTHETIC, []),
    "centroid+centered_instance_segmentation": (
        ["synthetic_centroid", "synthetic_centered_instance_segmentation"],
        SYNTHETIC,
        [],
    ),
    "bottomup_segmentation/tiled": (
        ["synthetic_bottomup_segmentation_tiled"],
        SYNTHETIC,
        [],
    ),
    "semantic_segmentation/tiled": (
        ["synthetic_semantic_segmentation_tiled"],
        SYNTHETIC,
        [],
    ),
    "single_instance/tiled": (["synthetic_single_instance_tiled"], SYNTHETIC, []),
    "bbox_centernet": (["synthetic_bbox_centernet"], SYNTHETIC, []),
    "bbox_ssd": (["synthetic_bbox_ssd"], SYNTHETIC, []),
    "bbox_centernet+centered_instance_segmentation": (
        ["synthetic_bbox_centernet", "synthetic_centered_instance_segmentation"],
        SYNTHETIC,
        [],
    ),
    "centroid+embedding": (["synthetic_centroid", "synthetic_embedding"], SYNTHETIC, []),
}


def infer_exe() -> list[str]:
    """This checkout's ``infer`` (run as a module, PYTHONPATH set in ``measure``)."""
    return [sys.executable, "-m", "sleap_infer"]


def timed(cmd: list[str], env: dict[str, str]) -> float:
    """The process's wall seconds (an error naming the command if it failed)."""
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-8:])
        raise RuntimeError(f"failed ({done.returncode}): {' '.join(cmd)}\n{tail}")
    return wall


def command(kind: str, video: Path, frames: int, runtime: str, out: Path) -> list[str]:
    models, _, extra = KINDS[kind]
    cmd = [*infer_exe(), "predict", str(video), "--backend", runtime, "--batch-size", str(BATCH)]
    for m in models:
        cmd += ["-m", str(M / m)]
    out.unlink(missing_ok=True)
    return [*cmd, "--frames", f"0-{frames - 1}", "-o", str(out), "--overwrite", *extra]


def bench_ms(kind: str, video: Path, work: Path, env: dict[str, str]) -> dict[str, float]:
    """``infer bench``'s warm ms/frame (median batch / batch size) per runtime, batch 4."""
    models, _, extra = KINDS[kind]
    report = work / "bench.json"
    cmd = [*infer_exe(), "bench", *(str(M / m) for m in models), "--input", str(video)]
    cmd += ["--backend", "onnx", "--backend", "openvino", "--batch-sizes", "4"]
    cmd += ["--iters", "30", "--json", str(report), "--overwrite", *extra]
    timed(cmd, env)
    rows = json.loads(report.read_text())["rows"]
    return {r["backend"]: r["p50_ms"] / r["batch"] for r in rows if r["status"] == "ok"}


def traced(cmd: list[str], env: dict[str, str], trace: Path, frames: int) -> tuple[float, float]:
    """One traced process: (ms per frame after its first batch, its fixed seconds)."""
    trace.unlink(missing_ok=True)
    wall = timed(cmd, {**env, "SLEAP_INFER_STARTUP_TRACE": str(trace)})
    marks = json.loads(trace.read_text())["marks"]
    ms = (marks["exit"] - marks["first_batch"]) / (frames - BATCH) * 1000
    return ms, wall - frames * ms / 1000


def measure_traced(
    kind: str, video: Path, work: Path, env: dict[str, str], rounds: int = ROUNDS
) -> dict[str, object]:
    """``--per-frame trace``: long traced runs only, ``rounds`` interleaved rounds."""
    out, trace = work / "out.slp", work / "trace.json"
    long = 192 if KINDS[kind][1] == SYNTHETIC else TRACED_FRAMES  # its whole length
    seen: dict[str, list[tuple[float, float]]] = {r: [] for r in RUNTIMES}
    for _ in range(rounds):
        for runtime in RUNTIMES:
            cmd = command(kind, video, long, runtime, out)
            seen[runtime].append(traced(cmd, env, trace, long))
    row: dict[str, object] = {"method": "trace", "frames": long}
    for runtime in RUNTIMES:
        ms = statistics.median(m for m, _ in seen[runtime])
        fixed = statistics.median(f for _, f in seen[runtime])
        row[runtime] = {"per_frame_ms": round(ms, 2), "fixed_s": round(fixed, 3)}
        print(f"{kind} {runtime}: {row[runtime]}", flush=True)
    return row


def child_env() -> dict[str, str]:
    """The environment every timed child runs in: this checkout's package first."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def measure(
    kind: str, video: Path, work: Path, cache: Path, method: str, rounds: int = ROUNDS
) -> dict[str, object]:
    env = {**child_env(), "SLEAP_INFER_CACHE": str(cache)}
    out = work / "out.slp"
    row: dict[str, object] = {"method": method}
    # The export's one-off cost: the same short ONNX run with an empty cache, then cached.
    cold = timed(command(kind, video, SHORT, "onnx", out), env)
    for runtime in RUNTIMES:
        timed(command(kind, video, SHORT, runtime, out), env)  # primed: files cached
    if method == "trace":
        row = measure_traced(kind, video, work, env, rounds)
        warm = [timed(command(kind, video, SHORT, "onnx", out), env) for _ in range(3)]
        row["export_s"] = round(max(0.0, cold - statistics.median(warm)), 3)
        return row
    long = 160 if kind == "single_instance" else 200
    shorts: dict[str, list[float]] = {r: [] for r in RUNTIMES}
    longs: dict[str, list[float]] = {r: [] for r in RUNTIMES}
    for _ in range(3):  # interleaved: a slow minute of the shared VM hits every runtime
        for runtime in RUNTIMES:
            shorts[runtime].append(timed(command(kind, video, SHORT, runtime, out), env))
            if method == "walls":
                longs[runtime].append(timed(command(kind, video, long, runtime, out), env))
    per_frame = bench_ms(kind, video, work, env) if method == "bench" else {}
    for runtime in RUNTIMES:
        short = statistics.median(shorts[runtime])
        if method == "walls":
            full = statistics.median(longs[runtime])
            per_frame[runtime] = max(0.0, (full - short) / (long - SHORT) * 1000)
        ms = per_frame[runtime]
        row[runtime] = {
            "short_wall_s": round(short, 3),
            "per_frame_ms": round(ms, 2),
            "fixed_s": round(max(0.0, short - SHORT * ms / 1000), 3),
        }
        print(f"{kind} {runtime}: {row[runtime]}", flush=True)
    row["export_s"] = round(max(0.0, cold - statistics.median(shorts["onnx"])), 3)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--per-frame",
        choices=("trace", "walls", "bench"),
        default="trace",
        help="trace: 300-frame processes' own first-batch-to-exit time, five interleaved"
        " rounds (default); walls: whole processes of 10 and 200 frames, three interleaved"
        " rounds; bench: infer bench's warm median at batch 4 (steadier, but without"
        " the video decode beside the network, which slows torch more than OpenVINO)",
    )
    parser.add_argument(
        "--rounds", type=int, default=ROUNDS, help="--per-frame trace: interleaved rounds"
    )
    args = parser.parse_args()
    compile_package(child_env())  # as installed: see bytecode.py
    table: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="auto-table-") as tmp:
        work = Path(tmp)
        longer = {
            SYNTHETIC: longer_video(V / "synthetic_multi.mp4", 8, 3, work / SYNTHETIC),
            ROBOT_X2: longer_video(V / "small_robot.mp4", 2, 1, work / ROBOT_X2),
        }
        for kind in args.kinds.split(","):
            video = longer.get(KINDS[kind][1], V / KINDS[kind][1])
            cache = work / f"cache-{len(table)}"
            table[kind] = measure(kind, video, work, cache, args.per_frame, args.rounds)
            if args.json:  # after every kind: an interrupted run keeps what it measured
                args.json.write_text(json.dumps({"kinds": table}, indent=1))
    facts = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count()}
    if args.json:
        args.json.write_text(json.dumps({"facts": facts, "kinds": table}, indent=1))
    print("\nMEASURED = {")
    for kind, row in table.items():
        cells = ", ".join(
            f'"{r}": ({row[r]["fixed_s"]}, {row[r]["per_frame_ms"]})'  # type: ignore[index]
            for r in RUNTIMES
        )
        print(f'    "{kind}": Costs({{{cells}}}, export_s={row["export_s"]}),')
    print("}")


if __name__ == "__main__":
    main()
