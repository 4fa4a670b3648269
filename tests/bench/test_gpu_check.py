"""benchmarks/gpu_check.py: the prepared GPU check runs its CPU-safe part here, says why
every other cell did not run, and spends its time budget in priority order.

The GPU run itself needs the lent machine (``make gpu-check`` there); what can go wrong
without one is checked here: the CPU-mode report (real measurements, every skipped cell
with its reason), the realistic network's size, and the budget bookkeeping.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import ROOT, SHARED

sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_check

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest"
errors="0" failures="1" skipped="1" tests="3" time="4.2">
<testcase classname="tests.runtimes.test_gpu" name="test_a" time="1"/>
<testcase classname="tests.runtimes.test_gpu" name="test_b" time="1">
<failure message="x"/></testcase>
<testcase classname="tests.runtimes.test_gpu" name="test_c" time="0">
<skipped message="y"/></testcase>
</testsuite></testsuites>"""


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    """One ``--quick --device cpu`` run (fixture exports go to this session's cache)."""
    if not (SHARED / "models").is_dir():
        pytest.skip(f"shared fixtures not found at {SHARED}")
    out = tmp_path_factory.mktemp("gpu-check-out")
    junit = out / "gpu-tests.xml"
    junit.write_text(JUNIT)
    cache = tmp_path_factory.getbasetemp() / "export-cache"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--out", str(out)]
    cmd += ["--quick", "--device", "cpu", "--cache", str(cache), "--junit", str(junit)]
    cmd += ["--note", "a note from the shell script"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["gpu-tests.xml", "results.json", "summary.md"]
    return json.loads((out / "results.json").read_text()), (out / "summary.md").read_text()


def cells_of(results: dict, **match: object) -> list[dict]:
    return [c for c in results["cells"] if all(c[k] == v for k, v in match.items())]


def test_quick_cpu_run_measures_torch_and_onnx(quick_run: tuple[dict, str]) -> None:
    results, _ = quick_run
    assert results["finished"] and results["device"] == "cpu" and results["quick"]
    measured = [c for c in results["cells"] if c["status"] != "skipped"]
    assert {(c["model"], c["backend"], c["batch"]) for c in measured} == {
        (m, b, 1) for m in gpu_check.QUICK_GROUPS for b in ("torch", "onnx")
    }
    for c in measured:
        assert c["status"] == "ok", c
        assert c["fps"] > 0 and c["p50_ms"] > 0 and c["cold_ms"] > 0 and c["elapsed_s"] > 0
        assert c["frame_ms"] == pytest.approx(1e3 / c["fps"], rel=1e-6)
    # onnx against torch fp32 on the same real frames: the same keypoints and masks.
    for model in ("single_instance", "topdown"):
        (onnx,) = cells_of(results, model=model, backend="onnx", batch=1)
        assert onnx["matched_points"] > 0 and onnx["delta_px_max"] < 0.05, onnx
    (seg,) = cells_of(results, model="semantic_segmentation", backend="onnx", batch=1)
    assert seg["masks_identical"] == pytest.approx(1.0)
    assert results["frames"]["topdown"].startswith("centered_pair_small.mp4")


def test_quick_cpu_run_says_why_every_other_cell_did_not_run(
    quick_run: tuple[dict, str],
) -> None:
    results, _ = quick_run
    n_groups = 1 + len(gpu_check.FIXTURE_GROUPS)
    assert len(results["cells"]) == n_groups * 6 * 3  # 6 backend rows x 3 batch sizes
    realistic = cells_of(results, model=gpu_check.REALISTIC)
    assert len(realistic) == 18
    assert all(c["status"] == "skipped" and "no CUDA" in c["reason"] for c in realistic)
    for c in cells_of(results, model="topdown"):
        if c["runtime"] == "trt" or c["precision"] == "fp16":
            assert (c["status"], c["reason"]) == ("skipped", gpu_check.NO_CUDA)
        elif c["batch"] != 1:
            assert c["status"] == "skipped" and "batch 1 only" in c["reason"]
    for c in cells_of(results, model="bbox_ssd"):
        assert (c["status"], c["reason"]) == ("skipped", "--quick")
    assert all(c["reason"] for c in results["cells"] if c["status"] != "ok")
    assert sum(results["counts"].values()) == len(results["cells"])
    assert results["vs_sleap_nn"] == {"status": "skipped", "reason": "--quick"}
    assert results["gpu_tests"]["tests"] == 3 and results["gpu_tests"]["failures"] == 1
    assert results["gpu_tests"]["failed"] == ["tests.runtimes.test_gpu::test_b"]


def test_quick_cpu_summary_table(quick_run: tuple[dict, str]) -> None:
    _, summary = quick_run
    lines = summary.splitlines()
    rows = [line for line in lines if line.startswith("| ") and "| ok |" in line]
    assert len(rows) == 6
    single_torch = next(r for r in rows if r.startswith("| single_instance | torch | 1 | ok |"))
    fps = float(single_torch.split("|")[5])
    assert fps > 0
    assert any(r.startswith("| semantic_segmentation | onnx | 1 | ok |") and "masks 1.000" in r
               for r in rows)  # fmt: skip
    skipped = [line for line in lines if line.startswith("- realistic_unet:")]
    assert skipped == [
        "- realistic_unet: torch, torch+fp16, onnx, onnx+fp16, trt, trt+fp16 x batch 1,8,32: "
        "**no CUDA: device is cpu**"
    ]
    assert "- note: a note from the shell script" in lines
    assert "1 passed, 1 failed, 0 errors, 1 skipped" in summary
    assert "## sleap-nn end to end" in summary and "skipped: --quick" in summary


def test_realistic_network_is_the_stated_unet(tmp_path: Path) -> None:
    from sleap_infer.model.loader import load_model

    model = load_model(gpu_check.write_realistic_model(tmp_path / "realistic"))
    assert model.model_type == "single_instance"
    net = model.network
    convs = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    assert (convs[0].in_channels, convs[0].out_channels) == (1, 32)  # filters 32
    unet = net.backbone
    assert unet.max_stride == 16 and unet.depth == 4  # four 2x downsamplings
    # filters_rate 1.5 (the factory's): the middle block is int(32 * 1.5**4) wide.
    assert unet.stride_to_filters == {16: 162, 8: 108, 4: 72, 2: 48}
    assert sum(p.numel() for p in net.parameters()) == 1_295_179
    with torch.no_grad():  # confidence maps at output stride 2
        (maps,) = net(torch.zeros(1, 1, 64, 64)).values()
    assert tuple(maps.shape) == (1, 3, 32, 32)  # the factory's 3 nodes


class FakeBench:
    """Estimates from a table; running a cell takes no time."""

    def __init__(self, estimates: dict[str, float]) -> None:
        self.estimates = estimates
        self.frames_text: dict[str, str] = {}
        self.ran: list[str] = []

    def estimate(self, cell: gpu_check.Cell) -> float:
        return self.estimates[cell.backend]

    def first_of_kind(self, cell: gpu_check.Cell) -> bool:
        return True

    def run(self, cell: gpu_check.Cell) -> None:
        self.ran.append(cell.backend)
        cell.status, cell.row = "ok", {"fps": 1.0}

    def learn(self, cell: gpu_check.Cell, first: bool, seconds: float) -> None:
        pass


def test_cells_that_would_overrun_the_budget_are_skipped_not_dropped(tmp_path: Path) -> None:
    group = gpu_check.FIXTURE_GROUPS[0]
    cells = [
        gpu_check.Cell(group, "torch", 8),
        gpu_check.Cell(group, "trt", 8),  # an engine build: does not fit
        gpu_check.Cell(group, "onnx", 8),  # cheaper, after it: still runs
        gpu_check.Cell(group, "torch+fp16", 8, status="skipped", reason="no CUDA"),
    ]
    bench = FakeBench({"torch": 1.0, "trt": 500.0, "onnx": 2.0, "torch+fp16": 1.0})
    writes: list[int] = []
    state = gpu_check.State(
        gpu_check.parse_args(["--out", str(tmp_path)]), tmp_path, 0.0, "cuda:0", cells
    )
    deadline = gpu_check.time.monotonic() + 60
    gpu_check.run_cells(state, bench, cells, deadline, lambda: writes.append(1))  # type: ignore[arg-type]
    assert bench.ran == ["torch", "onnx"]
    assert [(c.status, c.reason) for c in cells] == [
        ("ok", ""),
        ("skipped", gpu_check.TIME_BUDGET),
        ("ok", ""),
        ("skipped", "no CUDA"),
    ]
    assert cells[1].estimate_s == 500.0
    assert len(writes) == 3  # the report is rewritten after every cell it decided


def test_priority_order() -> None:
    real = gpu_check.Group(gpu_check.REALISTIC, ("x",), None, (1024, 1024), realistic=True)
    a, b = gpu_check.FIXTURE_GROUPS[:2]
    first, last = gpu_check.plan([real, a, b])
    head = [(c.group.name, c.backend, c.batch) for c in first[:18]]
    assert all(name == gpu_check.REALISTIC for name, _, _ in head)  # its full matrix first
    assert [(x, n) for _, x, n in head[12:]] == [
        ("trt", 8), ("trt+fp16", 8), ("trt", 1), ("trt+fp16", 1), ("trt", 32), ("trt+fp16", 32)
    ]  # fmt: skip
    assert {c.backend for c in first[18:]} == set(gpu_check.TORCH_ROWS)
    assert len(first) == 18 + 2 * 12
    # Fixture TensorRT last: batch 8 of every model before any batch 1, then 32.
    assert [(c.group.name, c.batch) for c in last[:4]] == [
        (a.name, 8), (a.name, 8), (b.name, 8), (b.name, 8)
    ]  # fmt: skip
    assert [c.batch for c in last] == [8] * 4 + [1] * 4 + [32] * 4


def test_targets_against_sleap_nn() -> None:
    report = {
        "cases": {
            "topdown": {
                "ours": {
                    "trt": {"vs_tensorrt": {"e2e": 1.2, "steady": 1.9}},
                    "torch": {"vs_torch": {"e2e": 2.5, "steady": math.nan}},
                }
            }
        }
    }
    targets = gpu_check.target_results(report)
    assert [(t["what"], t["e2e"], t["met"]) for t in targets] == [
        ("ours TensorRT vs sleap-nn TensorRT", 1.2, False),
        ("ours torch CUDA vs sleap-nn torch CUDA", 2.5, True),
    ]
    lines = gpu_check.vs_lines({"status": "ok", "targets": targets, "wall_s": 1, "json": "x"})
    assert any("1.20x e2e (steady 1.90x), target >= 1.5x: NOT met" in line for line in lines)
    assert any("2.50x e2e (steady n/a), target >= 2x: met" in line for line in lines)
    assert gpu_check._clean({"a": [math.nan, math.inf, 1.0]}) == {"a": [None, "inf", 1.0]}
