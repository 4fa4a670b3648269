"""GPU checks: every runtime's CUDA path gives the CPU's (and so sleap-nn's) predictions.

The rest of the suite runs on the CPU, where CI runs. These tests carry the ``gpu``
marker (``pytest -m gpu``), skip with "needs a CUDA GPU" where torch sees none, and
check what only a GPU exercises, in this order:

* torch on CUDA: preprocessing, network, peak finding, crops and decoding on the device,
  for every fixture model type, equal the CPU float32 run within the cross-runtime parity
  tolerances of ``test_export_models`` (the CPU run is tied to sleap-nn's own outputs by
  ``test_parity``, ``test_segmentation``, ``test_tiling``, ``test_boxes`` and
  ``test_embedding``). Keypoint models get sleap-nn's stored, preprocessed inputs
  (``fixtures/parity``) and must also find the instances sleap-nn found; the others get
  the frames sleap-nn predicted on (``fixtures/videos``).
* Reduced precision: fp16 (torch autocast, an fp16 ONNX export, an fp16 TensorRT engine)
  against CPU float32 on the well-trained example model, within the bounds stated below.
  Not on the fixture models: they are under-trained, and on their flat maps a 10-bit
  mantissa moves argmaxes by whole map pixels (tens of frame pixels for the multi-class
  models, in a TF32 emulation on the CPU). That is also why float32 on CUDA is IEEE float32
  by default (the backends turn off the TF32 that cuDNN and ONNX Runtime's CUDA provider
  use on Ampere and newer): the parity checks run the defaults and check that setting.
* ``cuda:N``: a layer on the second GPU keeps everything there and nothing on the first; a
  GPU index past the last is refused with the count (API and ``infer predict``);
  ``--devices cuda:0,cuda:1`` writes what one GPU writes.
* ONNX Runtime's CUDA provider (IO binding: outputs stay torch tensors on the GPU) and
  TensorRT engines built on first use into the export cache, for every model type, against
  the same CPU runs: last, and on a time budget (``SLEAP_INFER_GPU_BUDGET_S``, see below).

Rehearsal: ``SLEAP_INFER_GPU_REHEARSAL=cpu pytest tests/runtimes/test_gpu.py -m gpu`` runs this file
on a machine without a GPU, with the CPU standing in for the GPU, so the test code itself
(fixtures, inputs, comparisons) is exercised before a GPU is at hand. Its comparisons are
then CPU against CPU: passing proves the plumbing, not the GPU. What cannot run on a CPU
(torch fp16, TensorRT, ONNX Runtime's CUDA provider, two GPUs, a real device count) skips
with a reason; the fp16 ONNX graph runs on ONNX Runtime's CPU provider.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sleap_io as sio
import torch

from sleap_infer.bench.measure import box_delta, keypoint_delta, mask_agreement
from sleap_infer.core.errors import BackendError
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.layers import PredictOptions, build_layer
from sleap_infer.layers.base import InferenceLayer
from sleap_infer.model.loader import load_model
from sleap_infer.ops.assignment import linear_sum_assignment
from sleap_infer.runtimes import backend_maker
from sleap_infer.runtimes.cache import cache_root

import scene
from cli_runs import error_lines, run_cli
from conftest import FIXTURE_MODELS, SYNTHETIC_MODEL, assert_same_predictions

pytestmark = pytest.mark.gpu

REHEARSAL = os.environ.get("SLEAP_INFER_GPU_REHEARSAL", "").strip().lower() == "cpu"

# ---------------------------------------------------------------- tolerances
# IEEE float32 on another device is float32 summed in another order: noise of the size
# ONNX Runtime's CPU kernels add, so test_export_models' bounds (ONNX Runtime vs torch on the
# CPU, these inputs: 3e-5 px top-down and bottom-up, 2.3e-4 px multi-class top-down).
PX = 2e-3
SCORE = 1e-4
# Multi-class bottom-up at 0.05 keeps faint peaks (0.05-0.2) whose integral refinement
# amplifies float noise: test_parity allows them 5e-3 px against sleap-nn (ONNX Runtime on
# the CPU: 1.7e-3 px on these inputs, already near PX).
FAINT_PEAKS_PX = 5e-3
# Boxes: test_boxes' bound against sleap-nn (corners are sizes and offsets x stride 4).
BOX_PX = 1e-3
# Re-ID vectors are unit length; ONNX Runtime vs torch on the CPU differ by < 1e-5.
VECTOR = 1e-4
# Masks (sigmoid > 0.5 at stride 2) must come out identical, bits and geometry, as they do
# across CPU runtimes (test_export_raw): a pixel flips only within ~1e-6 of 0.5.
MASKS_IDENTICAL = 1.0

# Reduced precision on the trained example model (160x160 frames, 2 nodes, output stride 2).
# fp16 and TF32 keep a 10-bit mantissa: map values move by ~1e-3 relative and integral
# refinement turns that into thousandths of a pixel. Measured over these 48 frames on the
# CPU: an fp16 ONNX graph moved keypoints by 0.0011 px on average (worst 0.0042 px), torch
# autocast to fp16 by 0.0013 (0.0047), TF32 emulated (inputs of every conv and matmul rounded
# to 10 bits) by 0.0012 (0.0031). The bounds give ~8x margin on the mean and ~10x on the worst
# node, and stay far below a real fault: bf16 (7-bit mantissa) already moves the worst node
# by 0.66 px, and an overflow or a wrong cast moves keypoints by whole map pixels.
REDUCED_MEAN_PX = 0.01
REDUCED_MAX_PX = 0.05
# ... and it must not cost accuracy against the ground truth the frames were drawn from
# (float32: 0.453 px mean error; fp16 and TF32 changed that by < 2e-4 px).
REDUCED_TRUTH_PX = 0.01

BATCH = 4  # every batch here has 4 frames: one TensorRT engine shape per stage


# ---------------------------------------------------------------- the device
@pytest.fixture(scope="session", autouse=True)
def _needs_cuda() -> None:
    """Session-scoped, so it skips before any module-scoped fixture computes CPU references."""
    if not REHEARSAL and not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")


@pytest.fixture(scope="session")
def gpu() -> torch.device:
    """The GPU under test: ``cuda:0``, or the CPU in a rehearsal."""
    if REHEARSAL:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    return torch.device("cuda", 0)


def needs_real_gpu(what: str) -> None:
    """Skip in a rehearsal: ``what`` cannot run with the CPU standing in."""
    if REHEARSAL:
        pytest.skip(f"{what}: needs a real CUDA GPU, not a rehearsal on the CPU")


def needs_gpus(n: int) -> None:
    needs_real_gpu(f"{n} CUDA GPUs")
    if torch.cuda.device_count() < n:
        pytest.skip(f"needs {n} CUDA GPUs, this machine has {torch.cuda.device_count()}")


def needs_onnx_cuda() -> None:
    """ONNX Runtime with a CUDA provider (onnxruntime-gpu), on a real GPU."""
    needs_real_gpu("ONNX Runtime's CUDA provider")
    ort = pytest.importorskip("onnxruntime")
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        pytest.skip(
            "this onnxruntime has no CUDAExecutionProvider "
            f"(has {', '.join(ort.get_available_providers())}); install onnxruntime-gpu"
        )


def needs_tensorrt() -> None:
    needs_real_gpu("TensorRT")
    pytest.importorskip("tensorrt")


# ---------------------------------------------------------------- fixture cases
@dataclass(frozen=True)
class Case:
    """A fixture model (or top-down pair) and the inputs it is compared on."""

    models: tuple[str, ...]  # folders in fixtures/models
    kind: str  # what it predicts: points, masks, boxes or vectors
    golden: str | None = None  # fixtures/parity/<golden>.pkl: sleap-nn's preprocessed inputs
    video: str = "synthetic_multi.pkg.slp"  # otherwise frames from this (embedded) project
    options: dict[str, float] = field(default_factory=dict)
    goldens_options: bool = False  # run with the goldens' options: sleap-nn's instances too
    boxes_in_order: bool = True  # compare boxes in each frame's order (else matched up)
    px: float = PX  # keypoint tolerance


def _pair(*model_types: str) -> tuple[str, ...]:
    return tuple(FIXTURE_MODELS[t] for t in model_types)


CASES: dict[str, Case] = {
    "single_instance": Case(
        _pair("single_instance"),
        "points",
        golden="single_instance",
        options={"peak_threshold": 0.3},
        goldens_options=True,
    ),
    "topdown": Case(
        _pair("centroid", "centered_instance"),
        "points",
        golden="topdown",
        options={"peak_threshold": 0.03, "max_instances": 6},
        goldens_options=True,
    ),
    # The multi-class instance model is barely trained (peaks < 0.06): keep every peak.
    "multi_class_topdown": Case(
        _pair("centroid", "multi_class_topdown"),
        "points",
        golden="multiclass_topdown",
        options={"peak_threshold": -1.0, "centroid_peak_threshold": 0.2},
    ),
    "bottomup": Case(
        _pair("bottomup"),
        "points",
        golden="bottomup",
        options={"peak_threshold": 0.05},
        goldens_options=True,
    ),
    "multi_class_bottomup": Case(
        _pair("multi_class_bottomup"),
        "points",
        golden="multiclass_bottomup",
        options={"peak_threshold": 0.05},
        goldens_options=True,
        px=FAINT_PEAKS_PX,
    ),
    "bottomup_segmentation": Case(("synthetic_bottomup_segmentation",), "masks"),
    "semantic_segmentation": Case(("synthetic_semantic_segmentation",), "masks"),
    "topdown_segmentation": Case(
        ("synthetic_centroid", "synthetic_centered_instance_segmentation"), "masks"
    ),
    "bbox_centernet": Case(("synthetic_bbox_centernet",), "boxes"),
    # Under-trained: its 100 boxes a frame have scores as little as 1e-7 apart, so float
    # noise of 1e-5 already reorders them (without changing them): matched up, not in order.
    "bbox_ssd": Case(("synthetic_bbox_ssd",), "boxes", boxes_in_order=False),
    "box_topdown_segmentation": Case(
        ("synthetic_bbox_centernet", "synthetic_centered_instance_segmentation"), "masks"
    ),
    "topdown_embedding": Case(("synthetic_centroid", "synthetic_embedding"), "vectors"),
    "single_instance_tiled": Case(
        ("synthetic_single_instance_tiled",), "points", video="synthetic_single.pkg.slp"
    ),
    "bottomup_segmentation_tiled": Case(("synthetic_bottomup_segmentation_tiled",), "masks"),
    "semantic_segmentation_tiled": Case(("synthetic_semantic_segmentation_tiled",), "masks"),
}
# TensorRT builds an engine per stage and batch shape (~10-30 s each): one case per model
# type, one batch each. The tiled cases add no model type (tiling is host-side, and ONNX
# Runtime's CUDA provider runs them) but would add an engine per tile-chunk shape.
TRT_CASES = [name for name in CASES if not name.endswith("_tiled")]
FRAMES = 8  # video frames per case (two batches); the goldens hold 8 frames each


def _golden(shared: Path, name: str) -> list[dict[str, Any]]:
    with open(shared / "parity" / f"{name}.pkl", "rb") as fh:
        return pickle.load(fh)


def _batches(shared: Path, case: Case) -> list[np.ndarray]:
    """The case's inputs in batches of 4: preprocessed uint8 NCHW (goldens) or NHWC frames."""
    if case.golden is not None:
        golden = _golden(shared, case.golden)
        if case.golden.endswith("topdown"):  # one frame (and its crops) per golden batch
            frames = np.concatenate([b["image"][:1] for b in golden])
        else:
            frames = np.concatenate([b["image"][:, 0] for b in golden])
    else:
        path = shared / "videos" / case.video
        if not path.exists():
            pytest.skip(f"{path} not found")
        video = sio.load_slp(str(path)).videos[0]
        frames = np.stack([np.asarray(video[i]) for i in range(FRAMES)])
    assert len(frames) % BATCH == 0
    return [frames[i : i + BATCH] for i in range(0, len(frames), BATCH)]


def _layer(shared: Path, case: Case, runtime: str, device: torch.device | str, **options: Any):
    paths = [shared / "models" / m for m in case.models]
    missing = [str(p) for p in paths if not p.is_dir()]
    if missing:
        pytest.skip(f"fixture models not found: {missing}")
    models = [load_model(p) for p in paths]
    maker = backend_maker(runtime, device, **options)
    return build_layer(models, maker, PredictOptions(**case.options))


def _predict(layer: InferenceLayer, case: Case, batch: np.ndarray) -> BatchPredictions:
    if case.golden is None:
        return layer.predict(batch)
    x = torch.from_numpy(np.ascontiguousarray(batch)).to(layer.device)
    return layer.run_preprocessed(x, layer.info_for_input(x, source=x))


@pytest.fixture(scope="module")
def cpu_runs(shared: Path) -> Callable[[str], list[BatchPredictions]]:
    """torch float32 predictions on the CPU per case, made once: what every GPU run must give."""
    made: dict[str, list[BatchPredictions]] = {}

    def get(name: str) -> list[BatchPredictions]:
        if name not in made:
            case = CASES[name]
            layer = _layer(shared, case, "torch", "cpu")
            made[name] = [_predict(layer, case, b) for b in _batches(shared, case)]
        return made[name]

    return get


# ---------------------------------------------------------------- comparisons
def _max_abs(a: np.ndarray | None, b: np.ndarray | None) -> float:
    """Largest difference; both sides must have NaN (not found) in the same places."""
    assert (a is None) == (b is None)
    if a is None or b is None:
        return 0.0
    assert a.shape == b.shape
    assert np.array_equal(np.isnan(a), np.isnan(b)), "found by one run only"
    diff = np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))
    return float(np.nanmax(diff)) if np.isfinite(diff).any() else 0.0


@dataclass
class Gaps:
    """The worst differences between two runs over all batches, and what was compared."""

    px: float = 0.0
    score: float = 0.0
    box_px: float = 0.0
    vector: float = 0.0
    masks_identical: float = 1.0
    found: dict[str, int] = field(
        default_factory=lambda: {"points": 0, "masks": 0, "boxes": 0, "vectors": 0}
    )

    def add(self, ref: BatchPredictions, got: BatchPredictions, boxes_in_order: bool) -> None:
        """Same instances in the same slots, masks in the same order, the same boxes."""
        np.testing.assert_array_equal(got.valid, ref.valid)
        self.px = max(self.px, _max_abs(got.points, ref.points))
        self.score = max(
            self.score,
            _max_abs(got.point_scores, ref.point_scores),
            _max_abs(got.instance_scores, ref.instance_scores),
            _max_abs(got.class_scores, ref.class_scores),
        )
        assert (got.class_ids is None) == (ref.class_ids is None)
        if ref.class_ids is not None:
            np.testing.assert_array_equal(got.class_ids, ref.class_ids)
        self.found["points"] += int(np.isfinite(ref.points).all(axis=-1).sum())
        if ref.n_masks:
            assert got.n_masks == ref.n_masks and got.masks is not None and ref.masks is not None
            share = mask_agreement(ref, got)
            self.masks_identical = min(self.masks_identical, 0.0 if share is None else share)
            self.score = max(self.score, _max_abs(got.masks.score, ref.masks.score))
            self.found["masks"] += ref.n_masks
        if ref.n_boxes:
            assert got.boxes is not None and ref.boxes is not None
            assert got.n_boxes == ref.n_boxes, f"{got.n_boxes} boxes, {ref.n_boxes} on the CPU"
            if boxes_in_order:
                self.box_px = max(self.box_px, box_delta(ref, got) or 0.0)
                self.score = max(self.score, _max_abs(got.boxes.score, ref.boxes.score))
            else:
                corners, scores = _matched_box_gaps(ref, got)
                self.box_px, self.score = max(self.box_px, corners), max(self.score, scores)
            self.found["boxes"] += ref.n_boxes
        self.vector = max(self.vector, _max_abs(got.embeddings, ref.embeddings))
        if ref.embeddings is not None:
            self.found["vectors"] += int(np.isfinite(ref.embeddings).all(axis=-1).sum())

    def check(self, case: Case) -> None:
        assert self.found[case.kind] > 0, f"nothing to compare: no {case.kind} found"
        assert self.px <= case.px, f"keypoints differ by {self.px:.3g} px"
        assert self.score <= SCORE, f"scores differ by {self.score:.3g}"
        assert self.box_px <= BOX_PX, f"box corners differ by {self.box_px:.3g} px"
        assert self.vector <= VECTOR, f"re-ID vectors differ by {self.vector:.3g}"
        assert self.masks_identical >= MASKS_IDENTICAL, (
            f"only {self.masks_identical:.1%} of the masks identical"
        )


def _matched_box_gaps(ref: BatchPredictions, got: BatchPredictions) -> tuple[float, float]:
    """Largest corner and score differences once each frame's boxes are paired up by
    distance (``box_delta`` pairs them in order); ``inf`` when a frame's count differs."""
    assert ref.boxes is not None and got.boxes is not None
    corners = scores = 0.0
    for b in range(ref.batch_size):
        mine, theirs = ref.boxes.in_frame(b), got.boxes.in_frame(b)
        if len(mine) != len(theirs):
            return float("inf"), float("inf")
        if not mine:
            continue
        cost = np.abs(ref.boxes.xyxy[mine][:, None] - got.boxes.xyxy[theirs][None]).max(axis=-1)
        rows, cols = linear_sum_assignment(cost)
        corners = max(corners, float(cost[rows, cols].max()))
        gap = ref.boxes.score[np.asarray(mine)[rows]] - got.boxes.score[np.asarray(theirs)[cols]]
        scores = max(scores, float(np.abs(gap).max()))
    return corners, scores


def _check_goldens(shared: Path, case: Case, runs: list[BatchPredictions]) -> None:
    """Run with the goldens' options, the device finds the instances sleap-nn found."""
    if not case.goldens_options or case.golden is None:
        return
    golden = _golden(shared, case.golden)
    n = sum(p.batch_size for p in runs)
    if case.golden == "single_instance":  # which nodes were found
        expected = np.concatenate([b["pred_instance_peaks"] for b in golden])[:n]
        found = np.concatenate([np.isnan(p.points[:, 0]) for p in runs])
        np.testing.assert_array_equal(found, np.isnan(expected))
        return
    if case.golden == "topdown":  # instances per frame
        counts = [len(b["centroid_val"]) for b in golden]
    else:
        counts = [len(p) for b in golden for p in b["pred_instance_peaks"]]
    assert [int(k) for p in runs for k in p.valid.sum(axis=1)] == counts[:n]


def _compare_case(
    shared: Path,
    cpu_runs: Callable[[str], list[BatchPredictions]],
    name: str,
    layer: InferenceLayer,
    n_batches: int | None = None,
) -> Gaps:
    case = CASES[name]
    reference = cpu_runs(name)[:n_batches]
    inputs = _batches(shared, case)[:n_batches]
    gaps = Gaps()
    runs = [_predict(layer, case, batch) for batch in inputs]
    for ref, got in zip(reference, runs):
        gaps.add(ref, got, case.boxes_in_order)
    _check_goldens(shared, case, runs)
    print(f"{name}: {gaps}")
    gaps.check(case)
    return gaps


# ---------------------------------------------------------------- ONNX Runtime and TensorRT
Calls = list[tuple[Any, dict[str, torch.Tensor]]]


def _spy(monkeypatch: pytest.MonkeyPatch, cls: type, method: str) -> Calls:
    """Record every ``cls.method(self, x)`` call: the backend and the outputs it returned."""
    calls: Calls = []
    original = getattr(cls, method)

    def spy(self: Any, x: torch.Tensor) -> dict[str, torch.Tensor]:
        out = original(self, x)
        calls.append((self, out))
        return out

    monkeypatch.setattr(cls, method, spy)
    return calls


@pytest.fixture()
def bound_runs(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Every ``ONNXBackend._run_bound`` call (the CUDA IO-binding path) and its outputs."""
    from sleap_infer.backends.onnx_backend import ONNXBackend

    return _spy(monkeypatch, ONNXBackend, "_run_bound")


def _check_bound(calls: list[tuple[Any, dict[str, torch.Tensor]]], device: torch.device) -> None:
    """Sessions on the CUDA provider first, in IEEE float32 (``use_tf32`` off: the
    backend's default), outputs torch tensors on the GPU (no host copy)."""
    assert calls, "ONNX Runtime never ran through IO binding"
    for backend, outputs in calls:
        assert backend.device == device
        assert backend.session.get_providers()[0] == "CUDAExecutionProvider"
        cuda = backend.session.get_provider_options()["CUDAExecutionProvider"]
        assert cuda["device_id"] == str(device.index or 0)
        assert cuda["use_tf32"] == "0"
        assert outputs and all(
            isinstance(v, torch.Tensor) and v.device == device for v in outputs.values()
        )


@pytest.fixture()
def engine_runs(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """Every ``TensorRTBackend`` call and its outputs."""
    from sleap_infer.backends.tensorrt_backend import TensorRTBackend

    return _spy(monkeypatch, TensorRTBackend, "__call__")


def _check_engines(
    calls: list[tuple[Any, dict[str, torch.Tensor]]], device: torch.device, precision: str
) -> set[Path]:
    """Engines built on first use into the export cache, static batch, outputs on the GPU."""
    from sleap_infer.backends.tensorrt_backend import read_engine_metadata

    assert calls, "no TensorRT engine ran"
    engines = {Path(backend.engine_path) for backend, _ in calls}
    for path in engines:
        assert path.resolve().is_relative_to(cache_root().resolve())
        meta = read_engine_metadata(path)
        assert meta["precision"] == precision
        profile = meta["profile"]
        assert profile["min"] == profile["opt"] == profile["max"]  # built for the exact batch
    for backend, outputs in calls:
        assert backend.device == device
        assert all(v.device == device for v in outputs.values())
    return engines


# ---------------------------------------------------------------- torch on CUDA
@pytest.mark.parametrize("name", list(CASES))
def test_torch_cuda_matches_cpu(
    shared: Path,
    cpu_runs: Callable[[str], list[BatchPredictions]],
    gpu: torch.device,
    name: str,
) -> None:
    layer = _layer(shared, CASES[name], "torch", gpu)
    assert layer.device == gpu
    if gpu.type == "cuda":  # IEEE float32, not cuDNN's default TF32 (see the module doc)
        assert torch.backends.cudnn.allow_tf32 is False
    _compare_case(shared, cpu_runs, name, layer)


# Input scaling (``scale`` != 1: the single-instance and multi-class bottom-up fixtures)
# resizes uint8 frames on the device. On the CPU that is torch's native uint8 kernel
# (torchvision's CPU result, bit for bit); on CUDA it is float then round (torchvision's CUDA
# path). The parity cases above feed sleap-nn's already-resized inputs, so they skip it. On
# an H200 (2026-12-04) the two differed by one gray level on 5.2% of centered_pair_small's
# pixels at scale 0.5, and that alone moved the under-trained multi-class bottom-up
# fixture's keypoints by up to 48.9 px over 32 frames (mean 0.48 px; the same numbers with
# the CPU forced onto the float path), the single-instance fixture's by 0.03 px.
RESIZE_LEVELS = 1
RESIZE_SHARE = 0.10


def test_cuda_resize_is_the_cpu_uint8_resize_within_one_level(
    shared: Path, gpu: torch.device
) -> None:
    from sleap_infer.io.video import VideoReader
    from sleap_infer.ops.preprocess import resize

    reader = VideoReader(shared / "videos" / "centered_pair_small.mp4")
    frames = np.stack([f for _, f in reader.iter_frames(range(8), reader.channels_for(1))])
    x = torch.from_numpy(frames).permute(0, 3, 1, 2).contiguous()
    on_cpu = resize(x, (192, 192))
    on_gpu = resize(x.to(gpu), (192, 192))
    assert on_gpu.device == gpu and on_gpu.dtype == torch.uint8
    gap = (on_cpu.int() - on_gpu.cpu().int()).abs()
    assert int(gap.max()) <= RESIZE_LEVELS
    assert float((gap > 0).float().mean()) <= RESIZE_SHARE


# ---------------------------------------------------------------- reduced precision
TRAINED_FRAMES = 48


@dataclass
class Trained:
    """Rendered frames of the example scene, their true keypoints and torch's CPU float32."""

    frames: np.ndarray  # (n, 160, 160, 1) uint8
    truth: np.ndarray  # (n, 2 nodes, 2)
    cpu: list[BatchPredictions]

    def run(self, layer: InferenceLayer) -> list[BatchPredictions]:
        return [
            layer.predict(self.frames[i : i + BATCH]) for i in range(0, len(self.frames), BATCH)
        ]


def _trained_layer(runtime: str, device: torch.device | str, **options: Any) -> InferenceLayer:
    maker = backend_maker(runtime, device, **options)
    return build_layer([load_model(SYNTHETIC_MODEL)], maker, PredictOptions())


@pytest.fixture(scope="module")
def trained() -> Trained:
    rng = np.random.default_rng(3)  # test_reduced_precision's frames
    centers, angles = scene.random_poses(TRAINED_FRAMES, rng)
    background = scene._background(rng)
    frames = np.stack([scene.render(c, a, background) for c, a in zip(centers, angles)])
    truth = np.stack([scene.keypoints(c, a) for c, a in zip(centers, angles)])
    data = Trained(frames[..., None], truth, [])
    data.cpu = data.run(_trained_layer("torch", "cpu"))
    return data


def _needs_for(runtime: str, precision: str) -> None:
    if runtime == "trt":
        needs_tensorrt()
    elif runtime == "torch" and precision == "fp16":
        needs_real_gpu("torch fp16 autocast")
    elif runtime == "onnx":
        pytest.importorskip("onnxruntime")
        # An fp16 graph runs on ONNX Runtime's CPU provider too: a rehearsal runs that.
        if not (REHEARSAL and precision == "fp16"):
            needs_onnx_cuda()


@pytest.mark.parametrize(
    ("runtime", "precision"),
    [
        ("torch", "default"),  # float32 (IEEE: the backends turn TF32 off)
        ("onnx", "default"),
        ("torch", "fp16"),  # autocast
        ("onnx", "fp16"),  # an fp16 export
        ("trt", "fp16"),  # an fp16 engine
    ],
)
def test_reduced_precision_keeps_keypoints_on_a_trained_model(
    trained: Trained,
    gpu: torch.device,
    runtime: str,
    precision: str,
    engine_runs: list[tuple[Any, dict[str, torch.Tensor]]],
) -> None:
    _needs_for(runtime, precision)
    fp16 = precision == "fp16"
    layer = _trained_layer(runtime, gpu, **({"fp16": True} if fp16 else {}))
    runs = trained.run(layer)
    deltas = [keypoint_delta(ref, got) for ref, got in zip(trained.cpu, runs)]
    compared = sum(n for _, _, n in deltas)
    assert compared == 2 * TRAINED_FRAMES  # both nodes of every frame found by both runs
    mean = sum(m * n for m, _, n in deltas) / compared
    worst = max(w for _, w, _ in deltas)
    print(f"{runtime} {precision} on {gpu}: mean {mean:.4f} px, worst {worst:.4f} px")
    assert mean <= REDUCED_MEAN_PX and worst <= REDUCED_MAX_PX

    def truth_error(runs: list[BatchPredictions]) -> float:
        points = np.concatenate([p.points[:, 0] for p in runs])
        return float(np.linalg.norm(points - trained.truth, axis=-1).mean())

    assert truth_error(runs) <= truth_error(trained.cpu) + REDUCED_TRUTH_PX
    if fp16 and runtime != "trt":
        assert mean > 0  # really fp16: not the float32 path under another name
    if fp16 and runtime == "torch":
        assert layer.backend.fp16  # type: ignore[attr-defined]
    if fp16 and runtime == "onnx":
        from sleap_infer.core.artifact import read_export

        exports = layer.backend.exports  # type: ignore[attr-defined]
        assert exports and all(read_export(p).data["precision"] == "fp16" for p in exports)
    if runtime == "trt":
        _check_engines(engine_runs, gpu, "fp16")


# ---------------------------------------------------------------- cuda:N
def _runtime_here(runtime: str) -> None:
    if runtime == "onnx":
        needs_onnx_cuda()
    elif runtime == "trt":
        pytest.importorskip("tensorrt")


@pytest.mark.parametrize("runtime", ["torch", "onnx", "trt"])
def test_a_layer_on_the_second_gpu_stays_there(trained: Trained, runtime: str) -> None:
    needs_gpus(2)
    _runtime_here(runtime)
    first, second = torch.device("cuda", 0), torch.device("cuda", 1)
    frames = trained.frames[: 2 * BATCH]
    torch.cuda.synchronize(first)
    before = torch.cuda.memory_allocated(first)
    layer = _trained_layer(runtime, "cuda:1")
    assert layer.device == second
    if runtime == "torch":
        network = layer.backend.network  # type: ignore[attr-defined]
        tensors = [*network.parameters(), *network.buffers()]
        assert tensors and {t.device for t in tensors} == {second}
    x, _ = layer.preprocess(frames[:BATCH])
    assert x.device == second
    outputs = layer.network_outputs(x)
    assert outputs and all(v.device == second for v in outputs.values())
    on_second = [layer.predict(frames[i : i + BATCH]) for i in range(0, len(frames), BATCH)]
    torch.cuda.synchronize(second)
    # Nothing of this layer lives on cuda:0 (torch's allocator; a CUDA context is not counted).
    assert torch.cuda.memory_allocated(first) <= before
    layer = _trained_layer(runtime, "cuda:0")
    on_first = [layer.predict(frames[i : i + BATCH]) for i in range(0, len(frames), BATCH)]
    gaps = Gaps()
    for a, b in zip(on_first, on_second):
        gaps.add(a, b, boxes_in_order=True)
    assert gaps.found["points"] == 2 * len(frames)
    assert gaps.px <= PX and gaps.score <= SCORE  # identical GPUs: expect identical keypoints


@pytest.mark.parametrize("runtime", ["torch", "onnx", "trt"])
def test_a_gpu_past_the_last_is_refused_with_the_count(runtime: str) -> None:
    needs_real_gpu("a real CUDA device count")
    if runtime == "onnx":
        pytest.importorskip("onnxruntime")
    if runtime == "trt":
        pytest.importorskip("tensorrt")
    n = torch.cuda.device_count()
    with pytest.raises(BackendError) as info:
        backend_maker(runtime, f"cuda:{n}")
    assert str(info.value) == (
        f"--device cuda:{n}: only {n} CUDA device(s) here (cuda:0 to cuda:{n - 1})"
    )


def test_predict_refuses_a_gpu_past_the_last(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    needs_real_gpu("a real CUDA device count")
    n = torch.cuda.device_count()
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=4)
    out = tmp_path / "out.slp"
    code, err = run_cli(
        capsys, "predict", video, "--model", SYNTHETIC_MODEL, "--device", f"cuda:{n}", "-o", out
    )
    assert code == BackendError.exit_code
    said = " ".join(" ".join(error_lines(err)).split())  # the console may wrap the line
    assert f"--device cuda:{n}: only {n} CUDA device(s) here (cuda:0 to cuda:{n - 1})" in said
    assert not out.exists()


def test_two_gpus_write_what_one_gpu_writes(tmp_path: Path) -> None:
    needs_gpus(2)
    clips = tmp_path / "clips"
    clips.mkdir()
    for i in range(2):
        scene.write_video(clips / f"clip{i}.mp4", n_frames=12, seed=i)
    args = [sys.executable, "-m", "sleap_infer", "predict", str(clips)]
    args += ["--model", str(SYNTHETIC_MODEL), "--progress", "none"]  # -q hides the model line
    workers = subprocess.run(
        [*args, "--devices", "cuda:0,cuda:1", "-o", str(tmp_path / "w")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert workers.returncode == 0, workers.stderr
    assert "2 workers (cuda:0, cuda:1)" in " ".join(workers.stderr.split())
    single = subprocess.run(
        [*args, "--device", "cuda:0", "-o", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert single.returncode == 0, single.stderr
    for i in range(2):
        name = f"clip{i}.mp4.predictions.slp"
        # The same kernels on identical GPUs: identical but for a different cuDNN algorithm.
        assert_same_predictions(tmp_path / "s" / name, tmp_path / "w" / name, rtol=1e-6)


# ---------------------------------------------------------------- exported runtimes
# Last, and on a time budget: ONNX Runtime and TensorRT export each fixture model on first
# use (seconds each) and TensorRT builds an engine per stage (10-40 s each), together more
# than a lent GPU's minutes. So the cases run model type by model type (keypoint types that
# decode in-graph first, then raw maps), ONNX Runtime then TensorRT for each, and a case
# starts only if its estimate (the slowest seconds per model so far for that runtime, or a
# first guess) ends inside the budget; otherwise it skips and says how to run it.
BUDGET_S = float(os.environ.get("SLEAP_INFER_GPU_BUDGET_S", "110"))
"""Seconds this module may run, from its first test (``SLEAP_INFER_GPU_BUDGET_S``). The
default keeps a whole ``pytest -m gpu`` inside benchmarks/gpu_check.sh's 150 s; every
case, all model types on both runtimes, takes an estimated 5-6 minutes on an H200."""
FIRST_GUESS_S = {"onnx": 5.0, "trt": 30.0}  # per model (stage): export (+ engine) + runs


@dataclass
class Budget:
    start: float
    per_model: dict[str, list[float]] = field(default_factory=dict)

    @contextlib.contextmanager
    def case(self, runtime: str, name: str) -> Iterator[None]:
        """Skip the case if it would end past the budget; else time it."""
        stages = len(CASES[name].models)
        seen = self.per_model.get(runtime, [])
        need = stages * (max(seen) if seen else FIRST_GUESS_S[runtime])
        left = BUDGET_S - (time.monotonic() - self.start)
        if need > left:
            pytest.skip(
                f"time budget: {runtime} {name} needs ~{need:.0f} s, {max(left, 0):.0f} s of "
                f"SLEAP_INFER_GPU_BUDGET_S={BUDGET_S:g} left (set it higher to run it)"
            )
        t0 = time.monotonic()
        try:
            yield
        finally:
            self.per_model.setdefault(runtime, []).append((time.monotonic() - t0) / stages)


@pytest.fixture(scope="module", autouse=True)
def budget() -> Budget:
    return Budget(time.monotonic())


EXPORTED = [
    pytest.param(runtime, name, id=f"{runtime}-{name}")
    for name in CASES
    for runtime in ("onnx", "trt")
    if runtime == "onnx" or name in TRT_CASES
]


@pytest.mark.parametrize(("runtime", "name"), EXPORTED)
def test_exported_runtime_matches_cpu(
    shared: Path,
    cpu_runs: Callable[[str], list[BatchPredictions]],
    gpu: torch.device,
    budget: Budget,
    runtime: str,
    name: str,
    bound_runs: list[tuple[Any, dict[str, torch.Tensor]]],
    engine_runs: list[tuple[Any, dict[str, torch.Tensor]]],
) -> None:
    """ONNX Runtime's CUDA provider (IO binding) or a TensorRT engine built on first use
    gives the CPU's predictions; TensorRT on one batch (one engine per stage)."""
    if runtime == "onnx":
        needs_onnx_cuda()
    else:
        needs_tensorrt()
    cpu_runs(name)  # made before the clock starts: not this runtime's cost
    with budget.case(runtime, name):
        layer = _layer(shared, CASES[name], runtime, gpu)
        _compare_case(shared, cpu_runs, name, layer, n_batches=1 if runtime == "trt" else None)
    if runtime == "onnx":
        _check_bound(bound_runs, gpu)
    else:
        engines = _check_engines(engine_runs, gpu, "fp32")
        assert len(engines) <= len(CASES[name].models)
