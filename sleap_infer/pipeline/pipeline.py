"""The Pipeline: the public object that ``sleap_infer.load`` returns.

A :class:`Pipeline` is a :class:`~sleap_infer.pipeline.loaded.Loaded` (models,
layer and runner loaded and checked once) plus the calls that use it:

* :meth:`Pipeline.predict` runs frames in memory (numpy arrays, a list of
  frames, a video or image-folder path, a ``sio.Video``, a SLEAP project) and
  returns a :class:`~sleap_infer.pipeline.result.Prediction`;
* :meth:`Pipeline.predict_to_file` runs one video into a journal and an
  output file (:mod:`sleap_infer.pipeline.video_job`: resumable, atomic,
  never over a finished output unless ``overwrite``);
* a lone embedding model has no frames to run on: it embeds the detections
  of a SLEAP project (:mod:`sleap_infer.pipeline.labels_embedding`), and
  ``predict_to_file`` routes a ``.slp`` there.

Both in-memory and file runs go through the same runner, the same per-batch
filters and the same online tracker, so their predictions are the same bits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sleap_infer.core.errors import UsageError
from sleap_infer.pipeline.frames_job import predict_in_memory
from sleap_infer.pipeline.loaded import Loaded
from sleap_infer.pipeline.result import Prediction
from sleap_infer.pipeline.video_job import VideoJob, VideoResult, embed_labels
from sleap_infer.sources.arrays import Source
from sleap_infer.sources.video import VideoInfo
from sleap_infer.writers.registry import OutputFormat, format_names


class Pipeline(Loaded):
    """Models loaded and warmed once; ``predict`` in memory, ``predict_to_file`` to disk."""

    def predict(
        self,
        source: Source,
        *,
        frames: str | Sequence[int] | range | None = None,
        batch_size: int | None = None,
    ) -> Prediction:
        """Predict ``source`` in memory (nothing is written).

        ``source``: a uint8 array ``(H, W)``, ``(H, W, C)``, ``(N, H, W)`` or
        ``(N, H, W, C)``; a list of such frames; a video file, image folder or glob;
        a ``sio.Video``; or a SLEAP project (``.slp``). ``frames``: which frames
        (``"0-99,200"``, or indices); ``batch_size`` overrides the pipeline's.
        """
        if self.embeds_labels:
            raise UsageError(
                "an embedding model alone embeds the detections of a SLEAP project: use "
                "predict_to_file(project.slp, ...), or load it with a centroid or box "
                "detector model to embed what that finds"
            )
        return predict_in_memory(self, source, frames, batch_size)

    def predict_to_file(
        self,
        video: str | Path,
        output: str | Path | None = None,
        *,
        frames: str | None = None,
        format: str | OutputFormat | Sequence[str | OutputFormat] = "slp",
        resume: bool = False,
        overwrite: bool = False,
        video_index: int | None = None,
        on_start: Callable[[VideoInfo, int], None] | None = None,
        on_progress: Callable[[int], None] | None = None,
        extra_provenance: dict[str, Any] | None = None,
    ) -> VideoResult:
        """Predict one video (or image folder, or SLEAP project) into ``output``.

        With ``infer predict``'s guarantees: predictions stream into a journal
        beside the output, so an interrupted run continues with ``resume=True``;
        the output appears whole (atomic rename) or not at all; a finished
        output (or any other file) at ``output`` is never replaced unless
        ``overwrite=True``. Default output: ``<video>.predictions.slp``.
        ``format``: one name, a comma list or a list (``"slp,csv"``): one prediction pass,
        each format written from it, each beside the first's ``output`` with its suffix.
        ``video_index`` picks one video of a SLEAP project (default: ``--video-index``'s);
        ``on_start(info, n)`` hears how many frames this run will predict (fewer than the
        selection when resuming), ``on_progress(n)`` each batch's frames.
        """
        formats = self.check_formats(format)
        if self.embeds_labels:
            if len(formats) > 1:
                raise UsageError(
                    "an embedding model alone writes one .slp: use --format slp, not "
                    + format_names(formats)
                )
            return embed_labels(self, Path(video), output, formats[0], overwrite)
        job = VideoJob(self, formats, resume, overwrite)
        return job.run(video, output, frames, video_index, on_start, on_progress, extra_provenance)
