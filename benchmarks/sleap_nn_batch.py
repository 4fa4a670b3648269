#!/usr/bin/env python
"""Run many ``sleap-nn`` CLI commands in one process (start-up paid once); sleap-nn's venv only.

Each ``sleap-nn predict -i x.slp --tracking ...`` spends ~7 s importing torch
and ~0.2 s tracking; the tracking benchmarks run a hundred of them. This
script, run with sleap-nn's own interpreter (``.bench-venv/sleap-nn/bin/python``;
it imports sleap-nn, which our environment never does), reads a JSON list of
jobs ``{"args": [...], "log": path}``, invokes sleap-nn's click CLI for each in
turn (``standalone_mode=False``: a failure raises instead of exiting), and
writes ``{"rc": 0|1, "error": str, "runtime_s": float|None}`` per job to the
results file. A job's stdout/stderr (sleap-nn's log) goes to its ``log``.

    .bench-venv/sleap-nn/bin/python benchmarks/sleap_nn_batch.py jobs.json results.json
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import traceback


def run_job(cli, args: list[str], log_path: str) -> dict:
    from loguru import logger

    with (
        open(log_path, "w") as log,
        contextlib.redirect_stdout(log),
        contextlib.redirect_stderr(log),
    ):
        handler = logger.add(log, format="{message}")
        try:
            cli.main(args=args, standalone_mode=False, prog_name="sleap-nn")
            rc, error = 0, ""
        except SystemExit as exc:  # a command that exits on its own
            rc = 0 if exc.code in (0, None) else 1
            error = "" if rc == 0 else f"exit {exc.code}"
        except Exception as exc:  # reported per job, the batch goes on
            rc, error = 1, f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:300]
            traceback.print_exc(file=log)
        finally:
            logger.remove(handler)
    with open(log_path) as log:
        text = log.read()
    runtime = re.findall(r"Total runtime: ([0-9.]+) secs", text)
    return {"rc": rc, "error": error, "runtime_s": float(runtime[-1]) if runtime else None}


_SHIM: list = []  # keeps the stand-in op library alive


def torchvision_shim() -> None:
    """Let torchvision import where its C extension cannot load.

    A CUDA torchvision wheel next to a CPU torch (the only pair some machines'
    package mirrors hold) fails to load ``torchvision/_C.so``, and torchvision's
    import then dies registering fake kernels for ``nms``/``qnms``, ops that
    were never defined; sleap-nn imports torchvision at start-up, so every job
    would fail although tracking and the pose models never call those ops.
    Defining the two schemas (no kernels: a call would still fail loudly) lets
    the import finish; on a working install this does nothing.
    """
    import torch

    try:
        import torchvision
    except RuntimeError as exc:
        if "torchvision::nms" not in str(exc):
            raise
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _SHIM.append(lib)
        import torchvision  # noqa: F401


def main() -> int:
    jobs_path, results_path = sys.argv[1], sys.argv[2]
    torchvision_shim()
    from loguru import logger
    from sleap_nn.cli import cli

    logger.remove()  # its import logs to the real stderr; each job logs to its own file
    with open(jobs_path) as f:
        jobs = json.load(f)
    results = [run_job(cli, job["args"], job["log"]) for job in jobs]
    with open(results_path, "w") as f:
        json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
