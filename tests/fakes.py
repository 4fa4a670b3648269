"""Test doubles: a backend that returns confidence maps we choose."""

from __future__ import annotations

from collections.abc import Callable

import torch


class FakeBackend:
    """Satisfies ``ModelBackend``; returns ``make(x)`` and records the inputs it saw."""

    does_baked_postproc = False

    def __init__(self, make: Callable[[torch.Tensor], dict[str, torch.Tensor]]) -> None:
        self.device = torch.device("cpu")
        self.make = make
        self.inputs: list[torch.Tensor] = []
        self.warmups: list[tuple[int, ...]] = []

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        self.inputs.append(x)
        return self.make(x)

    def warmup(self, shape: tuple[int, ...]) -> None:
        self.warmups.append(shape)


def gaussian_maps(
    shape: tuple[int, int], centres: list[list[tuple[float, float]]], sigma: float = 1.0
) -> torch.Tensor:
    """``(B, C, H, W)`` maps with one Gaussian per ``centres[b][c]`` = (x, y) in grid units."""
    h, w = shape
    yy, xx = torch.meshgrid(torch.arange(h).float(), torch.arange(w).float(), indexing="ij")
    out = torch.zeros(len(centres), len(centres[0]), h, w)
    for b, row in enumerate(centres):
        for c, (x, y) in enumerate(row):
            out[b, c] = torch.exp(-((xx - x) ** 2 + (yy - y) ** 2) / (2 * sigma**2))
    return out
