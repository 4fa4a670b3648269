"""What a pipeline has loaded: models, their one layer, the runner, what they make.

Everything about *what* runs is settled here, once, whichever way the
pipeline is used afterwards: the models load (``strict=True``) and combine
into one layer, overrides and ``--centroid-only`` apply, tracking options
resolve for these models, and :attr:`Loaded.products` says what comes out
(poses, masks, boxes, re-ID vectors). The jobs (one video into a file, frames
in memory) take a :class:`Loaded`; :class:`~sleap_infer.pipeline.pipeline.Pipeline`
adds the calls that start them, so the jobs sit below the class that runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sleap_infer.core.filters import InstanceFilters
from sleap_infer.core.options import PredictOptions
from sleap_infer.core.overrides import ConfigOverrides
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.products import Product
from sleap_infer.core.startup import span
from sleap_infer.layers import build_layer
from sleap_infer.layers.base import InferenceLayer
from sleap_infer.layers.build import layer_class
from sleap_infer.layers.centroid import CentroidLayer
from sleap_infer.model.loader import LoadedModel
from sleap_infer.ops.instance_filters import filter_instances
from sleap_infer.pipeline import models as model_set
from sleap_infer.pipeline.spec import PipelineSpec
from sleap_infer.runner import Runner
from sleap_infer.runtimes import get_runtime
from sleap_infer.sources.project_frames import ProjectSelection
from sleap_infer.tracking.online import IMAGES, OnlineTracker
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.writers.registry import OutputFormat, get_format, get_formats


class Loaded:
    """Models loaded and warmed once, reused for every input."""

    def __init__(self, spec: PipelineSpec, device: str = "auto") -> None:
        self.spec = spec
        self.models: list[LoadedModel] = model_set.load_models(
            spec.model_paths, spec.backend, spec.centroid_only, spec.overrides
        )
        self.products = model_set.products(self.models)
        if spec.tracking is not None:
            model_set.check_trackable(self.models)
        runtime = get_runtime(spec.backend)
        self.backend_name = runtime.name
        make_backend = runtime.maker(device, **spec.backend_options.maker_kwargs())
        # Engines built for one exact batch need every batch padded to it; everything else
        # takes a short video in one smaller batch instead of padding it with blank frames.
        self.pads_short_videos = runtime.static_batch
        with span("layer_build"):
            if self.embeds_labels:
                model = self.models[0]
                self.layer: InferenceLayer = layer_class(model.model_type)(
                    model.config, make_backend(model), spec.options
                )
            else:
                self.layer = build_layer(self.models, make_backend, spec.options)
        self.runner = Runner(self.layer, batch_size=spec.batch_size)
        # Resolved for these models; a lone embedding model re-tracks its labels file with
        # the options as given (:func:`~sleap_infer.pipeline.retrack.retrack_labels`).
        self.tracking: TrackingOptions | None = None
        if spec.tracking is not None and not self.embeds_labels:
            n_nodes = len(self.layer.config.node_names)
            self.tracking = model_set.resolve_tracking(self.models, spec.tracking, n_nodes)
        self.warnings = model_set.skeleton_warnings(self.models, self.primary)

    # ------------------------------------------------------------ what it is
    @property
    def embeds_labels(self) -> bool:
        """A lone embedding model: it embeds a SLEAP project's detections, not frames."""
        return len(self.models) == 1 and self.products == {Product.EMBEDDINGS}

    @property
    def primary(self) -> LoadedModel:
        """The model whose skeleton and classes the output uses (top-down: the instance model,
        whichever order the models were given in)."""
        return model_set.output_model(self.models, self.layer.config)

    @property
    def centroid_source(self) -> str | None:
        """A centroid model run alone (or ``--centroid-only``): the ``sio.Centroid.source``
        tag of its centroids, as sleap-nn 0.3.5's ``centroid_source_for_anchor`` writes it
        (``anchor:<node>`` or the trained ``centroid_method``); None for any other run."""
        if not isinstance(self.layer, CentroidLayer):
            return None
        config = self.layer.config
        head = config.raw.get("model_config", {}).get("head_configs", {}).get("centroid") or {}
        method = (head.get("confmaps") or {}).get("centroid_method")
        anchor = config.anchor_index
        method = method or ("anchor" if anchor is not None else "center_of_mass")
        if method != "anchor":
            return str(method)
        return "center_of_mass" if anchor is None else f"anchor:{config.node_names[anchor]}"

    @property
    def device(self) -> str:
        return str(self.layer.device)

    @property
    def batch_size(self) -> int:
        return self.spec.batch_size

    @property
    def options(self) -> PredictOptions:
        return self.spec.options

    @property
    def overrides(self) -> ConfigOverrides | None:
        return self.spec.overrides

    @property
    def filters(self) -> InstanceFilters | None:
        return self.spec.filters

    @property
    def project(self) -> ProjectSelection | None:
        return self.spec.project

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(self.layer.config.node_names)

    @property
    def box_categories(self) -> tuple[str, ...]:
        return model_set.box_categories(self.models)

    def describe(self) -> str:
        """``TopDownLayer (centroid, centered_instance)``: what runs."""
        return f"{type(self.layer).__name__} ({model_set.describe(self.models)})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()}, {self.backend_name}/{self.device})"

    def check_format(self, fmt: OutputFormat | str) -> OutputFormat:
        """Refuse, before any video, an output format that cannot hold what the models make."""
        fmt = fmt if isinstance(fmt, OutputFormat) else get_format(fmt)
        model_set.check_format(self.models, fmt)
        return fmt

    def check_formats(
        self, formats: OutputFormat | str | Sequence[OutputFormat | str]
    ) -> tuple[OutputFormat, ...]:
        """:meth:`check_format` for each format asked (``"slp,csv"``, a list, or one);
        the first format that cannot hold what the models make is named."""
        found = get_formats(formats)
        for fmt in found:
            model_set.check_format(self.models, fmt)
        return found

    # ------------------------------------------------------------- running
    def sink(
        self,
        then: Callable[[BatchPredictions, Any], None],
        online: OnlineTracker | None,
    ) -> Callable[[BatchPredictions], None]:
        """What every predicted batch goes through, in frame order, before ``then`` gets it
        (with the tracker's state after it): sleap-nn's instance post-filters, then tracking."""
        filters = self.filters

        def sink(preds: BatchPredictions) -> None:
            if filters is not None:
                preds.valid = filter_instances(
                    preds.points,
                    preds.point_scores,
                    preds.instance_scores,
                    preds.valid,
                    centroids=preds.extras.get("centroids"),
                    **filters.op_kwargs(),
                )
            snapshot = online.track(preds) if online is not None else None
            preds.extras.pop(IMAGES, None)
            then(preds, snapshot)

        return sink

    def run_batch_size(self, total: int) -> int | None:
        """The batch size for ``total`` frames (None: the runner's own). ``batch_size=1000``
        on 166 frames must not allocate (and run) 834 blank frames."""
        return None if self.pads_short_videos else max(1, min(self.batch_size, total))
