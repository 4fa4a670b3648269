"""Command-line options that more than one command takes, declared once.

Each alias is a type annotation (``Annotated[type, typer.Option(...)]``) that
``predict``, ``export`` and ``bench`` put on their parameters; defaults come
from :mod:`sleap_infer.vocab.options`, so a default lives in one place.
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

from sleap_infer.io.formats import FORMATS
from sleap_infer.runtimes.runtime import RUNTIMES
from sleap_infer.vocab.errors import UsageError


def _choices(name: str, values: Iterable[str]) -> type[Enum]:
    """A str enum of ``values`` (member names are the values with ``-`` as ``_``)."""
    return Enum(name, {v.replace("-", "_"): v for v in values}, type=str)  # type: ignore[return-value]


Backend = _choices("Backend", RUNTIMES)
ExportRuntime = _choices("ExportRuntime", (n for n, r in RUNTIMES.items() if r.export_formats))
BenchBackend = _choices("BenchBackend", (*RUNTIMES, "all"))
OutputFormatName = _choices("OutputFormatName", FORMATS)
DEFAULT_BACKEND = Backend("torch")
DEFAULT_EXPORT_RUNTIME = ExportRuntime("onnx")
DEFAULT_FORMAT = OutputFormatName("slp")


ProgressMode = _choices("ProgressMode", ("auto", "bar", "plain", "json", "none"))
DEFAULT_PROGRESS = ProgressMode("auto")

BackendOption = Annotated[
    Backend,  # type: ignore[valid-type]
    typer.Option(case_sensitive=False, help="Runtime."),
]
OutputFormatOption = Annotated[
    OutputFormatName,  # type: ignore[valid-type]
    typer.Option("--format", case_sensitive=False, help="Output file format."),
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
        help="Model directory (or its best.ckpt / training_config.yaml); two for a "
        "top-down pair (a centroid model and a centered-instance or multi-class model).",
        show_default=False,
    ),
]
ModelOption = Annotated[
    list[Path],
    typer.Option(
        "--model",
        "-m",
        metavar="DIR",
        help="Model directory (or its best.ckpt / training_config.yaml). Give two for "
        "top-down: a centroid model and a centered-instance model, in either order.",
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
# No min/max here: vocab.options.check_integral_patch_size says "odd, 1 to 15" in one line.
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
