"""Find an export that fits a model and an input shape, or make one on first use.

Lookup order: ``<model>/exported`` (and its subfolders), as written by
``infer export``; the stage folders of top-down pair exports
(``exported_topdown/``, ``exported_multi_class_topdown/``) in this model's
directory or its partner's (``exported_topdown_segmentation/`` too); then the
cache, ``$SLEAP_INFER_CACHE`` or ``~/.cache/sleap_infer/exports``, one folder
per key. The key hashes all that changes the graph or engine: checkpoint
bytes, model type, what the graph returns (decoded peaks, or raw maps for
segmentation and tiled models: a tiled model may share its checkpoint with an
untiled twin), baked decoding, input shape, batch mode, opset, precision,
runtime (and for TensorRT its version and the GPU architecture), the input
scale and crop size (``infer export --input-scale`` / ``--crop-size`` change
them), plus sleap_infer's version.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import sleap_infer
from sleap_infer.core.artifact import (
    EXPORT_FOLDER,
    EXPORT_LAYOUT_VERSION,
    METADATA_NAME,
    RAW_MAPS,
    ExportInfo,
    pair_folder_name,
    read_export,
)
from sleap_infer.core.errors import ExportError
from sleap_infer.core.options import DecodeSettings
from sleap_infer.export.exporter import export_model
from sleap_infer.export.settings import DEFAULT_OPSET, ExportSettings, stable_key
from sleap_infer.export.wrappers import RawMapsWrapper, wrapper_for
from sleap_infer.model.loader import LoadedModel
from sleap_infer.model.registry import pipeline_names
from sleap_infer.runtimes.contract import EngineTarget, ExportTarget

CACHE_ENV = "SLEAP_INFER_CACHE"


def cache_root() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path("~/.cache/sleap_infer/exports").expanduser()


_FALLBACK: list[Path] = []  # this process's temporary cache, once one was needed
_COMPILED_WRITABLE: dict[Path, bool] = {}  # compiled-model folders tried this process


def _unwritable(root: Path) -> str | None:
    """Why exports cannot be written under ``root`` (tried, not guessed: root ignores
    permission bits), or None."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=root)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def writable_cache_root(say: Callable[[str], None]) -> Path:
    """Where a new export goes: the cache, or (once per process, with a warning naming the
    cache and ``$SLEAP_INFER_CACHE``) a temporary cache removed at exit when the cache
    cannot be written. Prediction goes on either way; only the reuse across runs is lost."""
    root = cache_root()
    problem = _unwritable(root)
    if problem is None:
        return root
    if not _FALLBACK:
        try:
            temporary = Path(tempfile.mkdtemp(prefix="sleap_infer-exports-"))
        except OSError as exc:
            raise ExportError(
                f"export cache {root} is not writable ({problem}), nor is a temporary folder "
                f"({exc.strerror or exc}); set {CACHE_ENV} to a writable folder"
            ) from exc
        atexit.register(shutil.rmtree, temporary, True)
        _FALLBACK.append(temporary)
        say(
            f"warning: export cache {root} is not writable ({problem}); exporting into a "
            f"temporary cache {temporary} for this run (set {CACHE_ENV} to a writable "
            "folder to keep exports between runs)"
        )
    return _FALLBACK[0]


COMPILED_CACHE = "openvino-compiled"
"""The export cache's subfolder for OpenVINO's compiled models (no export metadata in it,
so export lookups pass it by)."""


def compiled_cache_dir() -> Path | None:
    """Where OpenVINO keeps compiled models between runs, or None when the cache cannot be
    written (a read-only home, a full disk): the run then compiles as if it were its first,
    without a warning, since nothing but that start-up saving is lost.

    Tried once per folder and process (a run opens one backend per model and runtime, a
    batch of videos many): the answer is a file created and removed, not worth repeating.
    """
    folder = cache_root() / COMPILED_CACHE
    writable = _COMPILED_WRITABLE.get(folder)
    if writable is None:
        writable = _COMPILED_WRITABLE[folder] = _unwritable(folder) is None
    return folder if writable else None


@dataclass(frozen=True)
class ExportRequest:
    """What a running layer needs from an export."""

    runtime: ExportTarget
    input_shape: tuple[int, int, int, int]  # the batch a backend is about to run
    decode: DecodeSettings
    fp16: bool = False
    opset: int = DEFAULT_OPSET
    target: EngineTarget | None = None  # TensorRT version and GPU, for engines
    raw_maps: bool = False  # the network's raw maps, decoded on the host (segmentation, tiled)

    @property
    def static_batch(self) -> bool:
        return self.runtime.static_batch

    @property
    def needs_engine(self) -> bool:
        return "trt" in self.runtime.export_formats


def misfit(info: ExportInfo, model: LoadedModel, request: ExportRequest) -> str | None:
    """Why ``info`` cannot serve ``request`` for ``model``, or None if it can."""
    if info.checkpoint_sha256 != model.checkpoint_sha256:
        return "it was exported from a different best.ckpt"
    if info.model_type != model.model_type:
        return f"it is a {info.model_type} export"
    if (info.data.get("precision") == "fp16") != request.fp16:
        return f"it is {info.data.get('precision')}"
    if info.raw_maps != request.raw_maps:
        if info.raw_maps:
            return "it returns raw maps, and this model decodes in-graph"
        return "it decodes in-graph, and this model needs raw maps (decoded on the host)"
    why = _preprocessing_misfit(info, model)
    if why is not None:
        return why
    why = info.misfit(request.input_shape) or info.decode_misfit(request.decode)
    if why is not None:
        return why
    if request.needs_engine:
        return _engine_misfit(info, request)
    return None


def _preprocessing_misfit(info: ExportInfo, model: LoadedModel) -> str | None:
    """An export traced for another input scale or crop size (``infer export --input-scale``
    / ``--crop-size``) divides its coordinates by that scale, or was cut for those crops:
    never reuse it for a model run at its own (the input shape may match by chance)."""
    pre = model.config.preprocessing
    scale = info.data.get("input_scale", pre.scale)
    if scale != pre.scale:
        return f"it was exported for input scale {scale}, not {pre.scale}"
    crop = info.data.get("crop_size", pre.crop_size)
    if crop != pre.crop_size:
        return f"it was exported for crop size {crop}, not {pre.crop_size}"
    return None


def _engine_misfit(info: ExportInfo, request: ExportRequest) -> str | None:
    meta = info.data.get("tensorrt")
    if info.engine_path is None or not info.engine_path.is_file() or not meta:
        return "it has no TensorRT engine"
    target = request.target
    if target is not None and meta.get("tensorrt_version") != target.trt_version:
        return f"its engine is for TensorRT {meta.get('tensorrt_version')}"
    if target is not None and meta.get("compute_capability") != target.gpu.compute_capability:
        return f"its engine is for {meta.get('gpu_name')}"
    low, high = meta["profile"]["min"][0], meta["profile"]["max"][0]
    if not low <= request.input_shape[0] <= high:
        return f"its engine takes batches of {low}-{high}"
    return None


def candidates_next_to(model_dir: Path, partners: Sequence[Path] = ()) -> list[Path]:
    """Export folders to try for a model, before the cache.

    ``partners``: the other model directories of a top-down pair, whose pair
    exports hold this model's stage too.
    """
    root = model_dir / EXPORT_FOLDER
    found = [root] if (root / METADATA_NAME).is_file() else []
    if root.is_dir():
        found += sorted(p for p in root.iterdir() if (p / METADATA_NAME).is_file())
    for folder in (model_dir, *partners):
        for pipeline in pipeline_names():
            pair = folder / pair_folder_name(pipeline)
            if pair.is_dir():
                found += sorted(p for p in pair.iterdir() if (p / METADATA_NAME).is_file())
    return found


def cache_key(model: LoadedModel, request: ExportRequest) -> str:
    wrapper = RawMapsWrapper if request.raw_maps else wrapper_for(model.model_type)
    decode = wrapper.normalise(request.decode)
    payload: dict[str, Any] = {
        "layout": EXPORT_LAYOUT_VERSION,
        "sleap_infer": sleap_infer.__version__,
        "checkpoint": model.checkpoint_sha256,
        "model_type": model.model_type,
        "decode": {k: v for k, v in vars(decode).items() if k != "peak_threshold"},
        "shape": list(request.input_shape[1:]),
        "batch": request.input_shape[0] if request.static_batch else "dynamic",
        "opset": request.opset,
        "fp16": request.fp16,
        "runtime": request.runtime.export_key,
        # Baked into the graph's coordinates (scale) or its crops: an export with another
        # --input-scale / --crop-size is another entry, whatever its input shape.
        "input_scale": model.config.preprocessing.scale,
        "crop_size": model.config.preprocessing.crop_size,
    }
    if request.raw_maps:  # only then, so keys of decoding exports stay as they were
        payload["graph_outputs"] = RAW_MAPS
    if request.target is not None:
        payload["trt"] = request.target.trt_version
        payload["gpu"] = vars(request.target.gpu)
    return stable_key(payload)


class ExportNotice(str):
    """A notice that starts or ends a fresh export: still a plain ``str`` to any ``notify``
    callback, while a progress display can read ``stage`` (``started``, ``finished`` or
    ``failed``) and ``seconds`` to show the export as its own stage and keep its time
    out of the prediction's rate and ETA (a first ONNX export takes seconds to minutes,
    and it happens on the first batch, inside the video's clock)."""

    stage: str
    seconds: float | None

    def __new__(cls, text: str, stage: str, seconds: float | None = None) -> ExportNotice:
        notice = super().__new__(cls, text)
        notice.stage = stage
        notice.seconds = seconds
        return notice

    def __reduce__(self) -> tuple[Any, ...]:  # ``--devices`` workers pickle their notices
        return (ExportNotice, (str(self), self.stage, self.seconds))


def ensure_export(
    model: LoadedModel,
    request: ExportRequest,
    device: str = "auto",
    notify: Callable[[str], None] | None = None,
    partners: Sequence[Path] = (),
) -> ExportInfo:
    """An export serving ``request``: next to the model, in the cache, or freshly made
    (an export folder run on its own: that folder, or an error saying why it cannot)."""
    if model.export_dir is not None:
        return own_export(model, request)
    say = notify or (lambda _msg: None)
    skipped: list[str] = []
    for candidate in candidates_next_to(model.path, partners):
        try:
            info = read_export(candidate)
        except ExportError as exc:
            skipped.append(str(exc))
            continue
        if info.model_type != model.model_type:
            continue  # e.g. the other stage of a top-down pair export: not worth a notice
        why = misfit(info, model, request)
        if why is None:
            return info
        skipped.append(f"{candidate}: {why}")
    target = cache_root() / cache_key(model, request)
    if (target / METADATA_NAME).is_file():
        try:
            info = read_export(target)
            if misfit(info, model, request) is None:
                return info
        except ExportError:
            pass  # damaged cache entry: rebuild it below
    for line in skipped:
        say(f"not using {line}")
    target = writable_cache_root(say) / target.name
    shape = "x".join(str(d) for d in request.input_shape)
    kind = ", raw maps decoded on the host" if request.raw_maps else ""
    what = f"{model.path.name} to {request.runtime.name}"
    say(
        ExportNotice(
            f"Exporting {what} for {shape} input{kind} (first use; cached in {target})", "started"
        )
    )
    settings = ExportSettings(
        formats=request.runtime.export_formats,
        opset=request.opset,
        fp16=request.fp16,
        batch_size=request.input_shape[0] if request.static_batch else None,
        decode=request.decode,
    )
    t0 = time.perf_counter()
    try:
        info = export_model(
            model,
            target,
            settings,
            device=device,
            notify=say,
            network_shape=request.input_shape[1:],
        )
    except BaseException:
        say(ExportNotice(f"exporting {what} failed", "failed", time.perf_counter() - t0))
        raise
    seconds = time.perf_counter() - t0
    say(ExportNotice(f"exported {what}: done in {seconds:.1f} s", "finished", seconds))
    why = misfit(info, model, request)
    if why is not None:  # a bug, not a user error: say so plainly
        raise ExportError(f"{target}: fresh export does not fit its own request ({why})")
    return info


def own_export(model: LoadedModel, request: ExportRequest) -> ExportInfo:
    """The export folder a model was loaded from, if it can serve ``request``: there is no
    checkpoint to export again from. Its precision is its own (an fp16 export runs in fp16
    without ``--fp16``)."""
    assert model.export_dir is not None
    info = read_export(model.export_dir)
    fp16 = info.data.get("precision") == "fp16"
    if request.fp16 and not fp16:
        raise ExportError(f"{model.export_dir}: --fp16 asked, but the export is fp32")
    why = misfit(info, model, replace(request, fp16=fp16))
    if why is not None:
        raise ExportError(
            f"{model.export_dir}: this exported model cannot run the request: {why} "
            "(export the model again with matching options, or run its model directory)"
        )
    return info
