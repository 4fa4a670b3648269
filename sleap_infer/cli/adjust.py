"""``infer predict`` options that adjust a run as sleap-nn's do: instance post-filters and
training-config overrides. Defaults come from the records in
:mod:`sleap_infer.core.filters` and :mod:`sleap_infer.core.overrides`."""

from __future__ import annotations

from typing import Annotated

import typer

from sleap_infer.core.filters import InstanceFilters

_F = InstanceFilters()

FilterOverlapping = Annotated[
    bool,
    typer.Option(
        "--filter-overlapping",
        help="Drop an instance overlapping a higher-scoring one above the threshold "
        "(greedy, per frame).",
    ),
]
FilterOverlappingMethod = Annotated[
    str, typer.Option(metavar="NAME", help="iou (visible-node boxes) or oks.")
]
FilterOverlappingThreshold = Annotated[
    float, typer.Option(metavar="FLOAT", help="Overlap above which the weaker instance goes.")
]
FilterMinVisibleNodes = Annotated[
    int | None,
    typer.Option(min=0, metavar="N", help="Drop instances with fewer visible nodes."),
]
FilterMinVisibleNodeFraction = Annotated[
    float | None,
    typer.Option(metavar="FLOAT", help="Drop instances with a smaller visible fraction."),
]
FilterMinMeanNodeScore = Annotated[
    float | None,
    typer.Option(metavar="FLOAT", help="Drop instances whose mean node score is lower."),
]
FilterMinInstanceScore = Annotated[
    float | None,
    typer.Option(metavar="FLOAT", help="Drop instances with a lower instance score."),
]
FilterMinCentroidDistance = Annotated[
    float | None,
    typer.Option(
        metavar="PX",
        help="Centroid and top-down models: drop an instance whose centroid is within PX "
        "pixels of a higher-scored one's (0: off).",
    ),
]
MaxHeight = Annotated[
    int | None,
    typer.Option(min=1, metavar="PX", help="Override the trained max_height (torch only)."),
]
MaxWidth = Annotated[
    int | None,
    typer.Option(min=1, metavar="PX", help="Override the trained max_width (torch only)."),
]
InputScale = Annotated[
    float | None,
    typer.Option(metavar="FLOAT", help="Override the trained input scale (torch only)."),
]
CropSize = Annotated[
    int | None,
    typer.Option(min=1, metavar="PX", help="Top-down: override the crop size (torch only)."),
]
BackboneCkptPath = Annotated[
    str | None,
    typer.Option(
        metavar="CKPT",
        help="Weights from this .ckpt (with --head-ckpt-path: its backbone only), as sleap-nn.",
    ),
]
HeadCkptPath = Annotated[
    str | None,
    typer.Option(metavar="CKPT", help="Head weights from this .ckpt, as sleap-nn."),
]
AnchorPart = Annotated[
    str | None,
    typer.Option(metavar="NODE", help="Top-down: override the anchor node (torch only)."),
]
EnsureRgb = Annotated[
    bool | None,
    typer.Option(
        "--ensure-rgb/--no-ensure-rgb",
        help="Override the trained ensure_rgb (torch only).",
        show_default=False,
    ),
]
EnsureGrayscale = Annotated[
    bool | None,
    typer.Option(
        "--ensure-grayscale/--no-ensure-grayscale",
        help="Override the trained ensure_grayscale (torch only).",
        show_default=False,
    ),
]
VideoIndex = Annotated[
    int | None,
    typer.Option(
        min=0,
        metavar="N",
        help="SLEAP project inputs: predict only video N (default: every video, each to "
        "<project>.videoN.predictions.slp, then all in <project>.predictions.slp).",
        show_default=False,
    ),
]
OnlyLabeled = Annotated[
    bool,
    typer.Option(
        "--only-labeled-frames", help="SLEAP project inputs: only frames with user instances."
    ),
]
OnlySuggested = Annotated[
    bool,
    typer.Option(
        "--only-suggested-frames",
        help="SLEAP project inputs: only the video's suggested frames not yet labeled.",
    ),
]
ExcludeUserLabeled = Annotated[
    bool,
    typer.Option(
        "--exclude-user-labeled",
        help="SLEAP project inputs: every frame but those with user instances.",
    ),
]
OnlyPredicted = Annotated[
    bool,
    typer.Option(
        "--only-predicted-frames",
        help="SLEAP project inputs: only frames that already hold predictions.",
    ),
]
MergeIntoProject = Annotated[
    bool,
    typer.Option(
        "--merge-into-project",
        help="SLEAP project inputs: also write <project>.merged.slp, a copy of the project "
        "with the predictions merged in (user instances kept, old predictions on the "
        "predicted frames replaced).",
    ),
]
CentroidOnly = Annotated[
    bool,
    typer.Option(
        "--centroid-only",
        help="Top-down models: run only the centroid model and write its centroids "
        "(on the anchor node), skipping the pose stage.",
    ),
]
VideoDataset = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help="HDF5 inputs (.h5): the dataset of frames (default: the first rank-4 or embedded "
        "image dataset, as sleap-io finds it).",
    ),
]
VideoInputFormat = Annotated[
    str,
    typer.Option(
        metavar="ORDER",
        help="HDF5 inputs: channels_last (frames, height, width, channels) or channels_first.",
    ),
]
KeepCorruptFrames = Annotated[
    bool,
    typer.Option(
        "--keep-corrupt-frames",
        help="Predict frames the decoder flags corrupt (by default they are recorded as bad "
        "frames: damaged pixels give plausible, wrong points).",
    ),
]
DEFAULT_OVERLAP_METHOD = _F.overlapping_method
DEFAULT_OVERLAP_THRESHOLD = _F.overlapping_threshold
