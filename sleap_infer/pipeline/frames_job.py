"""Frames in memory through a pipeline into a :class:`~sleap_infer.pipeline.result.Prediction`.

No journal and no file: the batches are kept as they come out of the same
runner, post-filters and online tracker a file run uses, so the points are
the ones ``infer predict`` writes for the same frames. A path (video, image
folder, SLEAP project) is opened with the same readers as ``infer predict``;
arrays, lists and ``sio.Video`` objects through :mod:`sleap_infer.sources.arrays`.
A frame the decoder cannot read is left out of the result with a warning
(``Prediction.provenance["bad_frames"]``), as a file run records it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import sleap_io as sio

from sleap_infer.core.errors import UsageError
from sleap_infer.core.late_tracks import lay_over
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.products import Product
from sleap_infer.core.provenance import now_iso
from sleap_infer.pipeline.linked import link_batches, prepares, relabelled
from sleap_infer.pipeline.loaded import Loaded
from sleap_infer.pipeline.models import tracking_carrier
from sleap_infer.pipeline.result import Prediction, stack
from sleap_infer.pipeline.video_job import (
    open_source,
    project_frames,
    project_selection,
    project_video,
    provenance,
    start_tracker,
)
from sleap_infer.sources.arrays import (
    ArrayFrames,
    SioVideoFrames,
    as_frames,
    is_sio_video,
    stack_frames,
)
from sleap_infer.sources.frames import select_frames
from sleap_infer.sources.video import FrameError, VideoInfo
from sleap_infer.tracking.base import MASKS
from sleap_infer.tracking.online import track_names, tracking_provenance
from sleap_infer.writers.labels import make_skeleton, make_video

IN_MEMORY = "<in-memory frames>"


class _Frames:
    """One source, opened: its frames (numbered), how many, and what the output refers to."""

    def __init__(self, pipeline: Loaded, source: Any, frames: Any) -> None:
        self.bad: list[FrameError] = []
        self.reader: Any = None
        self.video: sio.Video | None = None
        if isinstance(source, (str, Path)):
            self._open_path(pipeline, source, frames)
            return
        if is_sio_video(source):
            self.memory: Any = SioVideoFrames(source, str(source.filename))
            self.name = str(source.filename)
            self.video = source
        elif isinstance(source, np.ndarray):
            self.memory = ArrayFrames(as_frames(source))
            self.name = IN_MEMORY
        elif isinstance(source, (list, tuple)):
            self.memory = ArrayFrames(stack_frames(source))
            self.name = IN_MEMORY
        else:
            raise UsageError(
                f"cannot predict a {type(source).__name__}: give a uint8 array, a list of "
                "frames, a video / image folder / .slp path, or a sio.Video"
            )
        self.n_frames = self.memory.n_frames
        self.indices = _indices(frames, self.n_frames, self.name)

    def _open_path(self, pipeline: Loaded, source: str | Path, frames: Any) -> None:
        chosen = project_selection(pipeline, source)
        self.reader = open_source(source, chosen, pipeline.options.keep_corrupt_frames)
        info: VideoInfo = self.reader.info
        self.name = str(info.path)
        self.n_frames = info.n_frames
        indices = _indices(frames, info.n_frames, source)
        self.indices = project_frames(source, self.reader, indices, chosen)
        self.video = project_video(self.reader) or make_video(info)

    @property
    def total(self) -> int:
        return self.n_frames if self.indices is None else len(self.indices)

    def stream(self, pipeline: Loaded) -> Iterator[tuple[int, np.ndarray]]:
        if self.reader is None:
            return self.memory.iter_frames(self.indices)
        return self.reader.iter_frames(self.indices, self.channels(pipeline), self.bad.append)

    def channels(self, pipeline: Loaded) -> int:
        if self.reader is None:
            return pipeline.layer.input_channels
        return self.reader.channels_for(pipeline.layer.input_channels)

    def sio_video(self) -> sio.Video:
        """What the labels refer to; frames in memory get a reference that opens nothing."""
        if self.video is not None:
            return self.video
        _, height, width, channels = self.memory.frames.shape
        meta = {"shape": [self.n_frames, height, width, channels], "grayscale": channels == 1}
        return sio.Video(filename=IN_MEMORY, backend_metadata=meta, open_backend=False)


def _indices(frames: Any, n_frames: int, where: object) -> list[int] | None:
    """``frames`` (a ranges string, a range or a list of indices) within ``0..n_frames-1``."""
    if frames is None:
        return None
    if isinstance(frames, str):
        indices, clamped = select_frames(frames, n_frames, where)
        if clamped:
            warnings.warn(clamped, stacklevel=4)
        return indices
    try:
        picked = sorted({int(i) for i in frames})
    except (TypeError, ValueError):
        raise UsageError(
            f"frames={frames!r}: give indices, a range, or a string like '0-99,200'"
        ) from None
    outside = [i for i in picked if not 0 <= i < n_frames]
    if outside:
        raise UsageError(
            f"frames: index {outside[0]} is outside {where}'s {n_frames} frames (0-{n_frames - 1})"
        )
    return picked


def predict_in_memory(
    pipeline: Loaded,
    source: Any,
    frames: str | Sequence[int] | range | None,
    batch_size: int | None,
) -> Prediction:
    """Predict ``source``'s frames; see :meth:`~sleap_infer.pipeline.pipeline.Pipeline.predict`."""
    opened = _Frames(pipeline, source, frames)
    batches: list[BatchPredictions] = []
    online = start_tracker(pipeline, None, opened.channels(pipeline), opened.reader)

    where: dict[int, int] = {}  # frame index -> its batch in ``batches``

    def keep(preds: BatchPredictions, _snapshot: object) -> None:
        if preds.late_tracks is not None:  # a MOT track confirmed: its tentative frames
            late = preds.late_tracks.by_frame()
            for b in sorted({where[f] for f in late if f in where}):
                lay_over(batches[b], late)
            preds.late_tracks = None
        if preds.frame_indices is not None:
            where.update(dict.fromkeys(preds.frame_indices.tolist(), len(batches)))
        batches.append(preds)

    total = opened.total
    size = batch_size if batch_size is not None else pipeline.run_batch_size(total)
    if size is not None and size < 1:
        raise UsageError(f"batch_size {size}: must be at least 1")
    started = now_iso()
    stats = pipeline.runner.run(
        opened.stream(pipeline),
        sink=pipeline.sink(keep, online),
        batch_size=size,
        keep_images=online is not None and online.needs_images,
        warmup=total > (size or pipeline.batch_size),
        on_bad_frame=opened.bad.append,
    )
    for err in opened.bad:
        warnings.warn(f"{opened.name}: {err.describe()}", stacklevel=3)
    config = pipeline.layer.config
    n_tracks = online.tracker.n_tracks if online is not None else 0
    names = track_names(n_tracks) if pipeline.tracking else tuple(config.class_names)
    linking: dict[str, Any] = {}
    if prepares(pipeline.tracking):  # sleap-nn's MOT tracks after the pre-pass, as a file's
        from sleap_infer.pipeline.prepared import retrack_batches, with_tracks

        assert pipeline.tracking is not None
        carrier = tracking_carrier(pipeline.models)
        retracked = retrack_batches(
            lambda: batches, pipeline.tracking, carrier, len(pipeline.node_names),
            Product.EMBEDDINGS in pipeline.products,
        )  # fmt: skip
        batches = list(with_tracks(batches, retracked, carrier))
        names = track_names(retracked.n_tracks)
        linking["prepare"] = [retracked.calibration] if retracked.calibration else []
    if pipeline.tracking is not None and pipeline.tracking.links:  # as a file's run does
        masks = tracking_carrier(pipeline.models) == MASKS
        linked = link_batches(lambda: batches, pipeline.tracking, masks)
        batches = list(relabelled(batches, linked.relabel, masks))
        names, linking["linking"] = linked.names, asdict(linked.result)
    record = provenance(pipeline, opened.name, opened.indices)
    if pipeline.tracking is not None:
        record["tracking"] = {**tracking_provenance(pipeline.tracking, online), **linking}
    record.update(
        {
            "inference_start_timestamp": started,
            "inference_end_timestamp": now_iso(),
            "fps": round(stats.fps, 2),
            "bad_frames": [
                {"frame_idx": e.index, "count": e.count, "kind": e.kind, "reason": e.reason}
                for e in opened.bad
            ],
        }
    )
    return Prediction(
        **stack(batches, len(config.node_names)),
        track_names=names,
        node_names=tuple(config.node_names),
        products=pipeline.products,
        video=opened.sio_video(),
        provenance=record,
        skeleton=make_skeleton(config),
        box_categories=pipeline.box_categories,
        mask_output=pipeline.options.mask_output,
        polygon_epsilon=pipeline.options.polygon_epsilon,
        empty_frames=not pipeline.options.no_empty_frames,
        batches=batches,
    )
