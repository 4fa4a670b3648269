"""Box detectors (``bbox_centernet``, ``bbox_ssd``): decoders on hand-made maps, random-weight
models, and sleap-nn 0.3.5's own predictions on the fixture models (torch and ONNX)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from sleap_infer.core.errors import ConfigError, UsageError
from sleap_infer.core.options import PredictOptions
from sleap_infer.layers.boxes import CenterNetLayer, SSDLayer
from sleap_infer.layers.build import build_layer
from sleap_infer.model.config import parse_config
from sleap_infer.model.loader import load_model
from sleap_infer.ops.boxes import (
    batched_nms,
    decode_centernet,
    decode_deltas,
    decode_ssd,
    make_anchors,
    nms,
)
from sleap_infer.runtimes import backend_maker

from conftest import SHARED
from model_factory import config_dict, write_model_dir

TYPES = ("bbox_centernet", "bbox_ssd")


# ------------------------------------------------------------------ CenterNet decoding
def _centernet_maps(h: int = 6, w: int = 6) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.zeros(1, 1, h, w), torch.ones(1, 2, h, w), torch.zeros(1, 2, h, w)


def test_centernet_plateau_gives_one_peak_per_cell() -> None:
    heat, size, off = _centernet_maps()
    heat[0, 0, 2, 2] = heat[0, 0, 2, 3] = 0.9  # equal neighbours: both equal their max pool
    (det,) = decode_centernet(heat, size, off, 4, 0.2, 100)
    assert len(det.scores) == 2
    assert sorted(det.boxes[:, 0].tolist()) == [(2 - 0.5) * 4, (3 - 0.5) * 4]


def test_centernet_takes_top_k_before_the_threshold() -> None:
    heat, size, off = _centernet_maps()
    heat[0, 0, 0, 0], heat[0, 0, 4, 4], heat[0, 0, 0, 4] = 0.9, 0.5, 0.1
    (det,) = decode_centernet(heat, size, off, 4, 0.2, 100)
    assert det.scores.tolist() == pytest.approx([0.9, 0.5])  # 0.1 is below the threshold
    (top,) = decode_centernet(heat, size, off, 4, 0.2, 1)
    assert top.scores.tolist() == pytest.approx([0.9])


def test_centernet_offsets_sizes_and_clipping() -> None:
    heat, size, off = _centernet_maps()
    heat[0, 0, 3, 2] = 0.8  # cell x=2, y=3
    off[0, :, 3, 2] = torch.tensor([0.5, 0.25])
    size[0, :, 3, 2] = torch.tensor([2.0, 4.0])
    (det,) = decode_centernet(heat, size, off, 4, 0.2, 100)
    assert det.boxes[0].tolist() == pytest.approx([6.0, 5.0, 14.0, 21.0])
    (clipped,) = decode_centernet(heat, size, off, 4, 0.2, 100, input_hw=(16, 12))
    assert clipped.boxes[0].tolist() == pytest.approx([6.0, 5.0, 11.0, 15.0])
    size[0, 0, 3, 2] = -1.0  # negative width clamps to 0: no area, dropped
    (gone,) = decode_centernet(heat, size, off, 4, 0.2, 100)
    assert len(gone.scores) == 0


# ------------------------------------------------------------------------ SSD decoding
def test_anchor_order_and_values() -> None:
    anchors = make_anchors((8, 8), [4], [4.0], [1.0], [1.0, 4.0])
    assert anchors.shape == (2 * 2 * 2, 4)  # 2x2 cells, 2 shapes
    assert anchors[0].tolist() == pytest.approx([0, 0, 4, 4])  # cell (0, 0), ratio 1
    assert anchors[1].tolist() == pytest.approx([1, -2, 3, 6])  # ratio h/w = 4: 2 x 8
    assert anchors[2].tolist() == pytest.approx([4, 0, 8, 4])  # next column comes next
    assert anchors[4].tolist() == pytest.approx([0, 4, 4, 8])  # then the next row
    two = make_anchors((9, 9), [4, 8], [4.0, 8.0], [1.0, 2.0], [1.0])
    assert two.shape == (3 * 3 * 2 + 2 * 2 * 2, 4)  # ceil(9 / stride) cells per side
    assert two[1].tolist() == pytest.approx([-2, -2, 6, 6])  # scale 2 -> side 8


def test_delta_decoding_and_the_size_clamp() -> None:
    anchor = torch.tensor([[0.0, 0.0, 10.0, 20.0]])
    var = (0.1, 0.1, 0.2, 0.2)
    box = decode_deltas(torch.tensor([[1.0, -1.0, 0.0, 0.0]]), anchor, var)
    assert box[0].tolist() == pytest.approx([1.0, -2.0, 11.0, 18.0])
    big = decode_deltas(torch.tensor([[0.0, 0.0, 1e6, 5 * math.log(2)]]), anchor, var)
    w, h = float(big[0, 2] - big[0, 0]), float(big[0, 3] - big[0, 1])
    assert w == pytest.approx(10 * 1000.0) and h == pytest.approx(20 * 2.0)


def _disjoint_anchors(n: int) -> torch.Tensor:
    x = torch.arange(n, dtype=torch.float32) * 20
    return torch.stack([x, torch.zeros(n), x + 10, torch.full((n,), 10.0)], dim=1)


def test_ssd_softmax_drops_the_background() -> None:
    raw = torch.zeros(1, 1, 3 + 4)
    raw[0, 0, 1] = math.log(3.0)  # softmax [1, 3, 1] / 5
    (det,) = decode_ssd(raw, _disjoint_anchors(1), (0.1, 0.1, 0.2, 0.2), 0.5, 100, 0.45)
    assert det.scores.tolist() == pytest.approx([0.6]) and det.classes.tolist() == [0]
    (both,) = decode_ssd(raw, _disjoint_anchors(1), (0.1, 0.1, 0.2, 0.2), 0.2, 100, 0.45)
    assert both.classes.tolist() == [0, 1]  # same box, other class: not suppressed
    assert both.scores.tolist() == pytest.approx([0.6, 0.2])


def test_ssd_caps_candidates_at_1000_and_detections_at_max() -> None:
    n = 1200
    raw = torch.zeros(1, n, 2 + 4)
    raw[0, :, 1] = torch.linspace(0.0, 3.0, n)  # increasing score with the anchor index
    anchors = _disjoint_anchors(n)
    (det,) = decode_ssd(raw, anchors, (0.1, 0.1, 0.2, 0.2), 0.2, 5000, None)
    assert len(det.scores) == 1000
    assert float(det.boxes[:, 0].min()) == (n - 1000) * 20  # the 200 weakest went
    (few,) = decode_ssd(raw, anchors, (0.1, 0.1, 0.2, 0.2), 0.2, 7, 0.45)
    assert len(few.scores) == 7 and float(few.boxes[0, 0]) == (n - 1) * 20


# ------------------------------------------------------------------------------- NMS
def test_nms_is_strict_and_greedy_by_score() -> None:
    boxes = torch.tensor([[0.0, 0, 10, 10], [0, 0, 10, 5], [0, 5, 10, 10]])
    scores = torch.tensor([0.5, 0.9, 0.8])
    # IoU(0, 1) = IoU(0, 2) = 0.5 (not above 0.5), IoU(1, 2) = 0.
    assert nms(boxes, scores, 0.5).tolist() == [1, 2, 0]
    assert nms(boxes, scores, 0.49).tolist() == [1, 2]
    assert nms(boxes, scores, 1.0).tolist() == [1, 2, 0]


def test_batched_nms_suppresses_within_a_class_only() -> None:
    boxes = torch.tensor([[0.0, 0, 10, 10], [1, 1, 10, 10], [0, 0, 10, 10]])
    scores = torch.tensor([0.9, 0.8, 0.7])
    classes = torch.tensor([0, 0, 1])
    assert batched_nms(boxes, scores, classes, 0.45).tolist() == [0, 2]
    # Above 1000 boxes the per-class path runs; it must agree.
    many = _disjoint_anchors(1100)
    many_scores = torch.rand(1100, generator=torch.Generator().manual_seed(0))
    many_classes = torch.arange(1100) % 3
    big = batched_nms(many, many_scores, many_classes, 0.45)
    assert sorted(big.tolist()) == list(range(1100))
    assert torch.all(many_scores[big][:-1] >= many_scores[big][1:])


# ------------------------------------------------------------------ configs and models
def test_categories_set_head_widths_and_ssd_needs_anchor_sizes() -> None:
    raw = config_dict("bbox_centernet")
    raw["model_config"]["head_configs"]["bbox_centernet"]["center"]["categories"] = ["a", "b"]
    cfg = parse_config(raw)
    assert cfg.categories == ("a", "b") and cfg.head("BBoxCenterHead").channels == 2
    assert parse_config(config_dict("bbox_ssd")).categories == ("object",)
    ssd = config_dict("bbox_ssd")
    ssd["model_config"]["head_configs"]["bbox_ssd"]["ssd"]["anchor_sizes"] = None
    with pytest.raises(ConfigError, match="anchor_sizes"):
        parse_config(ssd)
    with pytest.raises(UsageError, match="bbox-nms-iou"):
        PredictOptions(bbox_nms_iou=1.5)


@pytest.mark.parametrize("model_type", TYPES)
def test_random_models_load_strictly_and_give_valid_boxes(tmp_path: Path, model_type: str) -> None:
    raw = config_dict(model_type, preprocessing={"max_height": 64, "max_width": 64})
    raw["model_config"]["head_configs"][model_type][
        "center" if model_type == "bbox_centernet" else "ssd"
    ]["categories"] = ["a", "b"]
    model = load_model(write_model_dir(tmp_path / model_type, raw))
    if model_type == "bbox_centernet":  # random sizes hover around 0: give boxes an area
        model.network.head_layers[1].BBoxSizeHead[0].bias.data.fill_(3.0)
    opts = PredictOptions(peak_threshold=0.0, max_instances=7)
    layer = build_layer([model], backend_maker("torch", "cpu"), opts)
    assert isinstance(layer, CenterNetLayer if model_type == "bbox_centernet" else SSDLayer)
    frames = np.random.default_rng(0).integers(0, 255, (3, 32, 48, 1), dtype=np.uint8)
    preds = layer.predict(frames)
    boxes = preds.boxes
    assert preds.masks is None and preds.n_instances == 0 and len(boxes) > 0
    for b in range(3):
        idx = boxes.in_frame(b)
        assert 0 < len(idx) <= 7
        scores = boxes.score[idx]
        assert np.all(scores[:-1] >= scores[1:])
    xyxy = boxes.xyxy
    assert np.all(xyxy[:, 2] > xyxy[:, 0]) and np.all(xyxy[:, 3] > xyxy[:, 1])
    assert xyxy[:, [0, 2]].min() >= 0 and xyxy[:, [0, 2]].max() <= 47
    assert xyxy[:, [1, 3]].min() >= 0 and xyxy[:, [1, 3]].max() <= 31
    assert set(boxes.category.tolist()) <= {0, 1}
    # Stage 1 of top-down: box centres in size-matched pixels (frames scaled by 4/3).
    x, info = layer.preprocess(frames)
    cents = layer.find_centroids(layer.backend(x), info)
    for b in range(3):
        idx = boxes.in_frame(b)
        n = len(idx)
        assert cents.valid[b, :n].all() and not cents.valid[b, n:].any()
        centres = (xyxy[idx, :2] + xyxy[idx, 2:]) / 2
        np.testing.assert_allclose(cents.points[b, :n].numpy() * 0.75, centres, atol=1e-4)
        np.testing.assert_allclose(cents.values[b, :n].numpy(), boxes.score[idx], atol=0)


# ---------------------------------------------------------------- sleap-nn parity
def _fixture_frames() -> np.ndarray:
    path = SHARED / "videos" / "synthetic_multi.pkg.slp"
    if not path.exists():
        pytest.skip(f"fixture video not found at {path}")
    import sleap_io as sio

    video = sio.load_slp(str(path)).videos[0]
    return np.stack([video[i] for i in range(24)])


def _predict_all(model_type: str, runtime: str, frames: np.ndarray):
    path = SHARED / "models" / f"synthetic_{model_type}"
    if not path.exists():
        pytest.skip(f"fixture model not found at {path}")
    layer = build_layer([load_model(path)], backend_maker(runtime, "cpu"), PredictOptions())
    return [layer.predict(frames[s : s + 4]) for s in range(0, len(frames), 4)]


@pytest.mark.parametrize("runtime", ["torch", "onnx"])
@pytest.mark.parametrize("model_type", TYPES)
def test_fixture_boxes_match_sleap_nn(model_type: str, runtime: str) -> None:
    frames = _fixture_frames()
    ref_path = SHARED / "reference" / f"{model_type}.slp"
    if not ref_path.exists():
        pytest.skip(f"reference not found at {ref_path}")
    import sleap_io as sio

    refs = {lf.frame_idx: lf.bboxes for lf in sio.load_slp(str(ref_path)).labeled_frames}
    n_boxes = 0
    for start, preds in zip(range(0, 24, 4), _predict_all(model_type, runtime, frames)):
        for b in range(4):
            idx = preds.boxes.in_frame(b)
            ref = refs.get(start + b, [])
            assert len(idx) == len(ref), start + b
            for k, want in zip(idx, ref):
                got = preds.boxes.xyxy[k]
                np.testing.assert_allclose(got, [want.x1, want.y1, want.x2, want.y2], atol=1e-3)
                assert abs(float(preds.boxes.score[k]) - want.score) <= 1e-5
                assert want.category is None and preds.boxes.category[k] == 0  # ["object"]
            n_boxes += len(idx)
    assert n_boxes == (48 if model_type == "bbox_centernet" else 2400)
