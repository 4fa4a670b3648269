"""A disk that fills up (or a file-size limit) while outputs are written: one error line per
video naming its file, the journal kept, no temporary file, the next video still runs, and
a non-zero exit at the end. It used to be a segmentation fault (exit 139) that ended the batch.

The CLI runs in a subprocess here, so that a regression crashes that process, not pytest.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import OutputError
from sleap_infer.journal import read_journal
from sleap_infer.writers import outputs
from sleap_infer.writers.isolate import can_fork
from sleap_infer.writers.outputs import atomic_write

from conftest import SYNTHETIC_MODEL, assert_same_predictions, counter_frames, write_video

resource = pytest.importorskip("resource")  # POSIX only, like the fork these tests are about
N_FRAMES = 24
needs_fork = pytest.mark.skipif(not can_fork(), reason="outputs are written in-process here")


@pytest.fixture()
def two_videos(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "videos"
    folder.mkdir()
    return [write_video(folder / f"{name}.mp4", counter_frames(N_FRAMES)) for name in "ab"]


def predict(videos: list[Path], out: Path, *extra: str, limit_bytes: int | None = None):
    """``infer predict`` in a fresh process (optionally under a file-size limit)."""

    def limit() -> None:
        # Ignored signals stay ignored across exec: writes past the limit fail with EFBIG.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    cmd = [sys.executable, "-m", "sleap_infer", "predict", *map(str, videos)]
    cmd += ["-m", str(SYNTHETIC_MODEL), "-o", str(out), "--device", "cpu", "-q", *extra]
    env = {**os.environ, "COLUMNS": "1000"}  # one message per line, unwrapped
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        preexec_fn=limit if limit_bytes else None,
    )


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (proc.stdout + proc.stderr).splitlines() if "error:" in line]


def assert_failed_cleanly(proc: subprocess.CompletedProcess, out: Path, reason: str) -> None:
    """Exit 1, one line per video naming its output, journals whole, nothing else left."""
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = error_lines(proc)
    assert len(lines) == 2, lines
    for name, line in zip("ab", lines):
        assert f"{out / name}.mp4.predictions.slp: {reason}" in line, line
        assert f"kept in {out / name}.mp4.predictions.slp.partial" in line
        assert read_journal(out / f"{name}.mp4.predictions.slp.partial").n_predicted == N_FRAMES
    assert sorted(p.name for p in out.iterdir()) == [
        "a.mp4.predictions.slp.partial",
        "b.mp4.predictions.slp.partial",
    ]


def test_a_file_size_limit_while_writing_outputs_fails_each_video_cleanly(
    two_videos: list[Path], tmp_path: Path
) -> None:
    # HDF5 fails exactly as on a full disk (a write error mid-file), without needing root:
    # the journals (a few KB) fit under the limit, the .slp files do not.
    out = tmp_path / "out"
    proc = predict(two_videos, out, limit_bytes=12_000)
    assert "Segmentation fault" not in proc.stderr and proc.returncode != -signal.SIGSEGV
    assert_failed_cleanly(proc, out, "cannot write predictions (File too large)")

    again = predict(two_videos, out, "--resume")  # no limit now: the journals finish the job
    assert again.returncode == 0, again.stdout + again.stderr
    predict(two_videos[:1], tmp_path / "fresh.slp")
    assert_same_predictions(tmp_path / "fresh.slp", out / "a.mp4.predictions.slp")


@contextlib.contextmanager
def tiny_tmpfs(where: Path, size_kb: int) -> Iterator[Path]:
    """A real, small filesystem (root only: mount), unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir()
    cmd = ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(where)]
    mounted = subprocess.run(cmd, capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(folder: Path, leave: int) -> None:
    free = shutil.disk_usage(folder).free
    (folder / "filler").write_bytes(b"\0" * max(0, free - leave))


def test_a_full_disk_fails_each_video_cleanly_and_resume_finishes(
    two_videos: list[Path], tmp_path: Path
) -> None:
    with tiny_tmpfs(tmp_path / "tiny", size_kb=256) as disk:
        # Room for both journals (a few KB each), not for a .slp (its empty shell is ~17 KB).
        fill(disk, leave=20 * 1024)
        out = disk / "out"
        proc = predict(two_videos, out)
        assert "Segmentation fault" not in proc.stderr and proc.returncode != -signal.SIGSEGV
        (disk / "filler").unlink()
        assert_failed_cleanly(proc, out, "no space left on device")
        assert re.search(r"needs up to about \d+ KB, \d+ KB free", error_lines(proc)[0])

        again = predict(two_videos, out, "--resume")
        assert again.returncode == 0, again.stdout + again.stderr
        assert len(sio.load_slp(str(out / "b.mp4.predictions.slp"))) > 0


def test_a_journal_on_a_full_disk_is_one_error_and_the_next_video_runs(
    two_videos: list[Path], tmp_path: Path
) -> None:
    with tiny_tmpfs(tmp_path / "tiny", size_kb=256) as disk:
        fill(disk, leave=0)
        out = disk / "out"
        proc = predict(two_videos, out)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        lines = error_lines(proc)
        assert len(lines) == 2, lines  # the second video was attempted after the first failed
        for name, line in zip("ab", lines):
            assert f"{out / name}.mp4.predictions.slp" in line
            assert re.search(r"disk full|no space left", line)
        assert not [p for p in out.rglob("*") if ".tmp" in p.name]


# --- the parent side, without a disk to fill ------------------------------------------------


@pytest.fixture()
def previous(tmp_path: Path) -> Path:
    out = tmp_path / "p.slp"
    out.write_bytes(b"previous good file")
    return out


def _left(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir())


@needs_fork
def test_a_writer_that_crashes_is_one_error_not_a_crash(tmp_path: Path, previous: Path) -> None:
    def segfault(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        os.kill(os.getpid(), signal.SIGSEGV)

    with pytest.raises(
        OutputError, match=r"p\.slp: cannot write predictions \(the writer crashed with SIGSEGV\)"
    ):
        atomic_write(previous, segfault, needs=1000)
    assert previous.read_bytes() == b"previous good file"
    assert _left(tmp_path) == ["p.slp"]


@needs_fork
def test_a_crash_with_less_room_than_needed_is_reported_as_a_full_disk(
    tmp_path: Path, previous: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outputs, "_free_bytes", lambda folder: 4096)

    def segfault(tmp: Path) -> None:
        os.kill(os.getpid(), signal.SIGSEGV)

    kept = tmp_path / "p.slp.partial"
    with pytest.raises(OutputError) as info:
        atomic_write(previous, segfault, needs=3_000_000, kept=kept)
    assert str(info.value) == (
        f"{previous}: no space left on device (needs up to about 3.0 MB, 4 KB free); "
        f"the predictions are kept in {kept} (rerun with --resume once fixed)"
    )


@pytest.mark.parametrize(
    "failure",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        # What h5py raises: the OS error only in HDF5's message text.
        RuntimeError(
            "Can't decrement id ref count (file write failed: time = Thu Dec  3 06:01:12 2026\n"
            ", filename = '/x.slp', file descriptor = 3, errno = 28, error message = 'No "
            "space left on device', buf = 0x5641, total write size = 489376)"
        ),
    ],
)
@pytest.mark.parametrize("fork", [True, False])
def test_enospc_in_any_form_is_a_full_disk_message(
    tmp_path: Path,
    previous: Path,
    failure: Exception,
    fork: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if fork and not can_fork():
        pytest.skip("no fork here")
    monkeypatch.setattr("sleap_infer.writers.isolate.can_fork", lambda: fork)

    def fail(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        raise failure

    free = shutil.disk_usage(tmp_path).free
    with pytest.raises(OutputError) as info:
        atomic_write(previous, fail, needs=2_000_000)
    message = str(info.value)
    assert message.startswith(f"{previous}: no space left on device (needs up to about 2.0 MB, ")
    shown, unit = re.search(r", ([\d.]+) ([KMG]B) free\)", message).groups()
    scale = {"KB": 1e3, "MB": 1e6, "GB": 1e9}[unit]
    assert abs(float(shown) * scale - free) < max(0.02 * free, 200_000)  # the real free space
    assert previous.read_bytes() == b"previous good file" and _left(tmp_path) == ["p.slp"]


@needs_fork
def test_ctrl_c_during_a_write_stops_the_run_and_leaves_no_temporary_file(
    tmp_path: Path, previous: Path
) -> None:
    def interrupted(tmp: Path) -> None:
        tmp.write_bytes(b"half")
        os.kill(os.getpid(), signal.SIGINT)  # the child dies of it, as on a terminal Ctrl-C

    with pytest.raises(KeyboardInterrupt):
        atomic_write(previous, interrupted)
    assert _left(tmp_path) == ["p.slp"]


@needs_fork
def test_the_child_writes_the_file_the_parent_renames(tmp_path: Path) -> None:
    parent = os.getpid()

    def write(tmp: Path) -> None:
        np.save(tmp.with_suffix(".pid.npy"), np.array([os.getpid()]))
        tmp.write_text("done")

    atomic_write(tmp_path / "x.csv", write)
    (pid_file,) = tmp_path.glob("*.pid.npy")
    assert (tmp_path / "x.csv").read_text() == "done"
    assert int(np.load(pid_file)[0]) != parent
