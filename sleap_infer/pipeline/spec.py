"""One frozen record of how to build a pipeline, bound once from option names.

``infer predict``'s flags and ``sleap_infer.load(...)``'s keyword arguments
are the same names (``peak_threshold``, ``no_refine``, ``tracking``,
``filter_min_instance_score``, ``only_labeled_frames``, ``fp16`` ...) with the
same defaults, which live in the option records themselves
(:class:`~sleap_infer.core.options.PredictOptions` and its siblings, from
:mod:`sleap_infer.core.options`). :func:`bind` is the one place a name is
routed to its record; the command line hands it its parsed parameters, the
Python API its keyword arguments, so the two can never drift apart. A name
that fits no record is refused with the closest known one.

The spec is picklable: ``--devices`` workers each build their own pipeline
from it.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from enum import Enum
from functools import cache
from typing import Any

import numpy as np

from sleap_infer.core.errors import UsageError
from sleap_infer.core.filters import InstanceFilters
from sleap_infer.core.nwb_metadata import NwbMetadata
from sleap_infer.core.options import (
    BATCH_SIZE,
    BackendOptions,
    PredictOptions,
    check_number,
    parse_thresholds,
)
from sleap_infer.core.overrides import ConfigOverrides
from sleap_infer.layers import build_layer
from sleap_infer.model.exported import export_runtime
from sleap_infer.model.registry import load_class
from sleap_infer.pipeline import models as model_set
from sleap_infer.runtimes import backend_maker
from sleap_infer.runtimes.choose import AUTO
from sleap_infer.sources.project_frames import ProjectSelection
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.writers.registry import OutputFormat

PIPELINE = "sleap_infer.pipeline.pipeline:Pipeline"


@dataclass(frozen=True)
class PipelineSpec:
    """Everything a pipeline is built from, but the device."""

    model_paths: tuple[str, ...]
    backend: str = AUTO  # or a runtime's name (sleap_infer.runtimes.RUNTIMES)
    batch_size: int = BATCH_SIZE
    options: PredictOptions = field(default_factory=PredictOptions)
    backend_options: BackendOptions = field(default_factory=BackendOptions)
    tracking: TrackingOptions | None = None  # None: untracked
    filters: InstanceFilters | None = None  # None: no post-filter
    overrides: ConfigOverrides | None = None  # None: the training config as trained
    project: ProjectSelection | None = None  # which video and frames of .slp inputs
    centroid_only: bool = False  # a top-down pair's centroid model alone
    nwb: NwbMetadata = field(default_factory=NwbMetadata)  # what an NWB output says of its session
    # What :meth:`build` makes, as "module:Class" (imported on first use, as the registries
    # name their classes): the Pipeline sits above this module, and a test's stand-in can
    # travel to a ``--devices`` worker process by name.
    factory: str = PIPELINE

    def build(self, device: str = "auto") -> Any:
        """The pipeline on ``device`` (a :class:`~sleap_infer.pipeline.pipeline.Pipeline`)."""
        return load_class(self.factory)(self, device)

    def check(
        self,
        devices: Sequence[str],
        fmt: OutputFormat | tuple[OutputFormat, ...] | None = None,
    ) -> list[str]:
        """Before spawning one worker per device: the models load and combine, every device
        exists, and ``fmt`` holds what they make. Returns warnings about the models.

        Builds the layer once on the CPU with torch (cheap: no export, no device), so a
        model that cannot run is one error here rather than one per worker.
        """
        models = model_set.load_models(
            self.model_paths, self.backend, self.centroid_only, self.overrides
        )
        for each in fmt if isinstance(fmt, tuple) else () if fmt is None else (fmt,):
            model_set.check_format(models, each)
        # auto: each worker's pipeline picks per run; its devices exist for torch.
        runtime = "torch" if self.backend == AUTO else self.backend
        for device in devices:
            backend_maker(runtime, device, **self.backend_options.maker_kwargs())
        # An export folder has no network for torch: its own runtime (backends made
        # lazily, nothing runs before the first batch).
        exported = any(m.export_dir is not None for m in models)
        maker = (
            backend_maker(self.backend, devices[0], **self.backend_options.maker_kwargs())
            if exported and devices
            else backend_maker("torch", "cpu")
        )
        layer = build_layer(models, maker, self.options)
        if self.tracking is not None:
            model_set.resolve_tracking(models, self.tracking, len(layer.config.node_names))
        return model_set.skeleton_warnings(models, model_set.output_model(models, layer.config))


# Names whose record field is called otherwise, or whose value is turned around.
_RENAMED: dict[str, tuple[str, str, Callable[[Any], Any]]] = {
    "no_refine": ("options", "refine", lambda v: not v),
    "merge_thresholds": ("options", "merge_thresholds", lambda v: thresholds(v)),
    "filter_overlapping": ("filters", "overlapping", bool),
    "filter_overlapping_method": ("filters", "overlapping_method", str),
    "filter_overlapping_threshold": ("filters", "overlapping_threshold", float),
    "filter_min_visible_nodes": ("filters", "min_visible_nodes", lambda v: v),
    "filter_min_visible_node_fraction": ("filters", "min_visible_node_fraction", lambda v: v),
    "filter_min_mean_node_score": ("filters", "min_mean_node_score", lambda v: v),
    "filter_min_instance_score": ("filters", "min_instance_score", lambda v: v),
    "filter_min_centroid_distance": ("filters", "min_centroid_distance", lambda v: v),
    "only_labeled_frames": ("project", "only_labeled", bool),
    "only_suggested_frames": ("project", "only_suggested", bool),
    "only_predicted_frames": ("project", "only_predicted", bool),
    "exclude_user_labeled": ("project", "exclude_user_labeled", bool),
    "video_index": ("project", "video_index", lambda v: v),
}
_RECORDS: dict[str, type] = {
    "options": PredictOptions,
    "tracking": TrackingOptions,
    "overrides": ConfigOverrides,
    "backend": BackendOptions,
    "nwb": NwbMetadata,
}
_OWN = ("batch_size", "centroid_only")
# sleap-nn 0.3.5 tracking options with no faithful port yet: accepted by name so a
# sleap-nn command line reads, refused in one line when set (never silently ignored).
NOT_PORTED: dict[str, str] = {}


def refuse_not_ported(params: Mapping[str, Any]) -> None:
    """One line for the first sleap-nn option that is set but not ported (unset: fine)."""
    for name, why in NOT_PORTED.items():
        if params.get(name) not in (None, False):
            raise UsageError(f"--{name.replace('_', '-')}: {why}")


_NOT_OPTIONS = {"return_confmaps"}  # a debugging field, not an option


# Fields reached by their own name: every record field but the debugging ones and those
# a renamed option sets (``refine`` is set through ``no_refine``).
_FIELDS: dict[str, str] = {
    f.name: group
    for group, record in _RECORDS.items()
    for f in fields(record)
    if f.name not in _NOT_OPTIONS and (group, f.name) not in {r[:2] for r in _RENAMED.values()}
}


def option_names() -> list[str]:
    """Every name :func:`bind` accepts (``load``'s keyword arguments)."""
    return sorted({*_RENAMED, *_OWN, *_FIELDS, *NOT_PORTED, "tracking"})


def _route(name: str) -> tuple[str, str, Callable[[Any], Any]]:
    if name in _RENAMED:
        return _RENAMED[name]
    if name in _FIELDS:
        return _FIELDS[name], name, lambda v: v
    close = difflib.get_close_matches(name, option_names(), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UsageError(f"unknown option {name!r}{hint}")


def thresholds(value: str | Any) -> tuple[float, ...]:
    """``"0.85,0.6,0.4"`` (the command line's form) or a sequence, as floats."""
    if isinstance(value, str):
        return parse_thresholds(value)
    values = tuple(float(x) for x in value)
    for x in values:
        check_number("merge_thresholds", x, "merge_thresholds")
    return values


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


class OptionTypeError(UsageError, TypeError):
    """An option given a value of the wrong kind (``peak_threshold="0.3"``, ``tracking="no"``,
    ``max_instances=2.5``): also a ``TypeError``, for Python callers."""


_RECORD_OF_GROUP: dict[str, type] = {
    **_RECORDS,
    "filters": InstanceFilters,
    "project": ProjectSelection,
}
_KINDS: dict[type, str] = {bool: "True or False", int: "a whole number", float: "a number"}
_KINDS[str] = "a string"
_OWN_KINDS: dict[str, type] = {"batch_size": int, "centroid_only": bool, "tracking": bool}


@cache
def _hints(group: str) -> dict[str, Any]:
    """A record's resolved field types: once per record, not once per option (resolving a
    record's string annotations took 1.7 ms, and a command passes a hundred options)."""
    return typing.get_type_hints(_RECORD_OF_GROUP[group])


@cache
def _kinds(group: str, key: str) -> tuple[frozenset[type], bool] | None:
    """The plain types a record field takes (and whether None), or None: not checked here
    (tuples, callables: their converters check them)."""
    hint = _hints(group).get(key)
    parts = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    allowed = frozenset(p for p in parts if p in _KINDS)
    if len(allowed) + (type(None) in parts) != len(parts) or not allowed:
        return None
    return allowed, type(None) in parts


def _fits(value: Any, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, (bool, np.bool_))
    if isinstance(value, (bool, np.bool_)):
        return False
    if kind is int:
        return isinstance(value, (int, np.integer))
    if kind is float:
        return isinstance(value, (int, float, np.integer, np.floating))
    return isinstance(value, kind)


def check_kind(name: str, value: Any, kinds: frozenset[type], optional: bool) -> None:
    """One :class:`OptionTypeError` line for a value the command line's parser would
    refuse: the API takes Python values, and ``tracking="no"`` is truthy, ``"0.3"`` a
    string torch chokes on after loading, ``2.5`` instances a count truncated silently."""
    if (value is None and optional) or any(_fits(value, k) for k in kinds):
        return
    want = " or ".join(_KINDS[k] for k in sorted(kinds, key=list(_KINDS).index))
    raise OptionTypeError(f"{name}={value!r}: must be {want}{' or None' if optional else ''}")


def _check_value(name: str, group: str, key: str, value: Any) -> None:
    """``value`` of option ``name`` (record field ``group.key``) has the field's type."""
    if name == "no_refine":
        kinds: tuple[frozenset[type], bool] | None = (frozenset({bool}), False)
    else:
        kinds = _kinds(group, key)
    if kinds is not None:
        # ``tracker=None``: not chosen (the command line's default), see tracking_options
        check_kind(name, value, kinds[0], kinds[1] or name == "tracker")


def bind(
    model_paths: tuple[str, ...] | list[str],
    backend: str | None = None,
    **params: Any,
) -> PipelineSpec:
    """The spec for ``model_paths`` from option names; unset names keep their defaults.

    ``backend`` None or ``auto``: ``auto`` for model directories (each run picks the
    fastest exact runtime installed, :mod:`sleap_infer.runtimes.choose`), the runtime an
    ``infer export`` folder was made for (``onnx``, or ``trt`` when it holds engines).

    ``tracking=True`` (or any tracker knob with ``tracker=``) turns tracking on; a
    tracker knob without it is refused, as on the command line.
    """
    groups: dict[str, dict[str, Any]] = {g: {} for g in (*_RECORDS, "filters", "project")}
    own: dict[str, Any] = {}
    tracking = params.pop("tracking", False)
    check_kind("tracking", tracking, frozenset({bool}), True)
    tracking = bool(tracking)
    refuse_not_ported(params)
    for name, value in params.items():
        if name in NOT_PORTED:
            continue
        if name in _OWN:
            check_kind(name, _plain(value), frozenset({_OWN_KINDS[name]}), False)
            check_number(name, value, name)
            own[name] = value
            continue
        group, key, convert = _route(name)
        _check_value(name, group, key, _plain(value))
        check_number(name, value, name)
        groups[group][key] = convert(_plain(value))
    batch_size = int(own.get("batch_size", BATCH_SIZE))
    if batch_size < 1:
        raise UsageError(f"batch_size {batch_size}: must be at least 1")
    filters = InstanceFilters(**groups["filters"])
    overrides = ConfigOverrides(**groups["overrides"])
    project = ProjectSelection(**groups["project"])
    backend = _plain(backend)
    if backend is None or str(backend).strip().lower() == AUTO:
        backend = export_runtime(tuple(str(p) for p in model_paths)) or AUTO
    centroid_output = groups["options"].get("centroid_output", "instance")
    if tracking and centroid_output != "instance":  # sleap-nn 0.3.5 refuses it too
        raise UsageError(
            f"--centroid-output {centroid_output}: tracking needs instances (the tracker "
            "assigns tracks to instances); use --centroid-output instance with --tracking"
        )
    return PipelineSpec(
        model_paths=tuple(str(p) for p in model_paths),
        backend=str(_plain(backend)),
        batch_size=batch_size,
        options=PredictOptions(**groups["options"]),
        backend_options=BackendOptions(**groups["backend"]),
        tracking=tracking_options(
            tracking, _counts_from_max_instances(groups["tracking"], groups["options"])
        ),
        filters=filters if filters.active else None,
        overrides=overrides if overrides.active else None,
        project=project if project.active else None,
        centroid_only=bool(own.get("centroid_only", False)),
        nwb=NwbMetadata(**groups["nwb"]),
    )


def _counts_from_max_instances(
    tracking: dict[str, Any], options: Mapping[str, Any]
) -> dict[str, Any]:
    """sleap-nn's legacy derivations: pre-cull, break joining and the Kalman shift take
    their target count from ``max_instances`` when none is given, and (classic tracker
    only: for a MOT one sleap-nn takes the count only from ``--max_tracks``) break joining
    its ``max_tracks``."""
    limit = options.get("max_instances")
    connect = bool(tracking.get("post_connect_single_breaks"))
    needs = connect or tracking.get("tracking_pre_cull_to_target") or tracking.get("use_kalman")
    if limit is None or not needs:
        return tracking
    out = dict(tracking)
    if out.get("tracking_target_instance_count") is None:
        out["tracking_target_instance_count"] = limit
    classic = (tracking.get("tracker") or "classic") == "classic"
    if connect and classic and out.get("max_tracks") is None:
        out["max_tracks"] = limit
    return out


def tracking_options(enabled: bool, values: Mapping[str, Any]) -> TrackingOptions | None:
    """The tracker's options, or None when tracking is off: a tracking knob given without
    ``--tracking`` is a mistake worth one line, not ignored."""
    defaults = TrackingOptions()
    given = {
        k: v
        for k, v in values.items()
        if (v is not None or k != "tracker") and not (k == "mot_param" and not v)
    }
    if given.get("tracker") is not None:
        enabled = True
    if not enabled:
        changed = [k for k, v in given.items() if v != getattr(defaults, k)]
        if changed:
            flags = ", ".join("--" + k.replace("_", "-") for k in changed)
            raise UsageError(f"{flags} only matter with --tracking (-t)")
        return None
    return TrackingOptions(**given)
