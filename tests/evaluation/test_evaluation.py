"""``infer eval``: hand-made ground truth with known answers, and parity with sleap-nn's eval."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio
import typer
from typer.testing import CliRunner

from sleap_infer.cli.eval import EPILOG, eval_cmd, parse_stddev
from sleap_infer.cli.help import HelpCommand
from sleap_infer.cli.summary import write_json
from sleap_infer.core.errors import UsageError, VideoError
from sleap_infer.evaluation import evaluate, evaluate_files, metrics_json
from sleap_infer.evaluation.matching import oks

NODES = ("head", "thorax", "abdomen", "tail")
SIGMA = 0.025
# One animal: a 20 x 30 px box around its nodes (area 600).
ANIMAL = np.array([[10.0, 10.0], [20.0, 20.0], [25.0, 30.0], [30.0, 40.0]])
OTHER = ANIMAL + np.array([60.0, 0.0])


def make_labels(
    frames: dict[int, list[np.ndarray]],
    predicted: bool,
    scores: dict[int, list[float]] | None = None,
    video_name: str = "/data/session1.mp4",
    nodes: tuple[str, ...] = NODES,
) -> sio.Labels:
    """Labels on a (never opened) video: user instances, or predicted ones with scores."""
    skeleton = sio.Skeleton(list(nodes))
    video = sio.Video(filename=video_name, open_backend=False)
    lfs = []
    for idx, instances in frames.items():
        made: list[sio.Instance] = []
        for k, points in enumerate(instances):
            if predicted:
                score = scores[idx][k] if scores else 1.0 - 0.1 * k
                made.append(
                    sio.PredictedInstance.from_numpy(points, skeleton=skeleton, score=score)
                )
            else:
                made.append(sio.Instance.from_numpy(points, skeleton=skeleton))
        lfs.append(sio.LabeledFrame(video=video, frame_idx=idx, instances=made))
    return sio.Labels(lfs, videos=[video], skeletons=[skeleton])


def gt_two_animals(n_frames: int = 3) -> sio.Labels:
    return make_labels({i: [ANIMAL, OTHER] for i in range(n_frames)}, predicted=False)


def expected_oks(shift: float, area: float = 600.0) -> float:
    """OKS of a node-for-node shift: every node contributes the same similarity."""
    return math.exp(-(shift**2) / ((2 * SIGMA) ** 2 * 2 * (area + np.spacing(1))))


# ------------------------------------------------------------------ known answers
def test_perfect_predictions_score_one() -> None:
    gt = gt_two_animals()
    pred = make_labels({i: [ANIMAL, OTHER] for i in range(3)}, predicted=True)
    m = evaluate(gt, pred)
    assert m["mOKS"]["mOKS"] == 1.0
    assert m["voc_metrics"]["oks_voc.mAP"] == 1.0
    assert m["voc_metrics"]["oks_voc.mAR"] == 1.0
    assert m["voc_metrics"]["pck_voc.mAP"] == 1.0
    d = m["distance_metrics"]
    assert d["dists"].shape == (6, 4)
    assert d["avg"] == 0 and all(d[f"p{p}"] == 0 for p in (50, 75, 90, 95, 99))
    assert m["pck_metrics"]["mPCK"] == 1.0
    assert m["pck_metrics"]["PCK@5"] == m["pck_metrics"]["PCK@10"] == 1.0
    v = m["visibility_metrics"]
    assert (v["tp"], v["fp"], v["tn"], v["fn"]) == (24, 0, 0, 0)
    assert v["precision"] == v["recall"] == 1.0
    assert m["counts"]["frame_pairs"] == 3 and m["counts"]["matched"] == 6


def test_shift_by_5px_sets_every_distance_to_5() -> None:
    gt = gt_two_animals()
    shift = np.array([3.0, 4.0])  # a 3-4-5 triangle
    pred = make_labels({i: [ANIMAL + shift, OTHER + shift] for i in range(3)}, predicted=True)
    m = evaluate(gt, pred)
    d = m["distance_metrics"]
    np.testing.assert_allclose(d["dists"], 5.0)
    for key in ("avg", "p50", "p75", "p90", "p95", "p99"):
        assert d[key] == pytest.approx(5.0)
    # PCK counts distances strictly below the threshold: 5 px misses @5, hits 6..10.
    assert m["pck_metrics"]["PCK@5"] == 0.0
    assert m["pck_metrics"]["PCK@10"] == 1.0
    assert m["pck_metrics"]["mPCK"] == pytest.approx(0.5)
    assert m["mOKS"]["mOKS"] == pytest.approx(expected_oks(5.0), rel=1e-12)


def test_missing_predicted_node_lowers_visibility_recall() -> None:
    gt = gt_two_animals(n_frames=2)
    lost = ANIMAL.copy()
    lost[3] = np.nan  # the tail, in one of the 4 instances
    pred = make_labels({0: [lost, OTHER], 1: [ANIMAL, OTHER]}, predicted=True)
    m = evaluate(gt, pred)
    v = m["visibility_metrics"]
    assert (v["tp"], v["fn"], v["fp"]) == (15, 1, 0)
    assert v["recall"] == pytest.approx(15 / 16)
    assert v["precision"] == 1.0
    assert np.isnan(m["distance_metrics"]["dists"]).sum() == 1
    assert m["pck_metrics"]["mPCK"] == pytest.approx(15 / 16)  # NaN distance: a miss
    assert m["distance_metrics"]["p99"] == 0.0  # ...but left out of the percentiles
    assert m["mOKS"]["mOKS"] == pytest.approx((3 * 1.0 + 0.75) / 4)  # missing node: KS 0


def test_node_invisible_in_ground_truth_is_a_visibility_false_positive() -> None:
    hidden = ANIMAL.copy()
    hidden[0] = np.nan
    gt = make_labels({0: [hidden]}, predicted=False)
    pred = make_labels({0: [ANIMAL]}, predicted=True)
    m = evaluate(gt, pred)
    v = m["visibility_metrics"]
    assert (v["tp"], v["fp"]) == (3, 1)
    assert v["precision"] == pytest.approx(0.75)
    assert m["mOKS"]["mOKS"] == 1.0  # OKS averages over the ground truth's visible nodes


def test_extra_unmatched_prediction_is_not_counted_like_sleap_nn() -> None:
    gt = make_labels({0: [ANIMAL]}, predicted=False)
    stray = ANIMAL + 70.0
    pred = make_labels({0: [ANIMAL, stray]}, predicted=True, scores={0: [0.9, 0.95]})
    m = evaluate(gt, pred)
    assert m["voc_metrics"]["oks_voc.mAP"] == pytest.approx(1.0)  # 1 / (1 + eps)
    assert m["counts"]["unmatched_pred"] == 1 and m["counts"]["matched"] == 1


def test_poorly_matched_pair_is_a_false_positive() -> None:
    # Two animals: one found exactly, one matched at low OKS (below 0.5 at every threshold).
    gt = make_labels({0: [ANIMAL, OTHER]}, predicted=False)
    pred = make_labels({0: [ANIMAL, OTHER + 8.0]}, predicted=True, scores={0: [0.9, 0.8]})
    m = evaluate(gt, pred)
    voc = m["voc_metrics"]
    # Ranked TP then FP: recall 0.5 at precision 1 -> recall points 0.00..0.50 (51 of 101).
    assert voc["oks_voc.mAP"] == pytest.approx(51 / 101)
    assert voc["oks_voc.mAR"] == pytest.approx(0.5)
    # The false positive ranked first caps precision at 0.5.
    pred = make_labels({0: [ANIMAL, OTHER + 8.0]}, predicted=True, scores={0: [0.8, 0.9]})
    voc = evaluate(gt, pred)["voc_metrics"]
    assert voc["oks_voc.mAP"] == pytest.approx(0.5 * 51 / 101)


def test_missed_animal_halves_recall() -> None:
    gt = make_labels({0: [ANIMAL, OTHER]}, predicted=False)
    pred = make_labels({0: [ANIMAL]}, predicted=True)
    m = evaluate(gt, pred)
    assert m["voc_metrics"]["oks_voc.mAR"] == pytest.approx(0.5)
    assert m["counts"]["unmatched_gt"] == 1


def test_greedy_matching_takes_the_best_ground_truth_in_score_order() -> None:
    gt = make_labels({0: [ANIMAL, OTHER]}, predicted=False)
    # Listed in reverse, each close to its own animal: both must pair correctly.
    pred = make_labels({0: [OTHER + 1.0, ANIMAL + 2.0]}, predicted=True, scores={0: [0.5, 0.9]})
    m = evaluate(gt, pred)
    np.testing.assert_allclose(
        np.sort(m["distance_metrics"]["dists"][:, 0]), np.sqrt([2.0, 8.0]), rtol=1e-12
    )
    assert m["distance_metrics"]["dists"][0, 0] == pytest.approx(np.sqrt(8.0))  # best score first


def test_match_threshold_drops_weak_pairs() -> None:
    gt = make_labels({0: [ANIMAL]}, predicted=False)
    pred = make_labels({0: [ANIMAL + 5.0]}, predicted=True)
    weak = expected_oks(math.hypot(5, 5))
    assert evaluate(gt, pred, match_threshold=weak / 2)["counts"]["matched"] == 1
    m = evaluate(gt, pred, match_threshold=weak * 2)
    assert m["counts"]["matched"] == 0 and np.isnan(m["mOKS"]["mOKS"])
    assert m["voc_metrics"]["oks_voc.mAP"] == 0  # sleap-nn's value with nothing matched


def test_one_visible_node_is_scored_by_pixel_distance() -> None:
    single = np.full_like(ANIMAL, np.nan)
    single[1] = ANIMAL[1]  # a zero-area box: OKS would be an equality test
    gt = make_labels({0: [single]}, predicted=False)
    pred = make_labels({0: [ANIMAL + np.array([6.0, 8.0])]}, predicted=True)  # 10 px off
    assert evaluate(gt, pred)["mOKS"]["mOKS"] == pytest.approx(1 - 10 / 50)


def test_oks_scale_and_per_node_sigmas() -> None:
    gt = make_labels({0: [ANIMAL]}, predicted=False)
    pred = make_labels({0: [ANIMAL + np.array([3.0, 4.0])]}, predicted=True)
    m = evaluate(gt, pred, oks_scale=100.0)
    assert m["mOKS"]["mOKS"] == pytest.approx(expected_oks(5.0, area=100.0), rel=1e-12)
    same = evaluate(gt, pred, oks_stddev=[SIGMA] * 4)["mOKS"]["mOKS"]
    assert same == evaluate(gt, pred)["mOKS"]["mOKS"]
    sigmas = np.array([0.025, 0.05, 0.1, 0.2])
    per_node = np.exp(-25 / ((2 * sigmas) ** 2 * 2 * (600 + np.spacing(1))))
    got = evaluate(gt, pred, oks_stddev=list(sigmas))["mOKS"]["mOKS"]
    assert got == pytest.approx(per_node.mean(), rel=1e-12)


def test_oks_matrix_pairs_every_ground_truth_with_every_prediction() -> None:
    result = oks(np.stack([ANIMAL, OTHER]), np.stack([ANIMAL, OTHER, ANIMAL + 5]))
    assert result.shape == (2, 3)
    assert result[0, 0] == result[1, 1] == 1.0
    assert result[0, 2] == pytest.approx(expected_oks(math.hypot(5, 5)))


def test_user_labels_only_decides_whether_predicted_ground_truth_counts() -> None:
    gt = gt_two_animals(n_frames=1)
    skeleton, video = gt.skeletons[0], gt.videos[0]
    machine = sio.PredictedInstance.from_numpy(ANIMAL + 100, skeleton=skeleton, score=0.5)
    gt.append(sio.LabeledFrame(video=video, frame_idx=1, instances=[machine]))
    pred = make_labels({0: [ANIMAL, OTHER], 1: [ANIMAL + 100]}, predicted=True)
    assert evaluate(gt, pred)["counts"]["frame_pairs"] == 1
    everything = evaluate(gt, pred, user_labels_only=False)["counts"]
    assert (everything["frame_pairs"], everything["matched"]) == (2, 3)


def test_user_instances_in_predictions_are_not_scored() -> None:
    gt = gt_two_animals(n_frames=1)
    pred = make_labels({0: [ANIMAL, OTHER]}, predicted=False)  # what sleap-nn also skips
    m = evaluate(gt, pred)
    assert m["counts"]["matched"] == 0 and m["counts"]["unmatched_gt"] == 2


# ------------------------------------------------------------------ refusals, one line each
def test_no_common_frames_is_a_usage_error() -> None:
    gt = gt_two_animals(n_frames=1)
    pred = make_labels({5: [ANIMAL]}, predicted=True)
    with pytest.raises(UsageError, match="no frame in common"):
        evaluate(gt, pred)


@pytest.mark.parametrize(
    ("pred", "message"),
    [
        (make_labels({0: []}, predicted=True), "no pose instances"),
        (make_labels({0: [ANIMAL[:2]]}, predicted=True, nodes=("a", "b")), "skeletons differ"),
    ],
)
def test_unscorable_predictions_are_refused(pred: sio.Labels, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        evaluate(gt_two_animals(n_frames=1), pred)


@pytest.mark.parametrize("sigma", [0.0, -1.0, float("nan"), [0.1, 0.2]])
def test_bad_oks_stddev_is_a_usage_error(sigma: float | list[float]) -> None:
    pred = make_labels({0: [ANIMAL]}, predicted=True)
    with pytest.raises(UsageError, match="--oks-stddev"):
        evaluate(gt_two_animals(n_frames=1), pred, oks_stddev=sigma)


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        evaluate_files(tmp_path / "gt.slp", tmp_path / "pred.slp")
    junk = tmp_path / "junk.slp"
    junk.write_bytes(b"not an hdf5 file")
    with pytest.raises(VideoError, match="not a readable SLEAP file") as info:
        evaluate_files(junk, junk)
    assert "\n" not in str(info.value)


def test_files_round_trip_and_json_is_written_atomically(tmp_path: Path) -> None:
    gt_path, pred_path = tmp_path / "gt.slp", tmp_path / "pred.slp"
    sio.save_slp(gt_two_animals(), str(gt_path))
    sio.save_slp(make_labels({0: [ANIMAL]}, predicted=True), str(pred_path))
    m = evaluate_files(gt_path, pred_path)
    assert m["counts"]["frame_pairs"] == 1 and m["counts"]["unmatched_gt"] == 1
    out = tmp_path / "sub" / "metrics.json"
    write_json(out, metrics_json(m), "metrics", indent=None)
    data = json.loads(out.read_text())
    assert data["voc_metrics"]["oks_voc.mAR"] == 0.5
    assert "pcks" not in data["pck_metrics"]  # as sleap-nn's JSON
    assert [p.name for p in out.parent.iterdir()] == ["metrics.json"]  # no temporary left


# ------------------------------------------------------------------ the command
def _app() -> typer.Typer:
    app = typer.Typer(rich_markup_mode=None)
    app.command("eval", cls=HelpCommand, epilog=EPILOG)(eval_cmd)

    @app.callback()
    def _root() -> None:
        """Test root (so 'eval' stays a subcommand)."""

    return app


def test_command_prints_the_table_and_saves_json(tmp_path: Path) -> None:
    gt_path, pred_path = tmp_path / "gt.slp", tmp_path / "pred.slp"
    sio.save_slp(gt_two_animals(), str(gt_path))
    sio.save_slp(
        make_labels({i: [ANIMAL, OTHER] for i in range(3)}, predicted=True), str(pred_path)
    )
    out = tmp_path / "m.json"
    args = ["eval", str(gt_path), str(pred_path), "--json", str(out), "--oks-stddev", "0.05"]
    result = CliRunner().invoke(_app(), args)
    assert result.exit_code == 0, result.output
    assert "mAP (OKS VOC)" in result.output and "1.0000" in result.output
    assert json.loads(out.read_text())["mOKS"]["mOKS"] == 1.0


def test_command_errors_are_sleap_infer_errors(tmp_path: Path) -> None:
    result = CliRunner().invoke(_app(), ["eval", str(tmp_path / "a.slp"), str(tmp_path / "b")])
    assert isinstance(result.exception, UsageError)
    with pytest.raises(UsageError, match="--oks-stddev"):
        parse_stddev("0.02,x")
    assert parse_stddev("0.02,0.03") == [0.02, 0.03]


# ------------------------------------------------------------------ parity with sleap-nn
# Expected numbers are sleap-nn 0.3.5's own, from (.bench-venv/sleap-nn/bin/sleap-nn):
#   sleap-nn eval -g videos/synthetic_single.pkg.slp \
#       -p reference/single_instance_tiled.slp -s m.npz [--oks_stddev 0.1 --match_threshold 0.2]
# read back from m.json (paths relative to the shared fixtures folder).
SLEAP_NN_SINGLE_TILED = {
    (): {
        "mOKS": 0.06051814774692212,
        "oks_voc.mAP": 0.0049504950495049506,
        "oks_voc.mAR": 0.041666666666666664,
        "avg": 13.797177153417527,
        "p50": 16.126252883134875,
        "p75": 21.456170546479264,
        "p90": 22.560568883753287,
        "p95": 22.75332547742251,
        "p99": 22.95445476440804,
        "mPCK": 0.21249999999999997,
        "PCK@5": 0.20833333333333334,
        "PCK@10": 0.4166666666666667,
        "pairs": 12,
    },
    (("oks_stddev", 0.1), ("match_threshold", 0.2)): {
        "mOKS": 0.3701305856521298,
        "oks_voc.mAP": 0.01485148514851485,
        "oks_voc.mAR": 0.041666666666666664,
        "avg": 13.572255370057682,
        "p50": 13.69093303848112,
        "p75": 22.712605432552163,
        "p90": 22.83790131036787,
        "p95": 22.924696435716935,
        "p99": 22.994132535996187,
        "mPCK": 0.275,
        "PCK@5": 0.375,
        "PCK@10": 0.5,
        "pairs": 4,
    },
}


@pytest.mark.parametrize("options", list(SLEAP_NN_SINGLE_TILED))
def test_matches_sleap_nn_on_its_own_reference_predictions(
    shared: Path, options: tuple[tuple[str, float], ...]
) -> None:
    expected = SLEAP_NN_SINGLE_TILED[options]
    m = evaluate_files(
        shared / "videos" / "synthetic_single.pkg.slp",
        shared / "reference" / "single_instance_tiled.slp",
        **dict(options),
    )
    got = {
        "mOKS": m["mOKS"]["mOKS"],
        "oks_voc.mAP": m["voc_metrics"]["oks_voc.mAP"],
        "oks_voc.mAR": m["voc_metrics"]["oks_voc.mAR"],
        **{k: m["distance_metrics"][k] for k in ("avg", "p50", "p75", "p90", "p95", "p99")},
        **{k: m["pck_metrics"][k] for k in ("mPCK", "PCK@5", "PCK@10")},
        "pairs": m["counts"]["matched"],
    }
    assert got == pytest.approx(expected, rel=1e-12)
    assert m["visibility_metrics"]["precision"] == m["visibility_metrics"]["recall"] == 1.0
    assert m["counts"]["frame_pairs"] == 12


# ------------------------------------------------------------- sleap-nn's -s metrics.npz
# The layout of sleap-nn 0.3.5's ``eval -s m.npz`` (read back from its file on the
# fixtures above): one pickled 0-d ``metrics`` dict, these blocks and keys.
SLEAP_NN_NPZ_KEYS = {
    "voc_metrics": {
        f"{kind}.{key}"
        for kind in ("oks_voc", "pck_voc")
        for key in [
            "match_score_thresholds",
            "recall_thresholds",
            "match_scores",
            "precisions",
            "recalls",
            "AP",
            "AR",
            "mAP",
            "mAR",
        ]
    },
    "mOKS": {"mOKS"},
    "distance_metrics": set(
        ["frame_idxs", "video_paths", "dists", "avg", "p50", "p75", "p90", "p95", "p99"]
    ),
    "pck_metrics": {"thresholds", "pcks", "mPCK_parts", "mPCK", "PCK@5", "PCK@10"},
    "visibility_metrics": {"tp", "fp", "tn", "fn", "precision", "recall"},
}


def _same(a: object, b: object) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return a == b
    x, y = np.asarray(a), np.asarray(b)
    nan = x.dtype.kind == "f"
    return type(a) is type(b) and x.shape == y.shape and np.array_equal(x, y, equal_nan=nan)


def _eval_files(tmp_path: Path) -> tuple[Path, Path]:
    gt_path, pred_path = tmp_path / "gt.slp", tmp_path / "pred.slp"
    sio.save_slp(gt_two_animals(), str(gt_path))
    sio.save_slp(make_labels({0: [ANIMAL + 2.0], 1: [OTHER]}, predicted=True), str(pred_path))
    return gt_path, pred_path


def _run(args: list[str]) -> int:
    from sleap_infer.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(args)
    return int(exit_.value.code or 0)


def test_save_metrics_writes_sleap_nn_npz_and_its_json(tmp_path: Path) -> None:
    """#44.4: ``infer eval ... -s metrics.npz`` (sleap-nn's spelling) writes the .npz its
    users' scripts load, with the numbers our eval computes, and the .json beside it."""
    gt_path, pred_path = _eval_files(tmp_path)
    npz = tmp_path / "out" / "metrics.npz"
    assert _run(["eval", "-g", str(gt_path), "-p", str(pred_path), "-s", str(npz)]) == 0
    with np.load(npz, allow_pickle=True) as data:
        assert data["metrics"].shape == () and data["metrics"].dtype == object
        saved = data["metrics"].item()
    assert {k: set(v) for k, v in saved.items()} == SLEAP_NN_NPZ_KEYS
    ours = evaluate_files(gt_path, pred_path)
    ours.pop("counts")
    assert _same(saved, ours)
    assert saved["pck_metrics"]["pcks"].dtype == bool
    assert saved["pck_metrics"]["pcks"].shape == (2, 4, 10)  # pairs x nodes x thresholds
    assert saved["voc_metrics"]["oks_voc.precisions"].shape == (10, 101)
    assert isinstance(saved["visibility_metrics"]["tp"], np.int64)
    sibling = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert sibling["voc_metrics"]["oks_voc.mAR"] == ours["voc_metrics"]["oks_voc.mAR"]
    assert sorted(p.name for p in npz.parent.iterdir()) == ["metrics.json", "metrics.npz"]
    # a rerun replaces its own files
    assert _run(["eval", str(gt_path), str(pred_path), "--save_metrics", str(npz)]) == 0


def test_npz_name_and_json_as_sleap_nn_writes_them(tmp_path: Path) -> None:
    """``-s m`` writes m.npz (numpy appends it) and m.json; with --json, the JSON goes there."""
    gt_path, pred_path = _eval_files(tmp_path)
    assert _run(["eval", str(gt_path), str(pred_path), "--npz", str(tmp_path / "m")]) == 0
    assert (tmp_path / "m.npz").is_file() and (tmp_path / "m.json").is_file()
    other = tmp_path / "other.json"
    args = ["eval", str(gt_path), str(pred_path), "--npz", str(tmp_path / "n.npz")]
    assert _run([*args, "--json", str(other)]) == 0
    assert other.is_file() and not (tmp_path / "n.json").exists()


def test_npz_never_replaces_a_file_that_is_not_ours(tmp_path: Path) -> None:
    gt_path, pred_path = _eval_files(tmp_path)
    foreign = tmp_path / "theirs.npz"
    np.savez_compressed(foreign, metrics=np.array({"x": 1}, dtype=object))
    before = foreign.read_bytes()
    args = ["eval", str(gt_path), str(pred_path), "-s", str(foreign)]
    assert _run(args) == 2
    assert foreign.read_bytes() == before and not (tmp_path / "theirs.json").exists()
    assert _run([*args, "--overwrite"]) == 0
    assert "schema" in np.load(foreign).files
    (tmp_path / "notes.json").write_text("{}")  # sleap-nn's .json sibling: the same rule
    assert _run(["eval", str(gt_path), str(pred_path), "-s", str(tmp_path / "notes.npz")]) == 2
    assert (tmp_path / "notes.json").read_text() == "{}"
    assert not (tmp_path / "notes.npz").exists()
