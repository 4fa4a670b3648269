"""examples/slurm/ on a real SLURM cluster: one node, started here for the test.

The array job of ``predict_array.sh`` runs 3 shards over 6 videos; one task is
cancelled with ``scancel`` while it is part-way through a video, and the whole
array is submitted again (the script always passes ``--resume``). What a user
relies on is then checked: every output is complete and the same as one
``infer predict`` process over all 6 videos, no journal or temporary file is
left, and each task's summary JSON lists exactly its shard's videos.

To be sure the kill lands mid-video whatever the machine's speed, the task is
first frozen (``scancel --signal=STOP``) as soon as a journal shows; the
frozen journal says whether the video is part-done. Only then is it cancelled
(SLURM sends SIGCONT and SIGTERM, then SIGKILL after ``KillWait``).

Needs Debian's ``slurm-wlm`` and ``munge`` (``.ci/run`` installs them where it
can); skips with the reason when they are missing or the cluster does not start.
The cluster is ``examples/slurm/local_cluster.sh``'s, with all its state in a
temp folder, and is stopped at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest

from sleap_infer.core.errors import ResumeError
from sleap_infer.journal import journal_path, read_journal

import scene
from conftest import EXAMPLES, ROOT, SYNTHETIC_MODEL, assert_same_predictions, predicted_poses

pytestmark = pytest.mark.slurm

SLURM_DIR = EXAMPLES / "slurm"
N_VIDEOS = 6
N_TASKS = 3
N_FRAMES = 40  # per video; batches of 4, so a running video has several to cut between
BATCH_SIZE = 4
PATIENCE_S = 300.0  # a hang guard only: nothing here asserts on speed
NEEDED = ("sbatch", "squeue", "scancel", "sinfo", "scontrol", "slurmctld", "slurmd", "munged")
T = TypeVar("T")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def cluster() -> Iterator[dict[str, str]]:
    """A running one-node cluster; yields the environment that reaches it (``SLURM_CONF``)."""
    missing = [name for name in NEEDED if shutil.which(name) is None]
    if missing:
        pytest.skip(
            f"SLURM not installed ({', '.join(missing)} missing): apt-get install slurm-wlm munge"
        )
    # Not under pytest's tmp_path: munge's socket path must stay short (< 108 bytes).
    folder = Path(tempfile.mkdtemp(prefix="sleap-infer-slurm-"))
    env = {
        **os.environ,
        "LOCAL_CLUSTER_CTLD_PORT": str(_free_port()),
        "LOCAL_CLUSTER_SLURMD_PORT": str(_free_port()),
        # Three tasks at once even on a 2-CPU machine: the node declares at least 3 CPUs.
        "LOCAL_CLUSTER_CPUS": str(max(N_TASKS, os.cpu_count() or 1)),
    }
    script = str(SLURM_DIR / "local_cluster.sh")
    started = subprocess.run(
        [script, "start", str(folder)], env=env, capture_output=True, text=True, check=False
    )
    try:
        if started.returncode != 0:
            pytest.skip(f"the local SLURM cluster did not start: {started.stderr.strip()}")
        yield {**env, "SLURM_CONF": str(folder / "slurm.conf")}
    finally:
        subprocess.run([script, "stop", str(folder)], env=env, capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _run(env: dict[str, str], *cmd: str, check: bool = True) -> str:
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def _wait(what: str, probe: Callable[[], T | None], explain: Callable[[], str]) -> T:
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        found = probe()
        if found is not None:
            return found
        time.sleep(0.1)
    raise AssertionError(f"no {what} after {PATIENCE_S:.0f} s\n{explain()}")


def _task_states(env: dict[str, str], job: str) -> dict[int, str]:
    """Array task id -> state, for every task of ``job`` (finished ones included)."""
    out = _run(
        env, "squeue", "--noheader", "--array", "--states=all", f"--jobs={job}", "--format=%K %T"
    )
    states = {}
    for line in out.splitlines():
        task, state = line.split()
        states[int(task)] = state
    return states


def _finished(env: dict[str, str], job: str) -> dict[int, str] | None:
    states = _task_states(env, job)
    active = {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "REQUEUED"}
    if len(states) == N_TASKS and not active & set(states.values()):
        return states
    return None


def _submit(env: dict[str, str], work: Path) -> str:
    """``sbatch`` the example as a user would, minus the GPU: 3 tasks of 1 CPU."""
    job = _run(
        env,
        "sbatch",
        "--parsable",
        f"--array=0-{N_TASKS - 1}",
        f"--chdir={work}",
        "--gres=none",
        "--cpus-per-task=1",
        "--mem=1G",
        str(SLURM_DIR / "predict_array.sh"),
    ).strip()
    return job.split(";")[0]


def _explain(env: dict[str, str], work: Path) -> Callable[[], str]:
    """What the failure message shows: the queue, the jobs' logs, slurmctld's log."""
    ctld = Path(env["SLURM_CONF"]).parent / "log" / "slurmctld.log"

    def explain() -> str:
        lines = [_run(env, "squeue", "--array", "--states=all", check=False)]
        for log in sorted((work / "logs").glob("*.log")):
            lines.append(f"--- {log.name}\n" + "\n".join(log.read_text().splitlines()[-15:]))
        if ctld.exists():
            lines.append("--- slurmctld.log\n" + "\n".join(ctld.read_text().splitlines()[-15:]))
        return "\n".join(lines)

    return explain


def _jobcomp(env: dict[str, str], job: str) -> dict[int, dict[str, str]]:
    """The finished tasks' records (jobcomp/filetxt: SLURM's accounting without a database)."""
    path = Path(env["SLURM_CONF"]).parent / "log" / "jobcomp.txt"
    records = {}
    for line in path.read_text().splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if fields.get("ArrayJobId") == job:
            records[int(fields["ArrayTaskId"])] = fields
    return records


def _output(out: Path, video: Path) -> Path:
    return out / f"{video.name}.predictions.slp"


def _predicted(journal: Path) -> int | None:
    try:
        return read_journal(journal).n_predicted
    except (ResumeError, OSError):  # not there (any more), or no header yet
        return None


def _stopped(env: dict[str, str], job: str, task: int) -> bool | None:
    """Whether every process of the array task is stopped (or gone): the signal has landed.

    ``scancel --signal`` returns before slurmd delivers it, so this asks for the
    task's pids (``scontrol listpids``, on this very node) and reads their state."""
    ids = _run(env, "squeue", "--noheader", "--array", f"--jobs={job}", "--format=%K %A")
    raw = dict(line.split() for line in ids.splitlines()).get(str(task))
    if raw is None:
        return True
    listed = _run(env, "scontrol", "listpids", raw, check=False).splitlines()[1:]
    for pid in (line.split()[0] for line in listed if line.strip()):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # gone
        if state not in ("T", "t", "Z", "X"):
            return None  # not yet
    return True


def _freeze_mid_video(
    env: dict[str, str], job: str, videos: list[Path], out: Path
) -> tuple[int, Path, int] | None:
    """Stop (SIGSTOP) a task whose video is part-predicted: (task, video, frames in its journal).

    A task caught between videos, or before its first batch, is let go again."""
    for k, video in enumerate(videos):
        journal = journal_path(_output(out, video))
        if not journal.exists():
            continue
        task = k % N_TASKS
        _run(env, "scancel", "--batch", "--signal=STOP", f"{job}_{task}", check=False)
        _wait(f"SIGSTOP of task {task}", partial(_stopped, env, job, task), str)
        predicted = _predicted(journal)
        if predicted and predicted < N_FRAMES and not _output(out, video).exists():
            return task, video, predicted
        _run(env, "scancel", "--batch", "--signal=CONT", f"{job}_{task}", check=False)
    return None


def _summary(out: Path, task: int) -> dict[str, Any]:
    return json.loads((out / f"summary_{task}.json").read_text())


def _named(summary: dict[str, Any]) -> list[Path]:
    return [Path(v["video"]).resolve() for v in summary["videos"]]


def _statuses(summary: dict[str, Any]) -> list[str]:
    return [v["status"] for v in summary["videos"]]


def _log(title: str, lines: dict[int, Any]) -> None:
    """What a passing run did, for ``pytest -s`` (and the failure report)."""
    print(title)
    for task, line in sorted(lines.items()):
        print(f"  task {task}: {line}")


def test_array_with_a_task_cancelled_mid_video_resumes_to_the_single_process_result(
    cluster: dict[str, str], tmp_path: Path
) -> None:
    videos_dir = tmp_path / "videos"
    videos = [videos_dir / f"video_{k}.mp4" for k in range(N_VIDEOS)]
    for k, video in enumerate(videos):
        scene.write_video(video, n_frames=N_FRAMES, seed=k)
    shards = {task: [v.resolve() for v in videos[task::N_TASKS]] for task in range(N_TASKS)}
    env = {
        **cluster,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "OMP_NUM_THREADS": "1",  # the same torch threads in every process
        "INFER_CMD": f"{sys.executable} -m sleap_infer",
        "INFER_VIDEOS": str(videos_dir),
        "INFER_MODELS": str(SYNTHETIC_MODEL),
        "INFER_OUTPUT": str(tmp_path / "predictions"),
        "INFER_DEVICE": "cpu",
        "INFER_BATCH_SIZE": str(BATCH_SIZE),
        # A fresh export cache: with nothing exported, ``--backend auto`` keeps these short
        # videos on torch in every process, so the results compare bit for bit. With the
        # session's cache (another test's export in it) the single process, which weighs
        # all six videos, took OpenVINO and each task's share torch: 1e-5 px apart.
        "SLEAP_INFER_CACHE": str(tmp_path / "export-cache"),
    }
    single = tmp_path / "single"
    clock = time.monotonic()
    _run(
        env,
        *env["INFER_CMD"].split(),
        "predict",
        str(videos_dir),
        "--model",
        str(SYNTHETIC_MODEL),
        "--device=cpu",
        f"--batch-size={BATCH_SIZE}",
        "--output",
        str(single),
        "--quiet",
    )
    print(f"single process, {N_VIDEOS} videos: {time.monotonic() - clock:.1f} s")
    out = Path(env["INFER_OUTPUT"])
    work = tmp_path / "work"
    (work / "logs").mkdir(parents=True)
    explain = _explain(env, work)

    clock = time.monotonic()
    first = _submit(env, work)
    frozen = _wait(
        "task part-way through a video", lambda: _freeze_mid_video(env, first, videos, out), explain
    )
    victim, video, predicted = frozen
    print(
        f"job {first}: task {victim} stopped at {predicted}/{N_FRAMES} frames of {video.name}",
        "-> scancel",
    )
    _run(env, "scancel", f"{first}_{victim}")
    states = _wait(f"end of job {first}", lambda: _finished(env, first), explain)
    _log(f"job {first} (squeue), {time.monotonic() - clock:.1f} s", states)
    assert states == {t: "CANCELLED" if t == victim else "COMPLETED" for t in range(N_TASKS)}
    assert journal_path(_output(out, video)).exists()  # the part-done video kept its journal
    assert not _output(out, video).exists()
    for task in range(N_TASKS):
        summary = _summary(out, task)
        assert _named(summary) == shards[task]
        if task == victim:  # infer got SIGTERM: it says so, and what it left
            assert (summary["status"], summary["exit_code"]) == ("interrupted", 130)
            at = shards[task].index(video.resolve())  # done before it, none started after
            assert _statuses(summary) == ["done"] * at + ["interrupted"] + ["not_started"] * (
                len(shards[task]) - at - 1
            )
        else:
            assert (summary["status"], _statuses(summary)) == ("ok", ["done", "done"])

    clock = time.monotonic()
    second = _submit(env, work)  # the same array again: the script always passes --resume
    states = _wait(f"end of job {second}", lambda: _finished(env, second), explain)
    records = _wait(f"jobcomp records of {second}", lambda: _jobcomp(env, second) or None, explain)
    _log(f"job {second} (squeue), {time.monotonic() - clock:.1f} s", states)
    _log(
        f"job {second} (jobcomp)",
        {t: f"{r['JobState']} ExitCode={r['ExitCode']}" for t, r in records.items()},
    )
    assert states == {t: "COMPLETED" for t in range(N_TASKS)}
    assert {t: r["ExitCode"] for t, r in records.items()} == {t: "0:0" for t in range(N_TASKS)}
    for task in range(N_TASKS):
        summary = _summary(out, task)
        assert _named(summary) == shards[task]
        assert summary["status"] == "ok"
        if task == victim:  # skips what it finished, continues the journal, does the rest
            at = shards[task].index(video.resolve())
            assert _statuses(summary) == ["skipped"] * at + ["done"] * (len(shards[task]) - at)
            resumed = summary["videos"][at]["resumed_frames"]
            print(f"job {second}: task {task} resumed {video.name} after frame {resumed}")
            assert predicted <= resumed < N_FRAMES
        else:
            assert _statuses(summary) == ["skipped", "skipped"]

    for video in videos:
        frames, _, _ = predicted_poses(_output(out, video))
        assert frames == list(range(N_FRAMES))  # every frame, once
        assert_same_predictions(_output(out, video), _output(single, video))
    leftovers = [p for p in tmp_path.rglob("*") if p.name.endswith(".partial") or ".tmp" in p.name]
    assert leftovers == []
