"""``infer predict``: parse the options, run the batch (:mod:`sleap_infer.batch.run`), summarise.

Exit codes: 0 when every video is done or skipped, 1 when any video failed or
was truncated (or the model could not load, or the device is missing), 2 for
bad options, 130 when interrupted (Ctrl-C, SIGTERM). ``--summary-json`` is
written in every case but 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from sleap_infer.cli import adjust as adj
from sleap_infer.cli import nwb
from sleap_infer.cli import sam as sam_cli
from sleap_infer.cli import tracking as trk
from sleap_infer.cli.console import console
from sleap_infer.cli.help import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, exit_codes
from sleap_infer.cli.options import (
    DEFAULT_BACKEND,
    DEFAULT_CENTROID_OUTPUT,
    DEFAULT_EMBED,
    DEFAULT_FORMAT,
    DEFAULT_MASK_OUTPUT,
    DEFAULT_MERGE_METHOD,
    DEFAULT_PROGRESS,
    DEFAULT_SAVE_EMBEDDINGS,
    MERGE_THRESHOLDS_TEXT,
    BackendOption,
    BboxNmsIou,
    CenterNmsKernel,
    CentroidOutputOption,
    Device,
    DistanceGateAlpha,
    DistPenaltyWeight,
    EmbedOption,
    FgThreshold,
    Fp16,
    FullResMasks,
    IntegralPatchSize,
    MaskCleanup,
    MaskCleanupRadius,
    MaskOutputOption,
    MaxEdgeLengthRatio,
    MergeDilate,
    MergeFragments,
    MergeMethodOption,
    MergeThresholds,
    MergeWOffset,
    MergeWValley,
    MinMaskArea,
    ModelOption,
    NoRefine,
    NPoints,
    OutputFormatOption,
    PeakThreshold,
    PolygonEpsilon,
    ProgressMode,
    RefineLikeSleapNn,
    RestoreSourceVideos,
    SaveEmbeddingsOption,
    check_device,
    formats_for_output,
)
from sleap_infer.cli.progress import Reporter, make_reporter, show_export_notice
from sleap_infer.cli.summary import (
    RunReport,
    check_summary_path,
    print_project_steps,
    print_summary,
    write_summary,
)
from sleap_infer.core import options as defaults
from sleap_infer.core import startup
from sleap_infer.core.errors import SleapInferError, UsageError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sleap_infer.batch.run import Batch, BatchResult, ModelSummary
    from sleap_infer.batch.tasks import VideoOutcome

EPILOG = exit_codes(
    ok="every video done or skipped",
    failed="a video failed or was truncated, or the model or device failed",
    interrupted="interrupted (Ctrl-C or SIGTERM): rerun with --resume",
)
BF16_HELP = (
    "bfloat16: autocast for --backend torch (cpu/cuda), or OpenVINO's bf16 mode for "
    "--backend openvino; about 2x faster on CPUs with AVX512-BF16/AMX, but not exact: on an "
    "under-trained model 53 of 166 instances moved more than 5 px (torch). Check "
    "'infer bench --bf16' on your model first."
)
INT8_HELP = (
    "int8 (--backend onnx or openvino): the graph is quantised on the first network inputs "
    "of the run (32, or 8 frames of 512 px and fewer larger ones; they run in float32), "
    "cached, then used for the rest; 2-4x faster on CPUs with VNNI, not exact. Check "
    "'infer bench --int8' on your model first."
)
PROGRESS_HELP = (
    "auto: a bar on a terminal, plain lines otherwise (SLURM logs). plain: a timestamped "
    "line per running video (frames, FPS, ETA) every --progress-interval. json: one JSON "
    "event per line on stdout. none: only the per-video result lines."
)


def predict(
    ctx: typer.Context,
    videos: Annotated[
        list[str],
        typer.Argument(
            metavar="VIDEOS",
            help="Videos: files, folders, globs ('data/*.mp4'), or .txt files listing them.",
            show_default=False,
        ),
    ],
    model: ModelOption = None,  # type: ignore[assignment]  # required unless --mask-backend
    backend: BackendOption = DEFAULT_BACKEND,
    device: Device = "auto",
    devices: Annotated[
        str | None,
        typer.Option(
            metavar="LIST",
            help="Comma-separated devices, one worker process each, e.g. cuda:0,cuda:1. "
            "Videos go to whichever worker is free.",
        ),
    ] = None,
    batch_size: Annotated[
        int, typer.Option("--batch-size", "-b", min=1, metavar="N", help="Frames per batch.")
    ] = defaults.BATCH_SIZE,
    peak_threshold: PeakThreshold = defaults.PEAK_THRESHOLD,
    no_refine: NoRefine = False,
    integral_patch_size: IntegralPatchSize = defaults.INTEGRAL_PATCH_SIZE,
    refine_like_sleap_nn: RefineLikeSleapNn = False,
    max_instances: Annotated[
        int | None,
        typer.Option(
            "--max-instances", "-n", min=1, metavar="N", help="Keep at most N animals per frame."
        ),
    ] = None,
    frames: Annotated[
        str | None,
        typer.Option(
            metavar="RANGES",
            help="Frames to predict, e.g. '0-99,200' or '500-' (inclusive; default all).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="PATH",
            help="Output file (one video; a name ending in a format's suffix is a file of "
            "that format) or folder (several; folder inputs keep their layout). Default: "
            "<video>.predictions.<ext> next to each video.",
        ),
    ] = None,
    output_format: OutputFormatOption = DEFAULT_FORMAT,
    no_empty_frames: Annotated[
        bool,
        typer.Option(
            "--no-empty-frames",
            help="Leave out predicted frames where nothing was found (kept by default, "
            "as sleap-nn does).",
        ),
    ] = False,
    csv_empty_frames: Annotated[
        bool,
        typer.Option(
            "--csv-empty-frames",
            help="--format csv: a row holding only frame_idx for each predicted frame "
            "where nothing was found (left out by default, as sleap-io's CSV writer does).",
        ),
    ] = False,
    embed: EmbedOption = DEFAULT_EMBED,
    restore_source_videos: RestoreSourceVideos = False,
    save_embeddings: SaveEmbeddingsOption = DEFAULT_SAVE_EMBEDDINGS,
    recursive: Annotated[
        bool, typer.Option("--recursive", "-r", help="Search folders' subfolders too.")
    ] = False,
    headers: Annotated[
        str | None,
        typer.Option(
            metavar="JSON",
            help="HTTP headers for http(s):// video inputs, a JSON object, e.g. "
            '\'{"Authorization": "Bearer <token>"}\'.',
        ),
    ] = None,
    stream_mode: Annotated[
        str | None,
        typer.Option(
            "--stream-mode",
            metavar="MODE",
            help="How http(s):// videos are read: auto/blockcache (range requests, at most "
            "32 MiB cached), download (into memory), cache/filecache (a temporary file).",
        ),
    ] = None,
    skip_existing: Annotated[
        bool,
        # Kept so scripts written for earlier versions still run: skipping is now the default.
        typer.Option(
            "--skip-existing", hidden=True, help="The default: finished outputs are kept."
        ),
    ] = True,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Continue interrupted videos from their .partial journal."),
    ] = False,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Replace finished outputs (by default they are skipped) and discard the "
            "journals of interrupted runs.",
        ),
    ] = False,
    shard: Annotated[
        str | None,
        typer.Option(
            metavar="I/N",
            help="Predict only share i of n of the inputs (0-based 'i/n', e.g. "
            "$SLURM_ARRAY_TASK_ID/8).",
        ),
    ] = None,
    fp16: Fp16 = False,
    bf16: Annotated[
        bool,
        typer.Option("--bf16", help=BF16_HELP),
    ] = False,
    int8: Annotated[bool, typer.Option("--int8", help=INT8_HELP)] = False,
    compile: Annotated[
        bool, typer.Option("--compile", help="torch.compile the network (slow first batch).")
    ] = False,
    progress: Annotated[
        ProgressMode,  # type: ignore[valid-type]
        typer.Option("--progress", case_sensitive=False, help=PROGRESS_HELP),
    ] = DEFAULT_PROGRESS,
    progress_interval: Annotated[
        float | None,
        typer.Option(
            min=0,
            metavar="SECONDS",
            help="Seconds between progress lines (default: 10 plain, 1 json).",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Same as --progress none.")] = False,
    summary_json: Annotated[
        Path | None,
        typer.Option(
            "--summary-json",
            metavar="PATH",
            help="Write a JSON run summary here: per video frames, instances, frames with "
            "detections, mean score, FPS, status, output. Written atomically, also when "
            "videos fail or the run is interrupted.",
        ),
    ] = None,
    qc_report: Annotated[
        bool,
        typer.Option(
            "--report",
            help="After each .slp output, write its qc report beside it (<name>.qc.html: "
            "identity swaps, jumps, low confidence; see infer qc).",
        ),
    ] = False,
    # --- model-type knobs (top-down stage 1, bottom-up PAF grouping); sleap-nn's defaults.
    centroid_peak_threshold: Annotated[
        float | None,
        typer.Option(
            metavar="FLOAT",
            help="Top-down: peak threshold for the centroid stage (default: --peak-threshold).",
        ),
    ] = None,
    max_edge_length_ratio: MaxEdgeLengthRatio = defaults.MAX_EDGE_LENGTH_RATIO,
    dist_penalty_weight: DistPenaltyWeight = defaults.DIST_PENALTY_WEIGHT,
    n_points: NPoints = defaults.N_POINTS,
    min_instance_peaks: Annotated[
        float,
        typer.Option(
            min=0,
            metavar="FLOAT",
            help="Bottom-up: drop animals with fewer peaks (below 1: a fraction of the nodes).",
        ),
    ] = defaults.MIN_INSTANCE_PEAKS,
    min_line_scores: Annotated[
        float,
        typer.Option(
            metavar="FLOAT", help="Bottom-up: minimum PAF score for a connection to count."
        ),
    ] = defaults.MIN_LINE_SCORES,
    # --- segmentation models (sleap-nn's defaults).
    fg_threshold: FgThreshold = defaults.FG_THRESHOLD,
    center_nms_kernel: CenterNmsKernel = defaults.CENTER_NMS_KERNEL,
    min_mask_area: MinMaskArea = defaults.MIN_MASK_AREA,
    mask_cleanup: MaskCleanup = False,
    mask_cleanup_radius: MaskCleanupRadius = defaults.MASK_CLEANUP_RADIUS,
    distance_gate_alpha: DistanceGateAlpha = None,
    merge_fragments: MergeFragments = False,
    merge_method: MergeMethodOption = DEFAULT_MERGE_METHOD,
    merge_thresholds: MergeThresholds = MERGE_THRESHOLDS_TEXT,
    merge_w_valley: MergeWValley = defaults.MERGE_W_VALLEY,
    merge_w_offset: MergeWOffset = defaults.MERGE_W_OFFSET,
    merge_dilate: MergeDilate = defaults.MERGE_DILATE,
    full_res_masks: FullResMasks = False,
    mask_output: MaskOutputOption = DEFAULT_MASK_OUTPUT,
    polygon_epsilon: PolygonEpsilon = defaults.POLYGON_EPSILON,
    bbox_nms_iou: BboxNmsIou = None,
    # --- identity tracking (sleap-nn's classic tracker's defaults).
    tracking: Annotated[
        bool,
        typer.Option(
            "--tracking",
            "-t",
            help="Track identities across frames as batches are predicted (online; resumable).",
        ),
    ] = False,
    tracker: trk.Tracker = None,
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
    # --- post-filters and training-config overrides (sleap-nn's).
    filter_overlapping: adj.FilterOverlapping = False,
    filter_overlapping_method: adj.FilterOverlappingMethod = adj.DEFAULT_OVERLAP_METHOD,
    filter_overlapping_threshold: adj.FilterOverlappingThreshold = adj.DEFAULT_OVERLAP_THRESHOLD,
    filter_min_visible_nodes: adj.FilterMinVisibleNodes = None,
    filter_min_visible_node_fraction: adj.FilterMinVisibleNodeFraction = None,
    filter_min_mean_node_score: adj.FilterMinMeanNodeScore = None,
    filter_min_instance_score: adj.FilterMinInstanceScore = None,
    filter_min_centroid_distance: adj.FilterMinCentroidDistance = None,
    max_height: adj.MaxHeight = None,
    max_width: adj.MaxWidth = None,
    input_scale: adj.InputScale = None,
    crop_size: adj.CropSize = None,
    anchor_part: adj.AnchorPart = None,
    ensure_rgb: adj.EnsureRgb = None,
    ensure_grayscale: adj.EnsureGrayscale = None,
    backbone_ckpt_path: adj.BackboneCkptPath = None,
    head_ckpt_path: adj.HeadCkptPath = None,
    # --- SLEAP project inputs (sleap-nn's).
    video_index: adj.VideoIndex = None,
    only_labeled_frames: adj.OnlyLabeled = False,
    only_suggested_frames: adj.OnlySuggested = False,
    exclude_user_labeled: adj.ExcludeUserLabeled = False,
    only_predicted_frames: adj.OnlyPredicted = False,
    merge_into_project: adj.MergeIntoProject = False,
    centroid_only: adj.CentroidOnly = False,
    centroid_output: CentroidOutputOption = DEFAULT_CENTROID_OUTPUT,
    keep_corrupt_frames: adj.KeepCorruptFrames = False,
    video_dataset: adj.VideoDataset = None,
    video_input_format: adj.VideoInputFormat = "channels_last",
    # --- what an NWB output says of its session and subject.
    nwb_subject: nwb.Subject = None,
    nwb_species: nwb.Species = None,
    nwb_sex: nwb.Sex = None,
    nwb_age: nwb.Age = None,
    nwb_session_start_time: nwb.SessionStart = None,
    nwb_experimenter: nwb.Experimenter = None,
    nwb_institution: nwb.Institution = None,
    nwb_lab: nwb.Lab = None,
    nwb_session_description: nwb.SessionDescription = None,
    nwb_metadata: nwb.MetadataFile = None,
    # --- masks for the poses of a .slp with Segment Anything (sleap-nn's --mask_backend).
    mask_backend: sam_cli.MaskBackendOption = None,
    sam_checkpoint: sam_cli.SamCheckpoint = None,
    sam_model_type: sam_cli.SamModelType = "vit_h",
    sam_prompt_mode: sam_cli.SamPromptMode = sam_cli.PromptMode.pose,
    sam_anchor_ind: sam_cli.SamAnchorInd = None,
    sam_disjointify_masks: sam_cli.SamDisjointify = False,
    sam3_model_id: sam_cli.Sam3ModelId = "facebook/sam3",
    overlay_path: sam_cli.OverlayPath = None,
) -> None:
    """Predict poses on videos and save them as SLEAP .slp (or NWB, analysis HDF5, CSV)."""
    startup.mark("command")
    if mask_backend is not None:
        sam_cli.run_masks(ctx.params)
        return
    if not model:
        raise UsageError("Missing option '--model' / '-m'.")
    from sleap_infer.api import plan_spec
    from sleap_infer.batch.run import device_list
    from sleap_infer.pipeline.spec import bind
    from sleap_infer.sources import remote

    startup.mark("command_imported")
    mode = _progress_mode(progress.value, quiet)
    worker_devices = device_list(devices, device)
    for name in worker_devices:
        check_device(name, "--devices" if devices else "--device")
    # Every flag that is not about this run's files and display is a pipeline option: bound
    # to its record once, by the same names sleap_infer.load() takes.
    options = {k: v for k, v in ctx.params.items() if k not in RUN_FLAGS}
    # Unset --backend: auto (the fastest exact runtime installed, chosen per video), or
    # the runtime an export folder given as -m was made for.
    # (By name: typer carries its own copy of click, whose enum is not click's.)
    given = getattr(ctx.get_parameter_source("backend"), "name", "DEFAULT") != "DEFAULT"
    spec = bind(model, backend.value if given else None, notify=print_export_notice, **options)
    given = getattr(ctx.get_parameter_source("output_format"), "name", "DEFAULT") != "DEFAULT"
    output_format = formats_for_output(output, output_format, given)
    remote.configure(
        remote.RemoteOptions(remote.parse_headers(headers), remote.check_stream_mode(stream_mode))
    )
    cli_args = {
        "videos": list(videos),
        "model": [str(m) for m in model],
        "backend": spec.backend,
        "device": device,
        "devices": devices,
        "batch_size": batch_size,
        "frames": frames,
        "format": ",".join(output_format),
        "shard": shard,
        "tracking": spec.tracking is not None,
    }
    batch = plan_spec(
        videos,
        spec,
        output=output,
        format=output_format,
        frames=frames,
        resume=resume,
        overwrite=overwrite,
        recursive=recursive,
        shard=shard,
        device=device,
        devices=devices,
        merge_into_project=merge_into_project,
        extra_provenance={"cli_args": cli_args},
    )
    if summary_json is not None:
        check_summary_path(summary_json, batch.tasks, model, overwrite, batch.formats)
    for line in batch.notes:  # e.g. our own outputs a glob matched, passed over
        console.print(f"[yellow]note:[/] {escape(line)}", highlight=False, soft_wrap=True)
    report = RunReport(batch.tasks, options=cli_args, overwrite=overwrite)
    reporter = make_reporter(mode, len(batch.tasks), progress_interval)
    if not batch.tasks:
        console.print(f"nothing to predict: shard {shard} of these inputs is empty")  # n > inputs
        _finish(report, reporter, summary_json, [], EXIT_OK)
        return
    ctx.meta[SUMMARY_BY_RUN] = True  # from here _run writes the summary however it ends
    _run(batch, report, reporter, summary_json, qc_report)


SUMMARY_BY_RUN = "sleap_infer.summary_by_run"


def on_interrupt(ctx: typer.Context) -> None:
    """Interrupted before the run began (importing, loading options, planning: the first
    second or so): the ``--summary-json`` asked for is still written, with no videos and
    exit code 130, where nothing but a summary of ours is there (called by help.HelpCommand)."""
    path = ctx.params.get("summary_json")
    if path is None or ctx.meta.get(SUMMARY_BY_RUN):
        return
    try:
        check_summary_path(path, (), ctx.params.get("model") or ())
        summary = RunReport([]).build([], EXIT_INTERRUPTED, error="interrupted")
        write_summary(path, summary)
    except SleapInferError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)


# Flags about this run's inputs, files and display; every other flag is a pipeline option
# (sleap_infer.pipeline.spec.bind routes it to its record).
RUN_FLAGS = frozenset(
    {
        "videos",
        "model",
        "backend",
        "device",
        "devices",
        "frames",
        "output",
        "output_format",
        "recursive",
        "headers",
        "stream_mode",
        "skip_existing",
        "resume",
        "overwrite",
        "shard",
        "progress",
        "progress_interval",
        "quiet",
        "summary_json",
        "qc_report",
        "merge_into_project",
    }
    | sam_cli.SAM_PARAMS
)


def _progress_mode(mode: str, quiet: bool) -> str:
    """``-q`` is ``--progress none``; asking for both a display and none is a mistake."""
    if quiet and mode not in ("auto", "none"):
        raise UsageError(f"-q/--quiet means --progress none; it contradicts --progress {mode}")
    return "none" if quiet else mode


def _run(
    batch: Batch,
    report: RunReport,
    reporter: Reporter,
    summary_json: Path | None,
    qc_report: bool = False,
) -> None:
    """Load the model (every model problem surfaces here, before any video is opened),
    predict with a progress display, print the summary, exit non-zero on trouble.

    The run summary is written however this ends: done, failed, interrupted, or a
    model that would not load.
    """
    try:
        if batch.todo:
            startup.mark("load_start")
            with console.status("Loading model...", spinner="dots"):
                loaded = batch.load()
            startup.mark("loaded")
            _model_loaded(loaded, report, reporter)
        with reporter:
            result = batch.run(reporter, on_worker_error=reporter.note)
    except SleapInferError as exc:
        reporter.error(str(exc), exc.exit_code)
        _finish(report, reporter, summary_json, [], exc.exit_code, error=str(exc))
        raise
    except KeyboardInterrupt:
        _finish(report, reporter, summary_json, [], EXIT_INTERRUPTED, error="interrupted")
        raise
    print_summary(result.outcomes, report.tasks)
    print_project_steps(result.projects)
    report.projects = result.projects
    code = _exit_code(result)
    if qc_report:  # infer qc's page beside each .slp this run wrote
        from sleap_infer.cli.qc import reports_after_predict

        written = [p for o in result.outcomes if o.ok for p in o.outputs]
        if not reports_after_predict(written, report.overwrite) and code == EXIT_OK:
            code = EXIT_FAILED
    if code == EXIT_INTERRUPTED:
        console.print(
            "[yellow]interrupted:[/] rerun the same command with --resume to continue "
            "(finished videos are skipped)"
        )
    code = _finish(report, reporter, summary_json, result.outcomes, code)
    if code != EXIT_OK:
        raise typer.Exit(code)


def _model_loaded(loaded: ModelSummary, report: RunReport, reporter: Reporter) -> None:
    warnings = list(loaded.warnings)
    report.model = {
        "what": loaded.what,
        "where": loaded.where,
        "batch_size": loaded.batch_size,
        "warnings": warnings,
    }
    reporter.model_loaded(loaded.what, loaded.where, loaded.batch_size)
    for line in warnings:
        reporter.note(line)


def _exit_code(result: BatchResult) -> int:
    if result.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if result.failed else EXIT_OK


def _finish(
    report: RunReport,
    reporter: Reporter,
    summary_json: Path | None,
    outcomes: Sequence[VideoOutcome],
    code: int,
    error: str | None = None,
) -> int:
    """Report the summary (JSON event, file); a summary that cannot be written fails the run."""
    summary = report.build(outcomes, code, error)
    reporter.finished(summary)
    if summary_json is None:
        return code
    try:
        write_summary(summary_json, summary, report.overwrite)
    except SleapInferError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return code or exc.exit_code
    return code


def print_export_notice(message: str) -> None:
    """Module-level (not a lambda) so ``--devices`` workers can unpickle it. Through the
    running progress display when there is one: the export is a stage of its own there."""
    if not show_export_notice(message):
        console.print(f"[cyan]export:[/] {escape(message)}")
