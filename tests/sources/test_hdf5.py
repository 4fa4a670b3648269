"""HDF5 inputs (sleap-nn's --video_dataset / --video_input_format): an .h5 of frames
predicts what the same frames do as arrays, in every layout sleap-io reads."""

from __future__ import annotations

import io
from pathlib import Path

import h5py
import numpy as np
import pytest
import sleap_io as sio
from PIL import Image

import sleap_infer
from sleap_infer.core.errors import VideoError
from sleap_infer.sources.hdf5 import Hdf5VideoReader

from cli_runs import error_lines, run_cli

PAIR = ("minimal_instance_centroid", "minimal_instance_centered_instance")


@pytest.fixture(scope="module")
def frames(shared: Path) -> np.ndarray:
    video = sio.load_video(str(shared / "videos" / "centered_pair_small.mp4"))
    return np.stack([np.asarray(video[i]) for i in range(4)])  # (4, 384, 384, 1) uint8


def _embedded(path: Path, frames: np.ndarray) -> None:
    """SLEAP's layout: a group with ``video`` (PNG bytes per frame) and ``frame_numbers``."""
    with h5py.File(path, "w") as f:
        group = f.create_group("video0")
        data = group.create_dataset(
            "video", (len(frames),), dtype=h5py.vlen_dtype(np.dtype("int8"))
        )
        for i, frame in enumerate(frames):
            buffer = io.BytesIO()
            Image.fromarray(frame[..., 0]).save(buffer, format="png")
            data[i] = np.frombuffer(buffer.getvalue(), np.int8)
        data.attrs["format"] = "png"
        data.attrs["channels"] = 1
        data.attrs["height"], data.attrs["width"] = frames.shape[1:3]
        group.create_dataset("frame_numbers", data=np.arange(len(frames)))


# (file layout, sleap-nn flags)
LAYOUTS = {
    "channels_last, found by itself": ([], "last"),
    "channels_first, named": (
        ["--video_dataset", "frames", "--video_input_format", "channels_first"],
        "first",
    ),
    "SLEAP's embedded images": (["--video_dataset", "video0"], "embedded"),
}


def _write(path: Path, layout: str, frames: np.ndarray) -> None:
    if layout == "embedded":
        _embedded(path, frames)
        return
    with h5py.File(path, "w") as f:
        if layout == "last":
            f.create_dataset("movie/frames", data=frames)
        else:  # sleap-io's channels_first: (frames, channels, width, height)
            f.create_dataset("frames", data=frames.transpose(0, 3, 2, 1))
            f.create_dataset("other", data=np.zeros((2, 8, 8, 1), np.uint8))


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_an_h5_of_frames_predicts_what_the_frames_do(
    shared: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    frames: np.ndarray,
    name: str,
) -> None:
    flags, layout = LAYOUTS[name]
    source = tmp_path / "movie.h5"
    _write(source, layout, frames)
    # frame i is sleap-io's video[i]
    video = sio.load_video(
        str(source),
        dataset=flags[1] if flags else None,
        input_format="channels_first" if layout == "first" else "channels_last",
    )
    assert np.array_equal(np.stack([np.asarray(video[i]) for i in range(4)]), frames)
    models = [shared / "models" / m for m in PAIR]
    out = tmp_path / "p.slp"
    code, err = run_cli(
        capsys, "predict", source, "-m", models[0], "-m", models[1], "-o", out, *flags
    )
    assert code == 0, err
    written = sio.load_slp(str(out))
    want = sleap_infer.load(models).predict(frames)
    by_frame = {lf.frame_idx: lf.instances for lf in written}
    assert sorted(by_frame) == [0, 1, 2, 3]
    for row in range(4):
        got = np.stack([inst.numpy() for inst in by_frame[row]])
        slots = np.flatnonzero(want.valid[row])
        assert np.array_equal(got, want.points[row, slots].astype(np.float64), equal_nan=True)
    # the output reopens the same frames
    assert type(written.video.backend).__name__ == "HDF5Video"
    assert np.array_equal(np.asarray(written.video[3]), frames[3])


def test_a_missing_dataset_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shared: Path, frames: np.ndarray
) -> None:
    source = tmp_path / "movie.h5"
    _write(source, "last", frames)
    with pytest.raises(VideoError, match=r"movie.h5 \(dataset 'nope'\): cannot read frames"):
        Hdf5VideoReader(source, "nope")
    model = shared / "models" / "minimal_instance_single_instance"
    code, err = run_cli(capsys, "predict", source, "-m", model, "--video_dataset", "nope", "-o",
                        tmp_path / "p.slp")  # fmt: skip
    assert code != 0 and len(error_lines(err)) == 1 and "dataset 'nope'" in err
    assert not (tmp_path / "p.slp").exists()


def test_frames_of_another_shape_name_the_order(tmp_path: Path, frames: np.ndarray) -> None:
    """channels_first data read as channels_last gives 384-channel 'frames': refused."""
    source = tmp_path / "movie.h5"
    _write(source, "first", frames)
    with pytest.raises(VideoError, match="--video-input-format channels_last"):
        Hdf5VideoReader(source, "frames")
    reader = Hdf5VideoReader(source, "frames", "channels_first")
    got = dict(reader.iter_frames([1, 9], channels=1))
    assert list(got) == [1] and np.array_equal(got[1], frames[1])
