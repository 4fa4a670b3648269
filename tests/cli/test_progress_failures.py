"""Progress output that cannot be written never stops prediction (issue 29): a reader that
goes away (``--progress json | grep -m1``) or a log on a full disk (``2>/dev/full``)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from sleap_infer.cli.console import CliConsole

import scene
from conftest import SYNTHETIC_MODEL

MODEL = str(SYNTHETIC_MODEL)


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("progress")
    paths = [folder / f"clip{i}.mp4" for i in range(2)]
    for i, path in enumerate(paths):
        scene.write_video(path, n_frames=8, seed=i)
    return paths


def _infer(videos: list[Path], out: Path, *flags: str) -> list[str]:
    return [sys.executable, "-m", "sleap_infer", "predict", *map(str, videos), "-m", MODEL,
            "--device", "cpu", "-b", "2", "-o", str(out), *flags]  # fmt: skip


def test_a_closed_json_reader_never_stops_the_batch(tmp_path: Path, videos: list[Path]) -> None:
    args = _infer(videos, tmp_path, "--progress", "json", "--progress-interval", "0")
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()  # grep -m1: one line, then the reader is gone
        proc.stdout.close()
        err = proc.stderr.read().decode()
        code = proc.wait(timeout=300)
    assert first.startswith(b"{")
    assert code == 0, err
    assert "stdout cannot be written" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.glob("*.slp")) == [
        "clip0.mp4.predictions.slp",
        "clip1.mp4.predictions.slp",
    ]


def test_a_full_log_disk_never_stops_the_batch(tmp_path: Path, videos: list[Path]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    summary = tmp_path / "summary.json"
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            _infer(videos, tmp_path, "--progress", "plain", "--summary-json", str(summary)),
            stdout=subprocess.DEVNULL,
            stderr=full,
            timeout=300,
        )
    assert proc.returncode == 0
    assert len(list(tmp_path.glob("*.predictions.slp"))) == 2
    assert summary.exists()


class _Failing(io.StringIO):
    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")


def test_the_console_goes_quiet_instead_of_raising() -> None:
    console = CliConsole(file=_Failing())
    console.print("one")  # neither raises nor exits
    console.print("two")
    assert console.broken == "No space left on device"
