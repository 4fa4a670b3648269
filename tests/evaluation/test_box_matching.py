"""``infer eval`` bbox mode (sleap-nn's ``--match_method bbox``, ``--bbox_source``,
``--bbox_padding``): COCO box AP of a detector's boxes, with sleap-nn 0.3.5's numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import UsageError
from sleap_infer.evaluation import evaluate, evaluate_files, metrics_json
from sleap_infer.evaluation.boxes import ap_and_recall, greedy_match, iou_matrix

# sleap-nn 0.3.5 (bench venv, torchvision shim) on the shared fixtures:
#   sleap_nn.evaluation.run_evaluation("videos/synthetic_multi.pkg.slp",
#       "reference/<file>", match_method="auto", **options)
# as `sleap-nn eval -g ... -p ... [--bbox_source instances --bbox_padding 8]` runs it.
# The ground truth has 48 user boxes (auto: those); "instances" draws them around the
# two-node poses (two are a point: dropped), tight boxes no detector reproduces.
SLEAP_NN = {
    ("bbox_centernet.slp", ()): {
        "bbox_mAP": 0.12217596117636428,
        "bbox_AP50": 0.6545375367115962,
        "bbox_AP75": 0.0014144271570014143,
        "bbox_AR": 0.18125,
        "bbox_precision": 0.75,
        "bbox_recall": 0.75,
        "bbox_f1": 0.75,
        "bbox_f1_threshold": 0.5518620610237122,
        "bbox_mean_iou": 0.595066721362129,
        "bbox_n_tp": 36,
        "bbox_n_fp": 12,
        "bbox_n_fn": 12,
        "n_frames": 24,
        "n_gt": 48,
        "n_pred": 48,
    },
    ("bbox_centernet.slp", (("bbox_source", "instances"),)): {
        "bbox_mAP": 0.0,
        "bbox_AP50": 0.0,
        "bbox_AP75": 0.0,
        "bbox_AR": 0.0,
        "bbox_precision": 0.0,
        "bbox_recall": 0.0,
        "bbox_f1": 0.0,
        "bbox_f1_threshold": 0.8059797883033752,
        "bbox_mean_iou": 0.0,
        "bbox_n_tp": 0,
        "bbox_n_fp": 1,
        "bbox_n_fn": 46,
        "n_frames": 24,
        "n_gt": 46,
        "n_pred": 48,
    },
    ("bbox_centernet.slp", (("bbox_source", "instances"), ("bbox_padding", 8.0))): {
        "bbox_mAP": 0.3247749324058528,
        "bbox_AP50": 0.9024147756390547,
        "bbox_AP75": 0.11552099145841357,
        "bbox_AR": 0.35,
        "bbox_precision": 0.9565217391304348,
        "bbox_recall": 0.9166666666666666,
        "bbox_f1": 0.9361702127659574,
        "bbox_f1_threshold": 0.5691754817962646,
        "bbox_mean_iou": 0.6640911708126129,
        "bbox_n_tp": 44,
        "bbox_n_fp": 2,
        "bbox_n_fn": 4,
        "n_frames": 24,
        "n_gt": 48,
        "n_pred": 48,
    },
    ("bbox_ssd.slp", (("bbox_source", "instances"), ("bbox_padding", 4.0))): {
        "bbox_mAP": 0.04833337987465461,
        "bbox_AP50": 0.16813687783603737,
        "bbox_AP75": 0.004988783397168169,
        "bbox_AR": 0.2708333333333333,
        "bbox_precision": 0.34782608695652173,
        "bbox_recall": 0.3333333333333333,
        "bbox_f1": 0.3404255319148936,
        "bbox_f1_threshold": 0.40219876170158386,
        "bbox_mean_iou": 0.6512062104231993,
        "bbox_n_tp": 16,
        "bbox_n_fp": 30,
        "bbox_n_fn": 32,
        "n_frames": 24,
        "n_gt": 48,
        "n_pred": 2400,
    },
    ("bbox_ssd.slp", (("match_method", "bbox"),)): {
        "bbox_mAP": 0.05377611942584237,
        "bbox_AP50": 0.1800672097964562,
        "bbox_AP75": 0.012067975735493175,
        "bbox_AR": 0.32291666666666663,
        "bbox_precision": 0.32608695652173914,
        "bbox_recall": 0.3125,
        "bbox_f1": 0.3191489361702128,
        "bbox_f1_threshold": 0.40219876170158386,
        "bbox_mean_iou": 0.6711266981005364,
        "bbox_n_tp": 15,
        "bbox_n_fp": 31,
        "bbox_n_fn": 33,
        "n_frames": 24,
        "n_gt": 48,
        "n_pred": 2400,
    },
}


@pytest.mark.parametrize("case", list(SLEAP_NN))
def test_bbox_mode_gives_sleap_nns_numbers(shared: Path, case: tuple[str, Any]) -> None:
    name, pairs = case
    options = dict(pairs)
    m = evaluate_files(
        shared / "videos" / "synthetic_multi.pkg.slp", shared / "reference" / name, **options
    )
    expected = SLEAP_NN[case]
    assert {k: m[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    assert m["categories"] == ["object"] and m["ap_per_class"].shape == (1, 10)
    assert m["counts"]["bbox_source"] == options.get("bbox_source", "bboxes")


def test_padding_grows_derived_boxes_only(shared: Path) -> None:
    """--bbox-padding applies to boxes drawn from instances, not to the file's own."""
    gt, pred = shared / "videos" / "synthetic_multi.pkg.slp", shared / "reference" / "bbox_ssd.slp"
    own = evaluate_files(gt, pred, match_method="bbox", bbox_source="bboxes")
    padded = evaluate_files(gt, pred, match_method="bbox", bbox_source="bboxes", bbox_padding=9.0)
    assert own["bbox_mAP"] == padded["bbox_mAP"]
    drawn = evaluate_files(gt, pred, bbox_source="instances", bbox_padding=9.0)
    assert drawn["bbox_mAP"] != own["bbox_mAP"]


def test_json_keeps_sleap_nns_flat_layout(shared: Path) -> None:
    m = evaluate_files(
        shared / "videos" / "synthetic_multi.pkg.slp", shared / "reference" / "bbox_centernet.slp"
    )
    data = metrics_json(m)
    assert data["bbox_n_tp"] == 36 and isinstance(data["pr_curve"]["scores"], list)
    assert data["iou_thresholds"][0] == 0.5 and data["iou_thresholds"][-1] == 0.95


def test_no_predicted_boxes_is_one_line(shared: Path) -> None:
    """sleap-nn skips the metrics silently (returns None); we say why, exit 2."""
    with pytest.raises(UsageError, match="^predictions: no predicted boxes"):
        evaluate_files(
            shared / "videos" / "synthetic_multi.pkg.slp",
            shared / "reference" / "embedding.slp",
            match_method="bbox",
        )


def test_greedy_matching_and_ap_by_hand() -> None:
    gt = np.array([[0.0, 0.0, 10.0, 10.0], [20.0, 0.0, 30.0, 10.0]])
    det = np.array([[0.0, 0.0, 10.0, 5.0], [0.0, 0.0, 10.0, 10.0], [50.0, 50, 60, 60]])
    iou = iou_matrix(det, gt)
    assert iou[0, 0] == pytest.approx(0.5) and iou[1, 0] == 1.0 and iou[2].sum() == 0
    gt_idx, _ = greedy_match(iou, 0.5)
    assert gt_idx.tolist() == [0, -1, -1]  # the better box came second: a false positive
    ap, recall = ap_and_recall(np.array([0.9, 0.8, 0.7]), gt_idx >= 0, 2, np.linspace(0, 1, 101))
    assert recall == 0.5 and ap == pytest.approx(51 / 101)


def test_box_only_predictions_choose_bbox_mode() -> None:
    video = sio.Video(filename="/data/v.mp4", open_backend=False)
    skeleton = sio.Skeleton(["a", "b"])
    gt_box = sio.UserBoundingBox.from_xyxy(0.0, 0.0, 10.0, 10.0)
    pr_box = sio.PredictedBoundingBox.from_xyxy(1.0, 0.0, 11.0, 10.0, score=0.9)
    gt = sio.Labels(
        [sio.LabeledFrame(video=video, frame_idx=0, bboxes=[gt_box])],
        videos=[video],
        skeletons=[skeleton],
    )
    pred = sio.Labels(
        [sio.LabeledFrame(video=video, frame_idx=0, bboxes=[pr_box])],
        videos=[video],
        skeletons=[skeleton],
    )
    m = evaluate(gt, pred)
    assert m["bbox_n_tp"] == 1 and m["bbox_mean_iou"] == pytest.approx(90 / 110)


def test_sleap_nn_command_line_scores_boxes(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sleap-nn eval -g ... -p bbox_centernet.slp --bbox_source instances
    --bbox_padding 8`` runs unchanged and prints sleap-nn's box numbers."""
    from sleap_infer.cli import main

    out = tmp_path / "m.json"
    args = ["eval", "-g", str(shared / "videos" / "synthetic_multi.pkg.slp")]
    args += ["-p", str(shared / "reference" / "bbox_centernet.slp"), "--json", str(out)]
    args += ["--bbox_source", "instances", "--bbox_padding", "8"]
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert not exit_.value.code
    err = capsys.readouterr().err
    assert "Box mAP" in err and "from instances" in err
    expected = SLEAP_NN[
        ("bbox_centernet.slp", (("bbox_source", "instances"), ("bbox_padding", 8.0)))
    ]
    import json

    assert json.loads(out.read_text())["bbox_mAP"] == pytest.approx(expected["bbox_mAP"])
