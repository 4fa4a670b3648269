"""Tracking options, declared once for ``infer predict --tracking`` and ``infer track``.

Defaults come from :mod:`sleap_infer.tracking.options`. Unset ``--features``,
``--scoring``, ``--candidates`` and ``--window-size`` mean "as sleap-nn
chooses for this model" (see ``TrackingOptions``); the chosen values are
printed in the output's provenance.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Annotated, Any

import typer

from sleap_infer.tracking import options as t
from sleap_infer.tracking import registry
from sleap_infer.tracking.knobs import defaults_text
from sleap_infer.tracking.options import TrackingOptions


def _choice_help(text: str, values: tuple[str, ...]) -> str:
    return f"{text} One of: {', '.join(values)}."


def _tracker_help() -> str:
    """Every registry entry's one-line summary (docs/tracking.md, docs/tracking-mot.md)."""
    lines = []
    for e in registry.TRACKERS:
        vectors = {registry.NEEDS_VECTORS: " (needs re-ID vectors)"}.get(e.vectors, "")
        lines.append(f"{e.name}: {e.summary}{vectors}.")
    return " ".join(lines) + " Implies --tracking."


def _knob_help(name: str, text: str) -> str:
    """``text`` with ``name``'s default per tracker, from the trackers' configs."""
    presets = {n: registry.preset(n) for n in registry.NAMES if registry.preset(n)}
    return f"{text} ({defaults_text(name, presets)})."


Tracker = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help=_tracker_help(),
        show_default=False,
    ),
]
Features = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help=_choice_help(
            "What is compared across frames (default: keypoints; centroids for a one-node "
            "skeleton, masks for segmentation, embeddings for a re-ID model).",
            t.FEATURES,
        ),
        show_default=False,
    ),
]
Scoring = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help=_choice_help("Similarity (default: follows --features).", t.SCORINGS),
        show_default=False,
    ),
]
Reduction = Annotated[
    str,
    typer.Option(
        metavar="NAME",
        help=_choice_help("How a track's candidates' scores are combined.", t.REDUCTIONS),
    ),
]
RobustQuantile = Annotated[
    float,
    typer.Option(metavar="Q", help="Quantile for --reduction robust_quantile (1 = max)."),
]
Candidates = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help=_choice_help(
            "fixed_window: the last --window-size frames' instances; local_queues: the last "
            "--window-size instances of each track (default with --max-tracks and masks).",
            t.CANDIDATES,
        ),
        show_default=False,
    ),
]
WindowSize = Annotated[
    int | None,
    typer.Option(
        min=1,
        metavar="N",
        help=f"Candidate window (default {t.WINDOW_SIZE}; {t.MASK_WINDOW_SIZE} for masks).",
        show_default=False,
    ),
]
Matching = Annotated[
    str, typer.Option(metavar="NAME", help=_choice_help("Track assignment.", t.MATCHINGS))
]
MaxTracks = Annotated[
    int | None,
    typer.Option(
        min=1, metavar="N", help="Never create more tracks than this.", show_default=False
    ),
]
MinNewTrackPoints = Annotated[
    int,
    typer.Option(
        min=0, metavar="N", help="No new track for a pose with N or fewer visible points."
    ),
]
MinMatchPoints = Annotated[
    int,
    typer.Option(
        min=0, metavar="N", help="Candidates with N or fewer visible points are not matched."
    ),
]
OksStddev = Annotated[
    float | None,
    typer.Option(
        metavar="FLOAT",
        help="OKS keypoint spread (0.025; 0.1 with --kf-track-features keypoints).",
        show_default=False,
    ),
]
UseFlow = Annotated[
    bool,
    typer.Option(
        "--use-flow",
        help="Shift candidates by optical flow (OpenCV pyramidal Lucas-Kanade) before "
        "matching; needs opencv-python-headless.",
    ),
]
OfImgScale = Annotated[
    float,
    typer.Option(metavar="FLOAT", help="With --use-flow: image scale the flow is computed at."),
]
OfWindowSize = Annotated[
    int, typer.Option(min=1, metavar="PX", help="With --use-flow: Lucas-Kanade window side.")
]
OfMaxLevels = Annotated[
    int, typer.Option(min=0, metavar="N", help="With --use-flow: pyramid levels.")
]
TrackBuffer = Annotated[
    int | None,
    typer.Option(
        min=0,
        metavar="N",
        help=_knob_help(
            "track_buffer",
            "The Kalman-box trackers (all but classic): frames a lost track waits to be re-found",
        ),
        show_default=False,
    ),
]
TrackHigh = Annotated[
    float | None,
    typer.Option(
        metavar="FLOAT",
        help=_knob_help(
            "track_high_threshold", "Kalman-box trackers: first-stage (high) detection score"
        ),
        show_default=False,
    ),
]
TrackLow = Annotated[
    float | None,
    typer.Option(
        metavar="FLOAT",
        help=_knob_help("track_low_threshold", "Kalman-box trackers: lowest score associated"),
        show_default=False,
    ),
]
NewTrack = Annotated[
    float | None,
    typer.Option(
        metavar="FLOAT",
        help=_knob_help(
            "new_track_threshold", "Kalman-box trackers: score needed to start a track"
        ),
        show_default=False,
    ),
]
MinHits = Annotated[
    int | None,
    typer.Option(
        "--min_hits",
        "--min-hits",
        min=0,
        metavar="N",
        help=_knob_help("min_hits", "MOT trackers: matches before a track is confirmed"),
        show_default=False,
    ),
]
MinMatchSimilarity = Annotated[
    float | None,
    typer.Option(
        "--min_match_similarity",
        "--min-match-similarity",
        min=0.0,
        max=1.0,
        metavar="FLOAT",
        help=_knob_help("min_match_similarity", "MOT trackers: weakest overlap a match may have"),
        show_default=False,
    ),
]
MotParam = Annotated[
    list[str] | None,
    typer.Option(
        "--mot_param",
        "--mot-param",
        metavar="KEY=VALUE",
        help="MOT trackers: override one of sleap-nn's MOT parameters "
        "(repeatable), e.g. --mot_param delta_t=5 --mot_param use_byte=true (ocsort) or "
        "low_stage_min_similarity=0.4 (bytetrack, botsort); a key the tracker does not read is "
        "refused (docs/tracking-options.md).",
        show_default=False,
    ),
]
TargetCount = Annotated[
    int | None,
    typer.Option(
        min=0,
        metavar="N",
        help="The known number of animals, for pre-cull and break joining (default: "
        "--max-instances where those are on).",
        show_default=False,
    ),
]
PreCull = Annotated[
    int,
    typer.Option(
        min=0,
        metavar="N",
        help="Non-zero: leave frames over the target count's "
        "lowest-scoring (and overlapping) poses untracked, before tracking.",
    ),
]
PreCullIou = Annotated[
    float, typer.Option(metavar="FLOAT", help="Pre-cull: overlap that removes a pose first.")
]
CleanCount = Annotated[
    int,
    typer.Option(
        min=0,
        metavar="N",
        help="Non-zero: after tracking, untrack a frame's "
        "poses beyond N, then join single-frame track breaks.",
    ),
]
CleanIou = Annotated[
    float, typer.Option(metavar="FLOAT", help="Post-clean: overlap that removes a pose first.")
]
ConnectBreaks = Annotated[
    bool,
    typer.Option(
        "--post-connect-single-breaks",
        help="Where one track ends and one starts in the same frame, join them (needs "
        "the target count).",
    ),
]

AppearanceWeight = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=1.0,
        metavar="W",
        help="Classic: blend re-ID cosine into the geometric score, (1-W)*geometry + "
        "W*appearance where both exist (0 = geometry only). Needs vectors (an embedding "
        "model in the run, or a .slp saved with them) and oks/iou/mask_iou scoring, or "
        "euclidean_dist with --euclidean-scale.",
    ),
]
EuclideanScale = Annotated[
    float | None,
    typer.Option(
        metavar="PIXELS",
        help="Blend with euclidean_dist: geometry becomes exp(-distance/PIXELS); pass "
        "the typical per-frame step of one animal.",
        show_default=False,
    ),
]
AppearanceThreshold = Annotated[
    str | None,
    typer.Option(
        metavar="auto|COS",
        help="botsort, deepsort, strongsort, deepocsort: minimum re-ID cosine of an appearance"
        " match, or auto (default: sleap-nn calibrates it over the whole video; online nothing is"
        " calibrated, so auto leaves appearance out of association). Other trackers do not"
        " read it.",
        show_default=False,
    ),
]

LinkTracklets = Annotated[
    bool,
    typer.Option(
        "--link-tracklets",
        help="sleap-nn's identity linking after each video: correct swaps and re-join broken"
        " tracks (by re-ID vectors where the video calibrates them, else by position) and,"
        " with --max-tracks N, assign every tracklet to one of N identities (poses;"
        " docs/tracking-options.md).",
    ),
]
UseKalman = Annotated[
    bool,
    typer.Option(
        "--use-kalman",
        help="Classic: score each track against its last pose moved by a per-track "
        "constant-velocity Kalman filter (sleap-nn's KalmanShiftTracker; fitted by EM "
        "after --kf-init-frame-count frames). Needs --tracking-target-instance-count "
        "(or --max-tracks / --max-instances); not with --use-flow.",
    ),
]
KfTrackFeatures = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help="With --use-kalman: centroid (default; the pose moves rigidly) or keypoints "
        "(one filter per node; --oks-stddev then defaults to 0.1).",
        show_default=False,
    ),
]
KfInitFrameCount = Annotated[
    int | None,
    typer.Option(
        metavar="N",
        help="With --use-kalman: frames tracked without it before the filters are fitted (10).",
        show_default=False,
    ),
]
KfNodeIndices = Annotated[
    str | None,
    typer.Option(
        metavar="I,J",
        help="With --use-kalman: the skeleton nodes the filters follow (default: all).",
        show_default=False,
    ),
]
KfResetGapSize = Annotated[
    int | None,
    typer.Option(
        metavar="N",
        help="With --use-kalman: frames unseen after which a track's filter is dropped (5).",
        show_default=False,
    ),
]

DEFAULTS = TrackingOptions()


FIELDS = tuple(f.name for f in fields(TrackingOptions))


def tracking_options(enabled: bool, params: dict[str, Any]) -> TrackingOptions | None:
    """The options from a command's parameters (named as ``TrackingOptions``' fields), or
    None when tracking is off (the rule: :func:`sleap_infer.pipeline.spec.tracking_options`)."""
    from sleap_infer.pipeline.spec import refuse_not_ported
    from sleap_infer.pipeline.spec import tracking_options as bind_tracking

    refuse_not_ported(params)
    return bind_tracking(enabled, {k: params[k] for k in FIELDS if k in params})
