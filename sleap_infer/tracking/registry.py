"""One registry of trackers: adding a ``--tracker`` value is one entry here plus its
config and class, in its family's folder.

An entry says what every floor above needs to know about a tracker without
importing it: its family (the folder it lives in), the class that tracks and
the frozen config whose defaults are its preset, a one-line summary for
``--help`` and the docs, whether it reads re-ID vectors, and its name in
sleap-nn 0.3.5 (``None``: ours alone). Nothing else in the package lists
tracker names.

Classes and configs are named as ``"module:Class"`` and imported on first use
(:func:`tracker_class`, :func:`config_class`), as the model-type registry
(:mod:`sleap_infer.model.registry`) names its layers: the families may then
import this module and :mod:`sleap_infer.tracking.options` without any family
importing another, which the import-linter contract in ``pyproject.toml``
checks.
"""

from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sleap_infer.tracking.base import Tracker

# Families: a folder of ``sleap_infer.tracking`` each.
CLASSIC = "classic"  # sleap-nn's candidate-window tracker
MOT = "mot"  # sleap-nn's SORT family on one Kalman-box core
INFER_BYTETRACK = "infer_bytetrack"  # infer's own ByteTrack variant

# How a tracker uses re-ID vectors.
NO_VECTORS = "no"  # geometry alone
READS_VECTORS = "reads"  # uses them where present (and reads --appearance-threshold)
NEEDS_VECTORS = "needs"  # refused without them, as sleap-nn refuses

_T = "sleap_infer.tracking"


@dataclass(frozen=True)
class TrackerEntry:
    """Everything the floors above need to build, check and describe one tracker."""

    name: str  # the --tracker value
    family: str
    tracker: str  # "module:Class" of the tracker
    config: str  # "module:Class" of its frozen config (defaults: its preset)
    summary: str  # one line, for --help and the docs
    vectors: str = NO_VECTORS
    sleap_nn_name: str | None = None  # None: not one of sleap-nn 0.3.5's trackers

    @property
    def appearance(self) -> bool:
        """Associates by re-ID vectors: reads ``--appearance-threshold``."""
        return self.vectors != NO_VECTORS


def _mot(name: str, module: str, cls: str, summary: str, vectors: str = NO_VECTORS) -> TrackerEntry:
    """One of sleap-nn's MOT trackers: class ``<Name>Tracker``, config ``<Name>Config``."""
    return TrackerEntry(
        name=name,
        family=MOT,
        tracker=f"{_T}.mot.{module}:{cls}Tracker",
        config=f"{_T}.mot.config:{cls}Config",
        summary=summary,
        vectors=vectors,
        sleap_nn_name=name,
    )


TRACKERS: tuple[TrackerEntry, ...] = (
    TrackerEntry(
        "classic",
        CLASSIC,
        f"{_T}.classic.tracker:ClassicTracker",
        f"{_T}.classic.config:ClassicConfig",
        "sleap-nn's candidate-window tracker (the default): pose, box, mask or re-ID"
        " similarity to the last frames' instances",
        sleap_nn_name="classic",
    ),
    _mot(
        "bytetrack",
        "bytetrack",
        "ByteTrack",
        "sleap-nn's ByteTrack: two Hungarian stages by detection score on Kalman boxes",
    ),
    _mot("sort", "sort", "Sort", "sleap-nn's SORT: Kalman boxes, one Hungarian stage"),
    _mot(
        "botsort",
        "botsort",
        "BotSort",
        "sleap-nn's BoT-SORT: ByteTrack's stages plus re-ID where vectors exist",
        READS_VECTORS,
    ),
    _mot(
        "ocsort",
        "ocsort",
        "OcSort",
        "sleap-nn's OC-SORT: observation-centric momentum and recovery",
    ),
    _mot(
        "deepsort",
        "deepsort",
        "DeepSort",
        "sleap-nn's DeepSORT: re-ID cascade, then box overlap",
        NEEDS_VECTORS,
    ),
    _mot(
        "strongsort",
        "deepsort",
        "StrongSort",
        "sleap-nn's StrongSORT: DeepSORT with EMA appearance and motion-weighted cost",
        NEEDS_VECTORS,
    ),
    _mot(
        "deepocsort",
        "deepocsort",
        "DeepOcSort",
        "sleap-nn's Deep OC-SORT: OC-SORT with adaptive re-ID weighting",
        NEEDS_VECTORS,
    ),
    TrackerEntry(
        "infer_bytetrack",
        INFER_BYTETRACK,
        f"{_T}.infer_bytetrack.tracker:ByteTracker",
        f"{_T}.infer_bytetrack.config:InferByteTrackConfig",
        "infer's own ByteTrack variant: never drops a detection; best identities without"
        " re-ID vectors on crowded scenes",
    ),
)
BY_NAME: dict[str, TrackerEntry] = {e.name: e for e in TRACKERS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
DEFAULT = "classic"  # sleap-nn's: ``-t`` alone must give sleap-nn's tracks


def entry(name: str) -> TrackerEntry:
    """The entry of ``--tracker name`` (KeyError: not a tracker; options check first)."""
    return BY_NAME[name]


def names(*, family: str | None = None, vectors: str | None = None) -> tuple[str, ...]:
    """Tracker names in registry order, of one ``family`` and/or one ``vectors`` use."""
    return tuple(
        e.name
        for e in TRACKERS
        if (family is None or e.family == family) and (vectors is None or e.vectors == vectors)
    )


def appearance_names() -> tuple[str, ...]:
    """The trackers that read re-ID vectors (and ``--appearance-threshold``)."""
    return tuple(e.name for e in TRACKERS if e.appearance)


def _load(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def tracker_class(name: str) -> type[Tracker]:
    """The class that runs ``--tracker name``, imported now."""
    cls: type[Tracker] = _load(entry(name).tracker)
    return cls


@cache
def config_class(name: str) -> type[Any]:
    """The frozen config dataclass of ``--tracker name``, imported now."""
    cls: type[Any] = _load(entry(name).config)
    return cls


@cache
def preset(name: str) -> dict[str, Any]:
    """``--tracker name``'s config defaults (sleap-nn's preset for its trackers)."""
    return {f.name: f.default for f in dataclasses.fields(config_class(name))}


def knobs(name: str) -> tuple[str, ...]:
    """The ``--mot_param`` keys ``--tracker name`` reads: its config's fields."""
    return tuple(preset(name))
