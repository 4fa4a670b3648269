#!/usr/bin/env python
"""Start-up of ``infer predict``: process start to the first batch, phase by phase.

Each case runs ``infer predict VIDEO --model ... --frames 0-3 --device cpu``
(one batch of 4 frames) as a subprocess with ``SLEAP_INFER_STARTUP_TRACE``
set, so the process itself records when it reached each point of its
start-up and how long each load phase took (:mod:`sleap_infer.core.startup`);
the launcher adds the process's wall and CPU time. A second set of runs under
``python -X importtime`` splits the imports' time by whose they are: torch
(everything imported under ``torch``), ours (``sleap_infer`` modules' own
time) and the other packages (named by the package our module imported, or
their own name for imports made at run time, e.g. inside functions). The
floors are measured alike, alternating with the runs: an empty interpreter,
and ``import torch`` until imported and as a whole process (its exit included).

    .venv/bin/python benchmarks/startup.py                      # all cases, 3 runs each
    .venv/bin/python benchmarks/startup.py --cases single,topdown --repeats 5
    .venv/bin/python benchmarks/startup.py --tree before=/tmp/a --tree after=/tmp/b

``--tree NAME=DIR`` (repeatable) runs the ``sleap_infer`` package in DIR
instead of the installed one (PYTHONPATH), alternating runs between trees so
that a loaded machine slows them alike; each case then gets a before/after
table with a ratio column (last tree / first). Cases: single, topdown,
bottomup (``--backend torch``) and the same with ``--backend onnx``
(``single-onnx``, ...); every case and tree gets one untimed run first (disk
cache; onnx exports made on first use, into a cache folder of this run, or
``--cache``). Values are medians of ``--repeats`` runs. Timings on a shared
machine are noisy: compare ratios and medians, not single numbers. Needs
../shared/fixtures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bytecode import compile_package

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT.parent / "shared" / "fixtures"
TRACE_ENV = "SLEAP_INFER_STARTUP_TRACE"
MODELS = {
    "single": ["minimal_instance_single_instance"],
    "topdown": ["minimal_instance_centroid", "minimal_instance_centered_instance"],
    "bottomup": ["minimal_instance_bottomup"],
}
VIDEO = "centered_pair_small.mp4"
FLOORS = ("python -c pass", "import torch: imported", "import torch: process wall")
TORCH_PACKAGES = {"torch", "torchgen", "functorch", "torchvision"}

# Sequential phases: (name, from mark, to mark). "spawn" is the launcher's clock.
PHASES = [
    ("interpreter", "spawn", "package"),  # python start-up, site, entry script
    ("cli imports", "package", "cli_imported"),  # sleap_infer.cli and its subcommands
    ("cli parse", "cli_imported", "command"),  # typer builds the command, parses argv
    ("command imports", "command", "command_imported"),  # batch, predictor, torch, ...
    ("plan", "command_imported", "load_start"),  # inputs expanded, outputs planned
    ("model load", "load_start", "loaded"),  # split below
    ("video setup", "loaded", "run_start"),  # open video, fingerprint, journal check
    ("first decode", "run_start", "first_frames"),  # journal created, 4 frames decoded
    ("warmup + 1st batch", "first_frames", "first_batch"),  # split below
    ("finish", "first_batch", "exit"),  # output file written, atexit handlers
]
LOAD_SPANS = [
    "config_parse",
    "checkpoint_read",
    "network_build",
    "load_state_dict",
    "checkpoint_hash",
    "layer_build",
]


def case_args(case: str, video: Path, out: Path) -> list[str]:
    kind, _, backend = case.partition("-")
    args = ["predict", str(video), "-o", str(out), "--frames", "0-3", "--overwrite", "-q"]
    for name in MODELS[kind]:
        args += ["--model", str(FIXTURES / "models" / name)]
    return [*args, "--backend", backend or "torch", "--device", "cpu"]


def run_traced(infer: Path, args: list[str], env: dict[str, str], trace: Path) -> dict:
    """One traced run: the process's marks relative to the launch, spans, wall and CPU."""
    trace.unlink(missing_ok=True)
    env = {**env, TRACE_ENV: str(trace)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    proc = subprocess.run([str(infer), *args], env=env, capture_output=True, text=True)
    wall = time.time() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"infer {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    data = json.loads(trace.read_text())
    marks = {k: v - t0 for k, v in data["marks"].items()}
    marks["spawn"] = 0.0
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"marks": marks, "spans": data["spans"], "wall": wall, "cpu": cpu}


def phase_row(run: dict) -> dict[str, float]:
    """Seconds per phase of one run (and the load and first-batch splits)."""
    m, spans = run["marks"], run["spans"]
    row = {name: m[b] - m[a] for name, a, b in PHASES if a in m and b in m}
    for name in LOAD_SPANS:
        row[f"  {name}"] = spans.get(name, 0.0)
    load = row.get("model load", 0.0)
    row["  (load, other)"] = load - sum(spans.get(n, 0.0) for n in LOAD_SPANS)
    row["  warmup"] = spans.get("warmup", 0.0)
    row["  first batch"] = row.get("warmup + 1st batch", 0.0) - row["  warmup"]
    row["interpreter exit"] = run["wall"] - m["exit"]  # after atexit: teardown
    row["TO FIRST BATCH"] = m["first_batch"]
    row["PROCESS WALL"] = run["wall"]
    row["PROCESS CPU (user+sys)"] = run["cpu"]
    return row


def _importtime_tree(stderr: str) -> list[tuple[str, float, list[str]]]:
    """``-X importtime`` lines as (module, self seconds, ancestors outermost first)."""
    lines = []
    for line in stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if match:
            lines.append((int(match[1]) / 1e6, len(match[3]) // 2, match[4]))
    out = []
    stack: list[tuple[int, str]] = []
    for self_s, level, name in reversed(lines):  # a parent is printed after its children
        while stack and stack[-1][0] >= level:
            stack.pop()
        out.append((name, self_s, [n for _, n in stack]))
        stack.append((level, name))
    return out


def import_split(stderr: str) -> dict[str, float]:
    """Import seconds by owner: torch (anything imported under it), ours (sleap_infer
    modules' own time), and the other packages, named by the one our module imported
    (or, for imports at the top level, e.g. lazy ones inside functions, their own)."""
    split: dict[str, float] = defaultdict(float)
    for name, self_s, ancestors in _importtime_tree(stderr):
        chain = [a.split(".")[0] for a in ancestors] + [name.split(".")[0]]
        if any(p in TORCH_PACKAGES for p in chain):
            split["torch"] += self_s
        elif chain[-1] == "sleap_infer":
            split["sleap_infer (own)"] += self_s
        elif "sleap_infer" not in chain:
            split[chain[0]] += self_s
        else:  # the package one of our modules imported
            last = max(i for i, p in enumerate(chain) if p == "sleap_infer")
            split[chain[last + 1]] += self_s
    out = {"total": sum(split.values()), "torch": split.pop("torch", 0.0)}
    out["sleap_infer (own)"] = split.pop("sleap_infer (own)", 0.0)
    out["others"] = sum(split.values())
    out.update({f"  {k}": v for k, v in sorted(split.items(), key=lambda kv: -kv[1])})
    return out


def run_importtime(infer: Path, args: list[str], env: dict[str, str]) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", str(infer), *args],
        env=env,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        sys.exit(f"importtime run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return import_split(proc.stderr)


def floors_once() -> dict[str, float]:
    """An empty interpreter's wall, and ``import torch``'s: until imported, and in all."""
    t0 = time.time()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    empty = time.time() - t0
    t0 = time.time()
    code = "import time, torch; print(time.time())"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    wall = time.time() - t0
    imported = float(out.stdout.split()[-1]) - t0
    return dict(zip(FLOORS, (empty, imported, wall)))


def medians(rows: list[dict[str, float]], small: float = 0.0) -> dict[str, float]:
    """Per key, the median over ``rows``; indented keys (details) below ``small`` s are
    summed into ``  (smaller ones)``."""
    keys = list(dict.fromkeys(k for row in rows for k in row))
    out = {k: statistics.median(row.get(k, 0.0) for row in rows) for k in keys}
    if small > 0:
        tiny = [k for k, v in out.items() if k.startswith("  ") and v < small]
        if tiny:
            out["  (smaller ones)"] = sum(out.pop(k) for k in tiny)
    return out


def print_columns(title: str, columns: dict[str, dict[str, float]], ratio: bool) -> None:
    """Rows = phases, one column per entry of ``columns`` (and last/first if ``ratio``)."""
    keys = list(dict.fromkeys(k for col in columns.values() for k in col))
    width = max(len(k) for k in keys) + 2
    head = "".join(f"{c:>14}" for c in columns) + (f"{'ratio':>8}" if ratio else "")
    print(f"\n{title:<{width}}{head}")
    values = list(columns.values())
    first, last = values[0], values[-1]
    for key in keys:
        cells = "".join(f"{col.get(key, 0.0):>14.3f}" for col in columns.values())
        if ratio:
            a, b = first.get(key, 0.0), last.get(key, 0.0)
            cells += f"{b / a:>8.2f}" if a >= 0.005 else f"{'':>8}"
        print(f"{key:<{width}}{cells}")


def run_case(
    case: str,
    infer: Path,
    args: list[str],
    envs: dict[str, dict[str, str]],
    trace: Path,
    opts: argparse.Namespace,
    floor_runs: dict[str, list[float]],
) -> dict[str, dict[str, float]]:
    """One case on every tree, runs alternating: tree -> median phases (and import split)."""
    rows: dict[str, list] = {name: [] for name in envs}
    splits: dict[str, list] = {name: [] for name in envs}
    for env in envs.values():  # untimed: disk cache, export on first use
        run_traced(infer, args, env, trace)
    for _ in range(opts.repeats):
        for name, value in floors_once().items():
            floor_runs[name].append(value)
        for name, env in envs.items():
            rows[name].append(phase_row(run_traced(infer, args, env, trace)))
            if not opts.no_importtime:
                splits[name].append(run_importtime(infer, args, env))
    out = {}
    for name in envs:
        result = medians(rows[name])
        if splits[name]:
            for key, value in medians(splits[name], small=0.005).items():
                detail = key.startswith("  ")
                result[f"{'  ' if detail else ''}imports: {key.strip()}"] = value
        out[name] = result
        print(f"{case} [{name}]: first batch at {result['TO FIRST BATCH']:.3f} s", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="single,topdown,bottomup,single-onnx,topdown-onnx,"
                    "bottomup-onnx")  # fmt: skip
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-importtime", action="store_true", help="skip the import split runs")
    ap.add_argument(
        "--tree",
        action="append",
        metavar="NAME=DIR",
        help="compare source trees: DIR holds a sleap_infer package run in place of the "
        "installed one (PYTHONPATH); repeat it, runs alternate between trees; the ratio "
        "column is last/first",
    )
    ap.add_argument("--cache", type=Path, help="export cache folder (default: a temporary one)")
    ap.add_argument("--json", type=Path, help="write the medians here")
    opts = ap.parse_args()
    infer = Path(sys.executable).parent / "infer"
    video = FIXTURES / "videos" / VIDEO
    cases = [c.strip() for c in opts.cases.split(",") if c.strip()]
    trees = dict(t.split("=", 1) for t in opts.tree) if opts.tree else {"installed": ""}
    floor_runs: dict[str, list[float]] = {name: [] for name in FLOORS}
    with tempfile.TemporaryDirectory(prefix="startup_") as tmp:
        base = {**os.environ, "SLEAP_INFER_CACHE": str(opts.cache or Path(tmp) / "cache")}
        base.pop(TRACE_ENV, None)
        envs = {}
        for name, tree in trees.items():
            path = os.pathsep.join(p for p in (tree, base.get("PYTHONPATH", "")) if p)
            envs[name] = {**base, "PYTHONPATH": path} if path else base
            compile_package(envs[name], Path(tmp))  # as installed: see bytecode.py
        results = {
            case: run_case(
                case,
                infer,
                case_args(case, video, Path(tmp) / f"{case}.slp"),
                envs,
                Path(tmp) / "trace.json",
                opts,
                floor_runs,
            )
            for case in cases
        }
    floors = {k: statistics.median(v) for k, v in floor_runs.items()}
    torch_floor = floors["import torch: imported"]
    for per_tree in results.values():
        for result in per_tree.values():
            result["first batch above torch floor"] = result["TO FIRST BATCH"] - torch_floor
            result["wall above torch floor"] = (
                result["PROCESS WALL"] - floors["import torch: process wall"]
            )
    if len(trees) == 1:
        (only,) = trees
        print_columns("phase (median s)", {c: r[only] for c, r in results.items()}, False)
    else:
        for case, per_tree in results.items():
            print_columns(f"{case} (median s)", per_tree, True)
    print("\nfloors (median s): " + ", ".join(f"{k}: {v:.3f}" for k, v in floors.items()))
    if opts.json:
        opts.json.write_text(json.dumps({"floors": floors, "cases": results}, indent=1))


if __name__ == "__main__":
    main()
