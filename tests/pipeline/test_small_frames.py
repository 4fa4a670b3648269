"""Frames smaller than the network's max stride are predicted with a warning that says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import sleap_infer

from conftest import SYNTHETIC_MODEL, write_video


def test_frames_below_the_max_stride_warn(tmp_path: Path) -> None:
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu")  # max_stride 16, scale 1
    tiny = write_video(tmp_path / "tiny.mp4", np.full((4, 8, 12, 3), 90, np.uint8))
    with pytest.warns(UserWarning, match="smaller than the model's max stride"):
        result = pipe.predict_to_file(tiny, output=tmp_path / "tiny.slp")
    assert result.warnings == [
        f"{tiny}: frames are 8x12, smaller than the model's max stride 16: "
        "predictions on them are unreliable"
    ]
    fine = write_video(tmp_path / "fine.mp4", np.full((2, 16, 32, 3), 90, np.uint8))
    assert pipe.predict_to_file(fine, output=tmp_path / "fine.slp").warnings == []
