"""``use_sigmoid_activation`` (sleap-nn 0.3.5 centroid heads trained with focal loss).

sleap-nn puts ``nn.Sigmoid`` after the head's 1x1 conv, so its maps are
probabilities. Before this was read, the key was dropped and the maps stayed
logits (a real model: sleap-nn [0.011, 0.015], ours [-4.53, -4.20]), which moves,
adds or loses peaks. Checked against hand-computed sigmoid maps and local maxima
on torch, and against the torch path on ONNX Runtime and OpenVINO.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from sleap_infer.core.options import PredictOptions
from sleap_infer.layers import build_layer
from sleap_infer.model.loader import LoadedModel, load_model
from sleap_infer.runtimes import backend_maker

from model_factory import config_dict, write_model_dir

FRAMES = np.random.default_rng(11).integers(0, 256, (2, 32, 48, 1), dtype=np.uint8)
STRIDE = 2  # the factory's centroid output stride
THRESHOLD = 0.5  # sigmoid maps of random weights sit around 0.5: keeps about half the maxima


def _sigmoid_raw() -> dict:
    raw = config_dict("centroid")
    confmaps = raw["model_config"]["head_configs"]["centroid"]["confmaps"]
    confmaps.update(use_sigmoid_activation=True, focal_loss_alpha=2.0, focal_loss_beta=4.0)
    return raw


@pytest.fixture
def model(tmp_path: Path) -> LoadedModel:
    return load_model(write_model_dir(tmp_path / "sigmoid_centroid", _sigmoid_raw(), seed=3))


def _hand_logits(model: LoadedModel, frames: np.ndarray) -> np.ndarray:
    """The 1x1 conv's output, read off the backbone features without the head's activation."""
    net = model.network
    x = torch.from_numpy(frames).permute(0, 3, 1, 2).float() / 255.0
    with torch.no_grad():
        feats = net.backbone(x)
        conv = net.head_layers[0].CentroidConfmapsHead[0]
        return conv(feats.levels[feats.strides.index(STRIDE)]).numpy()


def _hand_peaks(maps: np.ndarray) -> list[set[tuple[float, float]]]:
    """Strict 8-neighbour maxima above the threshold, ``(x, y)`` in frame pixels, per frame."""
    out = []
    for frame in maps[:, 0].astype(np.float64):
        padded = np.pad(frame, 1, constant_values=-np.inf)
        h, w = frame.shape
        neighbours = np.max(
            [
                padded[dy : dy + h, dx : dx + w]
                for dy in range(3)
                for dx in range(3)
                if (dy, dx) != (1, 1)
            ],
            axis=0,
        )
        rows, cols = np.nonzero((frame > neighbours) & (frame > THRESHOLD))
        out.append({(float(c * STRIDE), float(r * STRIDE)) for r, c in zip(rows, cols)})
    return out


def test_the_config_key_puts_a_sigmoid_in_the_head(model: LoadedModel) -> None:
    (head,) = model.config.heads
    assert head.activation == "sigmoid"
    assert isinstance(model.network.head_layers[0].CentroidConfmapsHead[1], nn.Sigmoid)
    plain = load_model(write_model_dir(model.path.parent / "plain", config_dict("centroid")))
    assert plain.config.heads[0].activation == "none"


def test_maps_and_peaks_are_the_hand_computed_sigmoid(model: LoadedModel) -> None:
    logits = _hand_logits(model, FRAMES)
    expected = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    options = PredictOptions(peak_threshold=THRESHOLD, refine=False, return_confmaps=True)
    preds = build_layer([model], backend_maker("torch", "cpu"), options).predict(FRAMES)
    maps = preds.extras["confmaps"]
    assert maps.min() > 0.0 and maps.max() < 1.0  # probabilities, not logits
    assert np.abs(maps - expected).max() < 1e-6
    for frame, hand in enumerate(_hand_peaks(expected)):
        valid = preds.valid[frame]
        got = {tuple(map(float, p)) for p in preds.extras["centroids"][frame][valid]}
        assert hand and got == hand
        # Scores are the sigmoid values at the peaks.
        for (x, y), score in zip(
            preds.extras["centroids"][frame][valid], preds.instance_scores[frame][valid]
        ):
            assert abs(score - expected[frame, 0, int(y) // STRIDE, int(x) // STRIDE]) < 1e-6


@pytest.mark.parametrize("runtime", ["onnx", "openvino"])
def test_exports_keep_the_sigmoid(model: LoadedModel, runtime: str) -> None:
    """The sigmoid is inside the exported graph: the exported path finds the torch path's
    peaks with the torch path's (probability) scores."""
    needs = {"onnx": "onnxruntime", "openvino": "openvino"}[runtime]
    if importlib.util.find_spec(needs) is None or importlib.util.find_spec("onnx") is None:
        pytest.skip(f"{needs} is not installed")
    options = PredictOptions(peak_threshold=THRESHOLD)
    ref = build_layer([model], backend_maker("torch", "cpu"), options).predict(FRAMES)
    got = build_layer([model], backend_maker(runtime, "cpu"), options).predict(FRAMES)
    np.testing.assert_array_equal(got.valid, ref.valid)
    np.testing.assert_allclose(got.extras["centroids"], ref.extras["centroids"], atol=1e-3)
    np.testing.assert_allclose(got.instance_scores, ref.instance_scores, atol=1e-5)
    scores = ref.instance_scores[ref.valid]
    assert scores.size and (scores > THRESHOLD).all() and (scores < 1.0).all()


def test_the_sigmoid_is_in_the_onnx_graph_every_runtime_builds_from(model: LoadedModel) -> None:
    """ONNX Runtime, OpenVINO and TensorRT (``trt.OnnxParser`` on the same ``model.onnx``)
    all run this one graph: the sigmoid sits in it, written out as ``1 / (1 + exp(-x))``.
    TensorRT itself is not installed here (nor on the lent GPU machines)."""
    if importlib.util.find_spec("onnx") is None:
        pytest.skip("onnx is not installed")
    import onnx

    from sleap_infer.export.exporter import export_model
    from sleap_infer.export.settings import ExportSettings

    def ops(loaded: LoadedModel) -> list[str]:
        info = export_model(loaded, settings=ExportSettings(frame_size=(32, 48)))
        graph = onnx.load(str(info.onnx_path)).graph
        return [node.op_type for node in graph.node]

    plain = load_model(write_model_dir(model.path.parent / "plain", config_dict("centroid")))
    extra = ops(model)
    for op in ops(plain):
        extra.remove(op)
    assert {"Exp", "Reciprocal"} <= set(extra), extra
    assert "Sigmoid" not in extra  # ONNX Runtime's Sigmoid kernel is an approximation
