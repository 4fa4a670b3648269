"""``infer predict --mask-backend``: sleap-nn's SAM command line, run in this process
(a fake SAM model; the networks are tests/sam, parity benchmarks/sam_parity.py)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.sam import run as sam_run
from sleap_infer.sam.recipe import Prompt

from cli_runs import error_lines, run_cli


@pytest.fixture
def pose_slp(shared: Path, tmp_path: Path) -> Path:
    src = tmp_path / "in.pkg.slp"
    shutil.copy(shared / "videos" / "minimal_instance.pkg.slp", src)
    return src


class BoxSam:
    """Fills each prompt's reject box, scores 0.5, 0.6, ..."""

    iou_floor = 0.88

    def masks(self, image: np.ndarray, prompts: Sequence[Prompt]) -> tuple[list, list]:
        out = []
        for p in prompts:
            m = np.zeros(image.shape[:2], bool)
            x0, y0, x1, y1 = (int(v) for v in p.reject_box)
            m[y0 : y1 + 1, x0 : x1 + 1] = True
            out.append(m)
        return out, [0.5 + 0.1 * i for i in range(len(prompts))]


@pytest.fixture
def fake_sam(monkeypatch: pytest.MonkeyPatch) -> list[sam_run.SamOptions]:
    asked: list[sam_run.SamOptions] = []

    def build(options: sam_run.SamOptions, device: str) -> BoxSam:
        asked.append(options)
        return BoxSam()

    monkeypatch.setattr(sam_run, "build_model", build)
    return asked


def test_sleap_nn_spelling_writes_masks_with_a_line_per_frame(
    pose_slp: Path,
    tmp_path: Path,
    fake_sam: list[sam_run.SamOptions],
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "masks.slp"
    code, err = run_cli(
        capsys,
        "predict",
        pose_slp,
        "--mask_backend",
        "sam",
        "--sam_checkpoint",
        "x.pth",
        "--sam_model_type",
        "vit_b",
        "--sam_prompt_mode",
        "centroid",
        "--sam_anchor_ind",
        "1",
        "--sam_disjointify_masks",
        "--device",
        "cpu",
        "-o",
        out,
    )
    assert code == 0, err
    (options,) = fake_sam
    assert (options.model_type, options.prompt_mode, options.anchor_ind) == ("vit_b", "centroid", 1)
    assert options.disjointify and options.checkpoint == "x.pth"
    assert len(sio.load_slp(str(out)).labeled_frames[0].masks) == 2


def test_mask_run_prints_progress(
    pose_slp: Path,
    tmp_path: Path,
    fake_sam: list[sam_run.SamOptions],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sleap_infer.cli import main

    with pytest.raises(SystemExit) as info:
        main(["predict", str(pose_slp), "--mask-backend", "sam", "-o", str(tmp_path / "o.slp")])
    assert not info.value.code
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert "masks: frame 0 (1/1" in printed and "2 masks on 1 frames" in printed


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-m", "model_dir"], "drop -m/--model"),
        (["--tracking"], "--tracking is not supported with --mask-backend"),
        (["--format", "analysis-h5"], "writes .slp only"),
    ],
)
def test_what_a_mask_run_refuses_is_one_line(
    pose_slp: Path,
    extra: list[str],
    message: str,
    fake_sam: list[sam_run.SamOptions],
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, err = run_cli(capsys, "predict", pose_slp, "--mask-backend", "sam", *extra)
    assert code == 2
    assert [message in line for line in error_lines(err)] == [True]
    assert not fake_sam


def test_without_a_checkpoint_one_line_and_nothing_written(
    pose_slp: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o.slp"
    code, err = run_cli(capsys, "predict", pose_slp, "--mask-backend", "sam", "-o", out)
    assert code == 2
    assert [("needs --sam-checkpoint" in line) for line in error_lines(err)] == [True]
    assert not out.exists()


def test_predict_without_model_or_mask_backend_still_needs_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, err = run_cli(capsys, "predict", "video.mp4")
    assert code == 2 and "Missing option '--model'" in err
