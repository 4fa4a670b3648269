"""``infer eval`` centroid mode (sleap-nn's ``--match_method centroid``): hand-made
four-node ground truth, one-point predictions, and sleap-nn 0.3.5's numbers for them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import UsageError
from sleap_infer.evaluation import evaluate, evaluate_files
from sleap_infer.evaluation.centroids import gt_centroid

NODES = ("head", "thorax", "abdomen", "tail")
NAN = np.nan
# Four animals of frame 0, one of frame 1: the mean, box midpoint, geometric median and
# head differ for each (an unequal spread of nodes), and two have the head hidden.
GT = {
    0: [
        np.array([[10.0, 10.0], [14.0, 12.0], [30.0, 18.0], [60.0, 40.0]]),
        np.array([[NAN, NAN], [110.0, 60.0], [118.0, 75.0], [150.0, 62.0]]),
        np.array([[200.0, 30.0], [205.0, 36.0], [209.0, 50.0], [260.0, 90.0]]),
        np.array([[NAN, NAN], [NAN, NAN], [NAN, NAN], [NAN, NAN]]),  # fully hidden
    ],
    1: [np.array([[NAN, NAN], [40.0, 40.0], [46.0, 52.0], [90.0, 58.0]])],
}
# One point per prediction: near each animal, one far off (a false positive), one NaN.
PRED = {
    0: [
        np.array([[24.0, 19.0]]),
        np.array([[126.0, 66.0]]),
        np.array([[221.0, 49.0]]),
        np.array([[400.0, 300.0]]),
        np.array([[NAN, NAN]]),
    ],
    1: [np.array([[58.0, 50.0]])],
}


def labels(
    frames: dict[int, list[np.ndarray]], nodes: tuple[str, ...], predicted: bool
) -> sio.Labels:
    skeleton = sio.Skeleton(list(nodes))
    video = sio.Video(filename="/data/centroids.mp4", open_backend=False)
    lfs = []
    for idx, instances in frames.items():
        made: list[sio.Instance] = [
            sio.PredictedInstance.from_numpy(p, skeleton=skeleton, score=0.9)
            if predicted
            else sio.Instance.from_numpy(p, skeleton=skeleton)
            for p in instances
        ]
        lfs.append(sio.LabeledFrame(video=video, frame_idx=idx, instances=made))
    return sio.Labels(lfs, videos=[video], skeletons=[skeleton])


def write_pair(folder: Path) -> tuple[Path, Path]:
    """The ground truth and predictions above as ``.slp`` files (what sleap-nn was run on)."""
    gt, pred = folder / "gt.slp", folder / "pred.slp"
    sio.save_slp(labels(GT, NODES, predicted=False), str(gt))
    sio.save_slp(labels(PRED, ("centroid",), predicted=True), str(pred))
    return gt, pred


# sleap-nn 0.3.5 on the files write_pair makes (bench venv, torchvision shim;
#   sleap_nn.evaluation.run_evaluation(gt, pred, match_method="auto", **options),
#   as `sleap-nn eval -g gt.slp -p pred.slp [--anchor_part head ...]` runs it):
# every case matched 4 (P = R = 0.8: the far prediction is a false positive, the
# hidden animal a miss, the NaN prediction no detection); (avg, p50, p99, dists).
SLEAP_NN = {
    (): (
        2.2863265336447935,
        2.101100286299701,
        4.5775450789650325,
        [4.6097722286464435, 0.3333333333333286, 3.5355339059327378, 0.6666666666666643],
    ),
    (("anchor_part", "head"),): (
        11.490730373526455,
        8.654991821879952,
        27.96931589081501,
        [16.64331697709324, 0.3333333333333286, 28.319604517012593, 0.6666666666666643],
    ),
    (("anchor_part", "head"), ("centroid_fallback", "bbox_center")): (
        14.076497794657518,
        11.857192394479357,
        27.96931589081501,
        [16.64331697709324, 4.272001872658765, 28.319604517012593, 7.0710678118654755],
    ),
    (("anchor_part", "head"), ("centroid_fallback", "geometric_median")): (
        16.160255563250352,
        14.404107151406057,
        27.96931589081501,
        [16.64331697709324, 7.513203433176707, 28.319604517012593, 12.164897325718876],
    ),
    (("centroid_method", "bbox_center"),): (
        9.52142604355445,
        9.800515949003572,
        14.162189214029588,
        [12.529964086141668, 4.272001872658765, 14.212670403551895, 7.0710678118654755],
    ),
    (("centroid_method", "geometric_median"),): (
        11.20551305500536,
        9.83905037944779,
        20.24156346042277,
        [4.652594202722551, 7.513203433176707, 20.491357258403305, 12.164897325718876],
    ),
}


@pytest.mark.parametrize("options", list(SLEAP_NN))
def test_centroid_mode_gives_sleap_nns_numbers(
    tmp_path: Path, options: tuple[tuple[str, str], ...]
) -> None:
    avg, p50, p99, dists = SLEAP_NN[options]
    m = evaluate_files(*write_pair(tmp_path), **dict(options))
    assert set(m) == {"detection_metrics", "distance_metrics", "counts"}
    det = m["detection_metrics"]
    assert (det["precision"], det["recall"], det["f1"]) == pytest.approx((0.8, 0.8, 0.8))
    assert (det["n_tp"], det["n_fp"], det["n_fn"]) == (4, 1, 1)
    assert (det["avg"], det["p50"], det["p99"]) == pytest.approx((avg, p50, p99), rel=1e-12)
    assert m["distance_metrics"]["dists"] == pytest.approx(dists, rel=1e-12)
    assert m["distance_metrics"]["frame_idxs"] == [0, 0, 0, 1]


def test_anchor_method_and_unknown_anchor_as_sleap_nn(tmp_path: Path) -> None:
    """``--centroid-method anchor --anchor-part head`` is ``--anchor-part head``; a node
    the skeleton lacks is noted and the mean is used (sleap-nn warns and does the same)."""
    gt, pred = write_pair(tmp_path)
    anchored = evaluate_files(gt, pred, anchor_part="head", centroid_method="anchor")
    dists = SLEAP_NN[(("anchor_part", "head"),)][3]
    assert anchored["distance_metrics"]["dists"] == pytest.approx(dists, rel=1e-12)
    notes: list[str] = []
    unknown = evaluate_files(gt, pred, anchor_part="nope", notes=notes)
    assert unknown["distance_metrics"]["dists"] == pytest.approx(SLEAP_NN[()][3], rel=1e-12)
    assert len(notes) == 1 and notes[0].startswith("--anchor-part 'nope': not a ground-truth node")
    with pytest.raises(UsageError, match="^--centroid-method anchor: give --anchor-part"):
        evaluate_files(gt, pred, centroid_method="anchor")


def test_match_threshold_is_a_pixel_distance(tmp_path: Path) -> None:
    """Centroid mode's threshold is pixels (0 means sleap-nn's 50): at 4 px the 4.61 px
    pair splits into a miss and a false positive."""
    m = evaluate_files(*write_pair(tmp_path), match_threshold=4.0)
    det = m["detection_metrics"]
    assert (det["n_tp"], det["n_fp"], det["n_fn"]) == (3, 2, 2)
    assert m["counts"]["matched"] == 3


def test_multi_node_predictions_collapse_to_their_first_visible_node() -> None:
    """``--match-method centroid`` on pose predictions: each is its first visible node."""
    gt = labels({0: [GT[0][0]]}, NODES, predicted=False)
    pose = np.array([[NAN, NAN], [25.0, 20.0], [0.0, 0.0], [0.0, 0.0]])
    pred = labels({0: [pose]}, NODES, predicted=True)
    m = evaluate(gt, pred, match_method="centroid")
    expected = np.linalg.norm(np.array([25.0, 20.0]) - np.nanmean(GT[0][0], axis=0))
    assert m["distance_metrics"]["dists"] == pytest.approx([expected])
    assert "voc_metrics" not in m  # OKS blocks only in OKS mode, as in sleap-nn


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("center_of_mass", [(10 + 14 + 30 + 60) / 4, (10 + 12 + 18 + 40) / 4]),
        ("bbox_center", [35.0, 25.0]),
    ],
)
def test_reductions(method: str, expected: list[float]) -> None:
    assert gt_centroid(GT[0][0], None, method, None) == pytest.approx(expected)


def test_geometric_median_resists_a_far_node() -> None:
    """Three nodes together and one flung away: the median stays with the three
    (the mean follows the far one); sleap-nn's own numbers are checked above."""
    points = np.array([[0.0, 0.0], [2.0, 0.0], [1.0, 2.0], [100.0, 100.0]])
    median = gt_centroid(points, None, "geometric_median", None)
    assert np.linalg.norm(median - [1.0, 0.67]) < 1.0
    assert gt_centroid(points, None, None, None) == pytest.approx([25.75, 25.5])


def _run(args: list[str]) -> int:
    from sleap_infer.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(args)
    return int(exit_.value.code or 0)


def test_sleap_nn_command_line_scores_centroids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sleap-nn eval -g gt -p pred --anchor_part head --centroid_fallback bbox_center
    -s m.npz`` runs unchanged: the table has centroid mode's numbers, and the .npz holds
    sleap-nn's two blocks (our counts left out), the .json beside it the same."""
    import json

    gt, pred = write_pair(tmp_path)
    npz = tmp_path / "m.npz"
    args = ["eval", "-g", str(gt), "-p", str(pred), "--anchor_part", "head"]
    args += ["--centroid_fallback", "bbox_center", "-s", str(npz)]
    assert _run(args) == 0
    err = capsys.readouterr().err
    assert "Precision" in err and "0.8000" in err and "4 of 5 ground-truth centroids" in err
    saved = np.load(npz, allow_pickle=True)["metrics"].item()
    assert set(saved) == {"detection_metrics", "distance_metrics"}
    avg = SLEAP_NN[(("anchor_part", "head"), ("centroid_fallback", "bbox_center"))][0]
    assert saved["detection_metrics"]["avg"] == pytest.approx(avg, rel=1e-12)
    data = json.loads(npz.with_suffix(".json").read_text())
    assert data["detection_metrics"]["n_tp"] == 4


def test_bad_centroid_values_are_one_line(tmp_path: Path) -> None:
    gt, pred = write_pair(tmp_path)
    assert _run(["eval", str(gt), str(pred), "--centroid-method", "middle"]) == 2
    assert _run(["eval", str(gt), str(pred), "--match_method", "mask"]) == 2
