"""A first ``--backend onnx`` run ends quietly (issue 30): no ``nanobind: leaked ...``
lines from the ONNX exporter's C++ bindings at interpreter exit, and the export shows
as its own stage. Runs the real command line in a subprocess, with a fresh export
cache, because the leak report is written by the extension itself as the process ends.

A guard, not a reproduction: onnx 1.20-1.23 (the nanobind extension here) switch their
leak report off (onnx/onnx#7283), and no other package in this environment carries
nanobind, so the report could not be made to appear on the development machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from model_factory import config_dict, write_model_dir

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")


def test_first_onnx_run_exits_without_leak_reports(tmp_path: Path, counter_video: Path) -> None:
    raw = config_dict("single_instance", preprocessing={"max_height": 48, "max_width": 48})
    model = write_model_dir(tmp_path / "m", raw)
    out = tmp_path / "out.slp"
    env = {**os.environ, "SLEAP_INFER_CACHE": str(tmp_path / "fresh-cache")}
    run = ["predict", str(counter_video), "-m", str(model), "--backend", "onnx"]
    options = ["--frames", "0-3", "-o", str(out), "--progress", "plain"]
    done = subprocess.run(
        [sys.executable, "-m", "sleap_infer", *run, *options],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "nanobind" not in done.stderr
    assert "leaked" not in done.stderr
    lines = done.stderr.splitlines()
    started = next(i for i, line in enumerate(lines) if "export: Exporting m to onnx" in line)
    finished = next(
        i for i, line in enumerate(lines) if "export: exported m to onnx: done in" in line
    )
    assert started < finished and out.is_file()
