"""Tiled (sliding-window) inference around any layer that decodes whole-frame maps.

sleap-nn runs a model whose config enables ``preprocessing.tiling`` on
overlapping square tiles of the frame at native resolution, blends the tiles'
output maps into one frame-sized map, and decodes that map as the plain model
type would. So this layer is model-type agnostic: it stitches every spatial
head and hands the result to the wrapped layer's ``postprocess`` (single
instance, bottom-up and semantic segmentation alike). Quirks kept from sleap-nn:

* no size matcher (``max_height`` / ``max_width`` are ignored) and the frame is
  padded to the *output* stride, not the max stride; ``eff_scale`` is 1;
* maps are blended as the network returns them: the foreground head after its
  sigmoid, confidence maps, centers and offsets raw;
* the tiles' network batches are chunks of ``tile_batch_size``. sleap-nn cuts
  chunks per frame; here one chunk may hold tiles of several frames (same
  grid position), which moves the maps by float noise (~1e-5) only.

See :mod:`sleap_infer.ops.tiling` for the grid, window and blending rules.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch

from sleap_infer.core.config import ModelConfig, Tiling
from sleap_infer.core.errors import ConfigError, UsageError
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.timing import stage
from sleap_infer.layers.base import InferenceLayer
from sleap_infer.layers.preprocessing import PreprocInfo
from sleap_infer.ops.preprocess import as_nchw, coerce_channels, pad_to_stride, scale_image
from sleap_infer.ops.tiling import TileCanvas, cut_tiles, importance_window, tile_grid

DEFAULT_TILE_BATCH = 8  # sleap-nn's fallback when tile_batch_size is unset


def _output_stride(config: ModelConfig) -> int:
    """The one output stride of the model's heads (tiles are stitched on that grid)."""
    if any(not head.is_spatial for head in config.heads):
        raise ConfigError(f"a tiled {config.model_type} model cannot have vector (class) heads")
    strides = {head.output_stride for head in config.heads}
    if len(strides) != 1:
        raise ConfigError(
            f"tiled {config.model_type} model: all heads must share one output stride "
            f"(got {sorted(strides)})"
        )
    return strides.pop()


class TiledLayer(InferenceLayer):
    """Cut tiles -> inner backend in chunks -> stitch every head -> inner postprocess."""

    model_type: ClassVar[str] = "tiled"

    def __init__(self, inner: InferenceLayer, tiling: Tiling) -> None:
        if inner.decodes_in_graph or inner.backend.does_baked_postproc:
            raise UsageError(
                f"tiled {inner.config.model_type} model: tiles are stitched before decoding, "
                "so it cannot run on an exported graph that decodes in-graph; use --backend torch"
            )
        super().__init__(inner.config, inner.backend, inner.options, inner.preprocessing)
        self.inner = inner
        self.tiling = tiling
        self.stride = _output_stride(inner.config)
        size = tiling.tile_size
        unit = math.lcm(self.config.max_stride, self.stride)
        if size < 1 or size % unit:
            raise ConfigError(
                f"tiled {inner.config.model_type} model: tile_size {size} is not a multiple of "
                f"{unit} (the max stride {self.config.max_stride} and output stride {self.stride})"
            )
        # sleap-nn reads an unset (or zero) tile_batch_size as 8.
        self.tile_batch = tiling.tile_batch_size or DEFAULT_TILE_BATCH
        if self.tile_batch < 1:
            raise ConfigError(f"tiling.tile_batch_size {tiling.tile_batch_size} must be positive")
        cells = size // self.stride
        self._window = importance_window(cells, cells, tiling.blend, tiling.sigma_scale)
        self._heads = tuple(head for head in self.config.heads if head.is_spatial)

    # ------------------------------------------------------------- geometry
    @property
    def tile_size(self) -> int:
        return self.tiling.tile_size

    def grid(self, height: int, width: int) -> list[tuple[int, int]]:
        """Tile origins (input pixels) of a preprocessed ``height`` x ``width`` frame."""
        t = self.tiling
        return tile_grid(
            height,
            width,
            t.tile_size,
            t.overlap,
            self.stride,
            self.config.max_stride,
            t.min_overlap_fraction,
        )

    def _preprocessed_size(self, height: int, width: int) -> tuple[int, int]:
        """Frame size after input scale (truncated, as sleap-nn) and output-stride padding."""
        scale = self.preprocessing.scale
        if scale != 1.0:
            height, width = int(height * scale), int(width * scale)
        s = self.stride
        return -(-height // s) * s, -(-width // s) * s

    # -------------------------------------------------------------- running
    def preprocess(
        self, frames: np.ndarray | torch.Tensor, keep_source: bool = False
    ) -> tuple[torch.Tensor, PreprocInfo]:
        """Channel coercion, input scale, zero-pad to the output stride (no size matcher)."""
        x = as_nchw(frames)
        original = (int(x.shape[-2]), int(x.shape[-1]))
        if x.device != self.device and self.device.type != "cpu":
            x = x.to(self.device, non_blocking=True)
        pre = self.preprocessing
        x = coerce_channels(x, pre.ensure_rgb, pre.ensure_grayscale)
        x = pad_to_stride(scale_image(x, pre.scale), self.stride)
        info = PreprocInfo(
            eff_scale=np.ones(x.shape[0], dtype=np.float64),
            input_scale=pre.scale,
            original_size=original,
        )
        return x, info

    def stitched_maps(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{head name: (B, C, H/s, W/s)}`` blended from the tiles of preprocessed frames."""
        batch, _, height, width = x.shape
        size, s = self.tile_size, self.stride
        origins = self.grid(height, width)
        with stage("tiling"):
            tiles = cut_tiles(x, origins, size)
        cells = [(y0 // s, x0 // s) for y0, x0 in origins]
        canvas_size = (max(height, size) // s, max(width, size) // s)
        canvas: TileCanvas | None = None
        for start in range(0, tiles.shape[0], self.tile_batch):
            with stage("network"):
                out = self.call_backend(tiles[start : start + self.tile_batch])
            with stage("stitching"):
                maps = self._head_maps(out)
                if canvas is None:
                    if self._window.device != maps.device:
                        self._window = self._window.to(maps.device)
                    canvas = TileCanvas(batch, maps.shape[1], canvas_size, cells, self._window)
                canvas.add(maps)
        assert canvas is not None  # the grid always has a tile
        with stage("stitching"):
            merged = canvas.merge()[:, :, : height // s, : width // s]
            split = torch.split(merged, [head.channels for head in self._heads], dim=1)
            return {head.name: m.contiguous() for head, m in zip(self._heads, split)}

    def _head_maps(self, out: dict[str, torch.Tensor]) -> torch.Tensor:
        """Every spatial head of one chunk, channel-stacked so one canvas blends them all."""
        cells = self.tile_size // self.stride
        maps = []
        for head in self._heads:
            m = out[head.name]
            if tuple(m.shape[-2:]) != (cells, cells):
                raise ConfigError(
                    f"{head.name}: a {self.tile_size}px tile gave a {tuple(m.shape[-2:])} map, "
                    f"expected {cells}x{cells} (output stride {self.stride})"
                )
            maps.append(m)
        return maps[0] if len(maps) == 1 else torch.cat(maps, dim=1)

    def network_outputs(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.stitched_maps(x)

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        """The wrapped layer's decoding of the stitched whole-frame maps."""
        return self.inner.postprocess(outputs, info)

    def warmup(self, frame_shape: tuple[int, int, int, int], iterations: int = 1) -> None:
        """Warm the backend with the tile chunk shapes a ``(B, H, W, C)`` batch will produce.

        Usually two: full chunks and the remainder chunk.
        """
        batch, height, width, channels = frame_shape
        pre = self.preprocessing
        channels = 3 if pre.ensure_rgb else 1 if pre.ensure_grayscale else channels
        height, width = self._preprocessed_size(height, width)
        total = batch * len(self.grid(height, width))
        chunks = {min(self.tile_batch, total - start) for start in range(0, total, self.tile_batch)}
        for n in sorted(chunks, reverse=True):
            for _ in range(iterations):
                self.backend.warmup((n, channels, self.tile_size, self.tile_size))
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
