"""Frames the decoder flags corrupt: bad frames by default, counted; kept on request."""

from __future__ import annotations

from pathlib import Path

import pytest
import sleap_io as sio

import sleap_infer
from sleap_infer.sources.video import CORRUPT

from broken_videos import faststart_mp4, flipped_copy, noisy_frames
from cli_runs import run_cli
from conftest import SYNTHETIC_MODEL


@pytest.fixture(scope="module")
def flipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("corrupt")
    clean = faststart_mp4(folder / "clean.mp4", noisy_frames(40), gop=20)
    return flipped_copy(clean, folder / "flipped.mp4")


def test_corrupt_frames_are_recorded_bad_by_default(flipped: Path, tmp_path: Path) -> None:
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu", batch_size=8)
    result = pipe.predict_to_file(flipped, output=tmp_path / "out.slp")
    corrupt = [e for e in result.bad_frames if e.kind == CORRUPT]
    assert corrupt and result.n_bad_frames == sum(e.count for e in corrupt)
    assert result.counts.frames + result.n_bad_frames == 40 and not result.truncated
    prov = sio.load_slp(str(tmp_path / "out.slp")).provenance
    assert {b["kind"] for b in prov["bad_frames"]} == {CORRUPT}
    kept = sleap_infer.load(SYNTHETIC_MODEL, device="cpu", batch_size=8, keep_corrupt_frames=True)
    result = kept.predict_to_file(flipped, output=tmp_path / "kept.slp")
    assert result.bad_frames == [] and result.counts.frames == 40


def test_cli_counts_corrupt_frames_and_keeps_them_on_request(
    flipped: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["predict", flipped, "-m", SYNTHETIC_MODEL, "--device", "cpu", "--progress", "none"]
    code, err = run_cli(capsys, *args, "-o", tmp_path / "a.slp")
    assert code == 0, err
    assert "bad frames" in capsys.readouterr().out + err
    code, err = run_cli(capsys, *args, "-o", tmp_path / "b.slp", "--keep-corrupt-frames")
    assert code == 0, err
    prov = sio.load_slp(str(tmp_path / "b.slp")).provenance
    assert prov["frames_processed"] == 40 and not prov.get("bad_frames")
