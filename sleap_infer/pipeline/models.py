"""What a set of model directories is, and whether it can do what was asked: checked once.

The pipeline (one device) and the multi-device batch (before spawning workers)
both assemble their models here, so a mistake is refused the same way,
before any video is opened: ``--centroid-only`` without a centroid model,
training-config overrides on an exported runtime, tracking on a model that
already assigns identities, a format that cannot hold what the models make.
What the models make is a set of :class:`~sleap_infer.core.products.Product`,
read from the model-type registry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sleap_infer.core.artifact import ENGINE_NAME
from sleap_infer.core.errors import UsageError
from sleap_infer.core.overrides import FLAGS, ConfigOverrides
from sleap_infer.core.products import Product
from sleap_infer.model.exported import expand as expand_exports
from sleap_infer.model.loader import LoadedModel, load_model
from sleap_infer.model.overrides import apply_overrides
from sleap_infer.model.registry import MODEL_TYPES, ModelType, pair_roles
from sleap_infer.model.weights import apply_weights
from sleap_infer.runtimes import get_runtime
from sleap_infer.runtimes.choose import AUTO, AutoBackend, kind_of
from sleap_infer.tracking import MASKS, POSES, resolve_options
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.writers.registry import OutputFormat, refuse

if TYPE_CHECKING:
    from sleap_infer.pipeline.spec import PipelineSpec


def load_models(
    paths: Sequence[str],
    backend: str,
    centroid_only: bool = False,
    overrides: ConfigOverrides | None = None,
) -> list[LoadedModel]:
    """The models of ``paths`` as they will run: the centroid one alone with
    ``centroid_only``, training-config overrides applied (torch only). An ``infer
    export`` folder stands for its model (a pair export for both stages) and runs on
    the runtime it was exported for."""
    models = [load_model(p) for p in expand_exports(list(paths))]
    check_export_backend(models, backend)
    if centroid_only:  # sleap-nn's --centroid_only: the pair's first stage alone
        models = only_centroid_models(models)
    if overrides is not None and overrides.weights:
        models = apply_weights(models, overrides)
    if overrides is not None and overrides.preprocessing:
        check_overrides_backend(backend, overrides)
        models = apply_overrides(models, overrides)
    return models


def check_export_backend(models: Sequence[LoadedModel], backend: str) -> None:
    """An export folder has a graph and no checkpoint: it runs on ONNX Runtime or
    OpenVINO (TensorRT too when it holds an engine), never on torch (``auto`` picks
    among those: :func:`auto_backend`)."""
    if backend == AUTO:
        return
    name = get_runtime(backend).name
    for model in models:
        if model.export_dir is None:
            continue
        engine = (model.export_dir / ENGINE_NAME).is_file()
        runs = "--backend trt, onnx or openvino" if engine else "--backend onnx or openvino"
        if name == "torch":
            raise UsageError(
                f"{model.export_dir}: an exported model (no checkpoint) runs with {runs}, "
                "not torch; give the model directory to run it on torch"
            )
        if name == "trt" and not engine:
            raise UsageError(
                f"{model.export_dir}: exported for ONNX only (no TensorRT engine); run it "
                "with --backend onnx or openvino, or export with --runtime trt"
            )


def only_centroid_models(models: Sequence[LoadedModel]) -> list[LoadedModel]:
    """``--centroid-only``: the centroid model among ``models``, run alone (its layer writes
    each centroid on the anchor node), as sleap-nn runs a pair's first stage alone."""
    kept = [m for m in models if m.model_type == "centroid"]
    if not kept:
        types = ", ".join(m.model_type for m in models)
        raise UsageError(f"--centroid-only needs a centroid model among the models; got {types}")
    return kept


def _entries(models: Sequence[LoadedModel]) -> list[ModelType]:
    return [e for e in (MODEL_TYPES.get(m.model_type) for m in models) if e is not None]


def products(models: Sequence[LoadedModel]) -> frozenset[Product]:
    """What these models make together.

    Keypoint instances come from a keypoint model, or from an embedding model
    behind a detector (one instance per animal, carrying its vector); not from
    box detectors or segmentation models alone.
    """
    entries = _entries(models)
    made: set[Product] = set()
    keypoints = any(not (e.boxes or e.masks or e.embeds) for e in entries)
    if keypoints or (any(e.embeds for e in entries) and len(models) > 1):
        made.add(Product.POSES)
    if any(e.masks for e in entries):
        made.add(Product.MASKS)
    if any(e.boxes for e in entries):
        made.add(Product.BOXES)
    if any(e.embeds for e in entries):
        made.add(Product.EMBEDDINGS)
    return frozenset(made)


def in_order(made: frozenset[Product]) -> list[Product]:
    """``made`` in the enum's order (messages name the same product first every time)."""
    return [p for p in Product if p in made]


def describe(models: Sequence[LoadedModel]) -> str:
    return ", ".join(m.model_type for m in models)


def check_format(models: Sequence[LoadedModel], fmt: OutputFormat) -> None:
    """A one-line UsageError when ``fmt`` cannot hold what these models make, or the
    names of the nodes written (the instance model's in a top-down pair)."""
    roles = pair_roles([m.model_type for m in models]) if len(models) > 1 else (0, 0)
    nodes = models[roles[1]].config.node_names if roles and models else ()
    refuse(fmt, in_order(products(models)), describe(models), nodes)


def check_overrides_backend(backend: str, overrides: ConfigOverrides) -> None:
    """Exported graphs bake the trained input scale into their coordinates and the export
    cache keys on the trained config, so overrides run on torch only (sleap-nn's export
    route drops them too); ``infer export --input-scale / --crop-size`` makes a graph
    for other values, which the message points to."""
    if backend == AUTO:  # auto runs them on torch (auto_backend)
        return
    name = get_runtime(backend).name
    if name != "torch":
        flags = ", ".join(FLAGS[k] for k in overrides.preprocessing)
        exportable = [
            FLAGS[k] for k in ("input_scale", "crop_size") if k in overrides.preprocessing
        ]
        hint = (
            f" (or export with them: infer export MODEL {' / '.join(exportable)}, then run "
            "-m the export folder)"
            if exportable
            else ""
        )
        raise UsageError(
            f"training-config overrides ({flags}) run with --backend torch only, not {name}" + hint
        )


def tracking_carrier(models: Sequence[LoadedModel]) -> str:
    """What a tracked run tracks: masks for mask-only models, else keypoint instances."""
    made = products(models)
    return MASKS if Product.MASKS in made and Product.POSES not in made else POSES


def check_trackable(models: Sequence[LoadedModel]) -> None:
    """A one-line UsageError for models whose output cannot be tracked."""
    entries = _entries(models)
    kind = describe(models)
    if any(m.config.class_names for m in models):
        raise UsageError(
            f"--tracking: the {kind} model already assigns identities (its classes); "
            "drop --tracking"
        )
    if entries and all(e.boxes for e in entries):
        raise UsageError(
            f"--tracking: a box detector's boxes are not tracked (as in sleap-nn); pair "
            f"{kind} with an instance model to track animals"
        )


def resolve_tracking(
    models: Sequence[LoadedModel], options: TrackingOptions, n_nodes: int
) -> TrackingOptions:
    """The tracking options with sleap-nn's automatic choices made for these models
    (``n_nodes``: of the skeleton the output uses)."""
    check_trackable(models)
    carrier = tracking_carrier(models)
    vectors = Product.EMBEDDINGS in products(models)
    return resolve_options(options, carrier, n_nodes, vectors)


def box_categories(models: Sequence[LoadedModel]) -> tuple[str, ...]:
    """The box detector's class names, which the boxes' category indices refer to."""
    for model in models:
        entry = MODEL_TYPES.get(model.model_type)
        if entry is not None and entry.boxes:
            return tuple(model.config.categories)
    return ()


def output_model(models: Sequence[LoadedModel], output_config: object) -> LoadedModel:
    """The model whose config the layer writes its output with."""
    for model in models:
        if model.config is output_config:
            return model
    return models[-1]


def skeleton_warnings(models: Sequence[LoadedModel], primary: LoadedModel) -> list[str]:
    """A warning when the models of a pair were trained on different skeletons.

    Top-down needs only the centroid model's anchor node, so such a pair runs,
    but it usually means two models from different projects were paired by
    mistake; the output uses the instance model's skeleton.
    """
    out = []
    for other in models:
        if other is primary:
            continue
        a, b = other.config, primary.config
        if (a.node_names, a.edges) != (b.node_names, b.edges):
            out.append(
                f"{other.path} and {primary.path} were trained on different skeletons "
                f"({len(a.node_names)} nodes {', '.join(a.node_names)} vs "
                f"{len(b.node_names)} nodes {', '.join(b.node_names)}, or other edges); "
                f"the output uses {primary.path.name}'s"
            )
    return out


def auto_backend(
    models: Sequence[LoadedModel], device: str, spec: PipelineSpec, embeds_labels: bool
) -> AutoBackend:
    """``--backend auto``'s chooser for these models on ``device``: their kind (detector
    first, as the speed table names it), what only torch runs, an export folder's runtimes."""
    from sleap_infer.backends.base import resolve_device

    types = [m.model_type for m in models]
    roles = pair_roles(types)
    if roles is not None:
        types = [types[roles[0]], types[roles[1]]]
    tiled = any(m.config.preprocessing.tiling is not None for m in models)
    torch_only = ""
    if spec.overrides is not None and spec.overrides.preprocessing:
        torch_only = "training-config overrides run on torch (exports bake the trained scale in)"
    elif embeds_labels:
        torch_only = "an embedding model alone embeds a project's detections, no frames"
    exports: tuple[str, ...] = ()
    if any(m.export_dir is not None for m in models):
        engine = all((m.export_dir / ENGINE_NAME).is_file() for m in models if m.export_dir)
        exports = ("trt", "openvino", "onnx") if engine else ("openvino", "onnx")
    return AutoBackend.for_run(
        kind_of(types, tiled),
        resolve_device(device).type,
        spec.backend_options,
        torch_only=torch_only,
        export_runtimes=exports,
    )
