"""``infer bench`` answers "which runtime is fastest here" (issue 44 item 5): every
installed runtime by default, rows done and time left as it goes, a table that fits 80
columns (the rest in ``--json``)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from sleap_infer.bench import suite
from sleap_infer.bench.measure import FAILED, OK, UNAVAILABLE, Measurement
from sleap_infer.cli import main
from sleap_infer.cli.bench import Eta, _not_run, _table

from conftest import SYNTHETIC_MODEL


def test_installed_backends_are_the_runtimes_whose_package_imports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    present = {"torch", "onnxruntime", "openvino"}
    monkeypatch.setattr(
        suite.importlib.util, "find_spec", lambda name: object() if name in present else None
    )
    assert suite.installed_backends() == ["torch", "onnx", "openvino"]
    present.add("tensorrt")
    assert suite.installed_backends() == ["torch", "onnx", "openvino", "trt"]


def test_bench_without_backend_measures_every_installed_runtime(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No --backend: the installed runtimes (here torch and a TensorRT that cannot run on
    the CPU, which gets its row and one line saying why); progress lines end 'done'."""
    monkeypatch.setattr(suite, "installed_backends", lambda: ["torch", "trt"])
    report = tmp_path / "bench.json"
    args = ["bench", str(SYNTHETIC_MODEL), "--device", "cpu", "--size", "32x32", "--iters", "1"]
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--warmup", "0", "--batch-sizes", "1,2", "--json", str(report)])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0, err
    rows = json.loads(report.read_text())["rows"]
    assert [(r["backend"], r["status"]) for r in rows] == [
        ("torch", OK),
        ("torch", OK),
        ("trt", UNAVAILABLE),
        ("trt", UNAVAILABLE),
    ]
    text = out + err
    assert "torch batch 1:" in text and "(2/4 rows, about" in text and "4/4 rows, done" in text
    assert "trt: unavailable:" in text
    assert max(len(line) for line in out.splitlines()) <= 80, out
    # What predict's default (--backend auto) would run here, and why (issue 48).
    auto = json.loads(report.read_text())["auto"]
    assert auto[0].startswith("candidates here: ") and len(auto) == 3
    assert auto[1].startswith("a long input: ") and auto[2].startswith("30 frames, first run: ")
    assert all(f"auto: {line}" in text.replace("\n", " ") for line in auto[:1])


def _row(backend: str, batch: int, **values: float) -> Measurement:
    row = Measurement(backend, batch, p50_ms=12345.6, fps=1234.5, pipelined_fps=12345.6)
    row.peak_fraction, row.delta_px_mean, row.delta_px_max = 0.99, 0.1234, 123.4567
    for key, value in values.items():
        setattr(row, key, value)
    return row


@pytest.mark.parametrize("extra", [{}, {"gpu_peak_mb": 65432.0}, {"masks_identical": 0.5}])
def test_table_fits_80_columns_with_the_longest_names(extra: dict[str, float]) -> None:
    rows = [
        _row("torch", 1, **extra),
        _row("openvino+int8", 256, **extra),
        Measurement("trt", 1, status=UNAVAILABLE, reason="tensorrt is not installed " * 4),
        Measurement("onnx+fp16", 4, status=FAILED, reason="RuntimeError: out of memory"),
    ]
    context = {
        "system": {"cpu": "Intel(R) Xeon(R) Platinum 8480+ Processor", "cpu_budget": 112},
        "frames": "a_long_video_name_from_a_lab.mp4 (16 real frames)",
        "peak": {"gflops": {"cpu:fp32": 2000.0, "cpu:int8": 9000.0}, "threads": 112},
    }
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(_table(rows, context))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80, text
    assert "…" not in text and "openvino+int8" in text and "12345.6" in text and "%peak" in text
    assert ("GPU MiB" in text) == ("gpu_peak_mb" in extra)
    assert _not_run(rows) == [
        f"trt: unavailable: {'tensorrt is not installed ' * 4}",
        "onnx+fp16 batch 4: failed: RuntimeError: out of memory",
    ]


def test_eta_weighs_rows_by_batch_size_and_drops_rows_that_cannot_run() -> None:
    """The clock starts at the first row done: that one also paid for start-up."""
    now = [0.0]
    eta = Eta(2, [1, 4], clock=lambda: now[0])
    assert eta.text() == "0/4 rows, estimating the time left"
    now[0] = 100.0  # start-up and the first row
    assert eta.done(Measurement("torch", 1)) == "1/4 rows, estimating the time left"
    now[0] = 140.0  # 4 units in 40 s: 10 s a unit, 5 units left
    assert eta.done(Measurement("torch", 4)) == "2/4 rows, about 50 s left"
    assert eta.done(Measurement("trt", 1, status=UNAVAILABLE)) == "3/4 rows, about 40 s left"
    now[0] = 5140.0
    assert eta.text() == "3/4 rows, about 84 min left"
    assert eta.done(Measurement("trt", 4, status=UNAVAILABLE)) == "4/4 rows, done"
