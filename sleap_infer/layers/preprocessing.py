"""Raw frames (or top-down crops) -> network input, on uint8, in sleap-nn's order.

A layer *is* a :class:`Preprocessor` plus a backend and a decode step, but the
chain needs no backend: the exporter uses it alone to learn the input shape a
graph must be traced at, without faking a backend for a layer to sit on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sleap_infer.core.config import ModelConfig, Preprocessing
from sleap_infer.core.errors import ConfigError
from sleap_infer.ops.preprocess import (
    as_nchw,
    coerce_channels,
    pad_to_stride,
    scale_image,
    size_match,
)


@dataclass(frozen=True)
class PreprocInfo:
    """What the coordinate ladder needs to map network coordinates back to frame pixels."""

    eff_scale: np.ndarray  # (B,) size-matcher factor per frame
    input_scale: float
    # Size-matched but unscaled uint8 frames, kept only for layers that crop from them.
    source: torch.Tensor | None = None
    # (height, width) of the frames as they came in: masks are cut back to it.
    original_size: tuple[int, int] | None = None
    # Box-seeded top-down: ``source`` was size-matched for the crop model, by these factors.
    crop_eff_scale: np.ndarray | None = None


def _frame_size(frames: np.ndarray | torch.Tensor) -> tuple[int, int]:
    """(height, width) of ``(B, H, W, C)`` numpy frames or a ``(B, C, H, W)`` tensor."""
    shape = frames.shape
    if isinstance(frames, np.ndarray):
        return int(shape[-3]), int(shape[-2])
    return int(shape[-2]), int(shape[-1])


class Preprocessor:
    """Channel coercion -> size matcher -> input scale -> pad to max stride.

    Everything stays uint8 until the network divides by 255 (see
    :mod:`sleap_infer.ops.preprocess` for why the rounding matters).
    """

    def __init__(
        self,
        config: ModelConfig,
        preprocessing: Preprocessing | None = None,
        device: torch.device | None = None,
    ) -> None:
        self.config = config
        self.preprocessing = preprocessing or config.preprocessing
        self._device = device or torch.device("cpu")

    @property
    def device(self) -> torch.device:
        return self._device

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
        """Frames (``(B, H, W, C)`` numpy or ``(B, C, H, W)`` tensor) -> network input.

        ``keep_source`` keeps the size-matched frames in ``info.source`` for cropping.
        """
        original = _frame_size(frames)
        sized, eff = self.size_frames(frames)
        x = self.network_input(sized)
        info = PreprocInfo(
            eff_scale=np.full(x.shape[0], eff, dtype=np.float64),
            input_scale=self.preprocessing.scale,
            source=sized if keep_source else None,
            original_size=original,
        )
        return x, info

    def info_for_input(
        self,
        x: torch.Tensor,
        eff_scale: float = 1.0,
        source: torch.Tensor | None = None,
        original_size: tuple[int, int] | None = None,
    ) -> PreprocInfo:
        """Info for an input that is already preprocessed (parity fixtures, exports)."""
        return PreprocInfo(
            eff_scale=np.full(x.shape[0], eff_scale, dtype=np.float64),
            input_scale=self.preprocessing.scale,
            source=source,
            original_size=original_size,
        )

    @property
    def crop_size(self) -> int:
        """Top-down crop side from the training config (``preprocessing.crop_size``)."""
        size = self.preprocessing.crop_size
        if size is None or size < 1:
            raise ConfigError(
                f"{self.config.model_type} model has no preprocessing.crop_size in its config"
            )
        return size

    def crop_input(self, crops: torch.Tensor) -> torch.Tensor:
        """uint8 crops -> network input: channel coercion, input scale, stride padding.

        No size matcher: crops are cut from frames that were already size-matched
        (sleap-nn does the same).
        """
        pre = self.preprocessing
        return self.network_input(coerce_channels(crops, pre.ensure_rgb, pre.ensure_grayscale))
