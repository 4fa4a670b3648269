"""Raw-maps exports: segmentation and tiled models run on ONNX Runtime (and TensorRT) as the
network alone, their maps decoded on the host by the same layers as on the torch path.

Random-weight models check the graph (outputs equal the torch network's), the metadata,
the cache and the pair folder; the real sleap-nn fixtures check whole predictions
(masks bit-equal, keypoints within 1e-4 px) against ``--backend torch``.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from sleap_infer.backends import TorchBackend
from sleap_infer.backends.onnx_backend import ONNXBackend
from sleap_infer.backends.tensorrt_backend import GpuInfo, TensorRTBackend
from sleap_infer.core.artifact import METADATA_NAME, PIPELINE_NAME, read_export
from sleap_infer.core.errors import ExportError, UsageError
from sleap_infer.core.options import DecodeSettings, PredictOptions
from sleap_infer.export import exporter
from sleap_infer.export.exporter import export_model
from sleap_infer.export.pipeline import export_topdown
from sleap_infer.export.settings import ExportSettings
from sleap_infer.export.wrappers import RawMapsWrapper, exports_raw_maps
from sleap_infer.model.loader import LoadedModel, load_model
from sleap_infer.model.registry import MODEL_TYPES
from sleap_infer.runtimes import EngineTarget, backend_maker, get_runtime
from sleap_infer.runtimes.auto import AutoExportBackend
from sleap_infer.runtimes.cache import ExportRequest, cache_key, cache_root, ensure_export, misfit

import fake_tensorrt as fake
from conftest import SHARED
from model_factory import config_dict, write_model_dir

TILED = {"tiling": {"enabled": True, "tile_size": 32, "overlap": 8, "tile_batch_size": 4}}
CASES: dict[str, dict[str, Any]] = {
    "bottomup_segmentation": config_dict("bottomup_segmentation"),
    "semantic_segmentation": config_dict("semantic_segmentation"),
    "centered_instance_segmentation": config_dict("centered_instance_segmentation"),
    "tiled_single_instance": config_dict("single_instance", preprocessing=TILED),
}
HEADS = {
    "bottomup_segmentation": ["SegmentationHead", "InstanceCenterHead", "CenterOffsetHead"],
    "semantic_segmentation": ["SegmentationHead"],
    "centered_instance_segmentation": ["SegmentationHead"],
    "tiled_single_instance": ["SingleInstanceConfmapsHead"],
}
FRAME_SIZE = {"bottomup_segmentation": (48, 64), "semantic_segmentation": (48, 64)}
"""Frame-level types have no size matcher in these configs; crops and tiles fix their own."""
MAP_GAP = 1e-5
H200 = GpuInfo("NVIDIA H200", "9.0")


def _model(tmp_path: Path, case: str, seed: int = 0) -> LoadedModel:
    return load_model(write_model_dir(tmp_path / case, CASES[case], seed=seed))


def _input(info_shape: list[int | str], batch: int, seed: int = 0) -> torch.Tensor:
    shape = (batch, *(int(d) for d in info_shape[1:]))
    return torch.randint(
        0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(seed)
    )


def _worst_gap(got: dict[str, torch.Tensor], ref: dict[str, torch.Tensor]) -> float:
    assert list(got) == list(ref)
    worst = 0.0
    for name, value in ref.items():
        assert got[name].shape == value.shape and got[name].dtype == torch.float32
        worst = max(worst, float((got[name].cpu() - value.cpu()).abs().max()))
    return worst


# ------------------------------------------------------------ graphs and metadata
def test_raw_maps_exactly_where_build_layer_decodes_on_the_host(tmp_path: Path) -> None:
    """The export side and the layer side decide alike, so the backend's
    ``does_baked_postproc`` always matches the layer ``build_layer`` picks."""
    from sleap_infer.layers.build import decodes_in_graph

    maker = backend_maker("onnx", "cpu")
    configs = {name: config_dict(name) for name in MODEL_TYPES}
    for name in MODEL_TYPES:
        if MODEL_TYPES[name].tileable:
            configs[f"tiled_{name}"] = config_dict(name, preprocessing=TILED)
    for name, raw in configs.items():
        model = load_model(write_model_dir(tmp_path / name, raw))
        assert exports_raw_maps(model) == (not decodes_in_graph(model, maker)), name
        assert maker(model).does_baked_postproc == decodes_in_graph(model, maker), name


@pytest.mark.parametrize("case", list(CASES))
def test_raw_graph_returns_the_networks_maps(tmp_path: Path, case: str) -> None:
    model = _model(tmp_path, case)
    assert exports_raw_maps(model)
    info = export_model(model, settings=ExportSettings(frame_size=FRAME_SIZE.get(case)))
    assert info.path == model.path / "exported"
    data = info.data
    assert info.raw_maps and data["graph_outputs"] == "raw_maps"
    assert info.output_names == HEADS[case]
    assert info.dynamic_batch and data["decode_fields"] == []
    assert data["in_graph"][:2] == ["uint8 -> float32 / 255", "network"]
    assert not any("peak" in step for step in data["in_graph"])  # nothing decoded in-graph
    backend = ONNXBackend(info, "cpu")
    assert not backend.does_baked_postproc
    x = _input(info.input_shape, batch=3)
    gap = _worst_gap(backend(x), TorchBackend(model.network, "cpu")(x))
    assert gap <= MAP_GAP
    assert max(data["verification"].values()) <= MAP_GAP
    # The ONNX file carries the same metadata (any runtime can tell it returns raw maps).
    import onnx

    props = {p.key: p.value for p in onnx.load(str(info.onnx_path)).metadata_props}
    assert json.loads(props["sleap_infer_metadata"])["graph_outputs"] == "raw_maps"


def test_shapes_and_host_steps_per_kind(tmp_path: Path) -> None:
    """Tiles and crops fix their own input; the host steps say where decoding went."""
    tiled = _model(tmp_path, "tiled_single_instance")
    info = export_model(tiled)
    assert info.input_shape == ["batch", 1, 32, 32]  # the tile, whatever the frames
    assert info.data["tiling"]["tile_size"] == 32 and info.data["tiling"]["overlap"] == 8
    assert info.data["in_graph"] == ["uint8 -> float32 / 255", "network"]
    on_host = info.data["on_host"]
    assert any("stitched" in s for s in on_host) and any("global peaks" in s for s in on_host)
    assert not any("size matcher (" in s for s in on_host)  # tiling skips the size matcher
    with pytest.raises(UsageError, match="tiled model .*tile size, 32x32"):
        export_model(tiled, tmp_path / "other", ExportSettings(frame_size=(48, 64)))

    bottomup = export_model(
        _model(tmp_path, "bottomup_segmentation"), settings=ExportSettings(frame_size=(40, 60))
    )
    assert bottomup.input_shape == ["batch", 1, 40, 64]  # padded to max_stride 8
    shapes = {o["name"]: o["shape"] for o in bottomup.data["outputs"]}
    assert shapes["CenterOffsetHead"] == ["batch", 2, 20, 32]
    assert "sigmoid of the foreground logits" in bottomup.data["in_graph"]
    assert any("center peaks" in s for s in bottomup.data["on_host"])
    assert bottomup.data["tiling"] is None

    crops = export_model(_model(tmp_path, "centered_instance_segmentation"))
    assert crops.input_shape == ["batch", 1, 32, 32]  # the crop size


def test_static_batch_and_fp16_raw_exports(tmp_path: Path) -> None:
    model = _model(tmp_path, "semantic_segmentation")
    static = export_model(model, tmp_path / "b2", ExportSettings(batch_size=2, frame_size=(32, 32)))
    assert static.input_shape == [2, 1, 32, 32]
    assert ONNXBackend(static, "cpu")(_input(static.input_shape, 2))["SegmentationHead"].shape == (
        2,
        1,
        16,
        16,
    )
    half = export_model(model, tmp_path / "fp16", ExportSettings(fp16=True, frame_size=(32, 32)))
    assert half.data["precision"] == "fp16" and half.raw_maps
    x = _input(half.input_shape, 2)
    assert _worst_gap(ONNXBackend(half, "cpu")(x), TorchBackend(model.network, "cpu")(x)) < 2e-2


def test_raw_export_is_refused_when_runtimes_disagree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model(tmp_path, "semantic_segmentation")
    monkeypatch.setattr(exporter, "verify_numerics", lambda *a, **k: {"SegmentationHead": 0.5})
    with pytest.raises(ExportError, match="disagree on SegmentationHead by 0.5"):
        export_model(model, tmp_path / "bad", ExportSettings(frame_size=(32, 32)))
    assert not (tmp_path / "bad").exists()


# ------------------------------------------------------------ --backend onnx, cache
@pytest.mark.parametrize("case", ["bottomup_segmentation", "tiled_single_instance"])
def test_auto_backend_exports_raw_maps_once_and_reuses_them(tmp_path: Path, case: str) -> None:
    model = _model(tmp_path, case)
    messages: list[str] = []
    maker = backend_maker("onnx", "cpu", notify=messages.append)
    backend = maker(model)
    assert isinstance(backend, AutoExportBackend) and not backend.does_baked_postproc
    x = _input(["batch", 1, 32, 32], batch=4)
    assert _worst_gap(backend(x), TorchBackend(model.network, "cpu")(x)) <= MAP_GAP
    (cached,) = backend.exports
    assert cached.parent == cache_root() and read_export(cached).raw_maps
    assert any("raw maps decoded on the host" in m for m in messages)
    messages.clear()
    again = maker(model)
    again(x[:3])  # another batch: the dynamic batch serves it
    assert again.exports == [cached] and messages == []


def test_a_decoding_export_is_never_used_for_raw_maps(tmp_path: Path) -> None:
    """A tiled model may share its checkpoint with an untiled twin: kind is in key and check."""
    raw = config_dict("single_instance")
    plain = load_model(write_model_dir(tmp_path / "plain", raw, seed=11))  # not yet cached
    tiled = _model(tmp_path, "tiled_single_instance")
    shutil.copyfile(plain.path / "best.ckpt", tiled.path / "best.ckpt")
    tiled = load_model(tiled.path)
    assert tiled.checkpoint_sha256 == plain.checkpoint_sha256
    decoded = export_model(plain, tiled.path / "exported", ExportSettings(frame_size=(32, 32)))
    request = ExportRequest(get_runtime("onnx"), (4, 1, 32, 32), DecodeSettings(), raw_maps=True)
    assert "it decodes in-graph, and this model needs raw maps" in (
        misfit(decoded, tiled, request) or ""
    )
    as_decoded = ExportRequest(get_runtime("onnx"), (4, 1, 32, 32), DecodeSettings())
    assert cache_key(tiled, request) != cache_key(plain, as_decoded)
    assert cache_key(tiled, request) == cache_key(
        tiled,
        ExportRequest(
            get_runtime("onnx"), (2, 1, 32, 32), DecodeSettings(refine=False), raw_maps=True
        ),
    )  # decoding settings and the batch of a dynamic export do not change the graph
    messages: list[str] = []
    info = ensure_export(tiled, request, "cpu", messages.append)
    assert info.raw_maps and info.path.parent == cache_root()
    assert any("exported: it decodes in-graph" in m for m in messages)
    raw = export_model(tiled, tmp_path / "raw")
    assert "it returns raw maps" in (misfit(raw, plain, as_decoded) or "")


def test_read_export_rejects_an_unknown_kind(tmp_path: Path) -> None:
    info = export_model(_model(tmp_path, "centered_instance_segmentation"))
    data = json.loads((info.path / METADATA_NAME).read_text())
    data["graph_outputs"] = "tokens"
    (info.path / METADATA_NAME).write_text(json.dumps(data))
    with pytest.raises(ExportError, match="unknown graph_outputs 'tokens'"):
        read_export(info.path)
    del data["graph_outputs"]  # required since layout 4: no guessing what a graph returns
    (info.path / METADATA_NAME).write_text(json.dumps(data))
    with pytest.raises(ExportError, match="export metadata lacks graph_outputs"):
        read_export(info.path)


# ------------------------------------------------------------ top-down segmentation pair
def test_segmentation_pair_folder_is_found_by_backend_onnx(tmp_path: Path) -> None:
    centroid = load_model(write_model_dir(tmp_path / "centroid", config_dict("centroid"), seed=2))
    masks = _model(tmp_path, "centered_instance_segmentation", seed=4)
    folder, stage1, stage2 = export_topdown(
        [masks, centroid], settings=ExportSettings(frame_size=(48, 64))
    )
    assert folder == centroid.path / "exported_topdown_segmentation"
    assert stage2.path == folder / "centered_instance_segmentation"
    assert not stage1.raw_maps and stage1.output_names[0] == "centroids"  # decodes in-graph
    assert stage2.raw_maps and stage2.input_shape == ["batch", 1, 32, 32]
    assert stage2.data["pipeline"] == {"name": "topdown_segmentation", "role": "instance"}
    manifest = json.loads((folder / PIPELINE_NAME).read_text())
    assert manifest["pipeline"] == "topdown_segmentation"
    assert [s["graph_outputs"] for s in manifest["stages"]] == ["decoded", "raw_maps"]
    assert any("mask score" in step for step in manifest["between_stages_on_host"])

    messages: list[str] = []
    maker = backend_maker("onnx", "cpu", notify=messages.append)
    detector, crops = maker(centroid, [masks]), maker(masks, [centroid])
    assert detector.does_baked_postproc and not crops.does_baked_postproc
    x = _input(stage2.input_shape, batch=5)
    assert _worst_gap(crops(x), TorchBackend(masks.network, "cpu")(x)) <= MAP_GAP
    detector(torch.zeros((2, 1, 48, 64), dtype=torch.uint8))
    assert crops.exports == [stage2.path] and detector.exports == [stage1.path]
    assert messages == []  # nothing exported: both stages came from the pair folder


# ------------------------------------------------------------ TensorRT (fake, no GPU)
@pytest.fixture()
def fake_trt(monkeypatch: pytest.MonkeyPatch):
    fake.RECORD.clear()
    fake.PARSE_OK[0] = True
    monkeypatch.setitem(sys.modules, "tensorrt", fake)
    monkeypatch.setattr(exporter, "_trt_target", lambda device: (fake, torch.device("cpu")))
    monkeypatch.setattr(GpuInfo, "of", classmethod(lambda cls, device: H200))
    return fake


def test_tensorrt_raw_export_and_runner(fake_trt, tmp_path: Path) -> None:
    """Engine built per raw export and found again by the cache; the runner returns the
    heads by name and reports raw maps (the engine here runs the wrapper on the CPU)."""
    model = _model(tmp_path, "bottomup_segmentation")
    request = ExportRequest(
        get_runtime("trt"),
        (4, 1, 32, 32),
        DecodeSettings(),
        target=EngineTarget(fake.__version__, H200),
        raw_maps=True,
    )
    info = ensure_export(model, request, "cpu")
    assert info.raw_maps and info.engine_path is not None and info.engine_path.is_file()
    assert info.data["tensorrt"]["profile"]["opt"] == [4, 1, 32, 32]  # static, as asked
    assert ensure_export(model, request, "cpu").path == info.path  # found in the cache
    wrapper = RawMapsWrapper(model.network, model.config, DecodeSettings()).eval()

    def output(index: int):
        return lambda x: torch.no_grad()(wrapper)(x)[index]

    engine = fake.FakeEngine(
        inputs={"image": fake.DataType.UINT8},
        outputs={
            name: (fake.DataType.FLOAT, output(i)) for i, name in enumerate(info.output_names)
        },
    )
    runner = TensorRTBackend.from_engine(fake_trt, engine, torch.device("cpu"), export=info)
    assert not runner.does_baked_postproc
    x = _input(info.input_shape, batch=4)
    assert _worst_gap(runner(x), TorchBackend(model.network, "cpu")(x)) <= MAP_GAP
    assert TensorRTBackend.from_engine(fake_trt, engine, torch.device("cpu")).does_baked_postproc


# ------------------------------------------------------------ infer export
def _infer(*args: str) -> tuple[int, str]:
    """Exit code and stderr with line wrapping undone (the console wraps at its width)."""
    res = subprocess.run(
        [sys.executable, "-m", "sleap_infer", *args], capture_output=True, text=True, timeout=600
    )
    return res.returncode, " ".join(res.stderr.split())


def test_export_command_for_segmentation_tiled_and_pair(tmp_path: Path) -> None:
    bottomup = write_model_dir(tmp_path / "bu", CASES["bottomup_segmentation"])
    code, log = _infer("export", str(bottomup), "--input-size", "48x64")
    assert code == 0, log
    assert "raw maps SegmentationHead, InstanceCenterHead, CenterOffsetHead" in log
    assert "decoding runs on the host" in log
    assert read_export(bottomup / "exported").raw_maps

    tiled = write_model_dir(tmp_path / "tiled", CASES["tiled_single_instance"])
    code, log = _infer("export", str(tiled), "--input-size", "48x64")
    assert code == 2 and "tile size, 32x32" in log
    code, log = _infer("export", str(tiled))
    assert code == 0, log
    assert "input image uint8 batchx1x32x32 (tiles)" in log

    centroid = write_model_dir(tmp_path / "c", config_dict("centroid"))
    masks = write_model_dir(tmp_path / "cis", CASES["centered_instance_segmentation"])
    code, log = _infer("export", str(centroid), str(masks), "--input-size", "48x64")
    assert code == 0, log
    assert "centroid + centered_instance_segmentation exported in" in log
    assert "decoding runs in the graph" in log  # the centroid stage
    folder = centroid / "exported_topdown_segmentation"
    assert read_export(folder / "centered_instance_segmentation").raw_maps


# ------------------------------------------------------------ real fixtures, whole predictions
FIXTURES = SHARED
LAYER_MODULES = {
    "segmentation": "sleap_infer.layers.segmentation",
    "tiled": "sleap_infer.layers.tiled",
    "topdown_segmentation": "sleap_infer.layers.topdown_segmentation",
}
PX = 1e-4
SCORE = 1e-5


def _needs(*layers: str) -> None:
    if not (FIXTURES / "models").is_dir():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    for name in layers:
        if importlib.util.find_spec(LAYER_MODULES[name]) is None:
            pytest.skip(f"{LAYER_MODULES[name]} is not written yet (its layer decodes the maps)")


def _frames(video: str, n: int) -> np.ndarray:
    import sleap_io as sio

    frames = sio.load_slp(str(FIXTURES / "videos" / video)).videos[0]
    return np.stack([np.asarray(frames[i]) for i in range(n)])


def _predict_both(models: list[str], video: str = "synthetic_multi.pkg.slp", n: int = 24):
    from sleap_infer.layers.build import build_layer

    loaded = [load_model(FIXTURES / "models" / m) for m in models]
    options = PredictOptions()
    ref_layer = build_layer(loaded, backend_maker("torch", "cpu"), options)
    layer = build_layer(loaded, backend_maker("onnx", "cpu"), options)
    assert type(layer) is type(ref_layer)
    frames = _frames(video, n)
    pairs = [
        (ref_layer.predict(frames[i : i + 8]), layer.predict(frames[i : i + 8]))
        for i in range(0, n, 8)
    ]
    return pairs, layer


def _same_masks(pairs) -> tuple[int, float]:
    """Every mask bit-equal in the same order; returns the count and the worst score gap."""
    count, worst = 0, 0.0
    for ref, got in pairs:
        assert ref.masks is not None and got.masks is not None
        for name in ("frame", "rle", "rle_len", "size", "scale", "offset"):
            np.testing.assert_array_equal(getattr(got.masks, name), getattr(ref.masks, name))
        if len(ref.masks):
            worst = max(worst, float(np.abs(got.masks.score - ref.masks.score).max()))
        count += len(ref.masks)
    return count, worst


def _cached_exports(model: str) -> list[Path]:
    """The exports made on first use for fixture ``model`` (never written next to it)."""
    source = str((FIXTURES / "models" / model).resolve())
    return sorted(
        p.parent
        for p in cache_root().glob(f"*/{METADATA_NAME}")
        if json.loads(p.read_text())["source"]["model_dir"] == source
    )


def _raw_exports(layer) -> list[Path]:
    exports = [*layer.backend.exports]
    assert exports and all(read_export(p).raw_maps for p in exports)
    return exports


@pytest.mark.parametrize(
    "model",
    [
        "synthetic_bottomup_segmentation",
        "synthetic_semantic_segmentation",
        "synthetic_bottomup_segmentation_tiled",
        "synthetic_semantic_segmentation_tiled",
    ],
)
def test_fixture_segmentation_onnx_matches_torch(model: str) -> None:
    _needs("segmentation", *(["tiled"] if model.endswith("_tiled") else []))
    pairs, layer = _predict_both([model])
    count, worst = _same_masks(pairs)
    print(f"{model}: {count} masks, bit-equal; worst score gap {worst:.3g}")
    assert count >= 24 and worst <= SCORE
    assert not layer.backend.does_baked_postproc
    _raw_exports(layer)


@pytest.mark.parametrize(
    ("video", "n"), [("synthetic_multi.pkg.slp", 24), ("synthetic_single.pkg.slp", 12)]
)
def test_fixture_tiled_single_instance_onnx_matches_torch(video: str, n: int) -> None:
    """On the two-animal video (128 px: 3 x 3 tiles) and on the model's own (256 px: 5 x 5)."""
    _needs("tiled")
    pairs, layer = _predict_both(["synthetic_single_instance_tiled"], video, n)
    px = score = 0.0
    found = 0
    for ref, got in pairs:
        np.testing.assert_array_equal(got.valid, ref.valid)
        assert np.array_equal(np.isnan(got.points), np.isnan(ref.points))
        px = max(px, float(np.nanmax(np.abs(got.points - ref.points), initial=0.0)))
        score = max(score, float(np.nanmax(np.abs(got.point_scores - ref.point_scores), initial=0)))
        found += int(np.isfinite(ref.points).all(axis=-1).sum())
    print(f"tiled single instance, {video}: {found} keypoints, {px:.3g} px, {score:.3g} score")
    assert found >= n and px <= PX and score <= SCORE
    (export,) = _raw_exports(layer)
    assert read_export(export).input_shape == ["batch", 1, 64, 64]  # one graph for all tiles


def test_fixture_topdown_segmentation_onnx_matches_torch() -> None:
    _needs("segmentation", "topdown_segmentation")
    pairs, _ = _predict_both(["synthetic_centroid", "synthetic_centered_instance_segmentation"])
    count, worst = _same_masks(pairs)
    print(f"top-down segmentation: {count} masks, bit-equal; worst score gap {worst:.3g}")
    assert count >= 24 and worst <= SCORE
    centroids = [read_export(p) for p in _cached_exports("synthetic_centroid")]
    crops = [read_export(p) for p in _cached_exports("synthetic_centered_instance_segmentation")]
    assert centroids and not any(info.raw_maps for info in centroids)  # stage 1 decodes in-graph
    assert crops and all(info.raw_maps and info.dynamic_batch for info in crops)
