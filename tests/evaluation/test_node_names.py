"""``infer eval`` matches nodes by name, not by position (issue 29, 7).

The same skeleton with its nodes in another order gave mAP 0 for perfect
predictions, and renamed nodes were scored silently against whatever sat at the
same position.
"""

from __future__ import annotations

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import UsageError
from sleap_infer.evaluation import evaluate
from sleap_infer.evaluation.nodes import node_order, parse_node_map

from cli_runs import error_lines, run_cli

NODES = ("head", "thorax", "abdomen", "tail")
ANIMAL = np.array([[10.0, 10.0], [20.0, 20.0], [25.0, 30.0], [30.0, 40.0]])
OTHER = ANIMAL + np.array([60.0, 0.0])


def _labels(nodes: tuple[str, ...], order: list[int], predicted: bool) -> sio.Labels:
    """Both animals on 3 frames, with the skeleton's nodes listed as ``nodes``; ``order``
    says which of :data:`NODES`' points each listed node holds."""
    skeleton = sio.Skeleton(list(nodes))
    video = sio.Video(filename="/data/session1.mp4", open_backend=False)
    make = sio.PredictedInstance if predicted else sio.Instance
    frames = []
    for idx in range(3):
        instances = []
        for k, animal in enumerate((ANIMAL, OTHER)):
            points = animal[order]
            if predicted:
                inst = make.from_numpy(points, skeleton=skeleton, score=1.0 - 0.1 * k)
            else:
                inst = make.from_numpy(points, skeleton=skeleton)
            instances.append(inst)
        frames.append(sio.LabeledFrame(video=video, frame_idx=idx, instances=instances))
    return sio.Labels(frames, videos=[video], skeletons=[skeleton])


GT = _labels(NODES, [0, 1, 2, 3], predicted=False)
SWAPPED = [3, 0, 2, 1]  # tail, head, abdomen, thorax


def test_same_skeleton_in_another_order_scores_perfect() -> None:
    pred = _labels(tuple(NODES[i] for i in SWAPPED), SWAPPED, predicted=True)
    metrics = evaluate(GT, pred)
    assert metrics["voc_metrics"]["oks_voc.mAP"] == 1.0
    assert metrics["distance_metrics"]["avg"] == 0
    assert metrics["counts"]["matched"] == 6


def test_renamed_nodes_are_refused_in_one_line_unless_mapped() -> None:
    renamed = ("Head", "Thorax", "abdomen", "tail")
    pred = _labels(renamed, [0, 1, 2, 3], predicted=True)
    with pytest.raises(UsageError) as err:
        evaluate(GT, pred)
    message = str(err.value)
    assert "'head', 'thorax'" in message and "'Head', 'Thorax'" in message
    assert "--node-map" in message and "\n" not in message
    metrics = evaluate(GT, pred, node_map={"Head": "head", "Thorax": "thorax"})
    assert metrics["voc_metrics"]["oks_voc.mAP"] == 1.0


def test_node_map_renames_and_reorders_together() -> None:
    names = ("t", "h", "a", "x")  # tail, head, abdomen, thorax under other names
    pred = _labels(names, SWAPPED, predicted=True)
    mapping = parse_node_map("t=tail, h=head,a=abdomen,x=thorax")
    assert evaluate(GT, pred, node_map=mapping)["voc_metrics"]["oks_voc.mAP"] == 1.0


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"nose": "head"}, "'nose' not in the predicted skeleton"),
        ({"head": "snout"}, "'snout' not in the ground-truth skeleton"),
        ({"head": "tail"}, "appear twice"),
    ],
)
def test_bad_node_maps(mapping: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        node_order(NODES, NODES, mapping)


@pytest.mark.parametrize("text", ["head", "=tail", "head=", ","])
def test_node_map_syntax(text: str) -> None:
    with pytest.raises(UsageError, match="--node-map"):
        parse_node_map(text)


def test_cli_node_map(tmp_path, capsys) -> None:
    gt, pred = tmp_path / "gt.slp", tmp_path / "pred.slp"
    sio.save_slp(GT, str(gt))
    sio.save_slp(_labels(("Head", "thorax", "abdomen", "tail"), [0, 1, 2, 3], True), str(pred))
    code, err = run_cli(capsys, "eval", gt, pred)
    assert code == 2 and len(error_lines(err)) == 1 and "--node-map" in err, err
    code, err = run_cli(capsys, "eval", gt, pred, "--node-map", "Head=head")
    assert code == 0, err
