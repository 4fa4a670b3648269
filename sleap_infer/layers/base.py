"""``InferenceLayer``: model-type logic around any backend.

A layer owns the preprocessing chain that turns raw frames into network
input, and the postprocessing that turns network outputs into keypoints in
original pixels. It does not care whether the backend is torch, ONNX Runtime
or TensorRT: that is what lets 6 model types x 3 runtimes be 6 + 3 classes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from sleap_infer.backends.base import ModelBackend
from sleap_infer.layers.options import PredictOptions
from sleap_infer.model.config import ModelConfig, Preprocessing
from sleap_infer.ops.preprocess import (
    as_nchw,
    coerce_channels,
    pad_to_stride,
    scale_image,
    size_match,
)
from sleap_infer.predictions import BatchPredictions
from sleap_infer.timing import stage


@dataclass(frozen=True)
class PreprocInfo:
    """What the coordinate ladder needs to map network coordinates back to frame pixels."""

    eff_scale: np.ndarray  # (B,) size-matcher factor per frame
    input_scale: float
    orig_hw: tuple[int, int]
    input_hw: tuple[int, int]  # network input size after scaling and stride padding
    # Size-matched but unscaled uint8 frames, kept only for layers that crop from them.
    source: torch.Tensor | None = None


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


class InferenceLayer(ABC):
    """Preprocess -> backend -> postprocess for one model type."""

    model_type: ClassVar[str]

    def __init__(
        self,
        config: ModelConfig,
        backend: ModelBackend,
        options: PredictOptions | None = None,
        preprocessing: Preprocessing | None = None,
    ) -> None:
        if not isinstance(backend, ModelBackend):
            raise TypeError(f"backend must satisfy ModelBackend, got {type(backend).__name__}")
        self.config = config
        self.backend = backend
        self.options = options or PredictOptions()
        self.preprocessing = preprocessing or config.preprocessing

    # ------------------------------------------------------------------ inputs
    @property
    def device(self) -> torch.device:
        return self.backend.device

    @property
    def input_channels(self) -> int:
        """Channels the network wants after coercion (frames may arrive with either)."""
        if self.preprocessing.ensure_rgb:
            return 3
        if self.preprocessing.ensure_grayscale:
            return 1
        return self.config.in_channels

    def size_frames(self, frames: np.ndarray | torch.Tensor) -> tuple[torch.Tensor, float]:
        """Channels, then the size matcher, on uint8: the image top-down crops are cut from."""
        x = as_nchw(frames)
        if x.device != self.device and self.device.type != "cpu":
            x = x.to(self.device, non_blocking=True)
        pre = self.preprocessing
        x = coerce_channels(x, pre.ensure_rgb, pre.ensure_grayscale)
        return size_match(x, pre.max_height, pre.max_width)

    def network_input(self, sized: torch.Tensor) -> torch.Tensor:
        """Input scale, then zero padding to the backbone's max stride (still uint8)."""
        return pad_to_stride(scale_image(sized, self.preprocessing.scale), self.config.max_stride)

    def preprocess(
        self, frames: np.ndarray | torch.Tensor, keep_source: bool = False
    ) -> tuple[torch.Tensor, PreprocInfo]:
        """Channels -> size matcher -> input scale -> pad to max stride, all on uint8.

        ``keep_source`` keeps the size-matched frames in ``info.source`` for cropping.
        """
        if isinstance(frames, torch.Tensor):  # (B, C, H, W)
            orig_hw = (int(frames.shape[-2]), int(frames.shape[-1]))
        else:  # (B, H, W, C)
            orig_hw = (int(frames.shape[-3]), int(frames.shape[-2]))
        sized, eff = self.size_frames(frames)
        x = self.network_input(sized)
        info = PreprocInfo(
            eff_scale=np.full(x.shape[0], eff, dtype=np.float64),
            input_scale=self.preprocessing.scale,
            orig_hw=orig_hw,
            input_hw=(int(x.shape[-2]), int(x.shape[-1])),
            source=sized if keep_source else None,
        )
        return x, info

    def info_for_input(
        self, x: torch.Tensor, eff_scale: float = 1.0, source: torch.Tensor | None = None
    ) -> PreprocInfo:
        """Info for an input that is already preprocessed (parity fixtures, exports)."""
        return PreprocInfo(
            eff_scale=np.full(x.shape[0], eff_scale, dtype=np.float64),
            input_scale=self.preprocessing.scale,
            orig_hw=(int(x.shape[-2]), int(x.shape[-1])),
            input_hw=(int(x.shape[-2]), int(x.shape[-1])),
            source=source,
        )

    # ----------------------------------------------------------------- running
    @abstractmethod
    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        """Network outputs -> keypoints in original frame pixels."""

    def run_preprocessed(self, x: torch.Tensor, info: PreprocInfo) -> BatchPredictions:
        with stage("network"):
            outputs = self.backend(x)
        with stage("postprocess"):
            return self.postprocess(outputs, info)

    def predict(self, frames: np.ndarray | torch.Tensor) -> BatchPredictions:
        """Predict on a batch of raw frames (``(B, H, W, C)`` numpy or ``(B, C, H, W)`` tensor)."""
        with stage("preprocess"):
            x, info = self.preprocess(frames)
        return self.run_preprocessed(x, info)

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
    @property
    def n_nodes(self) -> int:
        return len(self.config.node_names)

    def _maybe_keep(self, preds: BatchPredictions, name: str, value: torch.Tensor) -> None:
        if self.options.return_confmaps:
            preds.extras[name] = value.detach().cpu().numpy()
