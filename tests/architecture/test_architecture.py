"""The structure holds: one registry per model type, runtimes chosen up front, defaults once.

These are behaviour tests of the seams between floors (registry -> parser ->
layer choice -> backend maker), not of any one model type's numbers.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch
import typer.main
from typer.testing import CliRunner

from sleap_infer.batch.execute import JobSettings
from sleap_infer.batch.pool import _cpu_threads
from sleap_infer.batch.run import plan_batch, run_batch
from sleap_infer.batch.tasks import DONE, FAILED, SKIPPED, VideoOutcome, VideoTask
from sleap_infer.cli import app
from sleap_infer.core.errors import UsageError
from sleap_infer.core.options import DecodeSettings, PredictOptions
from sleap_infer.layers import SingleInstanceLayer, build_layer, exported_layer_class, layer_class
from sleap_infer.layers.exported import ExportedSingleInstanceLayer
from sleap_infer.model import registry
from sleap_infer.model.config import parse_config
from sleap_infer.model.loader import LoadedModel, load_model
from sleap_infer.model.registry import MODEL_TYPES, HeadSpec, ModelType, load_class
from sleap_infer.pipeline.spec import PipelineSpec
from sleap_infer.runtimes import RUNTIMES, backend_maker, get_runtime
from sleap_infer.writers.registry import get_format

import scene
from conftest import SYNTHETIC_MODEL
from fakes import FakeBackend
from model_factory import config_dict, write_model_dir


# ------------------------------------------------------------------ registry
@pytest.mark.parametrize("name", list(MODEL_TYPES))
def test_every_registry_entry_names_classes_that_exist_and_agree(name: str) -> None:
    entry = MODEL_TYPES[name]
    assert load_class(entry.layer).model_type == name
    assert layer_class(name) is load_class(entry.layer)
    if entry.exported_layer is not None:
        exported = exported_layer_class(name)
        assert exported.model_type == name and exported.decodes_in_graph
        assert issubclass(exported, load_class(entry.layer))  # only the decode step differs
    if entry.wrapper is not None:
        assert load_class(entry.wrapper).model_type == name
    assert entry.in_graph, "an exportable type says what its graph does"
    if entry.pair is not None:
        assert entry.pair.detector in MODEL_TYPES
        assert load_class(entry.pair.layer).model_type == entry.pair.name


@pytest.mark.parametrize("name", list(MODEL_TYPES))
def test_parsed_heads_follow_the_registry(name: str) -> None:
    config = parse_config(config_dict(name))
    specs = MODEL_TYPES[name].heads
    assert [h.name for h in config.heads] == [s.name for s in specs]
    assert [h.section for h in config.heads] == [s.section for s in specs]
    expected = {"nodes": 3, "one": 1, "paf_components": 4, "classes": 2, "two": 2}
    expected["embedding_dim"] = 8  # the model factory's embedding size
    assert [h.channels for h in config.heads] == [expected[s.channels] for s in specs]


class _MidpointLayer(SingleInstanceLayer):
    """A made-up model type for the test below: single-instance decoding, its own head."""

    model_type = "midpoint"


def test_a_new_model_type_is_one_registry_entry_plus_its_layer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Config parsing, network building, strict loading and layer choice all follow the
    entry: nothing else is edited to add a type."""
    module = ModuleType("midpoint_plugin")
    module.MidpointLayer = _MidpointLayer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "midpoint_plugin", module)
    entry = ModelType(
        "midpoint",
        heads=(HeadSpec("MidpointConfmapsHead", "confmaps"),),
        layer="midpoint_plugin:MidpointLayer",
    )
    monkeypatch.setitem(MODEL_TYPES, "midpoint", entry)
    raw = config_dict("single_instance")
    heads = raw["model_config"]["head_configs"]
    heads["midpoint"] = heads.pop("single_instance")
    model = load_model(write_model_dir(tmp_path / "m", raw))
    assert model.model_type == "midpoint"
    assert [h.name for h in model.config.heads] == ["MidpointConfmapsHead"]
    layer = build_layer([model], backend_maker("torch", "cpu"), PredictOptions())
    assert type(layer) is _MidpointLayer
    preds = layer.predict(np.zeros((2, 64, 64, 1), np.uint8))
    assert preds.points.shape == (2, 1, 3, 2)
    with pytest.raises(UsageError, match="'midpoint' cannot run on an exported backend"):
        build_layer([model], _RecordingMaker(in_graph=True), PredictOptions())


def test_unknown_types_say_so() -> None:
    with pytest.raises(Exception, match="unknown model type 'pose2000'"):
        registry.model_type("pose2000")


def test_pair_roles_in_either_order() -> None:
    assert registry.pair_roles(["centroid", "centered_instance"]) == (0, 1)
    assert registry.pair_roles(["multi_class_topdown", "centroid"]) == (1, 0)
    for types in (["centroid", "centroid"], ["bottomup", "centered_instance"], ["centroid"]):
        assert registry.pair_roles(types) is None


# -------------------------------------------------------------- typed config
def test_null_strides_mean_the_defaults_not_a_crash() -> None:
    unet = parse_config(config_dict("single_instance", unet={"max_stride": None}))
    assert unet.max_stride == 16 and unet.backbone_type == "unet"
    convnext = {"model_type": "tiny", "output_stride": 2, "stem_patch_stride": None}
    cfg = parse_config(config_dict("single_instance", backbone=("convnext", convnext)))
    assert cfg.max_stride == 32 and cfg.backbone.decoder.stem_stride == 2  # type: ignore[union-attr]


# ------------------------------------------------------------------ runtimes
def test_runtimes_say_what_they_need() -> None:
    assert list(RUNTIMES) == ["torch", "onnx", "openvino", "trt"]
    torch_rt, onnx_rt, trt_rt = (get_runtime(n) for n in ("torch", "ONNX", " trt "))
    openvino_rt = get_runtime("openvino")
    # OpenVINO runs ONNX Runtime's exports: same files, same cache entries.
    assert openvino_rt.export_formats == ("onnx",) and openvino_rt.export_key == "onnx"
    assert not torch_rt.decodes_in_graph and torch_rt.export_formats == ()
    assert onnx_rt.decodes_in_graph and onnx_rt.export_formats == ("onnx",)
    assert trt_rt.static_batch and not onnx_rt.static_batch
    assert trt_rt.export_formats == ("onnx", "trt")  # the engine is built from the ONNX file
    with pytest.raises(UsageError, match="unknown backend 'tf' .*torch, onnx, openvino, trt"):
        get_runtime("tf")


def test_makers_resolve_the_device_once_and_check_flags_up_front() -> None:
    maker = backend_maker("torch", "cpu", bf16=True)
    assert maker.device == torch.device("cpu") and not maker.decodes_in_graph
    onnx = backend_maker("onnx", "auto")
    assert onnx.decodes_in_graph and isinstance(onnx.device, torch.device)
    with pytest.raises(UsageError, match="--compile applies to --backend torch only"):
        backend_maker("onnx", "cpu", compile=True)
    with pytest.raises(UsageError, match="--bf16 applies to --backend torch or openvino, not"):
        backend_maker("onnx", "cpu", bf16=True)


class _RecordingMaker:
    """A BackendMaker that records what it built; backends return all-zero maps/peaks."""

    def __init__(self, in_graph: bool) -> None:
        self.decodes_in_graph = in_graph
        self.built: list[tuple[str, list[str]]] = []

    def __call__(self, model: LoadedModel, partners: Sequence[LoadedModel] = ()) -> FakeBackend:
        self.built.append((model.model_type, [p.model_type for p in partners]))
        backend = FakeBackend(lambda x: {})
        backend.does_baked_postproc = self.decodes_in_graph
        return backend


def test_layer_class_is_chosen_before_the_one_backend_is_built(tmp_path: Path) -> None:
    single = load_model(write_model_dir(tmp_path / "s", config_dict("single_instance")))
    maker = _RecordingMaker(in_graph=True)
    layer = build_layer([single], maker, PredictOptions(refine=False))
    assert type(layer) is ExportedSingleInstanceLayer
    assert maker.built == [("single_instance", [])]  # built once, for the chosen layer
    assert layer.backend.decode == DecodeSettings(refine=False)  # type: ignore[attr-defined]
    centroid = load_model(write_model_dir(tmp_path / "c", config_dict("centroid")))
    instance = load_model(write_model_dir(tmp_path / "i", config_dict("centered_instance")))
    maker = _RecordingMaker(in_graph=False)
    build_layer([instance, centroid], maker, PredictOptions())
    # Each stage's backend knows the other model: exporting backends search its folders.
    assert maker.built == [("centroid", ["centered_instance"]), ("centered_instance", ["centroid"])]


def test_layers_refuse_a_backend_of_the_other_kind(tmp_path: Path) -> None:
    config = parse_config(config_dict("single_instance"))
    baked = FakeBackend(lambda x: {})
    baked.does_baked_postproc = True
    with pytest.raises(TypeError, match="SingleInstanceLayer needs a backend returning raw"):
        SingleInstanceLayer(config, baked)
    with pytest.raises(TypeError, match="needs a backend returning an exported graph"):
        ExportedSingleInstanceLayer(config, FakeBackend(lambda x: {}))


# ------------------------------------------------------------ options, once
def _cli_defaults(command: str) -> dict[str, object]:
    click_app = typer.main.get_command(app)
    params = click_app.commands[command].params  # type: ignore[attr-defined]
    return {p.name: p.default for p in params}


def test_cli_defaults_are_the_option_records_defaults() -> None:
    predict, export, bench = (_cli_defaults(c) for c in ("predict", "export", "bench"))
    options, decode = PredictOptions(), DecodeSettings()
    for name in ("peak_threshold", "integral_patch_size", "n_points", "max_edge_length_ratio"):
        assert predict[name] == getattr(options, name) == export[name] == getattr(decode, name)
    assert (
        predict["dist_penalty_weight"]
        == options.dist_penalty_weight
        == export["dist_penalty_weight"]
    )
    assert predict["min_line_scores"] == options.min_line_scores
    assert predict["min_instance_peaks"] == options.min_instance_peaks
    assert export["max_peaks"] == decode.max_peaks
    assert bench["peak_threshold"] == options.peak_threshold


def test_cpu_workers_share_this_process_core_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sleap_infer.batch.pool.cpu_budget", lambda: 6)
    assert _cpu_threads(["cpu", "cpu", "cuda:0"]) == 3
    assert _cpu_threads(["cpu"] * 8) == 1
    assert _cpu_threads(["cuda:0", "cuda:1"]) is None


# ----------------------------------------------------------- batch from Python
class _Events:
    def __init__(self) -> None:
        self.started: list[tuple[str, int]] = []
        self.finished: list[str] = []

    def video_started(self, task: VideoTask, total_frames: int) -> None:
        self.started.append((task.video.name, total_frames))

    def frames_done(self, task: VideoTask, n: int) -> None:
        pass

    def video_finished(self, outcome: VideoOutcome) -> None:
        self.finished.append(outcome.status)


def test_run_batch_is_callable_without_the_command_line(tmp_path: Path) -> None:
    scene.write_video(tmp_path / "a.mp4", n_frames=6)
    fmt = get_format("slp")
    tasks = plan_batch([tmp_path / "a.mp4", tmp_path / "missing.mp4"], tmp_path / "out", fmt)
    spec = PipelineSpec(model_paths=(str(SYNTHETIC_MODEL),))
    events = _Events()
    result = run_batch(tasks, spec, JobSettings(), events, devices=["cpu"])
    assert [o.status for o in result.outcomes] == [DONE, FAILED] and result.failed
    assert events.started == [("a.mp4", 6)]
    assert result.outcomes[0].counts.frames == 6
    assert "missing.mp4: video not found" in result.outcomes[1].message
    assert (tmp_path / "out" / "a.mp4.predictions.slp").is_file()
    again = run_batch(tasks[:1], spec, JobSettings(), _Events(), ["cpu"])
    assert [o.status for o in again.outcomes] == [SKIPPED] and not again.failed


def test_choices_are_validated_and_listed_by_the_command_line() -> None:
    runner = CliRunner()
    help_text = runner.invoke(app, ["predict", "--help"], env={"COLUMNS": "160"}).output
    assert "torch|onnx|openvino|trt" in help_text and "slp|nwb|analysis-h5|csv" in help_text
    export_help = runner.invoke(app, ["export", "--help"], env={"COLUMNS": "160"}).output
    assert "-f, --format, --runtime" in export_help
    assert "onnx|openvino|trt|tensorrt|both" in export_help
    bench_help = runner.invoke(app, ["bench", "--help"], env={"COLUMNS": "160"}).output
    assert "torch, onnx, openvino, trt, all" in bench_help
