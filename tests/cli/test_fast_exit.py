"""A command that succeeded ends with ``os._exit`` after the ``atexit`` handlers and a flush,
and only where skipping the interpreter's teardown cannot lose anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import sleap_io as sio

from sleap_infer.cli import fast_exit

from model_factory import config_dict, write_model_dir

needs_proc = pytest.mark.skipif(
    not Path("/proc/self/fdinfo").is_dir(), reason="open files are listed from /proc"
)


def _script(body: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(
        """
        import atexit, sys
        from pathlib import Path
        from sleap_infer.cli import fast_exit
        marker = Path(sys.argv[1])
        atexit.register(lambda: marker.write_text("handler ran"))
        sys.stdout.write("printed before, no newline")
        """
    ) + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "marker")],
        capture_output=True,
        text=True,
        timeout=300,
    )


@needs_proc
def test_files_open_for_writing_are_listed_and_files_read_are_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written, read = tmp_path / "w.txt", tmp_path / "r.txt"
    read.write_text("x")
    # Threads other tests left in this process would be the reason given first.
    monkeypatch.setattr(fast_exit.threading, "enumerate", lambda: [threading.main_thread()])
    with open(read) as _, open(written, "w") as _w:
        listed = fast_exit.files_open_for_writing()
        assert listed is not None
        assert str(written) in listed and str(read) not in listed
        reason = fast_exit.normal_exit_needed() or ""  # (pytest's capture files are listed too)
        assert reason.startswith("files still open for writing: ") and str(written) in reason
    assert str(written) not in (fast_exit.files_open_for_writing() or [])


def test_a_running_thread_or_a_profiler_needs_the_normal_exit() -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="still-writing")
    worker.start()
    try:
        # (other tests may have left executor threads in this process: listed too)
        reason = fast_exit.normal_exit_needed() or ""
        assert reason.startswith("threads still running: ") and "still-writing" in reason
    finally:
        stop.set()
        worker.join()
    before = sys.getprofile()
    sys.setprofile(lambda *a: None)
    try:
        assert fast_exit.normal_exit_needed() == "a tracer or profiler is attached"
    finally:
        sys.setprofile(before)


@needs_proc
def test_exit_now_runs_the_handlers_flushes_and_ends_the_process(tmp_path: Path) -> None:
    done = _script(
        """
        fast_exit.exit_now()
        print("exit_now returned")
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "printed before, no newline"  # flushed; nothing after the call
    assert (tmp_path / "marker").read_text() == "handler ran"


@needs_proc
def test_exit_now_leaves_a_file_still_being_written_to_the_normal_exit(tmp_path: Path) -> None:
    # A Python file object's buffer is written by its finalizer at a normal exit; os._exit
    # would drop it. exit_now sees the file open for writing and returns.
    data = tmp_path / "buffered.txt"
    done = _script(
        f"""
        left_open = open({str(data)!r}, "w")
        left_open.write("kept")
        fast_exit.exit_now()
        print(" | exit_now returned")
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "printed before, no newline | exit_now returned\n"
    assert data.read_text() == "kept"
    assert (tmp_path / "marker").read_text() == "handler ran"


@needs_proc
def test_predict_ends_fast_with_its_output_and_exit_handlers_done(
    tmp_path: Path, counter_video: Path
) -> None:
    raw = config_dict("single_instance", preprocessing={"max_height": 48, "max_width": 48})
    model = write_model_dir(tmp_path / "m", raw)
    out, trace = tmp_path / "out.slp", tmp_path / "trace.json"
    env = {**os.environ, "SLEAP_INFER_STARTUP_TRACE": str(trace)}
    cmd = [sys.executable, "-m", "sleap_infer", "predict", str(counter_video), "-m", str(model)]
    cmd += ["--backend", "torch", "--frames", "0-3", "-o", str(out), "--progress", "plain"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(trace.read_text())["marks"]["exit"]  # written by an atexit handler
    labels = sio.load_slp(str(out))
    assert len(labels.labeled_frames) == 4
    # A failed command keeps the normal exit (exit code and partial outputs as before).
    missing = [*cmd[:4], str(tmp_path / "missing.mp4"), *cmd[5:]]
    bad = subprocess.run(missing, capture_output=True, text=True, env=env, timeout=600)
    assert bad.returncode != 0 and "missing.mp4" in bad.stderr
