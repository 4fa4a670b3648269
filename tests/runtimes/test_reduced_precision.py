"""OpenVINO (float32 by default, bf16 opt-in) and --int8 (quantised on the run's own inputs).

Accuracy is checked against ground truth on the bundled, well-trained synthetic model:
a reduced precision is only worth its speed if the keypoints stay where they were.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from cli_runs import error_lines, run_cli
from conftest import EXAMPLES, SYNTHETIC_MODEL

sys.path.insert(0, str(EXAMPLES / "synthetic"))
from sleap_infer.bench.suite import reduced_precision_rows
from sleap_infer.core.errors import UsageError
from sleap_infer.core.options import PredictOptions
from sleap_infer.layers import build_layer
from sleap_infer.model.loader import load_model
from sleap_infer.runtimes import backend_maker

import scene

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")


def _frames(n: int = 48, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rendered 160x160 frames and their true keypoints ``(n, nodes, 2)``."""
    rng = np.random.default_rng(seed)
    centers, angles = scene.random_poses(n, rng)
    background = scene._background(rng)
    frames = np.stack([scene.render(c, a, background) for c, a in zip(centers, angles)])
    truth = np.stack([scene.keypoints(c, a) for c, a in zip(centers, angles)])
    if frames.ndim == 3:
        frames = frames[..., None]
    return frames, truth


def _points(backend: str, frames: np.ndarray, **options: object) -> np.ndarray:
    maker = backend_maker(backend, "cpu", **options)
    layer = build_layer([load_model(SYNTHETIC_MODEL)], maker, PredictOptions())
    out = []
    for start in range(0, len(frames), 4):
        preds = layer.predict(frames[start : start + 4])
        out.append(preds.points[:, 0])
    return np.concatenate(out)


@pytest.fixture(scope="module")
def scene_frames() -> tuple[np.ndarray, np.ndarray]:
    return _frames()


@pytest.fixture(scope="module")
def float_points(scene_frames: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    return _points("torch", scene_frames[0])


def test_openvino_float32_matches_torch(
    scene_frames: tuple[np.ndarray, np.ndarray], float_points: np.ndarray
) -> None:
    pytest.importorskip("openvino")
    got = _points("openvino", scene_frames[0])
    assert np.nanmax(np.abs(got - float_points)) < 1e-3
    assert np.array_equal(np.isnan(got), np.isnan(float_points))


def test_openvino_is_float32_unless_asked() -> None:
    """OpenVINO's CPU plugin would run bf16 on CPUs that have it, unless told f32."""
    pytest.importorskip("openvino")
    from sleap_infer.backends.openvino_backend import OpenVINOBackend
    from sleap_infer.core.artifact import read_export

    maker = backend_maker("openvino", "cpu")
    layer = build_layer([load_model(SYNTHETIC_MODEL)], maker, PredictOptions())
    layer.predict(np.zeros((1, 160, 160, 1), np.uint8) + 7)
    backend = layer.backend._backends[(1, 160, 160)]  # type: ignore[attr-defined]
    assert isinstance(backend, OpenVINOBackend)
    (compiled,) = backend._compiled.values()
    assert "float32" in str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    assert read_export(backend.export.path).data.get("precision") != "bf16"


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_int8_keeps_keypoints_on_a_trained_model(
    backend: str, scene_frames: tuple[np.ndarray, np.ndarray], float_points: np.ndarray
) -> None:
    pytest.importorskip(backend if backend == "openvino" else "onnxruntime")
    frames, truth = scene_frames
    got = _points(backend, frames, int8=True)
    later = slice(32, None)  # the first 32 frames calibrate (and run float32)
    assert np.allclose(got[:32], float_points[:32], atol=1e-3, equal_nan=True)
    moved = np.linalg.norm(got[later] - float_points[later], axis=-1)
    assert np.nanmean(moved) < 0.5
    assert np.nanmean(moved) > 0  # really int8: not the float graph under another name
    float_error = np.nanmean(np.linalg.norm(float_points[later] - truth[later], axis=-1))
    int8_error = np.nanmean(np.linalg.norm(got[later] - truth[later], axis=-1))
    assert int8_error < float_error + 0.5


def test_int8_quantises_the_backbone_only(tmp_path: Path) -> None:
    import onnx

    from sleap_infer.export.exporter import export_model
    from sleap_infer.export.quantize import backbone_nodes, quantize_int8

    info = export_model(SYNTHETIC_MODEL, tmp_path / "export")
    source = onnx.load(str(info.onnx_path))
    chosen = set(backbone_nodes(source))
    heads = [n.name for n in source.graph.node if n.op_type == "Conv" and n.name not in chosen]
    assert chosen and heads  # both exist: backbone convs quantised, head convs not
    rng = np.random.default_rng(0)
    samples = [rng.integers(1, 255, (1, 160, 160), dtype=np.uint8) for _ in range(4)]
    target = tmp_path / "int8.onnx"
    quantize_int8(info.onnx_path, target, samples, "image")
    quantised = onnx.load(str(target))
    produced_by = {out: node for node in quantised.graph.node for out in node.output}
    for node in quantised.graph.node:
        if node.op_type != "Conv":
            continue
        weight = produced_by.get(node.input[1])
        via_dq = weight is not None and weight.op_type == "DequantizeLinear"
        assert via_dq == (node.name in chosen), node.name


def test_int8_calibration_skips_blank_inputs_and_is_cached(
    scene_frames: tuple[np.ndarray, np.ndarray],
) -> None:
    from sleap_infer.runtimes.int8 import CALIBRATION_SAMPLES

    said: list[str] = []
    frames = scene_frames[0]

    def run() -> object:
        maker = backend_maker("onnx", "cpu", int8=True, notify=said.append)
        layer = build_layer([load_model(SYNTHETIC_MODEL)], maker, PredictOptions())
        layer.warmup((4, *frames.shape[1:]))  # zeros: must not count as calibration
        for start in range(0, CALIBRATION_SAMPLES - 4, 4):
            layer.predict(frames[start : start + 4])
        backend = next(iter(layer.backend._backends.values()))  # type: ignore[attr-defined]
        assert not backend.calibrated and len(backend.recorded) == CALIBRATION_SAMPLES - 4
        layer.predict(frames[CALIBRATION_SAMPLES - 4 : CALIBRATION_SAMPLES])
        assert backend.calibrated
        provenance = layer.backend.provenance()
        assert provenance["precision"] == "int8"
        assert str(backend.int8_info.path) in provenance["exports"]  # the graph that ran
        return backend.int8_info

    first = run()
    quantised = [line for line in said if line.startswith("Quantising")]
    second = run()
    assert first.path == second.path  # type: ignore[attr-defined]
    assert [line for line in said if line.startswith("Quantising")] == quantised  # cached
    assert second.data["precision"] == "int8"  # type: ignore[attr-defined]
    assert second.data["int8"]["calibration_samples"] == CALIBRATION_SAMPLES  # type: ignore[attr-defined]


def test_large_inputs_calibrate_on_fewer_samples() -> None:
    """Crops and small frames take all 32 inputs; a 512 px frame holds the pixel budget in
    8, and never fewer than 4 are recorded however large the frame."""
    from sleap_infer.runtimes.int8 import CALIBRATION_SAMPLES, calibration_count

    assert calibration_count((1, 64, 64)) == CALIBRATION_SAMPLES
    assert calibration_count((1, 128, 128)) == CALIBRATION_SAMPLES
    assert calibration_count((1, 512, 512)) == 8
    assert calibration_count((3, 1024, 1024)) == 4
    assert calibration_count((1, 2048, 2048)) == 4
    assert calibration_count((1, 64, 64), most=2) == 2  # an explicit smaller count holds


def test_precision_flags_refused_where_they_do_not_apply() -> None:
    with pytest.raises(UsageError, match="--int8 applies to --backend onnx or openvino"):
        backend_maker("torch", "cpu", int8=True)
    with pytest.raises(UsageError, match="--bf16 applies to --backend torch or openvino"):
        backend_maker("onnx", "cpu", bf16=True)
    with pytest.raises(UsageError, match="choose one of"):
        backend_maker("onnx", "cpu", fp16=True, int8=True)


def test_predict_cli_refuses_int8_on_torch(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=4)
    # (Without --backend, auto takes --int8 to openvino or onnx: tests/runtimes/test_choose.py.)
    args = ("--model", SYNTHETIC_MODEL, "--backend", "torch", "--int8")
    code, err = run_cli(capsys, "predict", video, *args)
    assert code == 2
    assert error_lines(err) == [
        "error: --int8 applies to --backend onnx or openvino (use --bf16 on torch)"
    ]


def test_openvino_refuses_cuda() -> None:
    pytest.importorskip("openvino")
    from sleap_infer.core.errors import BackendError

    with pytest.raises(BackendError, match="runs on cpu only"):
        backend_maker("openvino", "cuda")


def test_bench_rows_for_reduced_precision() -> None:
    assert reduced_precision_rows(["torch", "onnx"], bf16=True, int8=True) == [
        "torch+bf16",
        "onnx+int8",
    ]
    assert reduced_precision_rows(["torch", "openvino"], bf16=True, int8=False) == [
        "torch+bf16",
        "openvino+bf16",
    ]
    assert reduced_precision_rows(["torch"], bf16=False, int8=True) == []
    # --fp16: torch always (the baseline runs), the exported runtimes only when measured.
    assert reduced_precision_rows(["torch", "trt"], bf16=False, int8=False, fp16=True) == [
        "torch+fp16",
        "trt+fp16",
    ]
    assert reduced_precision_rows(["torch", "onnx", "trt"], bf16=True, int8=False, fp16=True) == [
        "torch+fp16",
        "onnx+fp16",
        "trt+fp16",
        "torch+bf16",
    ]
