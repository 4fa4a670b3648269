"""examples/slurm/predict_array.sh builds the right ``infer predict`` line from SLURM's variables.

Runs everywhere (no SLURM needed): the script is called as a job would call it,
with the array variables set and ``infer`` replaced by a stub that prints its
arguments. The real run on a cluster is test_slurm_cluster.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import EXAMPLES

SCRIPT = EXAMPLES / "slurm" / "predict_array.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _job(tmp_path: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """Run the script as array task; ``infer`` on PATH is a stub printing one argument a line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    stub = bin_dir / "infer"
    stub.write_text("#!/bin/sh\nprintf '%s\\n' \"$@\"\n")
    stub.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "INFER_"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        ["bash", str(SCRIPT)], env={**env, **variables}, capture_output=True, text=True
    )


def test_an_array_task_predicts_its_own_shard_with_resume_and_its_own_summary(
    tmp_path: Path,
) -> None:
    job = _job(tmp_path, SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_TASK_COUNT="3")
    assert job.returncode == 0, job.stderr
    assert job.stdout.splitlines() == [
        "predict",
        "/data/videos",
        "--recursive",
        "--model",
        "/models/centroid",
        "--model",
        "/models/centered_instance",
        "--device",
        "cuda",
        "--batch-size",
        "16",
        "--shard",
        "1/3",
        "--output",
        "/data/predictions",
        "--resume",
        "--summary-json",
        "/data/predictions/summary_1.json",
    ]


def test_the_environment_sets_the_command_paths_and_shard_count(tmp_path: Path) -> None:
    job = _job(
        tmp_path,
        SLURM_ARRAY_TASK_ID="5",
        SLURM_ARRAY_TASK_COUNT="1",  # --array=5 alone: resubmitting one element
        INFER_SHARDS="8",
        INFER_CMD=f"{tmp_path / 'bin' / 'infer'} -m sleap_infer",  # e.g. "python -m sleap_infer"
        INFER_VIDEOS="/v/list.txt",
        INFER_MODELS="/m/one",
        INFER_OUTPUT="/out",
        INFER_DEVICE="cpu",
        INFER_BATCH_SIZE="4",
    )
    assert job.returncode == 0, job.stderr
    args = job.stdout.splitlines()
    assert args[:5] == ["-m", "sleap_infer", "predict", "/v/list.txt", "--recursive"]
    assert args[5:] == [
        "--model",
        "/m/one",
        "--device",
        "cpu",
        "--batch-size",
        "4",
        "--shard",
        "5/8",
        "--output",
        "/out",
        "--resume",
        "--summary-json",
        "/out/summary_5.json",
    ]


def test_outside_an_array_it_stops_with_a_message(tmp_path: Path) -> None:
    job = _job(tmp_path, SLURM_ARRAY_TASK_ID="0")
    assert job.returncode != 0
    assert "submit with --array=0-N" in job.stderr
    assert job.stdout == ""
