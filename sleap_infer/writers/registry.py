"""The output formats, as data: one entry a format, naming its writer and what it holds.

Like the model-type registry (:mod:`sleap_infer.model.registry`), adding a
format is one entry here plus its writer module; nothing else branches on
format names. An entry says which products it has a place for (``holds``):
only ``.slp`` holds segmentation masks, ``.slp``, CSV (a row per box) and
VIA-tracks CSV (boxes alone) hold boxes, only ``.slp`` holds re-ID vectors (on
their instances); the per-track
formats would keep the poses and lose the rest without a word, so
:func:`missing_product` refuses them before predicting, and again (the
backstop) before writing. A format whose files cannot hold every node name
(NWB: no ``/``, ``:``, empty or repeated names) names a ``check_nodes`` function
that :func:`refuse` runs on the skeleton, so that too is refused before the first
frame rather than after the video. Writers and checks are named as
``"module:function"`` and imported on first use, so the command line lists the
choices without importing h5py, pandas or pynwb.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sleap_infer.core.errors import UsageError
from sleap_infer.core.products import Product

if TYPE_CHECKING:
    from sleap_infer.writers.slots import Source

Writer = Callable[[Path, "Source"], None]
NWB_PACKAGES = ("pynwb", "ndx_pose")


@dataclass(frozen=True)
class Sizes:
    """Uncompressed bytes a file of the format takes (measured on small outputs): an upper
    bound of an output's size, for a full-disk message's "needs about"."""

    fixed: int  # an empty file
    instance: int  # per predicted instance ...
    point: int  # ... plus per node of it
    box_tables: int = 0  # the boxes' tables, once (formats that hold boxes)
    box_row: int = 0  # per box
    empty_frame: int = 0  # per predicted frame without instances (kept by default) ...
    empty_frame_node: int = 0  # ... plus per node (a CSV row's empty cells, NWB's NaNs)


@dataclass(frozen=True)
class OutputFormat:
    name: str
    suffix: str  # appended to ``<video name>.predictions``
    writer: str  # "module:function" writing a finished journal to a path
    sizes: Sizes
    holds: frozenset[Product] = frozenset({Product.POSES})
    needs: tuple[str, ...] = ()  # importable modules its writer requires
    also_suffixes: tuple[str, ...] = ()  # other endings a file named with -o may have
    # HDF5 objects a finished file has (None: not HDF5, any non-empty file is finished:
    # outputs only appear by atomic rename, so this guards against foreign files).
    hdf5_keys: tuple[str, ...] | None = ()
    # "module:function" raising a one-line UsageError for node names the format cannot
    # hold (None: any name will do).
    check_nodes: str | None = None

    def load_writer(self) -> Writer:
        return _load(self.writer)

    def refuse_nodes(self, nodes: Sequence[str]) -> None:
        """Before predicting: a one-line UsageError for a node name the files cannot hold."""
        if self.check_nodes is not None:
            _load(self.check_nodes)(nodes)

    @property
    def suffixes(self) -> tuple[str, ...]:
        """Every ending an output file of this format may have."""
        return (self.suffix, *self.also_suffixes)

    @property
    def holds_poses(self) -> bool:
        return Product.POSES in self.holds

    @property
    def holds_masks(self) -> bool:
        return Product.MASKS in self.holds

    @property
    def holds_boxes(self) -> bool:
        return Product.BOXES in self.holds

    @property
    def holds_embeddings(self) -> bool:
        return Product.EMBEDDINGS in self.holds


def _load(name: str) -> Callable[..., None]:
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


_W = "sleap_infer.writers"
FORMATS: dict[str, OutputFormat] = {
    f.name: f
    for f in (
        # .slp boxes: 15 column datasets and a category catalog (about 40 KB with one box),
        # then a row of each column, its two empty strings and a category link.
        OutputFormat(
            "slp",
            ".slp",
            f"{_W}.slp_stream:write_slp",
            Sizes(32_000, 93, 26, box_tables=48_000, box_row=69 + 3 * 16 + 17, empty_frame=36),
            frozenset(Product),
            hdf5_keys=("frames", "metadata"),
        ),
        OutputFormat(
            "nwb",
            ".nwb",
            f"{_W}.nwb_out:write_nwb",
            # An empty frame: NaN points and scores in every track's series (one track
            # counted), and its timestamp.
            Sizes(256_000, 8, 24, empty_frame=8, empty_frame_node=24),
            needs=NWB_PACKAGES,
            check_nodes=f"{_W}.nwb_names:check_node_names",
        ),
        OutputFormat(
            "analysis-h5",
            ".analysis.h5",
            f"{_W}.analysis_h5:write_analysis_h5",
            Sizes(16_000, 32, 24),
            also_suffixes=(".h5",),
        ),
        # CSV: a row of 6 numbers and a name per box.
        OutputFormat(
            "csv",
            ".csv",
            f"{_W}.csv_out:write_csv",
            Sizes(1_000, 50, 60, box_tables=100, box_row=130, empty_frame=12, empty_frame_node=3),
            frozenset({Product.POSES, Product.BOXES}),
            ("pandas",),
            hdf5_keys=None,
        ),
        # DeepLabCut-style CSV through sleap-io's writer: a row per video frame, x, y and
        # likelihood per node per track (the per-instance sizes bound the numbers).
        OutputFormat(
            "dlc-csv",
            ".dlc.csv",
            f"{_W}.dlc_csv:write_dlc_csv",
            Sizes(1_000, 30, 60),
            needs=("pandas",),
            also_suffixes=(".csv",),
            hdf5_keys=None,
        ),
        # VIA-tracks CSV: a row per box (about 230 bytes), boxes only.
        OutputFormat(
            "via-csv",
            ".via.csv",
            f"{_W}.via_csv:write_via_csv",
            Sizes(200, 0, 0, box_tables=0, box_row=260),
            frozenset({Product.BOXES}),
            also_suffixes=(".csv",),
            hdf5_keys=None,
        ),
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


def get_formats(
    value: str | OutputFormat | Iterable[str | OutputFormat],
) -> tuple[OutputFormat, ...]:
    """Every format asked for, in order, each once: ``"slp,nwb"``, ``["slp", "csv"]`` or one
    name (``--format`` repeated and/or a comma list). The first is the run's main format:
    its output names the video's journal and, with ``-o FILE``, the file."""
    items = [value] if isinstance(value, (str, OutputFormat)) else list(value)
    found: list[OutputFormat] = []
    for item in items:
        parts = [item] if isinstance(item, OutputFormat) else str(item).split(",")
        for part in parts:
            if isinstance(part, str) and not part.strip():
                continue
            fmt = part if isinstance(part, OutputFormat) else get_format(part)
            if fmt not in found:
                found.append(fmt)
    if not found:
        raise UsageError(f"--format: no format given (choose from {', '.join(FORMATS)})")
    return tuple(found)


def format_names(formats: Iterable[OutputFormat]) -> str:
    """``slp,analysis-h5``: the formats as one ``--format`` value (a run's settings)."""
    return ",".join(f.name for f in formats)


def missing_product(fmt: OutputFormat, products: Iterable[Product]) -> Product | None:
    """The first of ``products`` that ``fmt`` has no place for (None: it holds them all)."""
    return next((p for p in products if p not in fmt.holds), None)


def use_instead(product: Product) -> str:
    """``use --format slp, csv or via-csv``: the formats that do hold ``product``."""
    names = [f.name for f in FORMATS.values() if product in f.holds]
    return "use --format " + " or ".join([", ".join(names[:-1]), names[-1]] if names[1:] else names)


def refuse(
    fmt: OutputFormat, products: Iterable[Product], models: str, nodes: Sequence[str] = ()
) -> None:
    """Before predicting: a one-line UsageError when ``fmt`` cannot hold what ``models``
    (e.g. ``bbox_ssd``) predict, or the names of the skeleton's ``nodes``."""
    fmt.refuse_nodes(nodes)
    product = missing_product(fmt, products)
    if product is not None:
        raise UsageError(
            f"--format {fmt.name} cannot hold {product.noun} ({models} model); "
            f"{use_instead(product)}"
        )
