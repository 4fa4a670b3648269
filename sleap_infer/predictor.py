"""Load models once, then predict video after video: the engine behind ``infer predict``."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleap_infer.backends import backend_factory
from sleap_infer.io.frames import parse_frames
from sleap_infer.io.provenance import now_iso, package_versions, system_info
from sleap_infer.io.video import FrameError, VideoInfo, VideoReader
from sleap_infer.io.writer import (
    LabelsBuilder,
    atomic_save,
    default_output_path,
    make_skeleton,
    make_video,
)
from sleap_infer.layers import PredictOptions, build_layer
from sleap_infer.model.loader import LoadedModel, load_model
from sleap_infer.runner import Runner, RunStats


@dataclass
class VideoResult:
    """Outcome of predicting one video."""

    video: Path
    output: Path
    frames: int = 0
    instances: int = 0
    fps: float = 0.0
    stats: RunStats | None = None
    bad_frames: list[FrameError] = field(default_factory=list)


class Predictor:
    """Models loaded and warmed once, reused for every video."""

    def __init__(
        self,
        model_paths: Sequence[str | Path],
        backend: str = "torch",
        device: str = "auto",
        batch_size: int = 4,
        options: PredictOptions | None = None,
        backend_options: dict[str, Any] | None = None,
    ) -> None:
        self.models: list[LoadedModel] = [load_model(p) for p in model_paths]
        self.options = options or PredictOptions()
        self.backend_name = backend
        make_backend = backend_factory(backend, device, **(backend_options or {}))
        self.layer = build_layer(self.models, make_backend, self.options)
        self.runner = Runner(self.layer, batch_size=batch_size)
        self.batch_size = batch_size

    @property
    def primary(self) -> LoadedModel:
        """The model whose skeleton and classes the output uses (top-down: the instance model,
        whichever order the models were given in)."""
        for model in self.models:
            if model.config is self.layer.config:
                return model
        return self.models[-1]

    @property
    def device(self) -> str:
        return str(self.layer.device)

    def open(self, video: str | Path) -> VideoReader:
        return VideoReader(video)

    def provenance(self, info: VideoInfo, frames: list[int] | None) -> dict[str, Any]:
        return {
            "sleap_infer": "predict",
            "model_paths": [str(m.path.resolve()) for m in self.models],
            "model_types": [m.model_type for m in self.models],
            "checkpoint_sha256": [m.checkpoint_sha256 for m in self.models],
            "layer": type(self.layer).__name__,
            "backend": self.backend_name,
            "device": self.device,
            "batch_size": self.batch_size,
            "options": {k: v for k, v in vars(self.options).items() if v is not None},
            "source_video": str(info.path.resolve()),
            "frame_selection": "all" if frames is None else f"{len(frames)} frames",
            "versions": package_versions(),
            **_export_provenance(self.layer.backend),
            "system": system_info(),
        }

    def predict_video(
        self,
        video: str | Path,
        output: str | Path | None = None,
        frames: str | None = None,
        on_start: Callable[[VideoInfo, int], None] | None = None,
        on_progress: Callable[[int], None] | None = None,
        extra_provenance: dict[str, Any] | None = None,
    ) -> VideoResult:
        """Predict one video and write its ``.slp``; returns counts and timings."""
        reader = self.open(video)
        info = reader.info
        indices = parse_frames(frames, info.n_frames)
        out_path = Path(output) if output is not None else default_output_path(info.path)
        result = VideoResult(video=info.path, output=out_path)
        if on_start is not None:
            on_start(info, info.n_frames if indices is None else len(indices))
        builder = LabelsBuilder(
            video=make_video(info),
            skeleton=make_skeleton(self.primary.config),
            class_names=self.primary.config.class_names,
        )
        started = now_iso()
        t0 = time.perf_counter()
        stream = reader.iter_frames(
            indices,
            channels=reader.channels_for(self.layer.input_channels),
            on_error=result.bad_frames.append,
        )
        stats = self.runner.run(stream, sink=builder.add, progress=on_progress)
        provenance = self.provenance(info, indices)
        provenance.update(
            {
                "inference_start_timestamp": started,
                "inference_end_timestamp": now_iso(),
                "inference_runtime_seconds": round(time.perf_counter() - t0, 3),
                "frames_processed": stats.frames,
                "bad_frames": [
                    {"frame_idx": e.index, "reason": e.reason} for e in result.bad_frames
                ],
            }
        )
        provenance.update(extra_provenance or {})
        atomic_save(builder.labels(provenance), out_path)
        result.frames = stats.frames
        result.instances = stats.instances
        result.fps = stats.fps
        result.stats = stats
        return result


def _export_provenance(backend: object) -> dict[str, Any]:
    """Which export directories an onnx/trt run used (absent for torch)."""
    describe = getattr(backend, "provenance", None)
    return {"export": describe()} if callable(describe) else {}
