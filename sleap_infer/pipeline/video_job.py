"""One video through a pipeline into one output file, resumably: what ``infer predict`` runs.

Each video streams its predictions into a journal next to the output
(:mod:`sleap_infer.journal`) batch by batch; the output file is built from
the journal when the video is done, then the journal is removed. An
interrupted video therefore leaves ``<output>.partial``, which a rerun with
``resume=True`` continues from its last whole batch.

Before anything runs, the output path is judged once, here, for the command
line and the Python API alike: a finished output is never replaced unless
``overwrite`` is given, and a file there that is not one of our outputs is
refused either way, so a 4-frame test never replaces a night's predictions.
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

from sleap_infer.core.errors import (
    OutputError,
    OutputExistsError,
    ResumeError,
    UsageError,
    VideoError,
)
from sleap_infer.core.options import PredictOptions, recorded_options
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.products import Counts, Product
from sleap_infer.core.provenance import now_iso, package_versions, system_info
from sleap_infer.core.startup import mark, span
from sleap_infer.journal import (
    EmptyJournalError,
    Journal,
    JournalWriter,
    busy_error,
    check_compatible,
    in_use,
    journal_path,
    mark_failed,
    read_journal,
)
from sleap_infer.pipeline.linked import link_journal, output_track_names, prepare_journal
from sleap_infer.pipeline.loaded import Loaded
from sleap_infer.pipeline.request import (
    REQUEST_KEY,
    VIDEO_FRAMES_KEY,
    checkpoint_hashes,
    request_record,
    write_side_record,
)
from sleap_infer.runner import RunStats
from sleap_infer.sources.frames import select_frames
from sleap_infer.sources.inputs import is_labels_path
from sleap_infer.sources.labels_video import LabelsVideoReader
from sleap_infer.sources.open import open_video
from sleap_infer.sources.project_frames import ProjectSelection, select_project_frames
from sleap_infer.sources.video import (
    MISSING_AT_END,
    FrameError,
    VideoInfo,
    VideoReader,
    runs,
)
from sleap_infer.tracking.base import MASKS
from sleap_infer.tracking.online import OnlineTracker, tracking_provenance
from sleap_infer.writers.isolate import describe
from sleap_infer.writers.labels import make_skeleton, make_video
from sleap_infer.writers.outputs import (
    COMPLETE,
    default_output_path,
    existing_message,
    existing_output,
    labels_output,
    output_paths,
    refuse_existing,
    write_from_journal,
)
from sleap_infer.writers.registry import OutputFormat
from sleap_infer.writers.slots import SlpSaving

OUTPUT_ONLY_OPTIONS = frozenset(
    {
        *("mask_output", "polygon_epsilon", "no_empty_frames", "csv_empty_frames"),
        *("embed", "restore_source_videos", "save_embeddings", "centroid_output"),
    }
)


@dataclass
class VideoResult:
    """Outcome of predicting one video (counts cover every run that fed its journal)."""

    video: Path
    output: Path
    counts: Counts = field(default_factory=Counts)
    fps: float = 0.0  # this run's throughput
    stats: RunStats | None = None
    bad_frames: list[FrameError] = field(default_factory=list)
    resumed_frames: int = 0  # frames already in the journal when this run started
    metadata_frames: int = 0  # what the container claims
    decoded_frames: int = 0  # one past the highest frame index that decoded
    warnings: list[str] = field(default_factory=list)  # e.g. --frames clamped to the video
    outputs: list[Path] = field(default_factory=list)  # every file this run wrote
    backend: str = ""  # the runtime that ran (what --backend auto chose)

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


def project_video(reader: object) -> sio.Video | None:
    """The sleap-io video a project input's frames come from (None for other inputs)."""
    return reader.video if isinstance(reader, LabelsVideoReader) else None


def selection_text(indices: Sequence[int] | None) -> str:
    """``None`` -> ``"all"``; else compact inclusive ranges like ``0-9,40-59``."""
    if indices is None:
        return "all"
    return ",".join(str(a) if n == 1 else f"{a}-{a + n - 1}" for a, n in runs(indices))


def project_selection(
    pipeline: Loaded, video: str | Path, video_index: int | None = None
) -> ProjectSelection | None:
    """The project flags for ``video`` (None unless it is a project and one is set);
    ``video_index`` (one video of a multi-video project) overrides ``--video-index``."""
    if not is_labels_path(video):
        return None
    chosen = pipeline.project or ProjectSelection()
    if video_index is not None:
        chosen = replace(chosen, video_index=video_index)
    return chosen if chosen.active else None


def small_frame_warning(pipeline: Loaded, info: VideoInfo, video: object) -> str | None:
    """A warning when frames, once scaled, are smaller than the first network's max stride:
    padded up to one stride, a frame is mostly padding and its points are junk."""
    config = pipeline.models[0].config
    pre = config.preprocessing
    if pre.tiling is not None:
        return None
    scale = pre.scale or 1.0
    side = min(info.height, info.width) * scale
    if side >= config.max_stride:
        return None
    return (
        f"{video}: frames are {info.height}x{info.width}"
        + (f" ({side:g} px on the short side at scale {scale:g})" if scale != 1 else "")
        + f", smaller than the model's max stride {config.max_stride}: predictions on them "
        "are unreliable"
    )


def open_source(
    video: str | Path,
    chosen: ProjectSelection | None,
    keep_corrupt: bool = False,
    options: PredictOptions | None = None,
) -> VideoReader:
    """A video file, an image folder or glob, the frames of a SLEAP project's video, or
    an HDF5 file's frames (``options``' ``video_dataset`` / ``video_input_format``)."""
    index = 0 if chosen is None else chosen.video_index or 0
    options = options or PredictOptions()
    return open_video(
        video,
        video_index=index,
        keep_corrupt=keep_corrupt,
        dataset=options.video_dataset,
        input_format=options.video_input_format,
    )


def project_frames(
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
    index, picked = select_project_frames(Path(video), chosen, reader.info.n_frames)
    if picked is None:
        return indices
    if indices is not None:
        allowed = set(indices)
        picked = [i for i in picked if i in allowed]
    if not picked:
        # As a --frames past the end: an empty output would read as "done, nothing there".
        within = "" if indices is None else " within --frames"
        raise VideoError(
            f"{video}: {_project_flag(chosen)} selects no frame of video {index}{within}; "
            "nothing to predict"
        )
    return picked


def _project_flag(chosen: ProjectSelection) -> str:
    """The flag that picked the frames (the first in sleap-nn's order, as selection does)."""
    if chosen.only_labeled:
        return "--only-labeled-frames"
    if chosen.only_suggested:
        return "--only-suggested-frames"
    if chosen.exclude_user_labeled:
        return "--exclude-user-labeled"
    return "--only-predicted-frames"


def input_identity(video: str | Path) -> tuple[int, int, int] | None:
    """What says an input file is still the one being predicted: size, mtime, inode
    (None for an image folder or glob: its frames are checked as they are read)."""
    try:
        stat = os.stat(video)
    except OSError:
        return None
    if not Path(video).is_file():
        return None
    return stat.st_size, stat.st_mtime_ns, stat.st_ino


def check_unchanged(video: str | Path, before: tuple[int, int, int] | None, jpath: Path) -> None:
    """Fail the video (one :class:`VideoError` line) when its file was replaced or written
    to while it was predicted: its predictions mix two videos, so no output is published
    and the journal is removed (a rerun predicts the new file from the start)."""
    if before is None:
        return
    after = input_identity(video)
    if after == before:
        return
    with contextlib.suppress(OSError):
        jpath.unlink()
    how = "it was removed" if after is None else "its size, mtime or inode differ"
    raise VideoError(
        f"{video}: the input changed while it was predicted ({how}); no output written, "
        "rerun to predict it again"
    )


def options_dict(pipeline: Loaded) -> dict[str, Any]:
    return {k: v for k, v in vars(pipeline.options).items() if v is not None}


def fingerprint(
    pipeline: Loaded,
    info: VideoInfo,
    frames: Sequence[int] | None,
    project: ProjectSelection | None = None,
) -> dict[str, Any]:
    """What the predictions depend on; a journal resumes only if all of it matches."""
    overrides = pipeline.overrides
    return {
        "video_name": info.path.name,
        "video_bytes": info.path.stat().st_size,
        "video_frames": info.n_frames,
        "checkpoint_sha256": [m.checkpoint_sha256 for m in pipeline.models],
        "model_types": [m.model_type for m in pipeline.models],
        "layer": pipeline.layer_name,
        # What goes into the output file only (not the journal) may change on resume.
        "options": {
            k: v
            for k, v in recorded_options(options_dict(pipeline)).items()
            if k not in OUTPUT_ONLY_OPTIONS
        },
        "frames": selection_text(frames),
        "tracking": pipeline.tracking.to_json() if pipeline.tracking else None,
        "filters": pipeline.filters.to_json() if pipeline.filters else None,
        "overrides": overrides.given if overrides else None,
        "project": asdict(project) if project else None,
    }


def slp_saving(
    options: PredictOptions, source_video: sio.Video | None, centroid_source: str | None = None
) -> SlpSaving:
    """How the ``.slp`` is saved (``--embed``, ``--restore-source-videos``,
    ``--save-embeddings``, ``--centroid-output``); ``--embed auto`` embeds when the input's
    frames are embedded (a ``.pkg.slp``), as sleap-nn 0.3.5's ``_resolve_embed`` decides.
    ``centroid_source``: the ``sio.Centroid.source`` tag of a centroid model run alone
    (None for any other run: sleap-nn writes their instances whatever it is asked)."""
    embed = options.embed == "true"
    if options.embed == "auto" and source_video is not None:
        embed = source_video.source_video is not None or bool(
            getattr(source_video.backend, "has_embedded_images", False)
            or source_video.backend_metadata.get("has_embedded_images")
        )
    centroids = options.centroid_output if centroid_source is not None else "instance"
    return SlpSaving(
        embed,
        options.restore_source_videos,
        options.save_embeddings == "slp",
        "" if centroids == "instance" else centroids,
        centroid_source or "",
    )


def provenance(pipeline: Loaded, source: str, frames: Sequence[int] | None) -> dict[str, Any]:
    """What produced the predictions: models, runtime, options, versions, machine."""
    overrides = pipeline.overrides
    return {
        "sleap_infer": "predict",
        "model_paths": [str(m.path.resolve()) for m in pipeline.models],
        "model_types": [m.model_type for m in pipeline.models],
        "checkpoint_sha256": [m.checkpoint_sha256 for m in pipeline.models],
        "layer": type(pipeline.layer).__name__,
        "backend": pipeline.backend_name,
        **(
            {"backend_choice": {"asked": "auto", "reason": pipeline.backend_reason}}
            if pipeline.auto is not None
            else {}
        ),
        "device": pipeline.device,
        "batch_size": pipeline.batch_size,
        "options": options_dict(pipeline),
        **({"filters": pipeline.filters.to_json()} if pipeline.filters else {}),
        **({"config_overrides": overrides.given} if overrides else {}),
        "source_video": source,
        "frame_selection": "all" if frames is None else f"{len(frames)} frames",
        "versions": package_versions(),
        **_export_provenance(pipeline.layer.backend.provenance()),
        "system": system_info(),
    }


class VideoJob:
    """One video: judge the output path, open or continue the journal, predict, write.

    With ``resume`` an existing journal for the same video, model and options is
    continued; without it (or ``overwrite``) an existing journal is an error, so that
    a forgotten flag never silently throws predictions away.
    """

    def __init__(
        self,
        pipeline: Loaded,
        fmt: OutputFormat | tuple[OutputFormat, ...],
        resume: bool,
        overwrite: bool,
    ) -> None:
        self.pipeline = pipeline
        # Several formats: one prediction pass, then each written from the same journal.
        self.formats = fmt if isinstance(fmt, tuple) else (fmt,)
        self.fmt = self.formats[0]  # the main one: its output names the journal
        self.resume = resume
        self.overwrite = overwrite

    def run(
        self,
        video: str | Path,
        output: str | Path | None,
        frames: str | None,
        video_index: int | None,
        on_start: Callable[[VideoInfo, int], None] | None,
        on_progress: Callable[[int], None] | None,
        extra_provenance: dict[str, Any] | None,
    ) -> VideoResult:
        pipeline = self.pipeline
        mark("video_start")
        chosen = project_selection(pipeline, video, video_index)
        with span("video_open"):
            reader = open_source(
                video, chosen, pipeline.options.keep_corrupt_frames, pipeline.options
            )
        info = reader.info
        indices, clamped = select_frames(frames, info.n_frames, video)
        indices = project_frames(video, reader, indices, chosen)
        out_path = Path(output) if output is not None else default_output_path(info.path, self.fmt)
        jpath = journal_path(out_path)
        # Also with a journal there: its run may be another one's (a --frames test) and a
        # finished output is never replaced unasked; the rename holds this decision too.
        todo = self._outputs_to_write(out_path)
        prints = fingerprint(pipeline, info, indices, chosen)
        # What a rerun compares before it skips this output (see pipeline.request).
        request = request_record(
            pipeline.spec,
            checkpoint_hashes(pipeline.spec.model_paths, pipeline.spec.overrides),
            frames,
        )
        request[VIDEO_FRAMES_KEY] = info.n_frames  # selections are compared as frame sets
        identity = input_identity(video)
        warnings = [
            w for w in (clamped, small_frame_warning(pipeline, info, video), *info.notes) if w
        ]
        journal = self._open_journal(jpath, prints, warnings)
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
        channels = reader.channels_for(pipeline.layer.input_channels)
        pipeline.prepare_run(total, (info.height, info.width, channels))
        result.backend = pipeline.backend_name
        if on_start is not None:
            on_start(info, total)
        t0 = time.perf_counter()
        mark("run_start")
        try:
            with self._journal_writer(jpath, journal, prints, info, result) as writer:
                result.stats = self._run_into(writer, stream, bad, on_progress, total, online)
            finished = read_journal(jpath)
            extra = dict(extra_provenance or {})
            if pipeline.tracking is not None:
                extra["tracking"] = tracking_provenance(pipeline.tracking, online)
                # the video's end: identity linking reads the whole journal (linked.py)
                masks = _carrier(pipeline) == MASKS
                finished, calibration = prepare_journal(
                    finished, pipeline.tracking, masks, len(pipeline.node_names),
                    Product.EMBEDDINGS in pipeline.products,
                )  # fmt: skip
                if calibration is not None:  # as infer track records its pre-pass
                    extra["tracking"]["prepare"] = [calibration]
                finished, linking = link_journal(finished, pipeline.tracking, masks)
                if pipeline.tracking.links:
                    extra["tracking"]["linking"] = asdict(linking)
            extra[REQUEST_KEY] = request
            check_unchanged(video, identity, jpath)
            self._write_output(finished, info, indices, todo, time.perf_counter() - t0,
                               extra, result, project_video(reader),
                               labels_output(out_path, self.formats))  # fmt: skip
        except Exception as exc:  # not KeyboardInterrupt: that leaves an "interrupted" journal
            if jpath.exists():
                mark_failed(jpath, describe(exc))
            raise
        with contextlib.suppress(FileNotFoundError):
            jpath.unlink()  # only once the output is safely in place
        return result

    def _outputs_to_write(self, out_path: Path) -> list[tuple[OutputFormat, Path]]:
        """The (format, path) outputs this run writes: every one with ``overwrite``, else
        those not finished yet (finished ones are kept as they are). Anything else at one
        of the paths, or every output finished already, is an :class:`OutputExistsError`."""
        if len(self.formats) == 1:
            refuse_existing(out_path, self.fmt, self.overwrite)
            return [(self.fmt, out_path)]
        pairs = output_paths(out_path, self.formats)
        if self.overwrite:
            return pairs
        todo = []
        for fmt, path in pairs:
            found = existing_output(path, fmt)
            if found is None:
                todo.append((fmt, path))
            elif found != COMPLETE:
                raise OutputExistsError(existing_message(path, fmt, found))
        if not todo:
            raise OutputExistsError(existing_message(out_path, self.fmt, COMPLETE))
        return todo

    def _open_journal(
        self, path: Path, prints: dict[str, Any], warnings: list[str]
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
            raise busy_error(path)
        if self.overwrite:
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
        if journal.failed is not None and not self.resume:
            return _after_failure(journal, prints, warnings)
        if not self.resume:
            raise ResumeError(
                f"{path}: partial predictions of an interrupted run exist "
                f"({journal.n_predicted} frames); pass --resume to continue them or "
                "--overwrite to start over"
            )
        check_compatible(journal, prints)
        return journal

    def _start_tracker(self, journal: Journal | None, reader: VideoReader) -> OnlineTracker | None:
        """This video's tracker: fresh, or where the resumed journal's last batch left it."""
        return start_tracker(
            self.pipeline,
            journal.tracker if journal is not None else None,
            reader.channels_for(self.pipeline.layer.input_channels),
            reader,
        )

    def _journal_writer(
        self,
        path: Path,
        journal: Journal | None,
        prints: dict[str, Any],
        info: VideoInfo,
        result: VideoResult,
    ) -> JournalWriter:
        """A new journal (header: what the predictions depend on) or the resumed one,
        with a record of this run's session appended."""
        started = now_iso()
        if journal is None:
            header = {"fingerprint": prints, "video": str(info.path), "created": started}
            writer = JournalWriter(path, header=header)
        else:
            writer = JournalWriter(path, existing=journal)
        try:
            writer.write_session(
                {
                    "started": started,
                    "host": platform.node(),
                    "pid": os.getpid(),
                    "backend": self.pipeline.backend_name,
                    "device": self.pipeline.device,
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
        pipeline = self.pipeline

        def journaled(preds: BatchPredictions, snapshot: Any) -> None:
            writer.write_batch(preds, bad.drain(), snapshot)

        batch_size = pipeline.run_batch_size(total)
        try:
            return pipeline.runner.run(
                stream,
                sink=pipeline.sink(journaled, online),
                progress=on_progress,
                batch_size=batch_size,
                keep_images=online is not None and online.needs_images,
                # One batch in all: warming up first would only run the network twice.
                warmup=total > (batch_size or pipeline.batch_size),
                on_bad_frame=bad.add,
            )
        finally:
            with contextlib.suppress(OutputError):  # keep the original error, if any
                writer.write_bad_frames(bad.drain())

    def _write_output(
        self,
        journal: Journal,
        info: VideoInfo,
        indices: list[int] | None,
        todo: list[tuple[OutputFormat, Path]],
        runtime_s: float,
        extra_provenance: dict[str, Any] | None,
        result: VideoResult,
        source_video: sio.Video | None = None,
        labels_path: Path | None = None,
    ) -> None:
        """Build the output from the finished journal; fill in ``result``'s totals.

        ``source_video``: a project's own video object, so the output refers to the media
        (or the package's frames) as the project does, not to the ``.slp`` file.
        """
        pipeline = self.pipeline
        highest = int(journal.predicted.max(initial=-1))
        result.bad_frames = journal.bad_frames
        result.decoded_frames = highest + 1
        result.counts = journal.counts
        result.fps = result.stats.fps if result.stats else 0.0
        record = provenance(pipeline, str(info.path.resolve()), indices)
        record.update(
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
        record.update(extra_provenance or {})
        config = pipeline.layer.config
        video = source_video or make_video(info, n_frames=max(info.n_frames, highest + 1))
        failures: list[tuple[OutputError, str]] = []
        for fmt, out_path in todo:
            try:
                write_from_journal(
                    journal,
                    out_path,
                    fmt,
                    video,
                    make_skeleton(config),
                    output_track_names(journal) if pipeline.tracking else config.class_names,
                    record,
                    mask_output=pipeline.options.mask_output,
                    polygon_epsilon=pipeline.options.polygon_epsilon,
                    box_categories=pipeline.box_categories,
                    poses=Product.POSES in pipeline.products,
                    nwb=pipeline.spec.nwb,
                    empty_frames=not pipeline.options.no_empty_frames,
                    csv_empty_frames=pipeline.options.csv_empty_frames,
                    slp_saving=slp_saving(pipeline.options, source_video, pipeline.centroid_source),
                    replace=self.overwrite,
                    labels_path=labels_path,
                )
            except OutputError as exc:  # the other formats are still written
                if len(self.formats) == 1:
                    raise
                failures.append((exc, f"--format {fmt.name}: {exc}"))
            else:
                result.outputs.append(out_path)
                request = record.get(REQUEST_KEY)
                if fmt.hdf5_keys is None and isinstance(request, dict):  # no place in the file
                    warning = write_side_record(out_path, request)
                    if warning is not None:
                        result.warnings.append(warning)
        if failures:
            # The journal stays (the caller removes it only after a clean return), and so
            # do the formats written: a rerun writes only what is missing.
            first = failures[0][0]
            raise type(first)("; ".join(line for _, line in failures)) from first

    def _remaining(
        self,
        reader: VideoReader,
        indices: list[int] | None,
        journal: Journal | None,
        on_error: Callable[[FrameError], None],
    ) -> tuple[Iterator[tuple[int, np.ndarray]], int]:
        """The frames still to predict (all of the selection unless resuming) and their count."""
        channels = reader.channels_for(self.pipeline.layer.input_channels)
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


def start_tracker(
    pipeline: Loaded,
    snapshot: Any,
    channels: int,
    reader: VideoReader | None,
) -> OnlineTracker | None:
    """A tracker for one video (None when untracked): fresh, or from a journal's snapshot.
    ``reader`` re-decodes the frames an optical-flow snapshot left out."""
    if pipeline.tracking is None:
        return None
    read_frames = None
    if reader is not None:

        def read_frames(indices: list[int]) -> list[np.ndarray]:
            found = dict(reader.iter_frames(sorted(set(indices)), channels))
            return [found[i] for i in indices]

    return OnlineTracker.start(
        pipeline.tracking,
        _carrier(pipeline),
        len(pipeline.node_names),
        Product.EMBEDDINGS in pipeline.products,
        snapshot=snapshot,
        read_frames=read_frames,
    )


def _carrier(pipeline: Loaded) -> str:
    from sleap_infer.pipeline.models import tracking_carrier

    return tracking_carrier(pipeline.models)


def _after_failure(journal: Journal, prints: dict[str, Any], warnings: list[str]) -> Journal | None:
    changes = journal.changes(prints)
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


def embed_labels(
    pipeline: Loaded,
    path: Path,
    output: str | Path | None,
    fmt: OutputFormat,
    overwrite: bool = False,
) -> VideoResult:
    """The lone-embedding route: vectors for the detections a ``.slp`` holds (re-tracked by
    them with tracking on, as sleap-nn's ``embedding --tracking``)."""
    from sleap_infer.pipeline.labels_embedding import LabelsEmbedder, require_labels_input
    from sleap_infer.pipeline.retrack import by_vectors, retrack_labels

    require_labels_input(path)
    out_path = Path(output) if output is not None else default_output_path(path, fmt)
    refuse_existing(out_path, fmt, overwrite)
    asked = pipeline.spec.tracking
    keep_vectors = pipeline.options.save_embeddings == "slp"
    if not keep_vectors and asked is None:  # sleap-nn 0.3.5 refuses this too
        raise UsageError(
            "--save-embeddings none: the embedding model's vectors would be computed and "
            "then discarded; add --tracking to track by them, or drop --save-embeddings none"
        )
    retrack = None
    tracks = [0]
    if asked is not None:
        asked = by_vectors(asked)

        def retrack(labels: sio.Labels) -> dict[str, Any]:
            stats = retrack_labels(labels, asked)
            tracks[0] = stats.tracks
            return {"tracking": {"options": stats.options.to_json(), "tracks": stats.tracks}}

    run = LabelsEmbedder(pipeline.models[0], pipeline.layer).embed_file(
        path, out_path, before_save=retrack, vectors=keep_vectors
    )
    counts = Counts(
        frames=run.frames,
        embeddings=run.vectors,
        tracks=tracks[0],
        frames_with_instances=run.frames,
    )
    return VideoResult(
        video=path,
        output=out_path,
        counts=counts,
        fps=run.frames / run.seconds if run.seconds > 0 else 0.0,
        metadata_frames=run.frames,
        decoded_frames=run.frames,
    )


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
