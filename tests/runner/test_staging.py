"""GPU staging (pinned uploads, copy and postprocessing streams) without a GPU.

Two halves. The bookkeeping of :class:`Stager` runs against a recording
stand-in for ``torch.cuda``: which event each wait names, that a pinned slot
is refilled only after its last upload, that postprocessing waits for its
network and synchronises before its tensors go. And every model type's layer
runs through the runner with staged input (on the CPU a tensor view, the form
the GPU path hands layers) and must predict exactly what the numpy path does.
The same on a real GPU: tests/runtimes/test_gpu.py.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from sleap_infer.core.options import PredictOptions
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.layers import build_layer
from sleap_infer.model.loader import load_model
from sleap_infer.runner import Runner
from sleap_infer.runner.staging import SLOTS, Staged, Stager
from sleap_infer.runtimes import backend_maker
from sleap_infer.sources.video import VideoReader

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
from vs_sleap_nn import CASES as SLEAP_NN_CASES

# ----------------------------------------------------------- a recording torch.cuda


class _Event:
    def __init__(self, log: list[tuple[str, Any]]) -> None:
        self.log = log
        self.done = False

    def record(self, stream: _Stream) -> None:
        self.log.append(("record", (self, stream.name)))

    def synchronize(self) -> None:
        self.log.append(("event-sync", self))
        self.done = True


class _Stream:
    def __init__(self, log: list[tuple[str, Any]], name: str) -> None:
        self.log = log
        self.name = name

    def wait_event(self, event: _Event) -> None:
        self.log.append(("wait", (self.name, event)))

    def synchronize(self) -> None:
        self.log.append(("stream-sync", self.name))


class FakeCuda:
    """Enough of ``torch.cuda`` for :class:`Stager`: streams, events, contexts, all logged."""

    def __init__(self) -> None:
        self.log: list[tuple[str, Any]] = []
        self.names = iter(["copy", "post"])
        self.current = _Stream(self.log, "compute")
        self.active = "compute"

    def Stream(self, device: torch.device) -> _Stream:
        return _Stream(self.log, next(self.names))

    def Event(self) -> _Event:
        return _Event(self.log)

    def current_stream(self, device: torch.device) -> _Stream:
        return self.current

    @contextlib.contextmanager
    def stream(self, stream: _Stream):
        before, self.active = self.active, stream.name
        try:
            yield
        finally:
            self.active = before

    def device(self, device: torch.device) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


class RecordingStager(Stager):
    """Uploads are clones (no GPU here); logs which stream each upload was issued on."""

    def __init__(self, cuda: FakeCuda) -> None:
        super().__init__(torch.device("cuda", 0), cuda=cuda)
        self.fake = cuda

    def _upload(self, buffer: torch.Tensor) -> torch.Tensor:
        self.fake.log.append(("upload", self.fake.active))
        return buffer.clone()


def test_uploads_run_on_the_copy_stream_and_slots_wait_for_their_last_upload(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cuda = FakeCuda()
    stager = RecordingStager(cuda)
    frames = [np.full((2, 4, 5, 1), i, np.uint8) for i in range(SLOTS + 2)]
    with caplog.at_level(logging.WARNING):
        staged = [stager.stage(f) for f in frames]
    # No pinned allocator on a CPU-only torch: one warning, then pageable buffers.
    assert "pinned host memory unavailable" in caplog.text
    assert not stager.pinned
    assert all(s.frames.shape == (2, 1, 4, 5) for s in staged)
    assert [int(s.frames[0, 0, 0, 0]) for s in staged] == list(range(SLOTS + 2))
    assert [e for e in cuda.log if e[0] == "upload"] == [("upload", "copy")] * (SLOTS + 2)
    records = [e[1] for e in cuda.log if e[0] == "record"]
    assert [stream for _, stream in records] == ["copy"] * (SLOTS + 2)
    assert [s.ready for s in staged] == [event for event, _ in records]
    # The first SLOTS uploads use fresh buffers; the next two refill slots 0 and 1, each
    # only after the upload that last read that slot has finished.
    syncs = [e[1] for e in cuda.log if e[0] == "event-sync"]
    assert syncs == [staged[0].ready, staged[1].ready]


def test_claim_makes_the_compute_stream_wait_and_keeps_the_memory() -> None:
    cuda = FakeCuda()
    stager = RecordingStager(cuda)
    staged = stager.stage(np.zeros((1, 3, 3, 1), np.uint8))
    ready = staged.ready
    kept: list[str] = []
    staged.frames = _RecordsStreams(staged.frames, kept)
    frames = stager.claim(staged)
    assert ("wait", ("compute", ready)) in cuda.log
    assert kept == ["compute"]  # record_stream: the allocator waits for the compute stream
    assert staged.ready is None
    stager.claim(staged)  # claimed once: a second claim adds no wait
    assert sum(e[0] == "wait" for e in cuda.log) == 1
    assert frames is staged.frames


class _RecordsStreams(torch.Tensor):
    """A tensor whose ``record_stream`` notes the stream's name (fakes are not streams)."""

    @staticmethod
    def __new__(cls, data: torch.Tensor, kept: list[str]) -> _RecordsStreams:
        out = torch.Tensor._make_subclass(cls, data)
        out.kept = kept  # type: ignore[attr-defined]
        return out

    def __init__(self, data: torch.Tensor, kept: list[str]) -> None:
        pass

    def record_stream(self, stream: Any) -> None:  # type: ignore[override]
        self.kept.append(stream.name)  # type: ignore[attr-defined]


def test_postprocessing_waits_for_its_network_and_synchronises_before_returning() -> None:
    cuda = FakeCuda()
    stager = RecordingStager(cuda)
    seen: list[str] = []

    def finish() -> str:
        seen.append(cuda.active)
        cuda.log.append(("finish", None))
        return "preds"

    wrapped = stager.finish_on_side_stream(finish)
    (kind, (network_done, stream)) = cuda.log[-1]
    assert (kind, stream) == ("record", "compute")  # recorded where the network was queued
    assert seen == []  # nothing ran yet: the finishing thread calls it later
    assert wrapped() == "preds"
    assert seen == ["post"]
    tail = [e[0] for e in cuda.log[-3:]]
    assert tail == ["wait", "finish", "stream-sync"]
    assert cuda.log[-3][1] == ("post", network_done)


def test_postprocessing_stream_is_synchronised_even_when_it_fails() -> None:
    cuda = FakeCuda()
    wrapped = RecordingStager(cuda).finish_on_side_stream(_boom)
    with pytest.raises(RuntimeError, match="grouping failed"):
        wrapped()
    assert cuda.log[-1] == ("stream-sync", "post")


def _boom() -> None:
    raise RuntimeError("grouping failed")


def test_cpu_staging_is_a_view_and_passes_calls_through() -> None:
    stager = Stager(torch.device("cpu"))
    frames = np.arange(2 * 3 * 4 * 1, dtype=np.uint8).reshape(2, 3, 4, 1)
    staged = stager.stage(frames)
    assert isinstance(staged, Staged) and staged.ready is None
    assert torch.equal(staged.frames, torch.from_numpy(frames).permute(0, 3, 1, 2))
    assert np.shares_memory(staged.frames.numpy(), frames)
    assert stager.claim(staged) is staged.frames
    assert stager.finish_on_side_stream(_boom) is _boom


# ------------------------------------------------ every layer takes staged frames

# The model combinations and videos the sleap-nn comparison runs, plus the two it cannot
# (sleap-nn 0.3.5 exports neither): a tiled keypoint model and a re-ID embedding pair.
CASES = {
    **SLEAP_NN_CASES,
    "single_instance_tiled": (["synthetic_single_instance_tiled"], "synthetic_multi.mp4"),
    "embedding": (["synthetic_centroid", "synthetic_embedding"], "synthetic_multi.mp4"),
}


def _same(a: list[BatchPredictions], b: list[BatchPredictions], atol: float = 0.0) -> None:
    """Equal predictions (``atol``: px and score slack, for GPU kernels whose float sums may
    be ordered differently from one run to the next)."""
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.frame_indices, y.frame_indices)
        np.testing.assert_allclose(x.points, y.points, rtol=0, atol=atol)
        np.testing.assert_array_equal(x.valid, y.valid)
        np.testing.assert_allclose(x.instance_scores, y.instance_scores, rtol=0, atol=atol)
        for name in ("class_ids", "embeddings"):
            mine, theirs = getattr(x, name), getattr(y, name)
            assert (mine is None) == (theirs is None)
            if mine is not None:
                np.testing.assert_array_equal(mine, theirs)
        assert (x.masks is None) == (y.masks is None)
        if x.masks is not None:
            assert len(x.masks) == len(y.masks)
            for k in range(len(x.masks)):
                np.testing.assert_array_equal(x.masks.runs(k), y.masks.runs(k))
        assert (x.boxes is None) == (y.boxes is None)
        if x.boxes is not None:
            np.testing.assert_array_equal(x.boxes.xyxy, y.boxes.xyxy)


@pytest.mark.parametrize("case", list(CASES))
def test_every_layer_predicts_the_same_from_staged_frames(shared: Path, case: str) -> None:
    names, video = CASES[case]
    models = [load_model(shared / "models" / n) for n in names]
    # The multi-class instance fixture is barely trained (peaks < 0.06): a low threshold.
    options = PredictOptions(peak_threshold=0.02 if case == "multiclass_topdown" else 0.2)
    layer = build_layer(models, backend_maker("torch", "cpu"), options)
    reader = VideoReader(shared / "videos" / video)
    channels = reader.channels_for(layer.input_channels)
    frames = list(reader.iter_frames(range(5), channels))
    plain: list[BatchPredictions] = []
    staged: list[BatchPredictions] = []
    Runner(layer, batch_size=3, warmup=False, stage=False).run(frames, sink=plain.append)
    Runner(layer, batch_size=3, warmup=False, stage=True, overlap=True).run(
        frames, sink=staged.append
    )
    assert sum(p.batch_size for p in plain) == 5
    found = sum(int(p.valid.sum()) for p in plain)
    found += sum(len(p.masks) for p in plain if p.masks is not None)
    found += sum(len(p.boxes) for p in plain if p.boxes is not None)
    assert found > 0, "nothing predicted: the comparison would prove nothing"
    _same(plain, staged)


# ------------------------------------------------------------------ on a real GPU

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.gpu
@needs_cuda
def test_cuda_staging_uploads_from_pinned_buffers() -> None:
    device = torch.device("cuda", 0)
    stager = Stager(device)
    batches = [np.full((4, 64, 48, 1), i, np.uint8) for i in range(SLOTS + 3)]
    staged = [stager.stage(b) for b in batches]
    assert stager.pinned
    assert all(slot.buffer.is_pinned() for slots in stager._slots.values() for slot in slots)
    for i, s in enumerate(staged):
        frames = stager.claim(s)
        assert frames.device == device and frames.shape == (4, 1, 64, 48)
        # Later batches reused earlier slots: each upload still carries its own frames.
        assert int(frames.min()) == int(frames.max()) == i
    done = stager.finish_on_side_stream(lambda: staged[-1].frames.sum().item())
    assert done() == (SLOTS + 2) * 4 * 64 * 48


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("case", ["single", "topdown", "segmentation"])
def test_cuda_runner_with_and_without_staging_agree(shared: Path, case: str) -> None:
    names, video = CASES[case]
    models = [load_model(shared / "models" / n) for n in names]
    layer = build_layer(models, backend_maker("torch", "cuda:0"), PredictOptions())
    reader = VideoReader(shared / "videos" / video)
    frames = list(reader.iter_frames(range(16), reader.channels_for(layer.input_channels)))
    plain: list[BatchPredictions] = []
    staged: list[BatchPredictions] = []
    Runner(layer, batch_size=4, stage=False, overlap=False).run(frames, sink=plain.append)
    Runner(layer, batch_size=4).run(frames, sink=staged.append)  # the default on cuda
    assert Runner(layer).stage and Runner(layer).overlap
    _same(plain, staged, atol=1e-3)
