"""The Pipeline: models, their layer and the runner, loaded and warmed once, used for every input.

Everything about *what* runs is settled when the pipeline is built, once,
whichever way it is used afterwards: the models load (``strict=True``) and
combine into one layer, overrides and ``--centroid-only`` apply, tracking
options resolve for these models, and :attr:`Pipeline.products` says what
comes out (poses, masks, boxes, re-ID vectors). Then:

* :meth:`Pipeline.predict` runs frames in memory (numpy arrays, a list of
  frames, a video or image-folder path, a ``sio.Video``, a SLEAP project) and
  returns a :class:`~sleap_infer.pipeline.result.Prediction`;
* :meth:`Pipeline.predict_to_file` runs one video into a journal and an
  output file (:mod:`sleap_infer.pipeline.video_job`: resumable, atomic,
  never over a finished output unless ``overwrite``);
* a lone embedding model has no frames to run on: it embeds the detections
  of a SLEAP project (:mod:`sleap_infer.pipeline.labels_embedding`), and the
  pipeline routes a ``.slp`` there.

Both in-memory and file runs go through the same runner, the same per-batch
filters and the same online tracker, so their predictions are the same bits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleap_infer.core.errors import UsageError
from sleap_infer.core.filters import InstanceFilters
from sleap_infer.core.options import PredictOptions
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.products import Product
from sleap_infer.core.startup import span
from sleap_infer.core.tracking import TrackingOptions
from sleap_infer.layers import build_layer
from sleap_infer.layers.base import InferenceLayer
from sleap_infer.layers.build import layer_class
from sleap_infer.model.loader import LoadedModel
from sleap_infer.ops.instance_filters import filter_instances
from sleap_infer.pipeline import models as model_set
from sleap_infer.pipeline.spec import PipelineSpec
from sleap_infer.runner import Runner
from sleap_infer.runtimes import backend_maker, get_runtime
from sleap_infer.sources.project_frames import ProjectSelection
from sleap_infer.tracking.online import IMAGES, OnlineTracker
from sleap_infer.writers.registry import FORMATS, OutputFormat, get_format

if TYPE_CHECKING:
    from sleap_infer.pipeline.result import Prediction
    from sleap_infer.pipeline.video_job import VideoResult
    from sleap_infer.sources.arrays import Source
    from sleap_infer.sources.video import VideoInfo


class Pipeline:
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

    @classmethod
    def from_paths(
        cls,
        model_paths: Sequence[str | Path],
        backend: str = "torch",
        device: str = "auto",
        **options: Any,
    ) -> Pipeline:
        """A pipeline for ``model_paths``; ``options`` are ``infer predict``'s option names."""
        from sleap_infer.pipeline.spec import bind

        return cls(bind(tuple(str(p) for p in model_paths), backend, **options), device)

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
    def device(self) -> str:
        return str(self.layer.device)

    @property
    def batch_size(self) -> int:
        return self.spec.batch_size

    @property
    def options(self) -> PredictOptions:
        return self.spec.options

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
        return f"Pipeline({self.describe()}, {self.backend_name}/{self.device})"

    def check_format(self, fmt: OutputFormat | str) -> OutputFormat:
        """Refuse, before any video, an output format that cannot hold what the models make."""
        fmt = fmt if isinstance(fmt, OutputFormat) else get_format(fmt)
        model_set.check_format(self.models, fmt)
        return fmt

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

    def predict(
        self,
        source: Source,
        *,
        frames: str | Sequence[int] | range | None = None,
        batch_size: int | None = None,
    ) -> Prediction:
        """Predict ``source`` in memory (nothing is written).

        ``source``: a uint8 array ``(H, W)``, ``(H, W, C)``, ``(N, H, W)`` or
        ``(N, H, W, C)``; a list of such frames; a video file, image folder or glob;
        a ``sio.Video``; or a SLEAP project (``.slp``). ``frames``: which frames
        (``"0-99,200"``, or indices); ``batch_size`` overrides the pipeline's.
        """
        from sleap_infer.pipeline.frames_job import predict_in_memory

        if self.embeds_labels:
            raise UsageError(
                "an embedding model alone embeds the detections of a SLEAP project: use "
                "predict_to_file(project.slp, ...), or load it with a centroid or box "
                "detector model to embed what that finds"
            )
        return predict_in_memory(self, source, frames, batch_size)

    def predict_to_file(
        self,
        video: str | Path,
        output: str | Path | None = None,
        *,
        frames: str | None = None,
        format: str | OutputFormat = "slp",
        resume: bool = False,
        overwrite: bool = False,
        video_index: int | None = None,
        on_start: Callable[[VideoInfo, int], None] | None = None,
        on_progress: Callable[[int], None] | None = None,
        extra_provenance: dict[str, Any] | None = None,
    ) -> VideoResult:
        """Predict one video (or image folder, or SLEAP project) into ``output``.

        With ``infer predict``'s guarantees: predictions stream into a journal
        beside the output, so an interrupted run continues with ``resume=True``;
        the output appears whole (atomic rename) or not at all; a finished
        output (or any other file) at ``output`` is never replaced unless
        ``overwrite=True``. Default output: ``<video>.predictions.slp``.
        """
        from sleap_infer.pipeline.video_job import embed_labels, predict_video

        fmt = self.check_format(format if format is not None else FORMATS["slp"])
        if self.embeds_labels:
            return embed_labels(self, Path(video), output, fmt, overwrite)
        return predict_video(
            self,
            video,
            output,
            fmt,
            frames=frames,
            resume=resume,
            overwrite=overwrite,
            video_index=video_index,
            on_start=on_start,
            on_progress=on_progress,
            extra_provenance=extra_provenance,
        )


def check_spec(spec: PipelineSpec, devices: list[str], fmt: OutputFormat | None) -> list[str]:
    """Before spawning workers: the models load and combine, and every device exists.

    Builds the layer once on the CPU with torch (cheap: no export, no device), so a
    model that cannot run is one error here rather than one per worker. Returns
    warnings about the models (as :attr:`Pipeline.warnings`).
    """
    models = model_set.load_models(
        spec.model_paths, spec.backend, spec.centroid_only, spec.overrides
    )
    if fmt is not None:
        model_set.check_format(models, fmt)
    for device in devices:
        backend_maker(spec.backend, device, **spec.backend_options.maker_kwargs())
    layer = build_layer(models, backend_maker("torch", "cpu"), spec.options)
    if spec.tracking is not None:
        model_set.resolve_tracking(models, spec.tracking, len(layer.config.node_names))
    return model_set.skeleton_warnings(models, model_set.output_model(models, layer.config))
