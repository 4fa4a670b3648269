"""benchmarks/qc_accuracy.py's scenes and scoring, on one small scene (the full run is a
benchmark, not a test)."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from types import ModuleType

import pytest

QC_ACCURACY_PY = Path(__file__).resolve().parents[1] / "benchmarks" / "qc_accuracy.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_qc_accuracy", QC_ACCURACY_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_faults_are_injected_as_asked(bench: ModuleType) -> None:
    scene = bench.make_scene(0, 3, 1200)
    faulty = bench.inject(scene, 0, per_kind=3)
    kinds = [f[0] for f in faulty.faults]
    assert kinds.count("jump") == kinds.count("node_jump") == kinds.count("low_confidence") == 3
    starts = sorted(f[1] for f in faulty.faults)
    assert all(b - a > bench.SPACING for a, b in itertools.pairwise(starts))
    swaps = [f for f in faulty.faults if f[0] == "identity_swap"]
    for _, frame, _, (ta, tb), _ in swaps:  # the labels did change hands there
        a = list(faulty.tracks[frame - 1]).index(ta)
        assert faulty.tracks[frame, a] == tb


def test_small_scene_round_trip_finds_the_faults(bench: ModuleType, tmp_path: Path) -> None:
    scene = bench.make_scene(1, 3, 1200)
    faulty = bench.inject(scene, 1, per_kind=3)
    bench.write_scene(scene, tmp_path / "clean.slp")
    bench.write_scene(faulty, tmp_path / "faulty.slp")
    assert bench.check(tmp_path / "clean.slp") == []
    events = bench.check(tmp_path / "faulty.slp")
    found = [bench.found(f, events) for f in faulty.faults]
    assert sum(found) >= len(found) - 1, [f for f, ok in zip(faulty.faults, found) if not ok]
