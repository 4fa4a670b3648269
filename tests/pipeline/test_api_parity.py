"""The Python API gives what ``infer predict`` writes: every fixture model type, bit for bit.

For each model type the same frames go through ``infer predict`` (a ``.slp``
file) and through ``sleap_infer.load(...).predict(...)`` (arrays in memory);
the points, point scores, instance scores and identities must be the same
bits, the masks the same runs, the boxes the same corners, and
``Prediction.to_labels()`` must hold what the file holds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

import sleap_infer

from cli_runs import run_cli

MULTI = "synthetic_multi.pkg.slp"
SINGLE = "synthetic_single.pkg.slp"
# name: (models, input, frames)
CASES: dict[str, tuple[list[str], str, str | None]] = {
    "single_instance": (["minimal_instance_single_instance"], "small_robot.mp4", "0-7"),
    "centroid": (["minimal_instance_centroid"], "centered_pair_small.mp4", "0-7"),
    "topdown": (
        ["minimal_instance_centroid", "minimal_instance_centered_instance"],
        "centered_pair_small.mp4",
        "0-7",
    ),
    "bottomup": (["minimal_instance_bottomup"], "centered_pair_small.mp4", "0-7"),
    "multiclass_bottomup": (
        ["minimal_instance_multiclass_bottomup"],
        "centered_pair_small.mp4",
        "0-7",
    ),
    "multiclass_topdown": (
        ["minimal_instance_centroid", "minimal_instance_multiclass_centered_instance"],
        "centered_pair_small.mp4",
        "0-7",
    ),
    "bottomup_segmentation": (
        ["synthetic_bottomup_segmentation"],
        "synthetic_multi.pkg.slp",
        "0-7",
    ),
    "semantic_segmentation": (
        ["synthetic_semantic_segmentation"],
        "synthetic_multi.pkg.slp",
        "0-7",
    ),
    "topdown_segmentation": (
        ["synthetic_centroid", "synthetic_centered_instance_segmentation"],
        "synthetic_multi.pkg.slp",
        "0-7",
    ),
    "tiled_segmentation": (
        ["synthetic_bottomup_segmentation_tiled"],
        "synthetic_multi.pkg.slp",
        "0-7",
    ),
    "tiled_single_instance": (
        ["synthetic_single_instance_tiled"],
        "synthetic_single.pkg.slp",
        None,
    ),
    "bbox_centernet": (["synthetic_bbox_centernet"], "synthetic_multi.pkg.slp", "0-7"),
    "bbox_ssd": (["synthetic_bbox_ssd"], "synthetic_multi.pkg.slp", "0-3"),
    "bbox_topdown_segmentation": (
        ["synthetic_bbox_centernet", "synthetic_centered_instance_segmentation"],
        "synthetic_multi.pkg.slp",
        "0-7",
    ),
    "embedding_fused": (
        ["synthetic_centroid", "synthetic_embedding"],
        "synthetic_multi.pkg.slp",
        "0-7",
    ),
}


def _instances(labels: sio.Labels) -> dict[int, list[sio.PredictedInstance]]:
    return {lf.frame_idx: list(lf.instances) for lf in labels}


def _assert_poses_equal(pred: sleap_infer.Prediction, labels: sio.Labels) -> None:
    """Every frame's instances: same count, same points, scores and identity, same bits."""
    by_frame = _instances(labels)
    for row, frame_idx in enumerate(pred.frame_indices.tolist()):
        want = by_frame.get(frame_idx, [])
        slots = np.flatnonzero(pred.valid[row])
        assert len(slots) == len(want), f"frame {frame_idx}"
        for slot, inst in zip(slots, want):
            ours = pred.points[row, slot].astype(np.float64)
            assert np.array_equal(ours, inst.numpy(), equal_nan=True), f"frame {frame_idx}"
            scores = pred.point_scores[row, slot].astype(np.float64)
            assert np.array_equal(scores, inst.numpy(scores=True)[:, 2], equal_nan=True)
            assert float(pred.instance_scores[row, slot]) == pytest.approx(inst.score, abs=0)
            track = int(pred.tracks[row, slot])
            name = pred.track_names[track] if track >= 0 else None
            assert name == (inst.track.name if inst.track is not None else None)
            if pred.embeddings is not None and inst.identity_embedding is not None:
                vector = np.asarray(inst.identity_embedding.vector, np.float32)
                assert np.array_equal(pred.embeddings[row, slot], vector)


def _assert_masks_equal(pred: sleap_infer.Prediction, labels: sio.Labels) -> None:
    ours = pred.masks
    theirs = [(lf.frame_idx, m) for lf in labels for m in lf.masks]
    assert (0 if ours is None else len(ours)) == len(theirs)
    for k, (frame_idx, mask) in enumerate(theirs):
        assert ours is not None
        assert int(pred.frame_indices[ours.frame[k]]) == frame_idx
        assert np.array_equal(ours.runs(k), np.asarray(mask.rle_counts, np.uint32))
        assert float(ours.score[k]) == pytest.approx(mask.score, abs=0)


def _assert_boxes_equal(pred: sleap_infer.Prediction, labels: sio.Labels) -> None:
    ours = pred.boxes
    theirs = [(lf.frame_idx, b) for lf in labels for b in lf.bboxes]
    assert (0 if ours is None else len(ours)) == len(theirs)
    for k, (frame_idx, box) in enumerate(theirs):
        assert ours is not None
        assert int(pred.frame_indices[ours.frame[k]]) == frame_idx
        corners = np.array([box.x1, box.y1, box.x2, box.y2])
        assert np.array_equal(ours.xyxy[k].astype(np.float64), corners)


# The under-trained multi-class top-down model finds no node at the default threshold: keep
# every instance-stage peak (as the agreement table in docs/parity.md does), centroids as usual.
OPTIONS = {"multiclass_topdown": {"peak_threshold": 0.0, "centroid_peak_threshold": 0.2}}
# Every type on torch; on ONNX three representative ones (every type on both runtimes:
# benchmarks/same_outputs.py compares whole outputs of two checkouts).
RUNS = [(case, "torch") for case in CASES] + [
    (case, "onnx") for case in ("topdown", "bottomup", "bottomup_segmentation")
]


@pytest.mark.parametrize(("case", "backend"), RUNS)
def test_api_equals_infer_predict(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, backend: str
) -> None:
    names, video, frames = CASES[case]
    options = OPTIONS.get(case, {})
    models = [shared / "models" / n for n in names]
    source = shared / "videos" / video
    out = tmp_path / "cli.slp"
    args: list[str | Path] = ["predict", source, "-o", out, "-q", "--backend", backend]
    for m in models:
        args += ["-m", m]
    if frames is not None:
        args += ["--frames", frames]
    for name, value in options.items():
        args += ["--" + name.replace("_", "-"), str(value)]
    code, err = run_cli(capsys, *args)
    assert code == 0, err
    written = sio.load_slp(str(out))

    pipe = sleap_infer.load(models, backend=backend, **options)
    pred = pipe.predict(source, frames=frames)
    _assert_poses_equal(pred, written)
    _assert_masks_equal(pred, written)
    _assert_boxes_equal(pred, written)
    # The in-memory labels hold what the file holds.
    rebuilt = pred.to_labels()
    _assert_poses_equal(pred, rebuilt)
    _assert_masks_equal(pred, rebuilt)
    _assert_boxes_equal(pred, rebuilt)
    assert pred.counts.instances == sum(len(lf.instances) for lf in written)
    # Both keep every predicted frame, the empty ones too (sleap-nn's default).
    frames = pred.frame_indices.tolist()
    assert [lf.frame_idx for lf in written] == [lf.frame_idx for lf in rebuilt] == frames
    assert pred.counts.of(pred.counts.headline) > 0  # something was found and compared


def test_lone_embedding_predict_to_file_equals_cli(
    shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lone re-ID model embeds a project's detections: the API writes what the CLI writes."""
    model = shared / "models" / "synthetic_embedding"
    project = shared / "videos" / "synthetic_multi.pkg.slp"
    cli_out = tmp_path / "cli.slp"
    code, err = run_cli(capsys, "predict", project, "-m", model, "-o", cli_out, "-q")
    assert code == 0, err
    pipe = sleap_infer.load(model)
    result = pipe.predict_to_file(project, tmp_path / "api.slp")
    assert result.counts.embeddings > 0
    a, b = sio.load_slp(str(cli_out)), sio.load_slp(str(tmp_path / "api.slp"))
    vectors_a = [i.identity_embedding.vector for lf in a for i in (*lf.instances, *lf.masks)
                 if i.identity_embedding is not None]  # fmt: skip
    vectors_b = [i.identity_embedding.vector for lf in b for i in (*lf.instances, *lf.masks)
                 if i.identity_embedding is not None]  # fmt: skip
    assert len(vectors_a) == len(vectors_b) == result.counts.embeddings
    for x, y in zip(vectors_a, vectors_b):
        assert np.array_equal(x, y)
    with pytest.raises(sleap_infer.SleapInferError, match="embeds the detections of a SLEAP"):
        pipe.predict(np.zeros((2, 64, 64), np.uint8))
