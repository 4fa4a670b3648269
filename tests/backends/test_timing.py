"""Stage timer accounting and the CPU thread budget."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from sleap_infer.backends import threads
from sleap_infer.backends.torch_backend import TorchBackend
from sleap_infer.core import timing
from sleap_infer.layers import PredictOptions, SingleInstanceLayer
from sleap_infer.model.config import parse_config
from sleap_infer.nets import build_network
from sleap_infer.runner import Runner

from model_factory import config_dict


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_nested_stages_are_exclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    timer = timing.StageTimer()
    with timer.activate():
        with timing.stage("postprocess"):
            clock.now += 1.0
            with timing.stage("network"):
                clock.now += 3.0
            clock.now += 0.5
        with timing.stage("network"):
            clock.now += 2.0
    assert timer.totals == {"postprocess": 1.5, "network": 5.0}
    # Without an active timer, stages are free no-ops that record nothing.
    with timing.stage("network"):
        clock.now += 1.0
    assert timer.totals["network"] == 5.0


def test_runner_reports_stage_split() -> None:
    net = build_network(parse_config(config_dict("single_instance")))
    layer = SingleInstanceLayer(
        parse_config(config_dict("single_instance")), TorchBackend(net, "cpu"), PredictOptions()
    )
    frames = ((i, np.zeros((32, 32, 1), np.uint8)) for i in range(6))
    stats = Runner(layer, batch_size=2).run(frames)
    assert set(stats.stages) == {"preprocess", "network", "postprocess"}
    assert all(v > 0 for v in stats.stages.values())
    assert sum(stats.stages.values()) <= stats.predict_s + 1e-6


@pytest.mark.parametrize(
    ("text", "cores"),
    [("150000 100000\n", 1.5), ("200000 100000", 2.0), ("max 100000", None), ("junk", None)],
)
def test_cgroup_cpu_limit(tmp_path: Path, text: str, cores: float | None) -> None:
    path = tmp_path / "cpu.max"
    path.write_text(text)
    assert threads.cgroup_cpu_limit(path) == cores
    assert threads.cgroup_cpu_limit(tmp_path / "absent") is None


def test_cpu_budget_is_capped_by_the_cgroup_quota(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads.os, "sched_getaffinity", lambda _pid: set(range(8)), raising=False)
    monkeypatch.setattr(threads, "cgroup_cpu_limit", lambda: 2.5)
    assert threads.cpu_budget() == math.ceil(2.5)
    monkeypatch.setattr(threads, "cgroup_cpu_limit", lambda: None)
    assert threads.cpu_budget() == 8


def test_configure_torch_threads_only_lowers(monkeypatch: pytest.MonkeyPatch) -> None:
    before = torch.get_num_threads()
    monkeypatch.setattr(threads, "_CONFIGURED", False)
    monkeypatch.setattr(threads, "cpu_budget", lambda: before + 4)
    try:
        assert threads.configure_torch_threads() == before  # a bigger budget never raises it
        assert threads.configure_torch_threads(1) == 1  # an explicit request is honoured
    finally:
        torch.set_num_threads(before)
