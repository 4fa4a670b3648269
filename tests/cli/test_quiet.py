"""``-q`` after any command prints only errors: the ``error:`` lines, nothing else (no
model line, no results table, no spinner), on stderr; stdout stays empty."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from sleap_infer.cli import main
from sleap_infer.cli.console import CliConsole

import scene
from conftest import SYNTHETIC_MODEL


def test_errors_only_console_drops_everything_but_error_lines() -> None:
    out = io.StringIO()
    console = CliConsole(file=out, width=200)
    console.errors_only = True
    console.print("Model: [bold]x[/] on cpu")
    console.print("[green]✓[/] v.mp4: 4 frames")
    with console.status("Loading model..."):
        console.print("[red]error:[/] v.mp4: not a readable video")
    assert out.getvalue() == "error: v.mp4: not a readable video\n"


def _infer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sleap_infer", *args], capture_output=True, text=True, timeout=600
    )


def test_quiet_predict_prints_only_the_failed_video(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.mp4", tmp_path / "bad.mp4"
    scene.write_video(good, n_frames=3)
    bad.write_bytes(b"not a video")
    res = _infer(
        "predict", str(good), str(bad), "-m", str(SYNTHETIC_MODEL), "--device", "cpu", "-q"
    )
    assert res.returncode == 1 and res.stdout == ""
    assert [line.split(":")[0] for line in res.stderr.splitlines()] == ["error"], res.stderr
    assert "bad.mp4" in res.stderr and (tmp_path / "good.mp4.predictions.slp").exists()


def test_quiet_bench_prints_nothing_when_all_is_well() -> None:
    args = ["--size", "32x32", "--iters", "1", "--warmup", "0", "--batch-sizes", "1"]
    res = _infer(
        "bench", str(SYNTHETIC_MODEL), "--device", "cpu", "--backend", "torch", *args, "-q"
    )
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


def test_a_command_alone_prints_its_help_whole(capsys: pytest.CaptureFixture[str]) -> None:
    """Not squashed into one ``error:`` line (as it was): the help, exit code 2 (usage)."""
    for command in ("track", "info", "predict"):
        with pytest.raises(SystemExit) as exit_:
            main([command])
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and err.startswith(f"Usage: infer {command}")
        assert "\n\nOptions:\n" in err and "error:" not in err
