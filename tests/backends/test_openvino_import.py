"""OpenVINO is imported without its model converter, whose import starts telemetry that
writes into ``~/intel`` and sends an event from a non-daemon thread."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, home: Path, pythonpath: list[Path] | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "TF_BUILD", "JENKINS_URL")}
    env["HOME"] = str(home)  # (OpenVINO's telemetry is off under a CI variable: none here)
    env["PYTHONPATH"] = os.pathsep.join(map(str, [*(pythonpath or []), ROOT]))
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(importlib.util.find_spec("openvino") is None, reason="needs openvino")
def test_openvino_runs_without_its_converter_thread_or_files_in_home(tmp_path: Path) -> None:
    out = _run(
        """
        import os, sys, threading
        from sleap_infer.backends.openvino_import import import_openvino
        ov = import_openvino()
        devices = ov.Core().available_devices
        threads = sorted(t.name for t in threading.enumerate())
        converter = "openvino.tools.ovc" in sys.modules
        home = sorted(os.listdir(os.environ["HOME"]))
        os.environ["CI"] = "true"  # (so the real converter's telemetry stays off below)
        import openvino.tools.ovc as ovc
        print(devices, threads, converter, home, hasattr(ovc, "convert_model"))
        """,
        tmp_path,
    )
    assert out == "['CPU'] ['MainThread'] False [] True"


def test_an_openvino_that_needs_its_converter_is_imported_as_usual(tmp_path: Path) -> None:
    # A stand-in package whose __init__ imports the converter without a try: the
    # placeholder makes that fail, and the ordinary import follows.
    package = tmp_path / "site" / "openvino"
    (package / "tools" / "ovc").mkdir(parents=True)
    (package / "__init__.py").write_text("from openvino.tools.ovc import convert_model\n")
    (package / "tools" / "__init__.py").write_text("")
    (package / "tools" / "ovc" / "__init__.py").write_text("def convert_model(): return 'ok'\n")
    out = _run(
        """
        from sleap_infer.backends.openvino_import import import_openvino
        print(import_openvino().convert_model())
        """,
        tmp_path,
        [tmp_path / "site"],
    )
    assert out == "ok"
