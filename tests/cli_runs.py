"""Running ``infer`` from tests: in this process, or in a subprocess that a signal stops
right after its n-th journaled batch (to test kill-and-resume for real)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sleap_infer.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    """Run ``infer`` in this process; returns the exit code and stderr."""
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in args])
    return int(exit_info.value.code or 0), capsys.readouterr().err


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


KILLABLE = textwrap.dedent(
    """
    import os, signal, sys
    from sleap_infer import journal

    original = journal.JournalWriter.write_batch
    written = [0]  # over all videos of the run

    def write_batch(self, *args, **kwargs):
        original(self, *args, **kwargs)
        written[0] += 1
        if written[0] == int(os.environ["STOP_AFTER_BATCHES"]):
            os.kill(os.getpid(), getattr(signal, os.environ["STOP_SIGNAL"]))

    journal.JournalWriter.write_batch = write_batch
    from sleap_infer.cli import main
    main(sys.argv[1:])
    """
)


def as_from_a_terminal() -> None:
    """``preexec_fn`` for an ``infer`` child that a test stops with Ctrl-C (SIGINT).

    A shell starts a background job (``make test &``, ``nohup ... &``, a CI runner's
    script) with SIGINT ignored; the suite and every child inherit that, and Python
    installs no ``KeyboardInterrupt`` handler for a signal ignored at start-up. The
    child would then never see the test's Ctrl-C and run to the end (exit 0): the
    test must run the child as a terminal would.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def infer_stopping(signal_name: str, after: int, *args: str | Path):
    """``infer`` in a subprocess that gets ``signal_name`` right after ``after`` batches."""
    env = {**os.environ, "STOP_AFTER_BATCHES": str(after), "STOP_SIGNAL": signal_name}
    return subprocess.run(
        [sys.executable, "-c", KILLABLE, *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        preexec_fn=as_from_a_terminal,
    )
