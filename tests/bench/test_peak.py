"""``infer bench``'s share of peak: FLOPs counted from the network, peak measured here."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import sleap_infer.bench.peak as peak_module
from sleap_infer.bench import BenchConfig, run_bench
from sleap_infer.bench.measure import Measurement
from sleap_infer.bench.peak import (
    PeakCalibration,
    count_flops,
    fill_rates,
    gemm_rate,
    row_precision,
)
from sleap_infer.model.loader import load_model

from conftest import SYNTHETIC_MODEL


def test_flop_count_of_a_tiny_conv_net_equals_the_hand_count() -> None:
    net = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),  # 8x8 outputs x 4 channels x (1 x 3 x 3) MACs
        nn.ReLU(),
        nn.Conv2d(4, 2, 1),  # 8x8 x 2 x 4 MACs
        nn.Flatten(),
        nn.Linear(2 * 8 * 8, 10),  # 10 x 128 MACs
    )
    x = torch.zeros(3, 1, 8, 8)  # a batch of 3 triples it
    macs_per_image = 8 * 8 * 4 * 9 + 8 * 8 * 2 * 4 + 10 * 128
    with torch.inference_mode():
        assert count_flops(lambda: net(x)) == 2 * 3 * macs_per_image


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_peak_is_measured_and_positive(precision: str) -> None:
    try:
        rate = gemm_rate(precision, torch.device("cpu"), size=256, repeats=2)
    except RuntimeError:
        pytest.skip(f"this torch has no {precision} matrix product on the CPU")
    assert rate > 0


def test_calibration_says_why_a_precision_has_no_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(torch, "_int_mm", raising=False)  # a torch without int8 products
    calibration = PeakCalibration()
    assert calibration.peak(torch.device("cpu"), "int8") is None
    assert "int8" in calibration.reasons["cpu:int8"]
    assert calibration.peak(torch.device("cpu"), "fp16") is None  # never emulated
    report = calibration.to_json()
    assert report["gflops"] == {"cpu:int8": None, "cpu:fp16": None}
    assert set(report["unavailable"]) == {"cpu:int8", "cpu:fp16"}


def test_an_int8_product_slower_than_fp32_is_no_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    """A torch without a fast int8 kernel must not turn int8 shares into 10,000%."""
    rates = {"fp32": 190.0, "int8": 2.0}
    monkeypatch.setattr(peak_module, "gemm_rate", lambda precision, device: rates[precision])
    calibration = PeakCalibration()
    cpu = torch.device("cpu")
    assert calibration.peak(cpu, "int8") is None
    assert "below its fp32 product (190 GFLOP/s)" in calibration.reasons["cpu:int8"]
    assert calibration.peak(cpu, "fp32") == 190.0
    rates["int8"] = 400.0  # a real int8 kernel (VNNI): kept
    assert PeakCalibration().peak(cpu, "int8") == 400.0


def test_rates_and_shares_follow_from_the_timings() -> None:
    row = Measurement("onnx", 4, fps=10.0, stages={"network": 0.5, "preprocess": 0.5})
    fill_rates(row, gflop_per_frame=2.0, peak=80.0)
    assert row.achieved_gflops == 20.0 and row.network_gflops == 40.0
    assert row.peak_fraction == 0.25 and row.network_peak_fraction == 0.5
    unknown = Measurement("onnx", 4, fps=10.0)
    fill_rates(unknown, gflop_per_frame=None, peak=80.0)
    assert unknown.achieved_gflops is None and unknown.peak_fraction is None
    assert [row_precision(n) for n in ("torch", "onnx+int8", "torch+bf16")] == [
        "fp32",
        "int8",
        "bf16",
    ]


def test_bench_rows_carry_the_network_flops_and_the_measured_peak() -> None:
    rows, context = run_bench(
        BenchConfig(
            model_paths=[SYNTHETIC_MODEL],
            device="cpu",
            backends=["torch"],
            batch_sizes=[1, 2],
            size=(160, 160),  # the model's max_height/max_width: no padding
            iters=1,
            warmup_iters=0,
        )
    )
    model = load_model(SYNTHETIC_MODEL)
    x = torch.zeros(1, 1, 160, 160, dtype=torch.uint8)  # grayscale
    with torch.inference_mode():
        expected = count_flops(lambda: model.network.eval()(x)) / 1e9
    assert expected > 0
    peak = context["peak"]["gflops"]["cpu:fp32"]
    assert peak > 0
    for row in rows:
        assert row.status == "ok", row.reason
        assert row.gflop_per_frame == pytest.approx(expected)  # the network, nothing else
        assert row.peak_gflops == peak and row.precision == "fp32"
        assert row.peak_fraction == pytest.approx(row.achieved_gflops / peak)
        assert row.network_peak_fraction >= row.peak_fraction > 0


def test_a_second_measurement_keeps_the_better_peak(monkeypatch: pytest.MonkeyPatch) -> None:
    """A busy moment on a shared machine must not lower the peak every share divides by."""
    from sleap_infer.bench import peak as peak_module

    rates = iter([50.0, 80.0, 60.0])
    monkeypatch.setattr(peak_module, "gemm_rate", lambda *args, **kwargs: next(rates))
    calibration = PeakCalibration()
    assert calibration.peak(torch.device("cpu"), "fp32") == 50.0
    calibration.remeasure()
    assert calibration.peaks["cpu:fp32"] == 80.0
    calibration.remeasure()  # a busier moment: the better figure stays
    assert calibration.peaks["cpu:fp32"] == 80.0
