"""``InferenceLayer``: model-type logic around any backend.

A layer owns the preprocessing chain that turns raw frames into network
input (:class:`~sleap_infer.layers.preprocessing.Preprocessor`), and the
postprocessing that turns network outputs into keypoints in original pixels.
It does not care whether the backend is torch, ONNX Runtime or TensorRT: that
is what lets 6 model types x 3 runtimes be 6 + 3 classes. What it does care
about is whether the backend returns raw maps or in-graph decoded peaks, so
each layer class declares which one it decodes (``decodes_in_graph``) and
refuses a backend of the other kind.
"""

from __future__ import annotations

import contextlib
import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar

import numpy as np
import torch

from sleap_infer.backends.base import ModelBackend, check_finite
from sleap_infer.backends.threads import torch_threads
from sleap_infer.core.config import ModelConfig, Preprocessing
from sleap_infer.core.options import PredictOptions
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.timing import stage
from sleap_infer.layers.preprocessing import Preprocessor, PreprocInfo
from sleap_infer.ops.peaks import find_global_peaks, find_local_peaks

WHOLE_POOL_ELEMENTS = 1 << 21
"""Host work on this many elements a batch or more runs on torch's whole pool even beside
another runtime's (2,097,152: 4 frames of 512 x 512 one-channel maps hold 1,048,576).
Few large ops gain more from a second thread than they lose to the runtime's spinning
workers: a bottom-up segmentation model's decoding on 1024 px frames (4.2 M map elements
a batch of 4) ran 96-101 ms/frame on 2 threads and 108-109 on one, at 2048 px 1528-1589
against 1762-1795; at 512 and 256 px the two were the same, and on small maps or decoded
outputs one thread is the faster (:func:`~sleap_infer.backends.threads.torch_threads`)."""


def _elements(work: object) -> int:
    """Elements of ``work``: a batch of frames (array or tensor), or a dict of outputs."""
    values = list(work.values()) if isinstance(work, dict) else [work]
    return sum(int(v.numel()) if torch.is_tensor(v) else int(getattr(v, "size", 0)) for v in values)


def grid_to_frame(
    points: torch.Tensor, output_stride: int, input_scale: float, eff_scale: np.ndarray
) -> torch.Tensor:
    """Coordinate ladder: confmap grid -> network input -> sized-matched frame -> original frame.

    ``points`` has the batch on dim 0 and ``(x, y)`` on the last dim. Stride
    padding needs no undo (it only adds pixels bottom/right).
    """
    scale = torch.as_tensor(eff_scale, dtype=points.dtype, device=points.device)
    scale = scale.reshape(-1, *([1] * (points.ndim - 1)))
    return points * (output_stride / input_scale) / scale


class InferenceLayer(Preprocessor, ABC):
    """Preprocess -> backend -> postprocess for one model type."""

    model_type: ClassVar[str]
    decodes_in_graph: bool = False
    """True for layers reading an exported graph's decoded peaks instead of raw maps."""

    def __init__(
        self,
        config: ModelConfig,
        backend: ModelBackend,
        options: PredictOptions | None = None,
        preprocessing: Preprocessing | None = None,
    ) -> None:
        if not isinstance(backend, ModelBackend):
            raise TypeError(f"backend must satisfy ModelBackend, got {type(backend).__name__}")
        if backend.does_baked_postproc != self.decodes_in_graph:
            wants = "an exported graph" if self.decodes_in_graph else "raw confidence maps"
            raise TypeError(f"{type(self).__name__} needs a backend returning {wants}")
        super().__init__(config, preprocessing)
        self.backend = backend
        self.options = options or PredictOptions()

    @property
    def device(self) -> torch.device:
        return self.backend.device

    @property
    def stage1_threshold(self) -> float:
        """The peak (or box score) threshold of a detector that may be top-down's stage 1:
        ``--centroid-peak-threshold`` wins over ``--peak-threshold`` there."""
        opts = self.options
        if opts.centroid_peak_threshold is not None:
            return opts.centroid_peak_threshold
        return opts.peak_threshold

    # ----------------------------------------------------------------- running
    @abstractmethod
    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        """Network outputs -> keypoints in original frame pixels."""

    def call_backend(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """The backend's outputs for ``x``, checked finite: every network call of every layer
        goes through here, so NaN or Inf (broken weights, an fp16 overflow) is a
        :class:`~sleap_infer.core.errors.NonFiniteOutputError` on any backend, never points
        at (0, 0) or an empty frame that looks like "nothing detected".

        The check is host work (:meth:`host_threads`): on torch's whole pool beside a
        runtime's own, its reductions left torch's OpenMP worker spinning on the runtime's
        cores. Only the check: torch's pool size is process-wide, and the network's call
        lasts long enough that the postprocessing thread's large work (bottom-up grouping
        of big maps, which wants the whole pool) would run on one thread meanwhile."""
        outputs = self.backend(x)
        with self.host_threads(outputs):
            return check_finite(outputs, self.backend.does_baked_postproc)

    def network_outputs(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """The backend's outputs for a preprocessed batch (a tiled layer stitches its tiles)."""
        with stage("network"):
            return self.call_backend(x)

    def host_threads(self, work: object = None) -> contextlib.AbstractContextManager[None]:
        """torch's pool for this layer's own work on ``work`` (the frames, or the network's
        outputs): one thread beside a backend whose runtime runs its own CPU pool
        (``backend.host_threads``), unless the work is large (:data:`WHOLE_POOL_ELEMENTS`);
        as is otherwise. See :func:`~sleap_infer.backends.threads.torch_threads`."""
        threads = getattr(self.backend, "host_threads", None)
        if threads is None or _elements(work) >= WHOLE_POOL_ELEMENTS:
            return contextlib.nullcontext()
        return torch_threads(threads)

    def finish(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        with stage("postprocess"), self.host_threads(outputs):
            return self.postprocess(outputs, info)

    def run_preprocessed(self, x: torch.Tensor, info: PreprocInfo) -> BatchPredictions:
        return self.finish(self.network_outputs(x), info)

    def predict(self, frames: np.ndarray | torch.Tensor) -> BatchPredictions:
        """Predict on a batch of raw frames (``(B, H, W, C)`` numpy or ``(B, C, H, W)`` tensor)."""
        with stage("preprocess"), self.host_threads(frames):
            x, info = self.preprocess(frames)
        return self.run_preprocessed(x, info)

    def start(self, frames: np.ndarray | torch.Tensor) -> Callable[[], BatchPredictions]:
        """Preprocess and run the network now; return the postprocessing as a call for later.

        The runner makes that call on its postprocessing thread while this thread
        runs the next batch's network, so grouping, crops and decoding (top-down's
        second network too) overlap with the first network instead of adding to it.
        ``predict`` is ``start(frames)()``.
        """
        with stage("preprocess"), self.host_threads(frames):
            x, info = self.preprocess(frames)
        return functools.partial(self.finish, self.network_outputs(x), info)

    def warmup(self, frame_shape: tuple[int, int, int, int], iterations: int = 1) -> None:
        """Run zero frames of the real ``(B, H, W, C)`` shape through the whole layer.

        Goes through the real preprocessing, so the backend sees the exact
        input shape of the first timed batch (cuDNN autotuning, TensorRT
        profiles and torch.compile all specialise on it).
        """
        frames = np.zeros(frame_shape, dtype=np.uint8)
        for _ in range(iterations):
            self.predict(frames)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    # ---------------------------------------------------------------- helpers
    def local_peaks(
        self, outputs: dict[str, torch.Tensor], threshold: float | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Local peaks of the confidence-map head with this layer's refinement options.

        Returns points in confmap grid units, values, and each peak's sample and channel.
        """
        opts = self.options
        return find_local_peaks(
            outputs[self.config.confmap_head.name],
            opts.peak_threshold if threshold is None else threshold,
            refine=opts.refine,
            patch_size=opts.integral_patch_size,
            guard=not opts.refine_like_sleap_nn,
        )

    def global_peaks(self, outputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """One peak per channel of the confidence-map head with this layer's options:
        ``(S, N, 2)`` points in confmap grid units (NaN below the threshold), ``(S, N)`` values."""
        opts = self.options
        return find_global_peaks(
            outputs[self.config.confmap_head.name],
            opts.peak_threshold,
            refine=opts.refine,
            patch_size=opts.integral_patch_size,
            guard=not opts.refine_like_sleap_nn,
        )

    @property
    def n_nodes(self) -> int:
        return len(self.config.node_names)

    def _keep_maps(self, preds: BatchPredictions, outputs: dict[str, torch.Tensor]) -> None:
        """``return_confmaps``: every spatial head's output, under its section's name."""
        if not self.options.return_confmaps:
            return
        for head in self.config.heads:
            if head.is_spatial and head.name in outputs:
                preds.extras[head.section] = outputs[head.name].detach().cpu().numpy()
