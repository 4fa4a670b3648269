"""Test doubles: a backend that returns confidence maps we choose; a worker that crashes."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from sleap_infer.core.errors import BackendError
from sleap_infer.core.options import DecodeSettings
from sleap_infer.pipeline.spec import PipelineSpec


class FakeBackend:
    """Satisfies ``ModelBackend`` (and ``GraphBackend``); returns ``make(x)`` and records the
    inputs it saw and the decoding an exported layer bound."""

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

    def provenance(self) -> dict[str, object]:
        return {}

    def bind_decode(self, decode: DecodeSettings) -> None:
        self.decode = decode


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


class CrashingPipeline:
    """Pipeline stand-in for pool tests: videos named ``crash*`` kill the worker process."""

    def predict_to_file(self, video, output=None, on_start=None, on_progress=None, **kwargs):
        from sleap_infer.core.products import Counts
        from sleap_infer.pipeline.video_job import VideoResult

        if Path(video).name.startswith("crash"):
            os.kill(os.getpid(), signal.SIGKILL)
        on_start(None, 3)
        on_progress(3)
        Path(output).write_text(f"predicted by {os.getpid()}")
        return VideoResult(
            video=Path(video),
            output=Path(output),
            counts=Counts(frames=3, instances=3),
            fps=1.0,
            metadata_frames=3,
            decoded_frames=3,
        )


@dataclass(frozen=True)
class CrashingSpec(PipelineSpec):
    """Builds :class:`CrashingPipeline`; the device ``broken`` fails like a missing GPU."""

    def build(self, device: str) -> CrashingPipeline:
        if device == "broken":
            raise BackendError("device 'broken' requested but it is not available here")
        return CrashingPipeline()
