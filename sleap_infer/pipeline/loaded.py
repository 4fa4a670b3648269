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

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from sleap_infer.core.errors import BackendError, ExportError, UsageError
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
from sleap_infer.runtimes.choose import AUTO, AutoBackend, Choice
from sleap_infer.runtimes.inventory import usable_export
from sleap_infer.sources.project_frames import ProjectSelection
from sleap_infer.tracking.online import IMAGES, OnlineTracker
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.writers.registry import OutputFormat, get_format, get_formats

BEFORE_FIRST_RUN = "no run yet: each run picks its runtime (--backend auto)"
"""An ``auto`` pipeline's reason before its first run (its label then says ``auto/...``)."""


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
        self._device = device
        # Videos this run has still to predict, this one included (set by the batch):
        # auto weighs a first export against all their frames.
        self.videos_ahead = 1
        self._built: dict[str, tuple[InferenceLayer, Runner]] = {}
        # ``--backend auto``: each run picks its runtime (prepare_run). Until then torch's
        # layer answers what every runtime's layer shares (node names, input channels, the
        # layer's class): 2 ms to build, and what a short run uses anyway. The layer a long
        # run gets (OpenVINO's: 20 ms and the exported-layer imports) is built by the first
        # run that picks it, and its checks (a model that does not export) happen there,
        # before any frame, as the first export does. Without torch among the candidates
        # (an export folder), the runtime a long input would get.
        self.auto: AutoBackend | None = None
        if spec.backend == AUTO:
            self.auto = model_set.auto_backend(self.models, device, spec, self.embeds_labels)
            if "torch" in self.auto.candidates:
                self._use(Choice("torch", BEFORE_FIRST_RUN))
            else:
                self._use(self.auto.choose(None, self.has_export))
        else:
            self._use(Choice(get_runtime(spec.backend).name, "asked for"))
        # Resolved for these models; a lone embedding model re-tracks its labels file with
        # the options as given (:func:`~sleap_infer.pipeline.retrack.retrack_labels`).
        self.tracking: TrackingOptions | None = None
        if spec.tracking is not None and not self.embeds_labels:
            n_nodes = len(self.layer.config.node_names)
            self.tracking = model_set.resolve_tracking(self.models, spec.tracking, n_nodes)
        self.warnings = model_set.skeleton_warnings(self.models, self.primary)

    def _use(self, choice: Choice) -> None:
        """Run on ``choice.runtime`` from now on (its layer built once, on first use).
        Under ``auto``, a runtime these models cannot be built for falls back to torch."""
        if choice.runtime not in self._built:
            try:
                self._built[choice.runtime] = self._build(choice.runtime)
            except (UsageError, ExportError, BackendError) as exc:
                if self.auto is None or choice.runtime == "torch":
                    raise
                self._fall_back(choice, exc)
                return
        self.layer, self.runner = self._built[choice.runtime]
        runtime = get_runtime(choice.runtime)
        self.backend_name = runtime.name
        self.backend_reason = choice.reason
        # Engines built for one exact batch need every batch padded to it; everything else
        # takes a short video in one smaller batch instead of padding it with blank frames.
        self.pads_short_videos = runtime.static_batch

    def _build(self, name: str) -> tuple[InferenceLayer, Runner]:
        make_backend = get_runtime(name).maker(
            self._device, **self.spec.backend_options.maker_kwargs()
        )
        with span("layer_build"):
            if self.embeds_labels:
                model = self.models[0]
                layer: InferenceLayer = layer_class(model.model_type)(
                    model.config, make_backend(model), self.spec.options
                )
            else:
                layer = build_layer(self.models, make_backend, self.spec.options)
        return layer, Runner(layer, batch_size=self.spec.batch_size)

    def has_export(self, runtime: str) -> bool:
        """Whether every model has an export ``runtime`` can run already (beside it or in
        the cache, made from this checkpoint): then choosing it costs no export."""
        return all(
            usable_export(model.path, model.model_type, model.checkpoint_sha256, runtime,
                          [m.path for m in self.models if m is not model])
            for model in self.models
        )  # fmt: skip

    def prepare_run(self, total: int, frame_shape: tuple[int, int, int] | None = None) -> None:
        """Before each run of ``total`` frames: with ``--backend auto``, its runtime.

        ``frame_shape`` ``(H, W, C)``: the frames the run hands the layer. When the choice
        needs a first export, it is made now, on the warmup the run would do anyway, so a
        model that does not export (or a runtime that cannot compile it) falls back to torch
        before any frame is predicted, with a note, instead of failing the run.
        """
        if self.auto is None:
            return
        found: dict[str, bool] = {}  # each runtime's exports looked up once per run

        def exported(runtime: str) -> bool:
            if runtime not in found:
                found[runtime] = self.has_export(runtime)
            return found[runtime]

        choice = self.auto.choose(total * max(1, self.videos_ahead), exported)
        self._use(choice)
        if choice.runtime == "torch" or frame_shape is None or exported(choice.runtime):
            return
        batch = self.run_batch_size(total) or self.batch_size
        try:
            self.runner.warmup((batch, *frame_shape))
        except (ExportError, BackendError) as exc:
            self._fall_back(choice, exc)

    def _fall_back(self, choice: Choice, exc: Exception) -> None:
        """``auto``'s pick cannot run these models here: torch, said once (the CLI's note
        line, else a warning) and recorded as the reason."""
        why = f"{choice.runtime} could not run these models here ({exc}): torch instead"
        self._use(Choice("torch", why))
        notify = self.spec.backend_options.notify
        if notify is not None:
            notify(f"--backend auto: {why}")
        else:
            warnings.warn(f"--backend auto: {why}", RuntimeWarning, stacklevel=4)

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
        """``TopDownLayer (centroid, centered_instance)``: what runs, on any runtime (the
        runtime is :attr:`backend_label`'s)."""
        return f"{self.layer_name} ({model_set.describe(self.models)})"

    @property
    def backend_label(self) -> str:
        """``openvino/cpu``, or ``auto/cpu`` before an auto pipeline's first run."""
        return f"{self.spec.backend if self.auto else self.backend_name}/{self.device}"

    @property
    def layer_name(self) -> str:
        """The layer's class, whichever runtime runs it (``SingleInstanceLayer`` also on an
        exported graph): what a journal's predictions depend on, unlike the runtime."""
        return type(self.layer).__name__.removeprefix("Exported")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()}, {self.backend_label})"

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
