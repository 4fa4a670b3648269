"""Temporary files of killed runs are removed by the next write of the same file, but only
those of dead processes of this host (issue 29: SIGKILL leftovers)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sleap_infer.core.leftovers import owner_tag, pid_alive, remove_stale
from sleap_infer.export.exporter import staged_directory
from sleap_infer.writers.outputs import atomic_write
from sleap_infer.writers.side_files import write_json


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert not pid_alive(proc.pid)
    return proc.pid


def test_only_dead_owners_of_this_host_are_removed(tmp_path: Path) -> None:
    dead = tmp_path / f".v.predictions.{owner_tag(_dead_pid())}.tmp.slp"
    live = tmp_path / f".v.predictions.{owner_tag(os.getppid())}.tmp.slp"
    elsewhere = tmp_path / f".v.predictions.0000beef-{_dead_pid()}.tmp.slp"
    legacy = tmp_path / f".v.predictions.{_dead_pid()}.tmp.slp"  # no host: never guessed
    other = tmp_path / f".w.predictions.{owner_tag(_dead_pid())}.tmp.slp"  # another output
    for path in (dead, live, elsewhere, legacy, other):
        path.write_text("x")
    out = tmp_path / "v.predictions.slp"
    atomic_write(out, lambda tmp: tmp.write_text("predictions"))
    assert out.read_text() == "predictions"
    assert not dead.exists()
    assert live.exists() and elsewhere.exists() and legacy.exists() and other.exists()


def test_stale_json_temporaries_and_export_staging_are_removed(tmp_path: Path) -> None:
    stale_json = tmp_path / f".s.json.{owner_tag(_dead_pid())}.tmp"
    stale_json.write_text("{")
    write_json(tmp_path / "s.json", {"schema": "x"}, "s.json")
    assert not stale_json.exists()

    stale_export = tmp_path / f".exported.partial-{owner_tag(_dead_pid())}"
    (stale_export / "model.onnx").parent.mkdir()
    (stale_export / "model.onnx").write_text("half")
    live_export = tmp_path / f".exported.partial-{owner_tag(os.getppid())}"
    live_export.mkdir()
    with staged_directory(tmp_path / "exported") as staging:
        (staging / "metadata.json").write_text("{}")
    assert not stale_export.exists() and live_export.exists()
    assert (tmp_path / "exported" / "metadata.json").exists()


def test_remove_stale_ignores_a_missing_folder(tmp_path: Path) -> None:
    assert remove_stale(tmp_path / "nowhere", ".x.") == []
