"""``infer track``: re-track an existing prediction file, no model needed.

Works on our ``.slp`` outputs and on sleap-nn's; the same options as ``infer
predict --tracking``. The file is read whole (sleap-io has no streaming
reader), re-tracked per video in frame order, and written atomically: the
input is never touched, and a failed run leaves no half-written output.
``--progress json`` (sleap-nn's ``--gui``) prints one JSON object per line on
stdout, as ``infer predict --progress json`` does: ``progress`` events with
sleap-nn's keys, then ``summary``, or ``error`` when the run fails.
"""

from __future__ import annotations

import time
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from sleap_infer.cli import tracking as trk
from sleap_infer.cli.console import console
from sleap_infer.cli.help import exit_codes
from sleap_infer.core.errors import SleapInferError, UsageError

# The tracker option as predict declares it, less predict's "Implies --tracking.":
# infer track always tracks, so the sentence only puzzled here.
Tracker = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help=str(trk.Tracker.__metadata__[0].help).replace(" Implies --tracking.", ""),
        show_default=False,
    ),
]


class TrackProgress(str, Enum):
    """What infer track prints while it runs (predict's --progress, two of its modes)."""

    auto = "auto"
    json = "json"


DEFAULT_TRACK_PROGRESS = TrackProgress.auto

EPILOG = exit_codes(ok="re-tracked and written", failed="the file could not be read or written")


def default_output(path: Path) -> Path:
    """``x.slp`` -> ``x.tracked.slp`` (``.pkg.slp`` keeps its double suffix out of the stem)."""
    name = path.name
    stem = name[: -len(".pkg.slp")] if name.endswith(".pkg.slp") else path.stem
    return path.with_name(f"{stem}.tracked.slp")


def track(
    predictions: Annotated[
        Path,
        typer.Argument(metavar="PREDICTIONS", help="A .slp prediction file.", show_default=False),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="PATH",
            help="Where to write (default: <name>.tracked.slp next to the input).",
            show_default=False,
        ),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace an existing output file.")
    ] = False,
    progress: Annotated[
        TrackProgress,
        typer.Option(
            "--progress",
            case_sensitive=False,
            help="auto: a spinner, then one line. json: one JSON object per line on stdout "
            "(progress, summary, error), as infer predict --progress json and sleap-nn's "
            "--gui; the human lines go to stderr.",
        ),
    ] = DEFAULT_TRACK_PROGRESS,
    tracker: Tracker = None,
    features: trk.Features = None,
    scoring: trk.Scoring = None,
    reduction: trk.Reduction = trk.DEFAULTS.reduction,
    robust_quantile: trk.RobustQuantile = trk.DEFAULTS.robust_quantile,
    candidates: trk.Candidates = None,
    window_size: trk.WindowSize = None,
    matching: trk.Matching = trk.DEFAULTS.matching,
    max_tracks: trk.MaxTracks = None,
    min_new_track_points: trk.MinNewTrackPoints = trk.DEFAULTS.min_new_track_points,
    min_match_points: trk.MinMatchPoints = trk.DEFAULTS.min_match_points,
    oks_stddev: trk.OksStddev = trk.DEFAULTS.oks_stddev,
    use_flow: trk.UseFlow = False,
    of_img_scale: trk.OfImgScale = trk.DEFAULTS.of_img_scale,
    of_window_size: trk.OfWindowSize = trk.DEFAULTS.of_window_size,
    of_max_levels: trk.OfMaxLevels = trk.DEFAULTS.of_max_levels,
    track_buffer: trk.TrackBuffer = trk.DEFAULTS.track_buffer,
    track_high_threshold: trk.TrackHigh = trk.DEFAULTS.track_high_threshold,
    track_low_threshold: trk.TrackLow = trk.DEFAULTS.track_low_threshold,
    new_track_threshold: trk.NewTrack = trk.DEFAULTS.new_track_threshold,
    min_hits: trk.MinHits = trk.DEFAULTS.min_hits,
    min_match_similarity: trk.MinMatchSimilarity = trk.DEFAULTS.min_match_similarity,
    mot_param: trk.MotParam = None,
    tracking_target_instance_count: trk.TargetCount = None,
    tracking_pre_cull_to_target: trk.PreCull = 0,
    tracking_pre_cull_iou_threshold: trk.PreCullIou = 0.0,
    tracking_clean_instance_count: trk.CleanCount = 0,
    tracking_clean_iou_threshold: trk.CleanIou = 0.0,
    post_connect_single_breaks: trk.ConnectBreaks = False,
    appearance_weight: trk.AppearanceWeight = trk.DEFAULTS.appearance_weight,
    euclidean_scale: trk.EuclideanScale = None,
    appearance_threshold: trk.AppearanceThreshold = None,
    link_tracklets: trk.LinkTracklets = False,
    use_kalman: trk.UseKalman = False,
    kf_track_features: trk.KfTrackFeatures = None,
    kf_init_frame_count: trk.KfInitFrameCount = None,
    kf_node_indices: trk.KfNodeIndices = None,
    kf_reset_gap_size: trk.KfResetGapSize = None,
) -> None:
    """Re-track a prediction file (ours or sleap-nn's) without a model."""
    from sleap_infer.pipeline.retrack import retrack_file

    options = trk.tracking_options(True, locals())
    assert options is not None
    out = output if output is not None else default_output(predictions)
    if out.resolve() == predictions.resolve():
        raise UsageError(f"{out}: the output would replace the input; pick another -o")
    if out.exists() and not overwrite:
        raise UsageError(f"{out}: exists; pass --overwrite to replace it")
    if progress.value == "json":
        events = JsonEvents(str(predictions))
        try:
            stats = retrack_file(predictions, out, options, events.progress)
        except SleapInferError as exc:
            events.emit("error", message=str(exc), exit_code=exc.exit_code)
            raise
        events.emit(
            "summary",
            input=str(predictions),
            output=str(out),
            frames=stats.frames,
            instances=stats.instances,
            tracks=stats.tracks,
            seconds=round(stats.seconds, 3),
        )
    else:
        with console.status(f"Tracking {escape(predictions.name)}...", spinner="dots"):
            stats = retrack_file(predictions, out, options)
    per_frame = 1000 * stats.seconds / stats.frames if stats.frames else 0.0
    console.print(
        f"[green]tracked[/] {escape(str(predictions))}: {stats.frames} frames, "
        f"{stats.instances} tracked, {stats.tracks} tracks ({per_frame:.2f} ms/frame) "
        f"-> {escape(str(out))}",
        highlight=False,
        soft_wrap=True,
    )


class JsonEvents:
    """``--progress json``: predict's event lines (``{"event", "time", ...}``, see
    :class:`sleap_infer.cli.progress.JsonProgress`), with sleap-nn's retrack progress keys
    (``n_processed`` frames of ``n_total``, ``rate`` in frames/s, ``eta`` in s). At most
    one progress line a second, and always the last one, so a reader sees 100%."""

    def __init__(self, source: str, interval: float = 1.0) -> None:
        from sleap_infer.cli.progress import JsonProgress

        self.source = source
        self.interval = interval
        self.start = time.monotonic()
        self.last = -float("inf")
        self.out = JsonProgress(1, interval)  # its emit: flushed lines, a closed stdout

    def emit(self, event: str, **fields: Any) -> None:
        self.out.emit(event, **fields)

    def progress(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.last < self.interval:
            return
        self.last = now
        elapsed = now - self.start
        rate = done / elapsed if elapsed > 0 else None
        self.emit(
            "progress",
            input=self.source,
            n_processed=done,
            n_total=total,
            percent=round(100 * done / total, 1) if total else None,
            rate=None if rate is None else round(rate, 1),
            eta=None if not rate else round((total - done) / rate, 1),
        )
