"""The output formats ``infer predict --format`` offers, and what each needs installed.

Kept apart from the writers (:mod:`sleap_infer.writers.outputs`, which import
h5py and sleap-io) so the command line can list the choices cheaply, and can
refuse a format that cannot hold a segmentation model's masks before
predicting (``holds_masks``: only ``.slp`` has a place for them; the others
are per-track point tables), and one that cannot hold a box detector's boxes
(``holds_boxes``: ``.slp`` and CSV, which gives each box a row), and one that
cannot hold an embedding model's re-ID vectors (``holds_embeddings``: only
``.slp``, which attaches them to their instances; the others would keep the
poses and lose the vectors without a word).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from sleap_infer.core.errors import UsageError


@dataclass(frozen=True)
class OutputFormat:
    name: str
    suffix: str  # appended to ``<video name>.predictions``
    needs: tuple[str, ...] = ()  # importable modules its writer requires
    holds_masks: bool = False  # segmentation masks / polygons have a place in it
    holds_boxes: bool = False  # predicted bounding boxes have a place in it
    holds_embeddings: bool = False  # per-instance re-ID vectors have a place in it


FORMATS: dict[str, OutputFormat] = {
    f.name: f
    for f in (
        OutputFormat("slp", ".slp", holds_masks=True, holds_boxes=True, holds_embeddings=True),
        OutputFormat("nwb", ".nwb", ("pynwb", "ndx_pose")),
        OutputFormat("analysis-h5", ".analysis.h5"),
        OutputFormat("csv", ".csv", ("pandas",), holds_boxes=True),
    )
}


def get_format(name: str) -> OutputFormat:
    """The format called ``name``, checked to be usable here (its packages import)."""
    key = name.strip().lower().replace("_", "-")
    fmt = FORMATS.get(key)
    if fmt is None:
        raise UsageError(f"unknown --format {name!r} (choose from {', '.join(FORMATS)})")
    missing = [m for m in fmt.needs if importlib.util.find_spec(m) is None]
    if missing:
        pkgs = " ".join(m.replace("_", "-") for m in missing)
        raise UsageError(f"--format {fmt.name} needs {pkgs} (pip install {pkgs})")
    return fmt
