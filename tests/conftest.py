"""Shared test fixtures.

Real sleap-nn fixtures live in ``../shared/fixtures`` (override with
``SLEAP_INFER_FIXTURES``); tests that need them skip with a reason when the
folder is absent. Everything else is built here: random-weight models of
every type in sleap-nn's layout, and small videos written with PyAV.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import av
import numpy as np
import pytest
import sleap_io as sio

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
EXAMPLES = ROOT / "examples"
SYNTHETIC_MODEL = EXAMPLES / "models" / "synthetic_single_instance"

sys.path.insert(0, str(EXAMPLES / "synthetic"))

FIXTURE_MODELS = {
    "single_instance": "minimal_instance_single_instance",
    "centroid": "minimal_instance_centroid",
    "centered_instance": "minimal_instance_centered_instance",
    "bottomup": "minimal_instance_bottomup",
    "multi_class_bottomup": "minimal_instance_multiclass_bottomup",
    "multi_class_topdown": "minimal_instance_multiclass_centered_instance",
}


@pytest.fixture(autouse=True)
def _export_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Exports made on first use go to a per-session temp cache, never ``~/.cache``."""
    root = tmp_path_factory.getbasetemp() / "export-cache"
    monkeypatch.setenv("SLEAP_INFER_CACHE", str(root))
    return root


@pytest.fixture()
def alarm() -> Iterator[None]:
    """Fail in 30 s instead of hanging: for tests of reads that once blocked forever (a FIFO
    where a model file should be)."""

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError("hung: a read that must not block took over 30 s")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared fixtures folder, or skip."""
    if not (SHARED / "models").is_dir():
        pytest.skip(f"shared fixtures not found at {SHARED}")
    return SHARED


def fixture_model(shared: Path, model_type: str) -> Path:
    return shared / "models" / FIXTURE_MODELS[model_type]


def write_video(
    path: Path,
    frames: np.ndarray,
    fps: int = 30,
    codec: str = "libx264",
    options: dict[str, str] | None = None,
) -> Path:
    """Encode ``(n, H, W, 3)`` uint8 frames; lossless-ish by default."""
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=fps)
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = "yuv420p"
        stream.options = options if options is not None else {"crf": "0", "g": "30"}
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())
    return path


def counter_frames(n: int, height: int = 64, width: int = 96, gray: bool = True) -> np.ndarray:
    """Frames whose mean brightness encodes their index (so decoders can be checked)."""
    frames = np.zeros((n, height, width, 3), np.uint8)
    for i in range(n):
        level = 16 + (i * 7) % 224
        frames[i] = level
        if not gray:
            frames[i, ..., 1] = 255 - level
    return frames


@pytest.fixture()
def counter_video(tmp_path: Path) -> Path:
    return write_video(tmp_path / "counter.mp4", counter_frames(40))


def predicted_poses(path: Path) -> tuple[list[int], np.ndarray, np.ndarray]:
    """Frame indices, ``(frames, instances, nodes, 2)`` points and instance scores of a .slp
    (a frame with fewer instances, an empty frame included, is padded with NaN)."""
    labels = sio.load_slp(str(path))
    frames = [lf.frame_idx for lf in labels]
    width = max((len(lf.instances) for lf in labels), default=0)
    n_nodes = len(labels.skeletons[0].nodes) if labels.skeletons else 0
    points = np.full((len(frames), width, n_nodes, 2), np.nan)
    scores = np.full((len(frames), width), np.nan)
    for f, lf in enumerate(labels):
        for i, inst in enumerate(lf.instances):
            points[f, i] = inst.numpy()
            scores[f, i] = inst.score
    return frames, points, scores


def assert_same_predictions(a: Path, b: Path, rtol: float = 0.0) -> None:
    """Same frames, and points and scores bit-identical (or within ``rtol``)."""
    fa, pa, sa = predicted_poses(a)
    fb, pb, sb = predicted_poses(b)
    assert fa == fb
    np.testing.assert_allclose(pa, pb, rtol=rtol, atol=0)
    np.testing.assert_allclose(sa, sb, rtol=rtol, atol=0)


def interrupt_after_batches(monkeypatch: pytest.MonkeyPatch, n_batches: int) -> None:
    """Ctrl-C arrives right after the n-th batch reached the journal."""
    from sleap_infer.journal import JournalWriter

    original = JournalWriter.write_batch

    def write_then_maybe_stop(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        original(self, *args, **kwargs)
        if self.batches_written == n_batches:
            raise KeyboardInterrupt

    monkeypatch.setattr(JournalWriter, "write_batch", write_then_maybe_stop)


def pipeline(model_paths: list[Path] | list[str], device: str = "cpu", **fields: object):
    """A pipeline built from :class:`PipelineSpec` fields (option records passed as they are),
    for tests that set records directly; users call ``sleap_infer.load`` with option names."""
    from sleap_infer.pipeline.spec import PipelineSpec

    given = {k: v for k, v in fields.items() if v is not None}  # None: the default
    # Torch unless asked: these tests look at layers and options, not at which runtime
    # --backend auto would pick (tests/pipeline/test_auto_backend.py does).
    given.setdefault("backend", "torch")
    spec = PipelineSpec(model_paths=tuple(str(p) for p in model_paths), **given)  # type: ignore[arg-type]
    return spec.build(device)
