"""``infer bench`` internals: instance matching, argument parsing, a real CPU run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sleap_infer.bench import BenchConfig, keypoint_delta, run_bench
from sleap_infer.bench.measure import UNAVAILABLE, peak_rss_mb
from sleap_infer.bench.suite import parse_backends, parse_batch_sizes
from sleap_infer.cli.options import parse_size
from sleap_infer.core.errors import UsageError
from sleap_infer.core.predictions import BatchPredictions

import scene
from conftest import SYNTHETIC_MODEL


def preds(points: np.ndarray) -> BatchPredictions:
    b, i, n, _ = points.shape
    return BatchPredictions(
        points=points.astype(np.float32),
        point_scores=np.ones((b, i, n), np.float32),
        instance_scores=np.ones((b, i), np.float32),
        valid=~np.isnan(points).all(axis=(2, 3)),
    )


def test_keypoint_delta_matches_instances_in_any_order() -> None:
    rng = np.random.default_rng(0)
    ref = rng.uniform(0, 100, (2, 3, 4, 2))
    other = ref[:, ::-1] + np.array([3.0, 4.0])  # reversed order, shifted by 5 px
    mean, worst, n = keypoint_delta(preds(ref), preds(other))
    assert mean == pytest.approx(5.0) and worst == pytest.approx(5.0)
    assert n == 2 * 3 * 4


def test_keypoint_delta_skips_nodes_found_by_one_side() -> None:
    ref = np.zeros((1, 1, 3, 2))
    other = ref.copy()
    other[0, 0, 0] = np.nan
    other[0, 0, 1] = [0.0, 2.0]
    mean, worst, n = keypoint_delta(preds(ref), preds(other))
    assert (mean, worst, n) == (pytest.approx(1.0), pytest.approx(2.0), 2)
    empty = np.full((1, 1, 3, 2), np.nan)
    mean, _, n = keypoint_delta(preds(ref), preds(empty))
    assert np.isnan(mean) and n == 0


def test_argument_parsing() -> None:
    assert parse_backends("onnx") == ["torch", "onnx"]  # torch is always the baseline
    assert parse_backends("all") == ["torch", "onnx", "openvino", "trt"]
    assert parse_backends("onnx, torch,onnx") == ["torch", "onnx"]
    with pytest.raises(UsageError, match="unknown backend 'tf'"):
        parse_backends("tf")
    assert parse_batch_sizes("16,1,4,4") == [1, 4, 16]
    for bad in ("0", "a,b", ""):
        with pytest.raises(UsageError):
            parse_batch_sizes(bad)
    assert parse_size("120x160") == (120, 160)
    with pytest.raises(UsageError, match="HxW"):
        parse_size("120")


def test_peak_rss_is_reported() -> None:
    mb = peak_rss_mb()
    assert mb is not None and 10 < mb < 100_000


def test_bench_torch_vs_onnx_on_real_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("onnxruntime")
    # Its own export cache: other tests check that a first use exports (and says so).
    monkeypatch.setenv("SLEAP_INFER_CACHE", str(tmp_path / "cache"))
    video = tmp_path / "scene.mp4"
    scene.write_video(video, n_frames=4, seed=1)
    seen = []
    rows, context = run_bench(
        BenchConfig(
            model_paths=[SYNTHETIC_MODEL],
            device="cpu",
            backends=["onnx", "trt", "torch+fp16"],
            batch_sizes=[1, 2],
            video=video,
            iters=3,
            warmup_iters=1,
        ),
        on_row=seen.append,
    )
    assert seen == rows
    by = {(r.backend, r.batch): r for r in rows}
    assert set(by) == {(b, n) for b in ("torch", "onnx", "trt", "torch+fp16") for n in (1, 2)}
    for n in (1, 2):
        torch_row, onnx_row = by[("torch", n)], by[("onnx", n)]
        for r in (torch_row, onnx_row):
            assert r.status == "ok", r.reason
            assert r.p95_ms >= r.p50_ms > 0 and r.fps > 0 and r.cold_ms > 0
            assert r.fps == pytest.approx(n / (r.frame_ms * n / 1e3))
            assert "network" in r.stages and sum(r.stages.values()) <= 1.0 + 1e-6
            # Through the runner too (a rate, not compared: timings are not tested).
            assert r.pipelined_fps is not None and r.pipelined_fps > 0
        assert torch_row.delta_px_mean == 0.0
        # The synthetic model finds the animal in every frame: the comparison is real.
        assert onnx_row.matched_points and onnx_row.matched_points >= n
        assert onnx_row.delta_px_max < 0.05
        assert by[("trt", n)].status == UNAVAILABLE and by[("trt", n)].reason
        half = by[("torch+fp16", n)]  # autocast fp16 needs cuda or mps: said, not crashed
        assert half.status == UNAVAILABLE and "--fp16 needs a cuda or mps device" in half.reason
    assert "scene.mp4" in context["frames"]


def test_box_and_mask_agreement_against_torch() -> None:
    from sleap_infer.bench.measure import box_delta, mask_agreement
    from sleap_infer.core.boxes import BoxSet
    from sleap_infer.core.masks import MaskSet
    from sleap_infer.core.predictions import BatchPredictions

    def preds(xyxy: list[list[float]], masks: list[np.ndarray]) -> BatchPredictions:
        p = BatchPredictions.empty(1, 2)
        p.boxes = BoxSet.build([0] * len(xyxy), xyxy, [0.9] * len(xyxy))
        one = [(1.0, 1.0)] * len(masks)
        p.masks = MaskSet.build([0] * len(masks), masks, [0.5] * len(masks), one, one)
        return p

    a, b = np.zeros((4, 4), bool), np.zeros((4, 4), bool)
    a[1:3, 1:3] = True
    b[0, 0] = True
    ref = preds([[0, 0, 10, 10], [5, 5, 8, 9]], [a, b])
    moved = preds([[0, 0, 10, 10.5], [5, 5, 8, 9]], [a, a])
    assert box_delta(ref, moved) == pytest.approx(0.5)
    assert box_delta(ref, preds([[0, 0, 10, 10]], [a, b])) == float("inf")  # a box lost
    swapped = preds([[5, 5, 8, 9], [0, 0, 10, 10.5]], [a, b])  # same boxes, reordered
    assert box_delta(ref, swapped) == pytest.approx(5.0)  # in order: pairs the wrong ones
    assert box_delta(ref, swapped, in_order=False) == pytest.approx(0.5)  # paired up
    assert box_delta(ref, preds([[0, 0, 10, 10]], [a, b]), in_order=False) == float("inf")
    assert mask_agreement(ref, moved) == 0.5  # the second mask differs
    assert mask_agreement(ref, ref) == 1.0
