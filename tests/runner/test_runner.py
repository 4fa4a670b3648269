"""Batching, background decode, warmup and the run loop."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from sleap_infer.layers import PredictOptions, SingleInstanceLayer
from sleap_infer.model.config import parse_config
from sleap_infer.runner import Runner
from sleap_infer.runner.prefetch import Prefetcher
from sleap_infer.runner.runner import make_batches

from fakes import FakeBackend
from model_factory import config_dict


def _frames(n: int, shape: tuple[int, int, int] = (16, 16, 1)):
    return [(i * 2, np.full(shape, i, np.uint8)) for i in range(n)]


def test_make_batches_pads_last_batch() -> None:
    batches = list(make_batches(_frames(10), 4))
    assert [b.n for b in batches] == [4, 4, 2]
    assert all(b.frames.shape == (4, 16, 16, 1) for b in batches)
    assert batches[-1].indices.tolist() == [16, 18]
    assert batches[-1].frames[2:].max() == 0
    assert batches[1].frames[:, 0, 0, 0].tolist() == [4, 5, 6, 7]


def test_shape_change_starts_new_batch() -> None:
    frames = [*_frames(3), (99, np.zeros((8, 8, 1), np.uint8))]
    assert [b.n for b in make_batches(frames, 4)] == [3, 1]


def test_prefetcher_runs_in_background_and_forwards_errors() -> None:
    seen: list[str] = []

    def gen():
        seen.append(threading.current_thread().name)
        yield 1
        yield 2
        raise RuntimeError("decoder exploded at frame 3")

    out = []
    with pytest.raises(RuntimeError, match="frame 3"):
        for item in Prefetcher(gen(), maxsize=1):
            out.append(item)
    assert out == [1, 2]
    assert seen == ["sleap-infer-decode"]


def _layer(calls: list[int]) -> SingleInstanceLayer:
    cfg = parse_config(config_dict("single_instance"))

    def make(x: torch.Tensor) -> dict[str, torch.Tensor]:
        calls.append(x.shape[0])
        cms = torch.zeros(x.shape[0], 3, x.shape[2] // 2, x.shape[3] // 2)
        # Peak position encodes the frame's pixel value, so results can be traced to inputs.
        for b in range(x.shape[0]):
            cms[b, :, 1, int(x[b, 0, 0, 0])] = 1.0
        return {"SingleInstanceConfmapsHead": cms}

    return SingleInstanceLayer(cfg, FakeBackend(make), PredictOptions(refine=False))


def test_runner_streams_every_frame_once_with_one_warmup() -> None:
    calls: list[int] = []
    runner = Runner(_layer(calls), batch_size=4)
    got = []
    stats = runner.run(_frames(7), sink=got.append, progress=None)
    assert stats.frames == 7 and stats.batches == 2
    # One warmup call (zeros) of the full batch shape, then two real batches of 4 (padded).
    assert calls == [4, 4, 4]
    indices = np.concatenate([p.frame_indices for p in got])
    assert indices.tolist() == [0, 2, 4, 6, 8, 10, 12]
    xs = np.concatenate([p.points[:, 0, 0, 0] for p in got])
    assert xs.tolist() == [0, 2, 4, 6, 8, 10, 12]  # pixel value i -> grid x i -> x*stride
    assert stats.instances == 7
    # A second run with the same shape does not warm up again.
    calls.clear()
    runner.run(_frames(4))
    assert calls == [4]


class _SlowFinish(SingleInstanceLayer):
    """Postprocessing that takes a while and records its thread (and fails where told)."""

    fail_at: int | None = None

    def postprocess(self, outputs, info):  # type: ignore[no-untyped-def]
        first = int(outputs["SingleInstanceConfmapsHead"][0, 0, 1].argmax())
        self.threads.append(threading.current_thread().name)
        if first == self.fail_at:
            raise ValueError(f"grouping failed on the batch starting at {first}")
        threading.Event().wait(0.01 * (3 - first % 3))  # later batches finish sooner
        return super().postprocess(outputs, info)


def _slow_layer(calls: list[int]) -> _SlowFinish:
    base = _layer(calls)
    layer = _SlowFinish(base.config, base.backend, base.options)
    layer.threads = []
    return layer


@pytest.mark.parametrize("overlap", [False, True])
def test_overlapped_postprocessing_keeps_order_and_results(overlap: bool) -> None:
    layer = _slow_layer([])
    got: list = []
    stats = Runner(layer, batch_size=2, overlap=overlap).run(_frames(8), sink=got.append)
    xs = np.concatenate([p.points[:, 0, 0, 0] for p in got])
    assert xs.tolist() == [2 * i for i in range(8)]  # in order, whatever finished first
    assert stats.frames == 8 and stats.batches == 4
    real = layer.threads[1:]  # the first is the warmup, always on the calling thread
    worker = "sleap-infer-postprocess"
    assert all(name.startswith(worker) == overlap for name in real)
    assert stats.stages["postprocess"] > 0  # the worker's stages are counted too
    # By default only accelerators overlap: on the CPU the network already has every core.
    assert Runner(layer).overlap is False


def test_overlap_failure_is_raised_and_earlier_batches_reach_the_sink() -> None:
    layer = _slow_layer([])
    layer.fail_at = 4  # the third batch of two
    got: list = []
    with pytest.raises(ValueError, match="batch starting at 4"):
        Runner(layer, batch_size=2, overlap=True).run(_frames(8), sink=got.append)
    assert [p.frame_indices.tolist() for p in got] == [[0, 2], [4, 6]]
