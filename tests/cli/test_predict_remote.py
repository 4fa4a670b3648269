"""``infer predict https://host/v.mp4`` (sleap-nn's remote ``--data_path``): the same points
as the local file, the output in the current folder under the URL's file name (where
sleap-nn writes it), one line for a video the server refuses, and ``--resume``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.sources import remote

from cli_runs import error_lines, infer_stopping, run_cli
from conftest import fixture_model, predicted_poses
from remote_server import serve


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(remote._ENV, "{}")  # restored after: options set by a run never leak


def _local(capsys: pytest.CaptureFixture[str], shared: Path, tmp_path: Path) -> Path:
    out = tmp_path / "local.slp"
    video = shared / "videos" / "small_robot.mp4"
    model = fixture_model(shared, "single_instance")
    code, _ = run_cli(capsys, "predict", video, "-m", model, "--frames", "0-11", "-o", out)
    assert code == 0
    return out


def test_a_url_predicts_the_points_of_the_local_file(
    capsys: pytest.CaptureFixture[str], shared: Path, tmp_path: Path
) -> None:
    model = fixture_model(shared, "single_instance")
    with serve(shared / "videos", required={"Authorization": "Bearer t"}) as (base, state):
        url = f"{base}/small_robot.mp4"
        args = ["predict", "-i", url, "-i", f"{base}/gone.mp4", "-m", model, "--frames", "0-11"]
        code, err = run_cli(
            capsys, *args, "--headers", '{"Authorization": "Bearer t"}', "--stream_mode", "auto"
        )
        assert code == 1  # the missing one failed, in one line; the other was predicted
        assert error_lines(err) == [f"error: {base}/gone.mp4: HTTP 404 Not Found"]
        assert all(r is not None for _, r in state.requests)  # range reads only
        # Without the header the server refuses: one line, exit 1, nothing written.
        code, err = run_cli(capsys, "predict", url, "-m", model, "-o", "x.slp")
        assert (code, error_lines(err)) == (1, [f"error: {url}: HTTP 403 Forbidden"])
        assert not Path("x.slp").exists()
    out = tmp_path / "small_robot.mp4.predictions.slp"  # the current folder, the URL's name
    assert sio.load_slp(str(out), open_videos=False).videos[0].filename == url
    frames, points, scores = predicted_poses(out)
    want = predicted_poses(_local(capsys, shared, tmp_path))
    assert frames == want[0] == list(range(12))
    np.testing.assert_array_equal(points, want[1])
    np.testing.assert_array_equal(scores, want[2])


def test_resume_goes_on_from_a_url_runs_journal(
    capsys: pytest.CaptureFixture[str], shared: Path, tmp_path: Path
) -> None:
    model = fixture_model(shared, "single_instance")
    with serve(shared / "videos") as (base, _):
        url = f"{base}/small_robot.mp4"
        args = ["predict", url, "-m", model, "--frames", "0-11", "-b", "4"]
        stopped = infer_stopping("SIGTERM", 1, *args)
        assert stopped.returncode != 0
        journals = list(tmp_path.glob("small_robot.mp4.predictions.slp*.partial*"))
        assert journals, stopped.stderr  # kept in the current folder, by the output
        code, err = run_cli(capsys, *args, "--resume")
        assert code == 0, err
        assert "resum" in err.lower()
    frames, points, _ = predicted_poses(tmp_path / "small_robot.mp4.predictions.slp")
    want = predicted_poses(_local(capsys, shared, tmp_path))
    assert frames == want[0]
    np.testing.assert_array_equal(points, want[1])
