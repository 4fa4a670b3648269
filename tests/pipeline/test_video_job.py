"""One video into one output (issue 45): an input replaced during its run is never
published as predictions of it, and a project selection of no frame is an error."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

import sleap_infer
from sleap_infer.core.errors import VideoError
from sleap_infer.journal import journal_path

import scene
from cli_runs import error_lines, run_cli
from conftest import SYNTHETIC_MODEL

MODEL = str(SYNTHETIC_MODEL)


def write_labels(video: Path, path: Path) -> None:
    """A project of ``video``: one user instance on frame 0, no suggestions."""
    skeleton = sio.Skeleton(["a", "b"])
    media = sio.Video(filename=str(video), open_backend=False)
    user = sio.Instance.from_numpy(np.array([[1.0, 2.0], [3.0, 4.0]]), skeleton=skeleton)
    frame = sio.LabeledFrame(video=media, frame_idx=0, instances=[user])
    sio.save_slp(sio.Labels([frame], videos=[media], skeletons=[skeleton]), str(path))


def test_an_input_replaced_during_its_run_is_not_published(tmp_path: Path) -> None:
    """The journal compared the video's size on --resume only: a video replaced while it
    was predicted got an output of the old frames under the new file's name."""
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=6)
    other = tmp_path / "other.mp4"
    scene.write_video(other, n_frames=6, seed=1)
    out = tmp_path / "v.slp"

    def replaced(_info: object, _n: int) -> None:
        os.replace(other, video)

    pipe = sleap_infer.load(MODEL, device="cpu")
    with pytest.raises(VideoError, match="input changed while it was predicted"):
        pipe.predict_to_file(video, out, on_start=replaced)
    assert not out.exists() and not journal_path(out).exists()
    pipe.predict_to_file(video, out)  # the new file, from the start
    assert out.exists()


def test_a_project_selection_of_no_frame_is_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--only-suggested-frames on a project without suggestions wrote an empty .slp, exit 0,
    where a --frames past the end is an error."""
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=6)
    project = tmp_path / "p.slp"
    write_labels(video, project)
    args = ("predict", project, "-m", MODEL, "--device", "cpu", "--progress", "none")
    code, err = run_cli(capsys, *args, "--only-suggested-frames")
    [line] = error_lines(err)
    assert code == 1 and "--only-suggested-frames selects no frame of video 0" in line, err
    assert not list(tmp_path.glob("p.slp.predictions.*"))
    code, err = run_cli(capsys, *args, "--only-labeled-frames")  # frame 0 is labeled
    assert code == 0, err
