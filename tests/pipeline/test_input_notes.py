"""What a source notes about its input (sources' ``VideoInfo.notes``) is each video's
warning: the run goes on, exit 0, and the output says what was really predicted."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest
import sleap_io as sio

import sleap_infer

from broken_videos import avi_claiming
from cli_runs import run_cli
from conftest import SYNTHETIC_MODEL, counter_frames


def test_a_header_overcount_predicts_what_the_file_holds_with_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    avi = avi_claiming(tmp_path / "cam.avi", counter_frames(20), claimed=21, mjpeg=True)
    out = tmp_path / "cam.slp"
    code, stderr = run_cli(
        capsys, "predict", avi, "-m", SYNTHETIC_MODEL, "-o", out, "--device", "cpu"
    )
    assert code == 0, stderr
    assert "truncated" not in stderr and "error:" not in stderr
    assert "warning: " in stderr and "its header says 21 frames but the file holds 20" in stderr
    labels = sio.load_slp(str(out), open_videos=False)
    assert labels.videos[0].backend_metadata["shape"][0] == 20
    assert labels.provenance["bad_frames"] == []


def test_a_webm_input_is_predicted_with_a_warning(tmp_path: Path) -> None:
    webm = tmp_path / "clip.webm"
    with av.open(str(webm), "w") as container:
        stream = container.add_stream("libvpx-vp9", rate=30)
        stream.width, stream.height, stream.pix_fmt = 96, 64, "yuv420p"
        for frame in counter_frames(3, gray=False):
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu")
    with pytest.warns(UserWarning, match="sleap-io"):  # a direct call hears it (#44)
        result = pipe.predict_to_file(webm, output=tmp_path / "clip.slp")
    assert result.counts.frames == 3
    assert len(result.warnings) == 1
    assert "sleap-io (and so SLEAP) cannot open .webm videos" in result.warnings[0]


def test_images_sleap_io_leaves_out_are_named_in_a_warning(tmp_path: Path) -> None:
    import imageio.v3 as iio

    folder = tmp_path / "frames"
    folder.mkdir()
    for i, frame in enumerate(counter_frames(3, gray=False)):
        iio.imwrite(folder / f"f{i}.png", frame)
    iio.imwrite(folder / "extra.PNG", np.zeros((64, 96, 3), np.uint8))
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu")
    with pytest.warns(UserWarning, match="upper-case suffix"):  # a direct call hears it
        result = pipe.predict_to_file(folder, output=tmp_path / "frames.slp")
    assert result.counts.frames == 3
    assert len(result.warnings) == 1 and "extra.PNG" in result.warnings[0]
