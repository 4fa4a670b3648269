"""The Pipeline: the public object that ``sleap_infer.load`` returns.

A :class:`Pipeline` is a :class:`~sleap_infer.pipeline.loaded.Loaded` (models,
layer and runner loaded and checked once) plus the calls that use it:

* :meth:`Pipeline.predict` runs frames in memory (numpy arrays or torch
  tensors, a list of frames, a video or image-folder path, a ``sio.Video``, a
  SLEAP project) and returns a :class:`~sleap_infer.pipeline.result.Prediction`;
* :meth:`Pipeline.stream` is the same run, one
  :class:`~sleap_infer.pipeline.result.FrameResult` per frame as it is
  predicted (a generator: flat memory on any video's length);
* :meth:`Pipeline.predict_to_file` runs one video into a journal and an
  output file (:mod:`sleap_infer.pipeline.video_job`: resumable, atomic,
  never over a finished output unless ``overwrite``);
* a lone embedding model has no frames to run on: it embeds the detections
  of a SLEAP project (:mod:`sleap_infer.pipeline.labels_embedding`), and
  ``predict_to_file`` routes a ``.slp`` there.

Both in-memory and file runs go through the same runner, the same per-batch
filters and the same online tracker, so their predictions are the same bits.
File and video sources show their progress on stderr (``progress=False``:
silent); errors leave these calls in Python's words (``overwrite=True``, not
``--overwrite``: :mod:`sleap_infer.pipeline.python_terms`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sleap_infer.core.errors import UsageError
from sleap_infer.pipeline.frames_job import FramesTypeError, predict_in_memory, stream_frames
from sleap_infer.pipeline.guard import refuse_protected_output
from sleap_infer.pipeline.loaded import Loaded
from sleap_infer.pipeline.progress import FrameProgress, wanted
from sleap_infer.pipeline.python_terms import in_python_words, reworded
from sleap_infer.pipeline.result import FrameResult, Prediction
from sleap_infer.pipeline.spec import check_kind
from sleap_infer.pipeline.video_job import VideoJob, VideoResult, embed_labels
from sleap_infer.sources.arrays import Source, is_sio_video
from sleap_infer.sources.video import VideoInfo
from sleap_infer.writers.outputs import output_paths
from sleap_infer.writers.registry import OutputFormat, format_names

Frames = str | Sequence[int] | range | np.ndarray | None


class ContradictionError(UsageError, ValueError):
    """Two arguments that ask for opposite things (also a ``ValueError``)."""


class Pipeline(Loaded):
    """Models loaded and warmed once; ``predict`` in memory, ``predict_to_file`` to disk."""

    @in_python_words
    def predict(
        self,
        source: Source,
        *,
        frames: Frames = None,
        batch_size: int | None = None,
        progress: bool | None = None,
    ) -> Prediction:
        """Predict ``source`` in memory (nothing is written).

        ``source``: a uint8 array (or torch tensor, any device) ``(H, W)``, ``(H, W, C)``,
        ``(N, H, W)`` or ``(N, H, W, C)`` (``(3, H, W)`` is refused as ambiguous); a list
        of such frames; a video file, image folder or glob; a ``sio.Video``; or a SLEAP
        project (``.slp``). ``frames``: which frames (``"0-99,200"``, int indices, a
        range, or a boolean mask of every frame); ``batch_size`` overrides the
        pipeline's. ``progress``: on stderr (a bar on a terminal or in Jupyter, lines
        otherwise); default on for file and video sources, off for arrays.

        Returns a :class:`Prediction` of ``F`` frames: ``points (F, I, N, 2)``,
        ``point_scores (F, I, N)``, ``instance_scores``, ``valid``, ``tracks (F, I)``;
        ``pred[i]`` is one frame's :class:`FrameResult`.
        """
        self._refuse_embedding_alone()
        return predict_in_memory(self, source, frames, batch_size, progress)

    def stream(
        self,
        source: Source,
        *,
        frames: Frames = None,
        batch_size: int | None = None,
        progress: bool | None = None,
    ) -> Iterator[FrameResult]:
        """Predict ``source`` frame by frame: a generator of one :class:`FrameResult` per
        frame, in frame order, each as soon as its batch is predicted.

        Takes :meth:`predict`'s arguments and gives its arrays (``frame.points`` is
        ``pred.points[i][pred.valid[i]]``: ``(I, N, 2)`` for the ``I`` instances found),
        holding only a few batches whatever the video's length. Breaking out of the loop
        stops the run. Trackers that relabel earlier frames later (MOT trackers,
        ``infer_bytetrack``, identity linking) are refused: use :meth:`predict`.
        """
        self._refuse_embedding_alone()
        return reworded(stream_frames(self, source, frames, batch_size, progress))

    def _refuse_embedding_alone(self) -> None:
        if self.embeds_labels:
            raise UsageError(
                "an embedding model alone embeds the detections of a SLEAP project: use "
                "predict_to_file(project.slp, ...), or load it with a centroid or box "
                "detector model to embed what that finds"
            )

    @in_python_words
    def predict_to_file(
        self,
        video: str | Path | Any,
        output: str | Path | None = None,
        *,
        frames: str | Sequence[int] | range | None = None,
        format: str | OutputFormat | Sequence[str | OutputFormat] = "slp",
        resume: bool = False,
        overwrite: bool = False,
        video_index: int | None = None,
        on_start: Callable[[VideoInfo, int], None] | None = None,
        on_progress: Callable[[int], None] | None = None,
        extra_provenance: dict[str, Any] | None = None,
        progress: bool | None = None,
    ) -> VideoResult:
        """Predict one video (or image folder, or SLEAP project) into ``output``.

        With ``infer predict``'s guarantees: predictions stream into a journal
        beside the output, so an interrupted run continues with ``resume=True``;
        the output appears whole (atomic rename) or not at all; a finished
        output (or any other file) at ``output`` is never replaced unless
        ``overwrite=True``, and the input video or a file of the loaded models never,
        whatever ``overwrite`` says. Default output: ``<video>.predictions.slp``.
        ``video``: a path, or a ``sio.Video`` of one video file (its path is read).
        ``frames``: ``"0-99,200"``, or int indices / a range.
        ``format``: one name, a comma list or a list (``"slp,csv"``): one prediction pass,
        each format written from it, each beside the first's ``output`` with its suffix.
        ``video_index`` picks one video of a SLEAP project (default: ``video_index``'s);
        ``on_start(info, n)`` hears how many frames this run will predict (fewer than the
        selection when resuming), ``on_progress(n)`` each batch's frames. ``progress``:
        on stderr, by default unless ``on_start`` or ``on_progress`` is given; without
        them the result's ``warnings`` (frames smaller than the model's max stride, a
        clamped selection) are also given through :func:`warnings.warn`.
        """
        for name, value, kind in (
            ("resume", resume, bool),
            ("overwrite", overwrite, bool),
            ("video_index", video_index, int),
        ):  # as the command line's parser: ``overwrite="no"`` must not mean yes
            check_kind(name, value, frozenset({kind}), name == "video_index")
        if resume and overwrite:
            raise ContradictionError("--resume and --overwrite contradict each other: pick one")
        video = _video_path(video)
        frames = _frames_text(frames)
        formats = self.check_formats(format)
        if output is not None:
            out = Path(output)
            refuse_protected_output(output_paths(out, formats), video, self.spec.model_paths)
        if self.embeds_labels:
            if len(formats) > 1:
                raise UsageError(
                    "an embedding model alone writes one .slp: use --format slp, not "
                    + format_names(formats)
                )
            return embed_labels(self, Path(video), output, formats[0], overwrite)
        display: FrameProgress | None = None
        direct = on_start is None and on_progress is None  # not the batch's display
        if wanted(progress, direct):
            display = FrameProgress(Path(video).name)
            on_start = _both(on_start, lambda _info, n: display.start(n))
            on_progress = _both(on_progress, display.advance)
        job = VideoJob(self, formats, resume, overwrite)
        try:
            result = job.run(
                video, output, frames, video_index, on_start, on_progress, extra_provenance
            )
        finally:
            if display is not None and display.started:
                display.close()
        if direct:  # the batch prints them with its outcome line; a caller hears them here
            for line in result.warnings:
                warnings.warn(line, stacklevel=3)
        return result


def _both(first: Callable[..., None] | None, then: Callable[..., None]) -> Callable[..., None]:
    if first is None:
        return then

    def call(*args: Any) -> None:
        first(*args)
        then(*args)

    return call


def _video_path(video: Any) -> str | Path:
    """A path as given; a ``sio.Video`` of one file as its path (what a file run reads),
    any other ``sio.Video`` (frames embedded in a project, an image list) refused."""
    if isinstance(video, (str, Path)):
        return video
    if is_sio_video(video):
        filename = video.filename
        if isinstance(filename, str) and Path(filename).suffix != ".slp":
            return filename
        raise UsageError(
            f"predict_to_file: this sio.Video ({filename!r}) is not one video file; "
            "give the video's path, or use predict(video).to_labels().save(path)"
        )
    raise FramesTypeError(
        f"predict_to_file: cannot read a {type(video).__name__}; give a video, image folder "
        "or .slp path (arrays in memory: predict(frames).to_labels().save(path))"
    )


def _frames_text(frames: Any) -> str | None:
    """``frames`` as the ranges text a file run records (``[0, 1]`` -> ``"0,1"``)."""
    if frames is None or isinstance(frames, str):
        return frames
    if isinstance(frames, (int, float)):
        raise FramesTypeError(f"frames={frames!r}: give a list of indices, a range or '0-99,200'")
    values = np.asarray(list(frames) if not isinstance(frames, np.ndarray) else frames)
    if values.size and (values.dtype.kind not in "iu"):
        raise FramesTypeError(
            f"frames: indices must be ints, not {values.dtype} ({values.flat[0]!r}); "
            "a boolean mask or float index is refused here: give int indices or '0-99,200'"
        )
    if values.size == 0:
        raise UsageError("frames: the list is empty")
    return ",".join(str(int(i)) for i in values.reshape(-1))
