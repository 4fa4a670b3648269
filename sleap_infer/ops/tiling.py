"""Sliding-window inference geometry: tile grid, importance window, weighted stitching.

Follows sleap-nn 0.3.5 (``data/tiling.py``, ``inference/tile_merger.py``) so that
stitched maps, and the decisions made on them, match it:

* origins are input pixels, snapped to the output stride ``s``; the step between
  tiles is snapped to ``max_stride`` when it can be, and the last tile is pulled
  inward so it ends on the frame edge instead of running past it;
* the minimum overlap is ``round(min_overlap_fraction * tile)`` with Python's
  round (half to even);
* the window is never sum-normalised: blending is ``ACC / CNT``, where ``ACC``
  sums ``map * window`` and ``CNT`` sums ``window`` over the tiles covering a
  cell, so a constant map stitches back to itself whatever the window. Weights
  are floored at 1e-3, or a Gaussian corner (~1e-7) would let float noise win;
* the per-cell sums run in grid order (row-major), as sleap-nn adds its tiles.

Tiles here are ordered position-major (all frames' tile 0, then tile 1, ...):
the frames of a batch share one grid, so a chunk of tiles that sit at the same
place in several frames is stitched with one slice-add instead of one per tile.
"""

from __future__ import annotations

import torch

BLENDS = ("gaussian", "pyramid", "constant")
WINDOW_FLOOR = 1e-3


def axis_origins(
    size: int,
    tile: int,
    overlap: int,
    stride: int,
    max_stride: int = 1,
    min_overlap_fraction: float = 0.25,
) -> list[int]:
    """Tile starts along one axis of ``size`` pixels, each a multiple of ``stride``.

    An axis no longer than a tile gets one tile at 0 (zero-padded when cut).
    """
    if size <= tile:
        return [0]
    step = tile - max(overlap, round(min_overlap_fraction * tile))
    # A coarse step keeps every tile on the backbone's pooling grid, when it divides evenly.
    unit = max_stride if step >= max_stride and max_stride % stride == 0 else stride
    step = max((step // unit) * unit, stride)
    origins = [(start // stride) * stride for start in range(0, size - tile, step)]
    last = ((size - tile) // stride) * stride
    if not origins or origins[-1] != last:
        origins.append(last)
    return origins


def tile_grid(
    height: int,
    width: int,
    tile: int,
    overlap: int,
    stride: int,
    max_stride: int = 1,
    min_overlap_fraction: float = 0.25,
) -> list[tuple[int, int]]:
    """``(y0, x0)`` tile origins in input pixels, row-major (every x of the first y first)."""
    ys = axis_origins(height, tile, overlap, stride, max_stride, min_overlap_fraction)
    xs = axis_origins(width, tile, overlap, stride, max_stride, min_overlap_fraction)
    return [(y, x) for y in ys for x in xs]


def _axis_weights(n: int, blend: str, sigma_scale: float) -> torch.Tensor:
    if blend == "gaussian":
        # Centred on (n - 1) / 2: for even n no cell sits on the peak, so the max is < 1.
        c = torch.arange(n, dtype=torch.float32) - (n - 1) / 2.0
        sigma = sigma_scale * n
        return torch.exp(c**2 / (-2 * sigma**2))
    if blend == "pyramid":
        i = torch.arange(1, n + 1, dtype=torch.float32)
        ramp = torch.minimum(i, n + 1 - i)  # distance to the nearer edge, 1-based
        return ramp / ramp.max()
    if blend == "constant":
        return torch.ones(n, dtype=torch.float32)
    raise ValueError(f"unknown tile blend {blend!r} (expected one of {', '.join(BLENDS)})")


def importance_window(
    height: int, width: int, blend: str = "gaussian", sigma_scale: float = 0.125
) -> torch.Tensor:
    """``(height, width)`` float32 weights of one tile's output map (separable), floored at 1e-3.

    Gaussian sigma is ``sigma_scale`` times the axis length, per axis.
    """
    wy = _axis_weights(height, blend, sigma_scale)
    wx = _axis_weights(width, blend, sigma_scale)
    # sleap-nn floors at max(min weight, 1e-3): the same as a plain 1e-3 floor.
    return (wy[:, None] * wx[None, :]).clamp(min=WINDOW_FLOOR)


def cut_tiles(frames: torch.Tensor, origins: list[tuple[int, int]], tile: int) -> torch.Tensor:
    """``(n * B, C, tile, tile)`` tiles of ``(B, C, H, W)`` frames, position-major.

    Frames smaller than a tile are zero-padded bottom/right first (the only case
    where a tile reaches past the frame: grid origins never do otherwise).
    One gather for all tiles of all frames.
    """
    channels, height, width = frames.shape[1:]
    pad_h, pad_w = max(tile - height, 0), max(tile - width, 0)
    if pad_h or pad_w:
        frames = torch.nn.functional.pad(frames, (0, pad_w, 0, pad_h))
    padded_h, padded_w = frames.shape[-2:]
    if any(y < 0 or x < 0 or y + tile > padded_h or x + tile > padded_w for y, x in origins):
        raise ValueError(f"tile origins {origins} reach past a {height}x{width} frame")
    start = torch.tensor(origins, dtype=torch.long, device=frames.device).reshape(-1, 2)
    span = torch.arange(tile, device=frames.device)
    rows = (start[:, 0, None] + span)[:, :, None]  # (n, tile, 1)
    cols = (start[:, 1, None] + span)[:, None, :]  # (n, 1, tile)
    tiles = frames[:, :, rows, cols]  # (B, C, n, tile, tile)
    return tiles.permute(2, 0, 1, 3, 4).reshape(-1, channels, tile, tile)


class TileCanvas:
    """ACC/CNT canvas of a batch of frames that share one tile grid, at output-map cells.

    Feed the tile maps in position-major order (any chunking, in order) with
    :meth:`add`, then :meth:`merge`. ``cells`` are the tile origins in map cells
    (input origins divided by the output stride).
    """

    def __init__(
        self,
        batch: int,
        channels: int,
        size: tuple[int, int],
        cells: list[tuple[int, int]],
        window: torch.Tensor,
    ) -> None:
        height, width = size
        self.batch = batch
        self.cells = cells
        self.window = window
        th, tw = window.shape
        for y, x in cells:
            if y < 0 or x < 0 or y + th > height or x + tw > width:
                raise ValueError(f"a {th}x{tw} tile at cell {(y, x)} leaves the {size} canvas")
        self.acc = window.new_zeros((batch, channels, height, width))
        self.cnt = window.new_zeros((height, width))
        for y, x in cells:
            self.cnt[y : y + th, x : x + tw] += window
        self._next = 0  # position-major index of the next tile expected

    def add(self, maps: torch.Tensor) -> None:
        """Accumulate the next ``len(maps)`` tile maps ``(k, C, th, tw)`` (position-major)."""
        th, tw = self.window.shape
        if tuple(maps.shape[-2:]) != (th, tw):
            raise ValueError(f"tile maps are {tuple(maps.shape[-2:])}, the window {(th, tw)}")
        maps = maps.to(self.acc.dtype)
        first, end = self._next, self._next + maps.shape[0]
        if end > self.batch * len(self.cells):
            raise ValueError("more tile maps than the grid has tiles")
        index = first
        while index < end:
            position, frame = divmod(index, self.batch)
            # The run of frames at this position that the chunk holds.
            stop = min(end, (position + 1) * self.batch)
            y, x = self.cells[position]
            part = maps[index - first : stop - first] * self.window
            self.acc[frame : frame + stop - index, :, y : y + th, x : x + tw] += part
            index = stop
        self._next = end

    def merge(self) -> torch.Tensor:
        """``(B, C, H, W)`` weighted average: ``ACC / CNT`` (every cell is covered by a tile)."""
        if self._next != self.batch * len(self.cells):
            raise ValueError(f"{self._next} of {self.batch * len(self.cells)} tile maps added")
        return self.acc / self.cnt


def stitch(
    maps: torch.Tensor, cells: list[tuple[int, int]], size: tuple[int, int], window: torch.Tensor
) -> torch.Tensor:
    """``(B, C, H, W)`` blend of all ``(n * B, C, th, tw)`` tile maps at once (position-major)."""
    batch = maps.shape[0] // max(len(cells), 1)
    canvas = TileCanvas(batch, maps.shape[1], size, cells, window.to(maps.device))
    canvas.add(maps)
    return canvas.merge()
