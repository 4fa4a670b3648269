"""tools/install_torch.sh, the step of ``make install`` that picks torch's build.

Only the paths that install nothing run here (tests never need the network): torch
already in the venv is kept, and the report says which build it is and its size.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "install_torch.sh"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIP_NO_INDEX": "1"}  # were it to install anything, fail fast instead
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_torch_already_satisfying_the_pin_is_kept_and_reported() -> None:
    release = version("torch").split("+")[0]
    done = _run(sys.executable, f"torch=={release}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        lines[0]
        == f"install_torch: keeping the torch already in the venv (satisfies torch=={release})"
    )
    import torch

    build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU only"
    assert lines[1].startswith(f"install_torch: torch {torch.__version__} ({build}), ")
    assert lines[1].split(", ")[1].endswith("MiB installed")
    assert lines[2].startswith(f"install_torch: venv {sys.prefix}: ")


def test_report_alone_installs_nothing() -> None:
    done = _run("--report", sys.executable)
    assert done.returncode == 0, done.stderr
    assert [line.split(" ")[1] for line in done.stdout.splitlines()] == ["torch", "venv"]


def test_a_missing_python_is_an_error_not_a_silent_pass(tmp_path: Path) -> None:
    done = _run(str(tmp_path / "no-such-python"), "torch==0")
    assert done.returncode != 0
