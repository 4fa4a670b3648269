"""Box-seeded top-down: a box detector as stage 1, crops centred on the boxes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sleap_infer.core.options import PredictOptions
from sleap_infer.layers.build import build_layer
from sleap_infer.layers.topdown import TopDownLayer
from sleap_infer.model.loader import LoadedModel, load_model
from sleap_infer.model.registry import pair_roles
from sleap_infer.runtimes import backend_maker

from conftest import write_video
from model_factory import config_dict, write_box_detector, write_model_dir


def _box_model(folder: Path) -> LoadedModel:
    return load_model(write_box_detector(folder))


def test_any_box_detector_pairs_with_any_crop_model_in_either_order() -> None:
    for box in ("bbox_centernet", "bbox_ssd"):
        for crop in ("centered_instance", "multi_class_topdown", "centered_instance_segmentation"):
            assert pair_roles([box, crop]) == (0, 1)
            assert pair_roles([crop, box]) == (1, 0)
    assert pair_roles(["bbox_centernet", "bbox_ssd"]) is None


def test_instances_sit_on_the_boxes_and_carry_their_scores(tmp_path: Path) -> None:
    box = _box_model(tmp_path / "box")
    raw = config_dict("centered_instance", preprocessing={"crop_size": 32})
    crop = load_model(write_model_dir(tmp_path / "ci", raw, seed=5))
    options = PredictOptions(peak_threshold=0.0, max_instances=3)
    layer = build_layer([crop, box], backend_maker("torch", "cpu"), options)
    assert isinstance(layer, TopDownLayer) and layer.box_seeded
    frames = np.random.default_rng(1).integers(0, 255, (2, 64, 64, 1), dtype=np.uint8)
    preds = layer.predict(frames)
    alone = build_layer([box], backend_maker("torch", "cpu"), options).predict(frames)
    assert preds.boxes is not None and len(preds.boxes) == len(alone.boxes) > 0
    np.testing.assert_array_equal(preds.boxes.xyxy, alone.boxes.xyxy)
    for b in range(2):
        mine = alone.boxes.in_frame(b)
        xyxy = alone.boxes.xyxy[mine]
        centres = np.stack([(xyxy[:, 0] + xyxy[:, 2]) / 2, (xyxy[:, 1] + xyxy[:, 3]) / 2], 1)
        got = preds.extras["centroids"][b][: len(mine)]
        np.testing.assert_allclose(got, centres, atol=1e-4)  # no size matcher: eff = 1
        valid = preds.valid[b]
        np.testing.assert_allclose(
            preds.instance_scores[b][valid], alone.boxes.score[mine][valid[: len(mine)]]
        )


def test_box_then_centered_instance_segmentation_matches_sleap_nn(shared: Path) -> None:
    import sleap_io as sio

    models = [
        load_model(shared / "models" / "synthetic_bbox_centernet"),
        load_model(shared / "models" / "synthetic_centered_instance_segmentation"),
    ]
    layer = build_layer(models, backend_maker("torch", "cpu"), PredictOptions())
    video = sio.load_slp(str(shared / "videos" / "synthetic_multi.pkg.slp")).videos[0]
    frames = np.stack([video[i] for i in range(len(video))])
    ref_path = shared / "reference" / "bbox_then_cis.slp"
    reference = {lf.frame_idx: lf for lf in sio.load_slp(str(ref_path))}
    n_masks = n_boxes = 0
    for start in range(0, len(frames), 4):
        preds = layer.predict(frames[start : start + 4])
        for b in range(preds.batch_size):
            ref = reference[start + b]
            masks, boxes = preds.masks.in_frame(b), preds.boxes.in_frame(b)
            assert (len(masks), len(boxes)) == (len(ref.masks), len(ref.bboxes))
            for k, m in zip(masks, ref.masks):
                np.testing.assert_array_equal(preds.masks.mask(k), m.data)
                assert tuple(preds.masks.offset[k]) == tuple(np.float32(m.offset))
                n_masks += 1
            for k, r in zip(boxes, ref.bboxes):
                np.testing.assert_allclose(preds.boxes.xyxy[k], [r.x1, r.y1, r.x2, r.y2], atol=1e-3)
                assert abs(float(preds.boxes.score[k]) - r.score) <= 1e-5
                n_boxes += 1
    assert (n_masks, n_boxes) == (48, 48)


def test_box_detector_cli_writes_csv_and_refuses_analysis_h5(tmp_path: Path) -> None:
    model = write_box_detector(tmp_path / "box")
    frames = np.random.default_rng(0).integers(0, 255, (4, 64, 64, 3), dtype=np.uint8)
    video = write_video(tmp_path / "clip.mp4", frames)
    out = tmp_path / "out.csv"

    def infer(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "sleap_infer", "predict", str(video), "-m", str(model)]
        return subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=600)

    res = infer("-o", str(out), "--format", "csv", "--peak-threshold", "0", "-n", "3")
    assert res.returncode == 0, res.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == "frame_idx,x1,y1,x2,y2,score,category"
    assert len(lines) == 1 + 4 * 3  # three boxes per frame at threshold 0
    res = infer("-o", str(tmp_path / "out.h5"), "--format", "analysis-h5")
    assert res.returncode == 2
    assert "cannot hold bounding boxes" in res.stderr
    assert not (tmp_path / "out.h5").exists()


@pytest.mark.parametrize("order", [0, 1])
def test_pair_export_of_a_box_detector_runs_on_onnx(tmp_path: Path, order: int) -> None:
    box = _box_model(tmp_path / "box")
    raw = config_dict("centered_instance_segmentation", preprocessing={"crop_size": 32})
    crop = load_model(write_model_dir(tmp_path / "cis", raw, seed=5))
    models = [box, crop] if order == 0 else [crop, box]
    options = PredictOptions(peak_threshold=0.0, max_instances=2, fg_threshold=0.5)
    frames = np.random.default_rng(2).integers(0, 255, (2, 64, 64, 1), dtype=np.uint8)
    torch_preds = build_layer(models, backend_maker("torch", "cpu"), options).predict(frames)
    onnx_preds = build_layer(models, backend_maker("onnx", "cpu"), options).predict(frames)
    np.testing.assert_allclose(onnx_preds.boxes.xyxy, torch_preds.boxes.xyxy, atol=1e-3)
    np.testing.assert_array_equal(onnx_preds.masks.frame, torch_preds.masks.frame)
    np.testing.assert_array_equal(onnx_preds.masks.offset, torch_preds.masks.offset)
