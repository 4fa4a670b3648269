"""Masks for a pose .slp written as sleap-nn writes them (a fake SAM; the real one is
tests/sam/test_sam_models.py and benchmarks/sam_parity.py)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import OutputExistsError, UsageError
from sleap_infer.sam.recipe import Prompt
from sleap_infer.sam.run import SamOptions, default_output, segment


class BoxSam:
    """A mask model that fills each prompt's reject box: enough to check the plumbing."""

    iou_floor = 0.88

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def masks(
        self, image: np.ndarray, prompts: Sequence[Prompt]
    ) -> tuple[list[np.ndarray], list[float]]:
        self.calls.append([p.mode for p in prompts])
        out = []
        for p in prompts:
            m = np.zeros(image.shape[:2], bool)
            x0, y0, x1, y1 = (int(v) for v in p.reject_box)
            m[y0 : y1 + 1, x0 : x1 + 1] = True
            out.append(m)
        return out, [0.5 + 0.1 * i for i in range(len(prompts))]


@pytest.fixture
def pose_slp(shared: Path, tmp_path: Path) -> Path:
    src = tmp_path / "in.pkg.slp"
    shutil.copy(shared / "videos" / "minimal_instance.pkg.slp", src)
    return src


def test_masks_per_instance_frames_and_poses_kept_input_untouched(
    pose_slp: Path, tmp_path: Path
) -> None:
    before = pose_slp.read_bytes()
    out = tmp_path / "out.slp"
    seen: list[tuple[int, int, int]] = []
    model = BoxSam()
    n_frames, n_masks = segment(
        pose_slp,
        out,
        SamOptions(prompt_mode="box"),
        "cpu",
        model=model,
        on_frame=lambda *a: seen.append(a),
    )
    assert (n_frames, n_masks) == (1, 2) and seen == [(1, 1, 0)]
    assert model.calls == [["box", "box"]]
    assert pose_slp.read_bytes() == before
    labels = sio.load_slp(str(out))
    (lf,) = labels.labeled_frames
    assert len(lf.instances) == 2  # the poses stay beside their masks
    assert [round(m.score, 6) for m in lf.masks] == [0.5, 0.6]
    assert all(tuple(m.scale) == (1.0, 1.0) and tuple(m.offset) == (0.0, 0.0) for m in lf.masks)
    assert lf.masks[0].data.shape == (384, 384)
    # user instances are annotations: the mask does not point at them (as sleap-nn)
    assert all(m.instance is None for m in lf.masks)


def test_existing_output_and_the_input_itself_are_refused(pose_slp: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is the input"):
        segment(pose_slp, pose_slp, SamOptions(), "cpu", model=BoxSam())
    out = tmp_path / "out.slp"
    out.write_text("mine")
    with pytest.raises(OutputExistsError, match="--overwrite"):
        segment(pose_slp, out, SamOptions(), "cpu", model=BoxSam())
    assert out.read_text() == "mine"
    segment(pose_slp, out, SamOptions(), "cpu", overwrite=True, model=BoxSam())
    assert len(sio.load_slp(str(out)).labeled_frames[0].masks) == 2


def test_frames_outside_the_selection_are_left_out(pose_slp: Path, tmp_path: Path) -> None:
    n_frames, n_masks = segment(
        pose_slp, tmp_path / "o.slp", SamOptions(), "cpu", frames=[(5, None)], model=BoxSam()
    )
    assert (n_frames, n_masks) == (0, 0)


def test_disjointify_and_overlay(pose_slp: Path, tmp_path: Path) -> None:
    pytest.importorskip("cv2")
    png = tmp_path / "ov.png"
    segment(
        pose_slp,
        tmp_path / "o.slp",
        SamOptions(prompt_mode="pose", disjointify=True, overlay_path=png),
        "cpu",
        model=BoxSam(),
    )
    masks = sio.load_slp(str(tmp_path / "o.slp")).labeled_frames[0].masks
    assert not (masks[0].data & masks[1].data).any()
    import cv2

    img = cv2.imread(str(png))
    assert img.shape == (384, 384, 3)
    # both scores are under SAM1's 0.88 floor: flagged in red (BGR 0, 0, 255)
    assert ((img[..., 2] == 255) & (img[..., 0] == 0) & (img[..., 1] == 0)).any()


def test_default_output_and_a_video_input(tmp_path: Path) -> None:
    assert default_output(Path("a/x.pkg.slp")) == Path("a/x.pkg.predictions.slp")
    video = tmp_path / "v.mp4"
    video.write_bytes(b"")
    with pytest.raises(UsageError, match="masks the poses of a .slp"):
        segment(video, tmp_path / "o.slp", SamOptions(), "cpu", model=BoxSam())
