"""``Pipeline.stream``, ``Prediction[i]``, iteration, tables, tensors and progress (issue 44 §2).

A streamed frame is the same arrays as the same row of ``predict()``, on every
kind of fixture model that makes instances (single instance, top-down,
bottom-up, identities), masks or boxes, tracked or not; the stream holds a few
batches, never the video.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import sleap_infer
from sleap_infer.core.errors import UsageError
from sleap_infer.pipeline import frames_job
from sleap_infer.pipeline.result import FrameResult

from conftest import SYNTHETIC_MODEL

CASES: dict[str, tuple[list[str], str, str]] = {
    "single_instance": (["minimal_instance_single_instance"], "small_robot.mp4", "0-9"),
    "topdown": (
        ["minimal_instance_centroid", "minimal_instance_centered_instance"],
        "centered_pair_small.mp4",
        "0-9",
    ),
    "bottomup": (["minimal_instance_bottomup"], "centered_pair_small.mp4", "0-9"),
    "multiclass_bottomup": (
        ["minimal_instance_multiclass_bottomup"],
        "centered_pair_small.mp4",
        "0-5",
    ),
    "bottomup_segmentation": (
        ["synthetic_bottomup_segmentation"],
        "synthetic_multi.pkg.slp",
        "0-5",
    ),
    "bbox_centernet": (["synthetic_bbox_centernet"], "synthetic_multi.pkg.slp", "0-5"),
}


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def assert_same_frame(a: FrameResult, b: FrameResult) -> None:
    assert a.frame_idx == b.frame_idx
    for name in ("points", "point_scores", "instance_scores", "tracks", "track_scores"):
        assert _same(getattr(a, name), getattr(b, name)), name
    assert _same(a.embeddings, b.embeddings)
    for name in ("masks", "boxes"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            for key, value in x.arrays().items():
                assert np.array_equal(value, y.arrays()[key]), (name, key)


@pytest.mark.parametrize(("case", "tracking"), [(c, False) for c in CASES] + [("topdown", True)])
def test_stream_equals_predict(shared: Path, case: str, tracking: bool) -> None:
    models, source, frames = CASES[case]
    pipe = sleap_infer.load(
        *[shared / "models" / m for m in models], device="cpu", batch_size=4, tracking=tracking
    )
    video = shared / "videos" / source
    pred = pipe.predict(video, frames=frames, progress=False)
    streamed = list(pipe.stream(video, frames=frames, progress=False))
    assert len(streamed) == len(pred) == len(list(pred))
    assert [f.frame_idx for f in streamed] == pred.frame_indices.tolist()
    for row, (one, whole) in enumerate(zip(streamed, pred)):
        assert_same_frame(one, whole)
        assert_same_frame(one, pred[row])
        assert np.array_equal(one.points, pred.points[row][pred.valid[row]], equal_nan=True)
        assert one.points.shape == (len(one), len(pipe.node_names), 2)
    if case == "bottomup_segmentation":
        assert sum(len(f.masks) for f in streamed) == len(pred.masks) > 0
    if case == "bbox_centernet":
        assert sum(len(f.boxes) for f in streamed) == len(pred.boxes) > 0
    if tracking:
        assert any((f.tracks >= 0).any() for f in streamed)


def test_stream_holds_a_few_batches_not_the_video(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The runner is ahead of the reader by at most the queue's batches plus the one in
    the sink: consuming frame k, no more than k + (queue + 2) batches have been predicted."""
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu", batch_size=2)
    frames = np.zeros((40, 64, 64), np.uint8)
    made: list[int] = []
    sink = pipe.sink

    def counting(then, online):  # type: ignore[no-untyped-def]
        inner = sink(then, online)

        def count(preds):  # type: ignore[no-untyped-def]
            made.append(preds.batch_size)
            inner(preds)

        return count

    monkeypatch.setattr(pipe, "sink", counting)
    stream = pipe.stream(frames)
    for k, frame in enumerate(stream):
        assert frame.frame_idx == k
        assert sum(made) <= k + 2 * (frames_job.QUEUE_BATCHES + 2)
        if k == 9:
            break
    stream.close()  # leaving the loop stops the runner: it predicts no more
    assert sum(made) < 40


def test_stream_refuses_trackers_that_relabel_earlier_frames() -> None:
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu", tracker="infer_bytetrack")
    with pytest.raises(UsageError, match=r"stream\(\) cannot track this way.*predict\(\)"):
        next(iter(pipe.stream(np.zeros((4, 64, 64), np.uint8))))


def test_prediction_indexing() -> None:
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu")
    pred = pipe.predict(np.zeros((5, 64, 64), np.uint8), frames=[1, 3])
    assert len(pred) == 2
    assert pred[-1].frame_idx == 3 and pred[0].frame_idx == 1
    assert (
        repr(pred[0])
        == f"FrameResult(frame 1, {len(pred[0])} instance"
        + ("" if len(pred[0]) == 1 else "s")
        + ")"
    )
    with pytest.raises(IndexError, match=r"Prediction\[2\]: 2 frames were predicted"):
        pred[2]
    with pytest.raises(TypeError, match="index rows with an int"):
        pred["1"]  # type: ignore[index]


def test_to_dataframe_and_movement(shared: Path) -> None:
    pipe = sleap_infer.load(
        shared / "models" / "minimal_instance_bottomup", device="cpu", tracking=True
    )
    pred = pipe.predict(shared / "videos" / "centered_pair_small.mp4", frames="3-8")
    df = pred.to_dataframe()
    assert list(df.columns) == ["frame", "instance", "track", "node", "x", "y", "score"]
    n_nodes = len(pred.node_names)
    assert len(df) == int(pred.valid.sum()) * n_nodes
    assert set(df["frame"]) <= set(range(3, 9))
    assert set(df["track"].dropna()) <= set(pred.track_names)
    rows, slots = np.nonzero(pred.valid)
    assert np.array_equal(df["x"].to_numpy(), pred.points[rows, slots, :, 0].reshape(-1), True)
    ds = pred.to_movement()
    assert ds.position.shape == (len(pred), 2, n_nodes, len(pred.track_names))
    assert ds.time.values.tolist() == pred.frame_indices.tolist()
    assert list(ds.individuals.values) == list(pred.track_names)
    row, slot = rows[0], slots[0]
    column = list(pred.track_names).index(df["track"].iloc[0])
    assert np.array_equal(
        ds.position.values[row, :, :, column], pred.points[row, slot].T, equal_nan=True
    )


def test_to_movement_without_movement(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu")
    pred = pipe.predict(np.zeros((2, 64, 64), np.uint8))
    monkeypatch.setitem(sys.modules, "movement.io", None)
    with pytest.raises(ImportError, match="needs the movement package: pip install movement"):
        pred.to_movement()


def test_torch_tensors_are_frames() -> None:
    torch = pytest.importorskip("torch")
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu")
    frames = (np.arange(3 * 64 * 64) % 251).astype(np.uint8).reshape(3, 64, 64, 1)
    as_numpy = pipe.predict(frames)
    as_tensor = pipe.predict(torch.from_numpy(frames))
    as_list = pipe.predict([torch.from_numpy(f) for f in frames])
    for other in (as_tensor, as_list):
        assert np.array_equal(other.points, as_numpy.points, equal_nan=True)
    with pytest.raises(UsageError, match="are ambiguous"):
        pipe.predict(torch.zeros((3, 64, 64), dtype=torch.uint8))


def test_progress_on_stderr_for_videos_only(
    capsys: pytest.CaptureFixture[str], shared: Path, tmp_path: Path
) -> None:
    """A video prints plain progress lines on stderr (not a terminal here), nothing on
    stdout; ``progress=False`` and arrays are silent."""
    pipe = sleap_infer.load(shared / "models" / "minimal_instance_single_instance", device="cpu")
    video = shared / "videos" / "small_robot.mp4"
    pipe.predict(video, frames="0-3")
    out, err = capsys.readouterr()
    assert out == ""
    assert "small_robot.mp4: started, 4 frames" in err
    assert "small_robot.mp4: 4 frames in" in err
    list(pipe.stream(video, frames="0-3"))
    assert "small_robot.mp4: 4 frames in" in capsys.readouterr().err
    pipe.predict_to_file(video, tmp_path / "p.slp", frames="0-3")
    assert "small_robot.mp4: 4 frames in" in capsys.readouterr().err
    pipe.predict(video, frames="0-3", progress=False)
    pipe.predict_to_file(video, tmp_path / "q.slp", frames="0-3", progress=False)
    pipe.predict(np.zeros((2, 64, 64), np.uint8))
    assert capsys.readouterr() == ("", "")
