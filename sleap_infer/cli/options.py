"""Command-line options that more than one command takes, declared once.

Each alias is a type annotation (``Annotated[type, typer.Option(...)]``) that
``predict``, ``export`` and ``bench`` put on their parameters; defaults come
from :mod:`sleap_infer.core.options`, so a default lives in one place.
Choices (runtimes, output formats) are enums built from their registries, so
Typer validates them and lists them in ``--help``. Only light modules are
imported here: ``infer --help`` must not wait for torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from sleap_infer.core.errors import UsageError
from sleap_infer.core.options import MERGE_THRESHOLDS
from sleap_infer.runtimes.runtime import RUNTIMES
from sleap_infer.writers.registry import FORMATS, OutputFormat


def _choices(name: str, values: Iterable[str]) -> type[Enum]:
    """A str enum of ``values`` (member names are the values with ``-`` as ``_``)."""
    return Enum(name, {v.replace("-", "_"): v for v in values}, type=str)  # type: ignore[return-value]


Backend = _choices("Backend", ("auto", *RUNTIMES))
# What ``infer export -f`` writes for: every runtime that runs an export (openvino runs
# onnx's graph), plus sleap-nn's names: ``tensorrt`` is trt, ``both`` (ONNX and an engine)
# is what trt writes anyway.
EXPORT_FORMAT_ALIASES = {"tensorrt": "trt", "both": "trt"}
ExportFormat = _choices(
    "ExportFormat",
    (*(n for n, r in RUNTIMES.items() if r.export_formats), *EXPORT_FORMAT_ALIASES),
)
BENCH_BACKENDS = (*RUNTIMES, "all")
DEFAULT_BACKEND = Backend("auto")
DEFAULT_EXPORT_FORMAT = ExportFormat("onnx")
DEFAULT_FORMAT = ["slp"]


ProgressMode = _choices("ProgressMode", ("auto", "bar", "plain", "json", "none"))
DEFAULT_PROGRESS = ProgressMode("auto")

BackendOption = Annotated[
    Backend,  # type: ignore[valid-type]
    typer.Option(
        case_sensitive=False,
        help="Runtime. auto: the fastest exact (float32) one installed for this model type "
        "and input length (infer bench says which and why); torch, onnx, openvino, trt: "
        "that one.",
    ),
]
# Repeatable and/or a comma list (``--format slp,nwb``): one prediction pass, each format
# written from it (checked, one line, by sleap_infer.writers.registry.get_formats).
OutputFormatOption = Annotated[
    list[str],
    typer.Option(
        "--format",
        metavar=f"<{'|'.join(FORMATS)}>",
        help="Output file format; several (repeat it, or commas: slp,csv) are each "
        "written from one prediction pass.",
    ),
]


_DEVICE = re.compile(r"auto|cpu|mps|cuda(:\d+)?")


def check_device(text: str, option: str = "--device") -> str:
    """Refuse a misspelt device before any model loads (exit code 2, like other bad options)."""
    if not _DEVICE.fullmatch(text.strip().lower()):
        raise UsageError(f"{option} {text!r}: unknown device (use auto, cpu, cuda, cuda:N or mps)")
    return text


def parse_size(text: str, option: str = "--size", minimum: int = 1) -> tuple[int, int]:
    """``"480x640"`` -> ``(480, 640)``: height first, like numpy shapes."""
    match = re.fullmatch(r"\s*(\d+)\s*[xX×,]\s*(\d+)\s*", text)
    if not match:
        raise UsageError(f"{option} {text!r}: expected HEIGHTxWIDTH (HxW), e.g. 480x640")
    height, width = int(match[1]), int(match[2])
    if height < minimum or width < minimum:
        raise UsageError(f"{option} {text!r}: at least {minimum}x{minimum}")
    return height, width


# ------------------------------------------------------------------ models
ModelDirs = Annotated[
    list[Path],
    typer.Argument(
        metavar="MODEL_DIR",
        help="Model directory (sleap-nn's, or a SLEAP 1.x folder with training_config.json "
        "+ best_model.h5); two for a top-down pair (a centroid model and a "
        "centered-instance or multi-class model).",
        show_default=False,
    ),
]
ModelOption = Annotated[
    list[Path],
    typer.Option(
        "--model",
        "-m",
        metavar="DIR",
        help="Model directory (sleap-nn's, or a SLEAP 1.x folder with training_config.json "
        "+ best_model.h5). Give two for top-down: a centroid model and a "
        "centered-instance model, in either order.",
        show_default=False,
    ),
]
Device = Annotated[
    str,
    typer.Option(
        "--device",
        "-d",
        metavar="DEVICE",
        help="auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps.",
    ),
]

# -------------------------------------------------------------- precision
Fp16 = Annotated[
    bool,
    typer.Option(
        "--fp16",
        help="Half precision: torch autocast (cuda/mps), or an fp16 network in an export "
        "(onnx/trt; decoding stays fp32).",
    ),
]

# --------------------------------------------------------- peak decoding
PeakThreshold = Annotated[
    float,
    typer.Option(
        metavar="FLOAT",
        help="Minimum confidence-map value for a peak (exports output every candidate's "
        "value; the threshold is applied on the host).",
    ),
]
NoRefine = Annotated[
    bool, typer.Option("--no-refine", help="Disable integral sub-pixel refinement.")
]
RefineLikeSleapNn = Annotated[
    bool,
    typer.Option(
        "--refine-like-sleap-nn",
        help="Integral refinement exactly as sleap-nn 0.3.5, even where negative map "
        "values cancel the patch and its mean lands far outside it (by default such a "
        "peak keeps its pixel).",
    ),
]
# No min/max here: core.options.check_integral_patch_size says "odd, 1 to 15" in one line.
IntegralPatchSize = Annotated[
    int,
    typer.Option(metavar="N", help="Patch side for integral refinement: an odd number, 1 to 15."),
]

# -------------------------------------------------- bottom-up PAF scoring
NPoints = Annotated[
    int, typer.Option(min=2, metavar="N", help="Bottom-up: samples along each PAF line integral.")
]
MaxEdgeLengthRatio = Annotated[
    float,
    typer.Option(
        metavar="FLOAT",
        help="Bottom-up: connections longer than this fraction of the image are penalised.",
    ),
]
DistPenaltyWeight = Annotated[
    float, typer.Option(metavar="FLOAT", help="Bottom-up: weight of the long-connection penalty.")
]

# ----------------------------------------------------------- segmentation
SEGMENTATION_PANEL = "Segmentation models"
MaskOutput = _choices("MaskOutput", ("mask", "polygon", "both"))
Embed = _choices("Embed", ("false", "true", "auto"))
SaveEmbeddings = _choices("SaveEmbeddings", ("slp", "none"))
DEFAULT_EMBED = Embed("false")
CentroidOutput = _choices("CentroidOutput", ("instance", "centroid", "both"))
DEFAULT_CENTROID_OUTPUT = CentroidOutput("instance")
DEFAULT_SAVE_EMBEDDINGS = SaveEmbeddings("slp")
DEFAULT_MASK_OUTPUT = MaskOutput("mask")
MergeMethod = _choices("MergeMethod", ("greedy", "multicut"))
DEFAULT_MERGE_METHOD = MergeMethod("greedy")

FgThreshold = Annotated[
    float,
    typer.Option(
        metavar="FLOAT",
        help="Foreground probability a pixel must exceed to belong to a mask.",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
CenterNmsKernel = Annotated[
    int,
    typer.Option(
        metavar="N",
        help="Bottom-up: max-pool window (odd) for center peaks; --peak-threshold applies.",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
MinMaskArea = Annotated[
    int,
    typer.Option(
        metavar="PIXELS",
        help="Drop masks smaller than this many original-frame pixels.",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
MaskCleanup = Annotated[
    bool,
    typer.Option(
        "--mask-cleanup/--no-mask-cleanup",
        help="Keep each mask's largest 4-connected part and fill its holes.",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
MaskCleanupRadius = Annotated[
    int,
    typer.Option(
        metavar="N",
        help="With --mask-cleanup: morphological open then close with an elliptical kernel "
        "of this radius (mask pixels) first; 0 = off.",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
DistanceGateAlpha = Annotated[
    float | None,
    typer.Option(
        metavar="FLOAT",
        help="Bottom-up: drop foreground pixels whose predicted center is further from the "
        "instance center than ALPHA x its radius (off by default).",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
MergeFragments = Annotated[
    bool,
    typer.Option(
        "--merge-fragments",
        help="Bottom-up: merge touching masks of one animal (region-adjacency merge).",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
MergeMethodOption = Annotated[
    MergeMethod,  # type: ignore[valid-type]
    typer.Option(
        "--merge-method",
        case_sensitive=False,
        help="With --merge-fragments: greedy thresholds or multicut.",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
MergeThresholds = Annotated[
    str,
    typer.Option(
        metavar="LIST",
        help="With --merge-fragments (greedy): affinity thresholds, highest first.",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
MergeWValley = Annotated[
    float,
    typer.Option(
        metavar="FLOAT",
        help="With --merge-fragments: weight of the center-heatmap ridge between masks.",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
MergeWOffset = Annotated[
    float,
    typer.Option(
        metavar="FLOAT",
        help="With --merge-fragments: weight of the masks' offset-center agreement.",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
MERGE_THRESHOLDS_TEXT = ",".join(str(t) for t in MERGE_THRESHOLDS)
MergeDilate = Annotated[
    int,
    typer.Option(
        metavar="N",
        help="With --merge-fragments: dilation steps when testing whether masks touch.",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
FullResMasks = Annotated[
    bool,
    typer.Option(
        "--full-res-masks",
        help="Write masks at the frame's resolution (default: the model's output stride, "
        "with a scale sleap-io applies).",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
MaskOutputOption = Annotated[
    MaskOutput,  # type: ignore[valid-type]
    typer.Option(
        "--mask-output",
        case_sensitive=False,
        help="mask: segmentation masks; polygon: simplified outlines (PredictedROI); both.",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]
EmbedOption = Annotated[
    Embed,  # type: ignore[valid-type]
    typer.Option(
        "--embed",
        case_sensitive=False,
        help=".slp output: true embeds the predicted frames' images (a self-contained "
        "file, as sio.save_slp(embed=True)); auto: only when the input is a .pkg.slp.",
    ),
]
CentroidOutputOption = Annotated[
    CentroidOutput,  # type: ignore[valid-type]
    typer.Option(
        "--centroid-output",
        case_sensitive=False,
        help="A centroid model run alone (or --centroid-only): its centroids in the .slp "
        "as instances; centroid: as sio.PredictedCentroid records; both.",
    ),
]
RestoreSourceVideos = Annotated[
    bool,
    typer.Option(
        "--restore-source-videos",
        help=".slp output of a .pkg.slp input: reference the video the package was made "
        "from (when it records one) instead of the package.",
    ),
]
SaveEmbeddingsOption = Annotated[
    SaveEmbeddings,  # type: ignore[valid-type]
    typer.Option(
        "--save-embeddings",
        case_sensitive=False,
        help="An embedding model's re-ID vectors: slp writes them into the .slp; none "
        "leaves them out of every output.",
    ),
]
PolygonEpsilon = Annotated[
    float,
    typer.Option(
        metavar="FLOAT",
        help="Polygon simplification tolerance, as a fraction of the outline's perimeter.",
        rich_help_panel=SEGMENTATION_PANEL,
    ),
]


# -------------------------------------------------------------- box detectors
BboxNmsIou = Annotated[
    float | None,
    typer.Option(
        metavar="FLOAT",
        help="Box detectors: class-wise NMS IoU (default: 0.45 for SSD, off for CenterNet; "
        "1 disables). --peak-threshold is the box score threshold, -n the boxes per frame "
        "(default 100).",
        rich_help_panel="Box detectors",
    ),
]


def _ending(name: str, fmt: OutputFormat) -> int:
    """How long a suffix of ``fmt`` the file name ``name`` ends in (0: none)."""
    return max((len(s) for s in fmt.suffixes if name.endswith(s)), default=0)


def _named_format(name: str) -> OutputFormat | None:
    """The format a file called ``name`` is: its own suffix first (``.csv`` is csv, though
    dlc-csv and via-csv take it too), then the longest ending (``.h5``: analysis-h5)."""
    found = max(
        FORMATS.values(),
        key=lambda f: (len(f.suffix) if name.endswith(f.suffix) else 0, _ending(name, f)),
    )
    return found if _ending(name, found) else None


def formats_for_output(output: Path | None, names: list[str], given: bool) -> list[str]:
    """The run's formats, main one first, as ``-o`` names them.

    An ``-o`` ending in a format's suffix (``.slp``, ``.nwb``, ``.analysis.h5``,
    ``.h5``, ``.csv``, ``.dlc.csv``, ``.via.csv``) is a file of that format, never a
    folder: without ``--format`` the run writes that format; with several formats it
    is the main one (its file is ``-o``, the others are named from ``-o``'s stem:
    ``-o bu.slp`` -> ``bu.slp``, ``bu.analysis.h5``, as sleap-nn names them); a
    ``--format`` list without it is refused in one line. An ``-o`` ending in a
    format's *name* (``x.analysis-h5``) is refused too: it is a misspelt file name far
    more often than a folder. An existing folder is a folder whatever its name.
    """
    if output is None or output.is_dir():
        return names
    from sleap_infer.writers.registry import get_formats

    formats = get_formats(names)
    named = _named_format(output.name)
    if named is None:
        _refuse_format_name(output)
        return names
    if not given:
        return [named.name]
    matching = [f for f in formats if _ending(output.name, f)]
    if not matching:
        listed = ", ".join(f.name for f in formats)
        raise UsageError(
            f"-o/--output {output}: a {named.name} file name, but --format is {listed}: "
            f"end it in {formats[0].suffix}, or add --format {named.name}"
        )
    main = max(matching, key=lambda f: _ending(output.name, f))
    return [main.name, *(f.name for f in formats if f != main)]


def _refuse_format_name(output: Path) -> None:
    last = output.name.rsplit(".", 1)[-1].lower().replace("_", "-")
    fmt = FORMATS.get(last) if "." in output.name else None
    if fmt is None:
        return
    stem = output.name[: -len(last) - 1]
    raise UsageError(
        f"-o/--output {output}: ends in a format's name, not its suffix: name a --format "
        f"{fmt.name} file {stem}{fmt.suffix} (and a folder so that it does not end in .{last})"
    )
