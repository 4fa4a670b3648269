"""What ``Pipeline.predict`` and ``predict_to_file`` take, and what they refuse (one line each).

Uses the trained example model in ``examples/models`` and videos made here:
no shared fixtures needed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

import sleap_infer
from sleap_infer.core.errors import OutputExistsError, UsageError

from conftest import SYNTHETIC_MODEL, write_video

N_FRAMES = 12


@pytest.fixture(scope="module")
def pipe() -> sleap_infer.Pipeline:
    return sleap_infer.load(SYNTHETIC_MODEL, device="cpu")


@pytest.fixture(scope="module")
def frames() -> np.ndarray:
    """``(N, H, W, 3)`` uint8 frames of the example scene (gray content in RGB)."""
    from scene import _background, render, trajectory  # examples/synthetic/scene.py

    background = _background(np.random.default_rng(3))
    centers, angles = trajectory(N_FRAMES)
    gray = np.stack([render(c, a, background) for c, a in zip(centers, angles)])
    return np.ascontiguousarray(np.repeat(gray[..., None], 3, axis=-1))


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory, frames: np.ndarray) -> Path:
    return write_video(tmp_path_factory.mktemp("video") / "clip.mp4", frames)


def test_load_exports_and_repr(pipe: sleap_infer.Pipeline) -> None:
    assert {"load", "predict", "Pipeline", "Prediction"} <= set(sleap_infer.__all__)
    assert "SingleInstanceLayer" in repr(pipe)
    assert pipe.node_names


def test_numpy_shapes_agree(pipe: sleap_infer.Pipeline, frames: np.ndarray) -> None:
    """(N,H,W,C), a list of (H,W,C), (N,H,W) grayscale, one (H,W) frame: the same points."""
    gray = np.ascontiguousarray(frames[..., 0])
    stack = pipe.predict(gray[..., None])
    assert stack.points.shape[:1] == (N_FRAMES,)
    assert stack.points.shape[2:] == (len(pipe.node_names), 2)
    as_list = pipe.predict([f for f in gray[..., None]])
    as_gray = pipe.predict(gray)  # (N, H, W): N frames, never one N-channel frame
    one = pipe.predict(gray[5])  # (H, W): one frame
    for other in (as_list, as_gray):
        assert np.array_equal(other.points, stack.points, equal_nan=True)
        assert np.array_equal(other.frame_indices, np.arange(N_FRAMES))
    assert np.array_equal(one.points[0], stack.points[5], equal_nan=True)
    assert np.isfinite(stack.points[stack.valid]).any()


def test_float_frames_only_when_unambiguous(pipe: sleap_infer.Pipeline, frames: np.ndarray) -> None:
    as_uint8 = pipe.predict(frames)
    whole = pipe.predict(frames.astype(np.float32))  # whole numbers up to 255: exact
    assert np.array_equal(whole.points, as_uint8.points, equal_nan=True)
    with pytest.raises(UsageError, match=r"ambiguous \(0\.\.1 or 0\.\.255\?\)"):
        pipe.predict(frames.astype(np.float32) / 255.0)
    with pytest.raises(UsageError, match="not whole uint8 values"):
        pipe.predict(frames.astype(np.float32) + 0.5)
    with pytest.raises(UsageError, match="beyond uint8"):
        pipe.predict(frames.astype(np.uint16) * 16)
    with pytest.raises(UsageError, match="boolean frames"):
        pipe.predict(frames > 100)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.zeros((2, 3, 4, 5, 6), np.uint8), r"shape \(2, 3, 4, 5, 6\) is not frames"),
        (np.zeros((2, 32, 32, 2), np.uint8), "have 2 channels"),
        ([np.zeros((32, 32), np.uint8), np.zeros((16, 32), np.uint8)], r"frames\[1\]: shape"),
        ([], "the list is empty"),
        (5, "cannot predict a int"),
    ],
)
def test_bad_sources_one_line(pipe: sleap_infer.Pipeline, bad: object, message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        pipe.predict(bad)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)


def test_path_and_sio_video_agree(pipe: sleap_infer.Pipeline, video: Path) -> None:
    """A path is read by our reader, a sio.Video by sleap-io: same frames, same points."""
    by_path = pipe.predict(video, frames="2-9")
    by_video = pipe.predict(sio.load_video(str(video)), frames=range(2, 10))
    assert by_path.frame_indices.tolist() == list(range(2, 10))
    assert np.array_equal(by_path.frame_indices, by_video.frame_indices)
    assert np.array_equal(by_path.points, by_video.points, equal_nan=True)
    labels = by_path.to_labels()
    assert [lf.frame_idx for lf in labels] == list(range(2, 10))
    assert Path(labels.videos[0].filename) == video


def test_frames_out_of_range(pipe: sleap_infer.Pipeline, frames: np.ndarray) -> None:
    with pytest.raises(UsageError, match=f"index {N_FRAMES} is outside"):
        pipe.predict(frames, frames=[0, N_FRAMES])


def test_to_labels_saves_and_reloads(
    pipe: sleap_infer.Pipeline, frames: np.ndarray, tmp_path: Path
) -> None:
    pred = pipe.predict(frames)
    labels = pred.to_labels()
    # Every predicted frame, those where nothing was found too, as infer predict writes.
    assert [lf.frame_idx for lf in labels] == pred.frame_indices.tolist()
    assert sum(bool(lf.instances) for lf in labels) == int(pred.valid.any(axis=1).sum())
    path = tmp_path / "mem.slp"
    labels.save(str(path))
    again = sio.load_slp(str(path))
    first = next(lf for lf in again if lf.instances)
    row = int(np.flatnonzero(pred.frame_indices == first.frame_idx)[0])
    slot = int(np.flatnonzero(pred.valid[row])[0])
    assert np.array_equal(first.instances[0].numpy(), pred.points[row, slot].astype(np.float64))


def test_predict_to_file_never_replaces_a_finished_output(
    pipe: sleap_infer.Pipeline, video: Path, tmp_path: Path
) -> None:
    out = tmp_path / "clip.slp"
    first = pipe.predict_to_file(video, out)
    assert first.counts.frames == N_FRAMES
    before = out.read_bytes()
    with pytest.raises(OutputExistsError, match="exists"):
        pipe.predict_to_file(video, out, frames="0-3")
    assert out.read_bytes() == before  # the 12-frame output is untouched
    again = pipe.predict_to_file(video, out, frames="0-3", overwrite=True)
    assert again.counts.frames == 4
    assert len(sio.load_slp(str(out))) <= 4


def test_predict_to_file_refuses_a_foreign_file(
    pipe: sleap_infer.Pipeline, video: Path, tmp_path: Path
) -> None:
    out = tmp_path / "notes.slp"
    out.write_text("my notes")
    with pytest.raises(OutputExistsError, match="not a complete slp output"):
        pipe.predict_to_file(video, out)
    assert out.read_text() == "my notes"


def test_options_by_cli_names(frames: np.ndarray) -> None:
    strict = sleap_infer.load(SYNTHETIC_MODEL, device="cpu", peak_threshold=0.99, batch_size=3)
    assert strict.batch_size == 3
    assert strict.options.peak_threshold == 0.99
    loose = sleap_infer.load(SYNTHETIC_MODEL, device="cpu", no_refine=True)
    assert loose.options.refine is False
    with pytest.raises(UsageError, match="did you mean 'peak_threshold'"):
        sleap_infer.load(SYNTHETIC_MODEL, peak_treshold=0.3)
    with pytest.raises(UsageError, match="only matter with tracking=True"):
        sleap_infer.load(SYNTHETIC_MODEL, max_tracks=2)


def test_tracked_in_memory_equals_tracked_file(video: Path, tmp_path: Path) -> None:
    """Tracking runs in the same sink in memory as into a file: the same track per instance."""
    tracked = sleap_infer.load(SYNTHETIC_MODEL, device="cpu", tracking=True)
    pred = tracked.predict(video)
    assert pred.track_names
    out = tmp_path / "tracked.slp"
    tracked.predict_to_file(video, out)
    written = {lf.frame_idx: lf.instances for lf in sio.load_slp(str(out))}
    for row, frame_idx in enumerate(pred.frame_indices.tolist()):
        names = [pred.track_names[t] for t in pred.tracks[row][pred.valid[row]]]
        assert names == [i.track.name for i in written[frame_idx]]


def test_batch_predict(video: Path, tmp_path: Path) -> None:
    """sleap_infer.predict: the batch the command line runs, outcomes back in Python."""
    result = sleap_infer.predict([video], SYNTHETIC_MODEL, output=tmp_path / "out", device="cpu")
    assert not result.failed
    (outcome,) = result.outcomes
    assert outcome.status == "done" and outcome.counts.frames == N_FRAMES
    assert outcome.task.output.exists()
    again = sleap_infer.predict([video], SYNTHETIC_MODEL, output=tmp_path / "out", device="cpu")
    assert again.outcomes[0].status == "skipped"


def test_to_labels_leaves_empty_frames_out_when_asked(frames: np.ndarray) -> None:
    """``no_empty_frames=True`` (``--no-empty-frames``): only frames where something was
    found; the same frames are predicted either way."""
    quiet = sleap_infer.load(SYNTHETIC_MODEL, device="cpu", peak_threshold=2.0)
    dropping = sleap_infer.load(
        SYNTHETIC_MODEL, device="cpu", peak_threshold=2.0, no_empty_frames=True
    )
    kept, dropped = quiet.predict(frames), dropping.predict(frames)
    assert len(kept) == len(dropped) == N_FRAMES
    assert kept.counts.instances == 0  # nothing reaches a peak of 2
    assert [lf.frame_idx for lf in kept.to_labels()] == list(range(N_FRAMES))
    assert len(dropped.to_labels()) == 0
