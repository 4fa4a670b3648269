"""Load models once, then predict video after video: the engine behind ``infer predict``.

Each video streams its predictions into a journal next to the output
(:mod:`sleap_infer.journal`) batch by batch; the output file is built from
the journal when the video is done, then the journal is removed. An
interrupted video therefore leaves ``<output>.partial``, which
``predict_video(..., resume=True)`` continues from its last whole batch.
"""

from __future__ import annotations

import contextlib
import os
import platform
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import sleap_io as sio

from sleap_infer.core.errors import OutputError, ResumeError, UsageError
from sleap_infer.core.filters import InstanceFilters
from sleap_infer.core.options import BATCH_SIZE, PredictOptions
from sleap_infer.core.overrides import FLAGS, ConfigOverrides
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.provenance import now_iso, package_versions, system_info
from sleap_infer.core.startup import mark, span
from sleap_infer.core.tracking import TrackingOptions
from sleap_infer.journal import (
    EmptyJournalError,
    Journal,
    JournalWriter,
    check_compatible,
    in_use,
    journal_path,
    mark_failed,
    read_journal,
)
from sleap_infer.layers import build_layer
from sleap_infer.model.loader import LoadedModel, load_model
from sleap_infer.model.overrides import apply_overrides
from sleap_infer.model.registry import MODEL_TYPES
from sleap_infer.ops.instance_filters import filter_instances
from sleap_infer.pipeline.labels_embedding import LabelsEmbedder, require_labels_input
from sleap_infer.pipeline.retrack import retrack_labels
from sleap_infer.runner import Runner, RunStats
from sleap_infer.runtimes import get_runtime
from sleap_infer.sources.frames import select_frames
from sleap_infer.sources.inputs import is_labels_path
from sleap_infer.sources.labels_video import LabelsVideoReader
from sleap_infer.sources.project_frames import ProjectSelection, select_project_frames
from sleap_infer.sources.video import (
    MISSING_AT_END,
    FrameError,
    VideoInfo,
    VideoReader,
    open_video,
    runs,
)
from sleap_infer.tracking import MASKS, POSES, resolve_options
from sleap_infer.tracking.online import (
    IMAGES,
    OnlineTracker,
    track_names,
    tracking_provenance,
)
from sleap_infer.writers.isolate import describe
from sleap_infer.writers.labels import make_skeleton, make_video
from sleap_infer.writers.outputs import default_output_path, write_from_journal
from sleap_infer.writers.registry import OutputFormat, get_format

OUTPUT_ONLY_OPTIONS = frozenset({"mask_output", "polygon_epsilon"})


@dataclass
class VideoResult:
    """Outcome of predicting one video (counts cover every run that fed its journal)."""

    video: Path
    output: Path
    frames: int = 0  # frames predicted, including those of resumed runs
    instances: int = 0
    masks: int = 0  # segmentation models
    boxes: int = 0  # box detectors
    embeddings: int = 0  # re-ID vectors written
    tracks: int = 0  # tracks the tracker made (tracked runs)
    frames_with_instances: int = 0  # frames with an instance, a mask or a box
    mean_score: float | None = None  # mean instance (or mask, or box) score; None: none found
    fps: float = 0.0  # this run's throughput
    stats: RunStats | None = None
    bad_frames: list[FrameError] = field(default_factory=list)
    resumed_frames: int = 0  # frames already in the journal when this run started
    metadata_frames: int = 0  # what the container claims
    decoded_frames: int = 0  # one past the highest frame index that decoded
    warnings: list[str] = field(default_factory=list)  # e.g. --frames clamped to the video

    @property
    def truncated(self) -> bool:
        """The stream ended before the frames the container (or --frames) promised."""
        return any(e.kind == MISSING_AT_END for e in self.bad_frames)

    @property
    def n_bad_frames(self) -> int:
        return sum(e.count for e in self.bad_frames)


class _BadFrameLog:
    """Collects decode errors from the decode thread; the writer drains them per batch."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._new: list[FrameError] = []

    def add(self, error: FrameError) -> None:
        with self._lock:
            self._new.append(error)

    def drain(self) -> list[FrameError]:
        with self._lock:
            new, self._new = self._new, []
        return new


def only_centroid_models(models: Sequence[LoadedModel]) -> list[LoadedModel]:
    """``--centroid-only``: the centroid model among ``models``, run alone (its layer writes
    each centroid on the anchor node), as sleap-nn runs a pair's first stage alone."""
    kept = [m for m in models if m.model_type == "centroid"]
    if not kept:
        types = ", ".join(m.model_type for m in models)
        raise UsageError(f"--centroid-only needs a centroid model among the models; got {types}")
    return kept


def project_video(reader: object) -> sio.Video | None:
    """The sleap-io video a project input's frames come from (None for other inputs)."""
    return reader.video if isinstance(reader, LabelsVideoReader) else None


def selection_text(indices: Sequence[int] | None) -> str:
    """``None`` -> ``"all"``; else compact inclusive ranges like ``0-9,40-59``."""
    if indices is None:
        return "all"
    return ",".join(str(a) if n == 1 else f"{a}-{a + n - 1}" for a, n in runs(indices))


class Predictor:
    """Models loaded and warmed once, reused for every video."""

    def __init__(
        self,
        model_paths: Sequence[str | Path],
        backend: str = "torch",
        device: str = "auto",
        batch_size: int = BATCH_SIZE,
        options: PredictOptions | None = None,
        backend_options: dict[str, Any] | None = None,
        tracking: TrackingOptions | None = None,
        filters: InstanceFilters | None = None,
        overrides: ConfigOverrides | None = None,
        project: ProjectSelection | None = None,
        centroid_only: bool = False,
    ) -> None:
        self.models: list[LoadedModel] = [load_model(p) for p in model_paths]
        if centroid_only:  # sleap-nn's --centroid_only: the pair's first stage alone
            self.models = only_centroid_models(self.models)
        # Training-config overrides (sleap-nn's --max_height, --input_scale, ...) change
        # what the layers are built from; filters drop instances per batch, before tracking.
        self.overrides = overrides if overrides is not None and overrides.active else None
        if self.overrides is not None:
            check_overrides_backend(backend, self.overrides)
            self.models = apply_overrides(self.models, self.overrides)
        self.filters = filters if filters is not None and filters.active else None
        # Which video and frames of a SLEAP project input (sleap-nn's --video_index,
        # --only_labeled_frames, ...); other inputs ignore it.
        self.project = project if project is not None and project.active else None
        self.options = options or PredictOptions()
        self.batch_size = batch_size
        self.tracking: TrackingOptions | None = None  # resolved for these models
        if tracking is not None:
            check_trackable(self.models)
        self._tracking_asked = tracking
        # A lone embedding model embeds the detections of a SLEAP project, not frames.
        self.embedder: LabelsEmbedder | None = None
        if len(self.models) == 1 and predicts_embeddings(self.models):
            self.embedder = LabelsEmbedder(
                self.models[0], backend, device, self.options, backend_options
            )
            self.backend_name = get_runtime(backend).name
            self.layer = self.embedder.layer
            self.warnings: list[str] = []
            return
        runtime = get_runtime(backend)
        make_backend = runtime.maker(device, **(backend_options or {}))
        self.backend_name = runtime.name
        # Engines built for one exact batch need every batch padded to it; everything else
        # takes a short video in one smaller batch instead of padding it with blank frames.
        self._pads_short_videos = runtime.static_batch
        with span("layer_build"):
            self.layer = build_layer(self.models, make_backend, self.options)
        self.runner = Runner(self.layer, batch_size=batch_size)
        if tracking is not None:
            n_nodes = len(self.layer.config.node_names)
            self.tracking = resolve_tracking(self.models, tracking, n_nodes)
        self.warnings = skeleton_warnings(self.models, self.primary)

    @property
    def primary(self) -> LoadedModel:
        """The model whose skeleton and classes the output uses (top-down: the instance model,
        whichever order the models were given in)."""
        return output_model(self.models, self.layer.config)

    @property
    def device(self) -> str:
        return str(self.layer.device)

    @property
    def predicts_masks(self) -> bool:
        """Segmentation models write masks, which only some formats can hold."""
        return predicts_masks(self.models)

    def check_format(self, fmt: OutputFormat) -> None:
        """Refuse, before any video, an output format that cannot hold what the model predicts."""
        check_format(self.models, fmt)

    def selection(
        self, video: str | Path, video_index: int | None = None
    ) -> ProjectSelection | None:
        """The project flags for ``video`` (None unless it is a project and one is set);
        ``video_index`` (one video of a multi-video project) overrides ``--video-index``."""
        if not is_labels_path(video):
            return None
        chosen = self.project or ProjectSelection()
        if video_index is not None:
            chosen = replace(chosen, video_index=video_index)
        return chosen if chosen.active else None

    def open(self, video: str | Path, video_index: int | None = None) -> VideoReader:
        """A video file, or the frames of a SLEAP project's video (``.slp`` / ``.pkg.slp``)."""
        return self._open(video, self.selection(video, video_index))

    def _open(self, video: str | Path, chosen: ProjectSelection | None) -> VideoReader:
        if chosen is not None:
            return open_video(video, video_index=chosen.video_index or 0)
        return open_video(video)

    def _project_frames(
        self,
        video: str | Path,
        reader: VideoReader,
        indices: list[int] | None,
        chosen: ProjectSelection | None,
    ) -> list[int] | None:
        """A project's selected frames (e.g. its labeled ones), within ``--frames`` if given.

        Without a frame flag there is nothing to select: the project's annotations are
        not read again (the reader has already checked the video index).
        """
        if chosen is None or not chosen.filtered:
            return indices
        _, picked = select_project_frames(Path(video), chosen, reader.info.n_frames)
        if picked is None:
            return indices
        if indices is None:
            return picked
        allowed = set(indices)
        return [i for i in picked if i in allowed]

    def _options_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self.options).items() if v is not None}

    def fingerprint(
        self,
        info: VideoInfo,
        frames: Sequence[int] | None,
        project: ProjectSelection | None = None,
    ) -> dict[str, Any]:
        """What the predictions depend on; a journal resumes only if all of it matches."""
        return {
            "video_name": info.path.name,
            "video_bytes": info.path.stat().st_size,
            "video_frames": info.n_frames,
            "checkpoint_sha256": [m.checkpoint_sha256 for m in self.models],
            "model_types": [m.model_type for m in self.models],
            "layer": type(self.layer).__name__,
            # What goes into the output file only (not the journal) may change on resume.
            "options": {
                k: v for k, v in self._options_dict().items() if k not in OUTPUT_ONLY_OPTIONS
            },
            "frames": selection_text(frames),
            # Absent when unused, so journals of earlier runs still resume.
            **({"tracking": self.tracking.to_json()} if self.tracking else {}),
            **({"filters": self.filters.to_json()} if self.filters else {}),
            **({"overrides": self.overrides.given} if self.overrides else {}),
            **({"project": asdict(project)} if project else {}),
        }

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
            "options": self._options_dict(),
            **({"filters": self.filters.to_json()} if self.filters else {}),
            **({"config_overrides": self.overrides.given} if self.overrides else {}),
            "source_video": str(info.path.resolve()),
            "frame_selection": "all" if frames is None else f"{len(frames)} frames",
            "versions": package_versions(),
            **_export_provenance(self.layer.backend.provenance()),
            "system": system_info(),
        }

    def _open_journal(
        self,
        path: Path,
        fingerprint: dict[str, Any],
        resume: bool,
        overwrite: bool,
        warnings: list[str],
    ) -> Journal | None:
        """The journal to continue, or None to start afresh (removing what may be removed).

        Only a journal holding predictions of an *interrupted* run blocks a plain
        run: one cut off before its first prediction has nothing to lose, and one
        whose run failed on an error (see :func:`~sleap_infer.journal.mark_failed`)
        is continued when its settings match, else replaced with a warning.
        """
        if not path.exists():
            return None
        if in_use(path):
            raise ResumeError(f"{path}: another infer process is predicting this video right now")
        if overwrite:
            path.unlink()
            return None
        try:
            journal = read_journal(path)
        except EmptyJournalError:
            path.unlink()
            return None
        if journal.n_predicted == 0 and not journal.bad_frames:
            path.unlink()  # e.g. Ctrl-C while the model warmed up
            return None
        if journal.failed is not None and not resume:
            return self._after_failure(journal, fingerprint, warnings)
        if not resume:
            raise ResumeError(
                f"{path}: partial predictions of an interrupted run exist "
                f"({journal.n_predicted} frames); pass --resume to continue them or "
                "--overwrite to start over"
            )
        check_compatible(journal, fingerprint)
        return journal

    @staticmethod
    def _after_failure(
        journal: Journal, fingerprint: dict[str, Any], warnings: list[str]
    ) -> Journal | None:
        changes = journal.changes(fingerprint)
        if not changes:
            warnings.append(
                f"{journal.path}: continuing the {journal.n_predicted} frames of a run that "
                f"failed ({journal.failed})"
            )
            return journal
        journal.path.unlink()
        warnings.append(
            f"{journal.path}: discarded {journal.n_predicted} frames of a run that failed "
            f"({journal.failed}) with other settings ({'; '.join(changes)})"
        )
        return None

    def predict_video(
        self,
        video: str | Path,
        output: str | Path | None = None,
        frames: str | None = None,
        on_start: Callable[[VideoInfo, int], None] | None = None,
        on_progress: Callable[[int], None] | None = None,
        extra_provenance: dict[str, Any] | None = None,
        output_format: str | OutputFormat = "slp",
        resume: bool = False,
        overwrite: bool = False,
        video_index: int | None = None,
    ) -> VideoResult:
        """Predict one video and write its output file; returns counts and timings.

        ``video_index`` picks one video of a SLEAP project input (default: ``--video-index``'s).

        ``on_start(info, n)`` gets the number of frames this run will predict
        (fewer than the selection when resuming). With ``resume`` an existing
        journal for the same video, model and options is continued; without it
        (or ``overwrite``) an existing journal is an error, so that a forgotten
        flag never silently throws predictions away.
        """
        fmt = (
            output_format if isinstance(output_format, OutputFormat) else get_format(output_format)
        )
        self.check_format(fmt)
        if self.embedder is not None:
            return self._embed_labels(Path(video), output, fmt)
        mark("video_start")
        chosen = self.selection(video, video_index)
        with span("video_open"):
            reader = self._open(video, chosen)
        info = reader.info
        indices, clamped = select_frames(frames, info.n_frames, video)
        indices = self._project_frames(video, reader, indices, chosen)
        out_path = Path(output) if output is not None else default_output_path(info.path, fmt)
        jpath = journal_path(out_path)
        fingerprint = self.fingerprint(info, indices, chosen)
        warnings = [clamped] if clamped else []
        journal = self._open_journal(jpath, fingerprint, resume, overwrite, warnings)
        result = VideoResult(
            video=info.path,
            output=out_path,
            metadata_frames=info.n_frames,
            resumed_frames=journal.n_predicted if journal else 0,
            warnings=warnings,
        )
        bad = _BadFrameLog()
        online = self._start_tracker(journal, reader)
        stream, total = self._remaining(reader, indices, journal, bad.add)
        if on_start is not None:
            on_start(info, total)
        t0 = time.perf_counter()
        mark("run_start")
        try:
            with self._journal_writer(jpath, journal, fingerprint, info, result) as writer:
                result.stats = self._run_into(writer, stream, bad, on_progress, total, online)
            finished = read_journal(jpath)
            extra = dict(extra_provenance or {})
            if self.tracking is not None:
                extra["tracking"] = tracking_provenance(self.tracking, online)
            self._write_output(finished, info, indices, out_path, fmt, time.perf_counter() - t0,
                               extra, result, project_video(reader))  # fmt: skip
        except Exception as exc:  # not KeyboardInterrupt: that leaves an "interrupted" journal
            if jpath.exists():
                mark_failed(jpath, describe(exc))
            raise
        with contextlib.suppress(FileNotFoundError):
            jpath.unlink()  # only once the output is safely in place
        return result

    def _start_tracker(self, journal: Journal | None, reader: VideoReader) -> OnlineTracker | None:
        """This video's tracker: fresh, or where the resumed journal's last batch left it."""
        if self.tracking is None:
            return None
        channels = reader.channels_for(self.layer.input_channels)

        def read_frames(indices: list[int]) -> list[np.ndarray]:
            found = dict(reader.iter_frames(sorted(set(indices)), channels))
            return [found[i] for i in indices]

        return OnlineTracker.start(
            self.tracking,
            tracking_carrier(self.models),
            len(self.layer.config.node_names),
            predicts_embeddings(self.models),
            snapshot=journal.tracker if journal is not None else None,
            read_frames=read_frames,
        )

    def _embed_labels(
        self, path: Path, output: str | Path | None, fmt: OutputFormat
    ) -> VideoResult:
        """The lone-embedding route: vectors for the detections a ``.slp`` holds."""
        assert self.embedder is not None
        require_labels_input(path)
        out_path = Path(output) if output is not None else default_output_path(path, fmt)
        asked = self._tracking_asked
        retrack = None
        tracks = [0]
        if asked is not None:

            def retrack(labels: sio.Labels) -> dict[str, Any]:
                """Track by the new vectors (sleap-nn's ``embedding --tracking``)."""
                stats = retrack_labels(labels, asked)
                tracks[0] = stats.tracks
                return {"tracking": {"options": stats.options.to_json(), "tracks": stats.tracks}}

        run = self.embedder.embed_file(path, out_path, before_save=retrack)
        return VideoResult(
            video=path,
            output=out_path,
            frames=run.frames,
            embeddings=run.vectors,
            tracks=tracks[0],
            frames_with_instances=run.frames,
            fps=run.frames / run.seconds if run.seconds > 0 else 0.0,
            metadata_frames=run.frames,
            decoded_frames=run.frames,
        )

    def _journal_writer(
        self,
        path: Path,
        journal: Journal | None,
        fingerprint: dict[str, Any],
        info: VideoInfo,
        result: VideoResult,
    ) -> JournalWriter:
        """A new journal (header: what the predictions depend on) or the resumed one,
        with a record of this run's session appended."""
        started = now_iso()
        if journal is None:
            header = {"fingerprint": fingerprint, "video": str(info.path), "created": started}
            writer = JournalWriter(path, header=header)
        else:
            writer = JournalWriter(path, existing=journal)
        try:
            writer.write_session(
                {
                    "started": started,
                    "host": platform.node(),
                    "pid": os.getpid(),
                    "backend": self.backend_name,
                    "device": self.device,
                    "resumed_from_frames": result.resumed_frames,
                }
            )
        except BaseException:
            writer.close()
            raise
        return writer

    def _run_into(
        self,
        writer: JournalWriter,
        stream: Iterator[tuple[int, np.ndarray]],
        bad: _BadFrameLog,
        on_progress: Callable[[int], None] | None,
        total: int,
        online: OnlineTracker | None = None,
    ) -> RunStats:
        """Predict ``stream``, appending each batch (and new bad frames, and the tracker's
        state after it) to the journal; tracking runs here, in frame order."""

        filters = self.filters

        def sink(preds: BatchPredictions) -> None:
            if filters is not None:
                preds.valid = filter_instances(
                    preds.points,
                    preds.point_scores,
                    preds.instance_scores,
                    preds.valid,
                    **filters.op_kwargs(),
                )
            snapshot = online.track(preds) if online is not None else None
            preds.extras.pop(IMAGES, None)
            writer.write_batch(preds, bad.drain(), snapshot)

        # --batch-size 1000 on 166 frames must not allocate (and run) 834 blank frames.
        batch_size = None if self._pads_short_videos else max(1, min(self.batch_size, total))
        try:
            return self.runner.run(
                stream,
                sink=sink,
                progress=on_progress,
                batch_size=batch_size,
                keep_images=online is not None and online.needs_images,
                # One batch in all: warming up first would only run the network twice.
                warmup=total > (batch_size or self.batch_size),
            )
        finally:
            with contextlib.suppress(OutputError):  # keep the original error, if any
                writer.write_bad_frames(bad.drain())

    def _write_output(
        self,
        journal: Journal,
        info: VideoInfo,
        indices: list[int] | None,
        out_path: Path,
        fmt: OutputFormat,
        runtime_s: float,
        extra_provenance: dict[str, Any] | None,
        result: VideoResult,
        source_video: sio.Video | None = None,
    ) -> None:
        """Build the output from the finished journal; fill in ``result``'s totals.

        ``source_video``: a project's own video object, so the output refers to the media
        (or the package's frames) as the project does, not to the ``.slp`` file.
        """
        highest = int(journal.predicted.max(initial=-1))
        result.bad_frames = journal.bad_frames
        result.decoded_frames = highest + 1
        result.frames = journal.n_predicted
        result.instances = journal.n_instances
        result.masks = journal.n_masks
        result.boxes = journal.n_boxes
        result.tracks = journal.n_tracks
        result.frames_with_instances = journal.frames_with_instances
        result.mean_score = _mean_score(journal)
        result.fps = result.stats.fps if result.stats else 0.0
        provenance = self.provenance(info, indices)
        provenance.update(
            {
                "inference_start_timestamp": journal.header.get("created"),
                "inference_end_timestamp": now_iso(),
                "inference_runtime_seconds": round(runtime_s, 3),
                "timing_seconds": _timing(result.stats),
                "frames_processed": journal.n_predicted,
                "frames_in_metadata": info.n_frames,
                "bad_frames": [
                    {"frame_idx": e.index, "count": e.count, "kind": e.kind, "reason": e.reason}
                    for e in journal.bad_frames
                ],
                "sessions": [
                    {k: v for k, v in sess.items() if k != "type"} for sess in journal.sessions
                ],
            }
        )
        provenance.update(extra_provenance or {})
        write_from_journal(
            journal,
            out_path,
            fmt,
            source_video or make_video(info, n_frames=max(info.n_frames, highest + 1)),
            make_skeleton(self.layer.config),
            track_names(journal.n_tracks) if self.tracking else self.layer.config.class_names,
            provenance,
            mask_output=self.options.mask_output,
            polygon_epsilon=self.options.polygon_epsilon,
            box_categories=box_categories(self.models),
            poses=predicts_poses(self.models),
        )

    def _remaining(
        self,
        reader: VideoReader,
        indices: list[int] | None,
        journal: Journal | None,
        on_error: Callable[[FrameError], None],
    ) -> tuple[Iterator[tuple[int, np.ndarray]], int]:
        """The frames still to predict (all of the selection unless resuming) and their count."""
        channels = reader.channels_for(self.layer.input_channels)
        n = reader.info.n_frames
        if journal is None or (journal.n_predicted == 0 and not journal.bad_frames):
            total = n if indices is None else len(indices)
            return reader.iter_frames(indices, channels, on_error), total
        size = max(
            n,
            int(journal.predicted.max(initial=-1)) + 1,
            max((e.last + 1 for e in journal.bad_frames), default=0),
        )
        done = journal.done_mask(size)
        if indices is not None:
            wanted = [i for i in indices if i >= size or not done[i]]
            return reader.iter_frames(wanted, channels, on_error), len(wanted)
        start = int(np.argmin(done)) if not done.all() else size

        def not_done() -> Iterator[tuple[int, np.ndarray]]:
            for i, frame in reader.iter_frames(None, channels, on_error, start=start):
                if i >= size or not done[i]:
                    yield i, frame

        return not_done(), max(0, n - int(done[:n].sum()))


def _mean_score(journal: Journal) -> float | None:
    """Mean score of what the run is about: instances, else masks, else boxes."""
    for n, total in (
        (journal.n_instances, journal.score_sum),
        (journal.n_masks, journal.mask_score_sum),
        (journal.n_boxes, journal.box_score_sum),
    ):
        if n:
            return total / n
    return None


def _entries(models: Sequence[LoadedModel]) -> list[Any]:
    return [e for e in (MODEL_TYPES.get(m.model_type) for m in models) if e is not None]


def predicts_masks(models: Sequence[LoadedModel]) -> bool:
    return any(entry.masks for entry in _entries(models))


def predicts_boxes(models: Sequence[LoadedModel]) -> bool:
    return any(entry.boxes for entry in _entries(models))


def predicts_embeddings(models: Sequence[LoadedModel]) -> bool:
    return any(entry.embeds for entry in _entries(models))


def predicts_poses(models: Sequence[LoadedModel]) -> bool:
    """Whether keypoint instances come out: a keypoint model, or an embedding model behind a
    detector (one instance per animal, carrying its vector); not box detectors or
    segmentation models alone."""
    entries = _entries(models)
    keypoints = any(not (e.boxes or e.masks or e.embeds) for e in entries)
    return keypoints or (any(e.embeds for e in entries) and len(models) > 1)


def check_overrides_backend(backend: str, overrides: ConfigOverrides) -> None:
    """Exported graphs bake the trained input scale into their coordinates and the export
    cache keys on the trained config, so overrides run on torch only (sleap-nn's export
    route drops them too)."""
    name = get_runtime(backend).name
    if name != "torch":
        flags = ", ".join(FLAGS[k] for k in overrides.given)
        raise UsageError(
            f"training-config overrides ({flags}) run with --backend torch only, not {name}"
        )


def tracking_carrier(models: Sequence[LoadedModel]) -> str:
    """What a tracked run tracks: masks for mask-only models, else keypoint instances."""
    return MASKS if predicts_masks(models) and not predicts_poses(models) else POSES


def resolve_tracking(
    models: Sequence[LoadedModel], options: TrackingOptions, n_nodes: int
) -> TrackingOptions:
    """The tracking options with sleap-nn's automatic choices made for these models
    (``n_nodes``: of the skeleton the output uses)."""
    check_trackable(models)
    carrier = tracking_carrier(models)
    return resolve_options(options, carrier, n_nodes, predicts_embeddings(models))


def check_trackable(models: Sequence[LoadedModel]) -> None:
    """A one-line UsageError for models whose output cannot be tracked."""
    entries = _entries(models)
    kind = ", ".join(m.model_type for m in models)
    if any(m.config.class_names for m in models):
        raise UsageError(
            f"--tracking: the {kind} model already assigns identities (its classes); "
            "drop --tracking"
        )
    if entries and all(e.boxes for e in entries):
        raise UsageError(
            f"--tracking: a box detector's boxes are not tracked (as in sleap-nn); pair "
            f"{kind} with an instance model to track animals"
        )


def box_categories(models: Sequence[LoadedModel]) -> tuple[str, ...]:
    """The box detector's class names, which the boxes' category indices refer to."""
    for model in models:
        entry = MODEL_TYPES.get(model.model_type)
        if entry is not None and entry.boxes:
            return tuple(model.config.categories)
    return ()


def check_format(models: Sequence[LoadedModel], fmt: OutputFormat) -> None:
    """A one-line UsageError when ``fmt`` cannot hold the masks or boxes these models predict."""
    kind = ", ".join(m.model_type for m in models)
    if predicts_masks(models) and not fmt.holds_masks:
        raise UsageError(
            f"--format {fmt.name} cannot hold segmentation masks ({kind} model); use --format slp"
        )
    if predicts_boxes(models) and not fmt.holds_boxes:
        raise UsageError(
            f"--format {fmt.name} cannot hold bounding boxes ({kind} model); "
            "use --format slp or csv"
        )
    if predicts_embeddings(models) and not fmt.holds_embeddings:
        raise UsageError(
            f"--format {fmt.name} cannot hold re-ID embedding vectors ({kind} model); "
            "use --format slp"
        )


def output_model(models: Sequence[LoadedModel], output_config: object) -> LoadedModel:
    """The model whose config the layer writes its output with."""
    for model in models:
        if model.config is output_config:
            return model
    return models[-1]


def skeleton_warnings(models: Sequence[LoadedModel], primary: LoadedModel) -> list[str]:
    """A warning when the models of a pair were trained on different skeletons.

    Top-down needs only the centroid model's anchor node, so such a pair runs,
    but it usually means two models from different projects were paired by
    mistake; the output uses the instance model's skeleton.
    """
    out = []
    for other in models:
        if other is primary:
            continue
        a, b = other.config, primary.config
        if (a.node_names, a.edges) != (b.node_names, b.edges):
            out.append(
                f"{other.path} and {primary.path} were trained on different skeletons "
                f"({len(a.node_names)} nodes {', '.join(a.node_names)} vs "
                f"{len(b.node_names)} nodes {', '.join(b.node_names)}, or other edges); "
                f"the output uses {primary.path.name}'s"
            )
    return out


def _export_provenance(described: dict[str, Any]) -> dict[str, Any]:
    """Which export directories an onnx/trt run used (absent for torch, which has none)."""
    return {"export": described} if described else {}


def _timing(stats: RunStats | None) -> dict[str, float]:
    """This run's time split (decode wait, warmup, layer stages, writer), rounded for JSON."""
    if stats is None:
        return {}
    split = {"warmup": stats.warmup_s, "decode_wait": stats.wait_s, **stats.stages}
    split["writer"] = stats.sink_s
    return {k: round(v, 4) for k, v in split.items()}
