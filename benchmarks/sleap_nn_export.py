"""sleap-nn's own ONNX or TensorRT export of a benchmark case, made once and cached.

``sleap-nn export`` traces the network together with its peak finding, so what
its ONNX runtime computes is fixed at export time: the input size it was traced
at, the peak threshold, and for top-down the number of crop slots per frame
(``--max-instances``). The export is therefore made with the settings the
benchmark's torch run uses, and cached under a folder name that spells them out.
``--format tensorrt`` writes the same ``model.onnx`` plus the engine ``model.trt``
(and ``model.trt.metadata.json``), built for the GPU it ran on at ``--precision``
(sleap-nn's default: fp16); ``sleap-nn predict --runtime tensorrt`` loads
``model.trt``. Export time is never part of a timed run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# sleap-nn's export defaults (sleap_nn/export/cli.py), used when the benchmark leaves them open.
EXPORT_MAX_INSTANCES = 20
EXPORT_MAX_BATCH = 8
DEFAULT_PEAK_THRESHOLD = 0.2
_BOX = "│╭╮╰╯─┃━┏┓┗┛"


@dataclass
class Export:
    """Where a case's export lives, how it was made, and why not when it could not be."""

    dir: Path | None
    cmd: list[str]
    seconds: float | None = None  # None: reused from the cache
    reason: str | None = None  # sleap-nn's own message when it cannot export the case
    fmt: str = "onnx"  # sleap-nn export --format: onnx or tensorrt


def failure_reason(output: str) -> str:
    """sleap-nn's one-line reason from a failed command's output.

    Click errors come in a rich box (their lines are joined); otherwise the last
    exception line, else the last non-empty line."""
    boxed = [
        line.strip().strip(_BOX).strip()
        for line in output.splitlines()
        if line.strip().startswith(("│", "┃"))
    ]
    if boxed:
        return " ".join(part for part in boxed if part)
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[\w.]*(Error|Exception)\b", line):
            return line
    return lines[-1] if lines else "no output"


def export_case(
    exe: Path,
    case: str,
    models: list[Path],
    cache: Path,
    *,
    height: int,
    width: int,
    batch_size: int,
    max_instances: int | None,
    peak_threshold: float | None,
    fmt: str = "onnx",
    device: str = "cpu",
    precision: str | None = None,
) -> Export:
    """Export ``models`` (both of a top-down pair together) with ``sleap-nn export
    --format fmt`` (onnx or tensorrt) on ``device``, traced at the video's frame size,
    or reuse the export cached under ``cache``."""
    n = max_instances or EXPORT_MAX_INSTANCES
    batch = max(batch_size, EXPORT_MAX_BATCH)
    thr = DEFAULT_PEAK_THRESHOLD if peak_threshold is None else peak_threshold
    name = f"{case}_{width}x{height}_n{n}_t{thr:g}"  # the CPU ONNX exports keep their name
    if fmt != "onnx":
        name += f"_{fmt}" + (f"_{precision}" if precision else "")
    if device != "cpu":
        name += "_" + device.replace(":", "")
    out = cache / name
    cmd = [str(exe), "export", *map(str, models), "-o", str(out), "--format", fmt]
    cmd += ["--input-height", str(height), "--input-width", str(width)]
    cmd += ["--max-batch-size", str(batch), "--max-instances", str(n)]
    cmd += ["--peak-threshold", f"{thr:g}", "--device", device]
    if precision:
        cmd += ["--precision", precision]
    wanted = ["model.onnx", "export_metadata.json", *(["model.trt"] if fmt == "tensorrt" else [])]
    if all((out / f).is_file() for f in wanted):
        return Export(out, cmd, fmt=fmt)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    run_cmd = [partial.as_posix() if c == str(out) else c for c in cmd]
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1"}
    t0 = time.perf_counter()
    res = subprocess.run(run_cmd, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    if res.returncode != 0 or not all((partial / f).is_file() for f in wanted):
        shutil.rmtree(partial, ignore_errors=True)
        reason = failure_reason(res.stdout + "\n" + res.stderr)
        return Export(None, cmd, seconds, reason, fmt=fmt)
    (partial / "export_cmd.txt").write_text(" ".join(cmd) + "\n")
    shutil.rmtree(out, ignore_errors=True)  # an incomplete earlier export
    partial.rename(out)
    return Export(out, cmd, seconds, fmt=fmt)
