"""A phone's rotation flag turns the frames exactly as sleap-io shows them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio
from stamped_videos import ordinal_frame, write_stamped

from sleap_infer.sources.video import VideoReader


@pytest.mark.parametrize("flag", [90, -90, 180, 0])
def test_rotated_video_reads_like_sleap_io(flag: int, tmp_path: Path) -> None:
    path = write_stamped(tmp_path / f"phone{flag}.mp4", [33 * k for k in range(6)], rotation=flag)
    theirs = sio.load_video(str(path))
    reader = VideoReader(path)
    h, w = ordinal_frame(0).shape[:2]
    assert (reader.info.height, reader.info.width) == ((w, h) if flag % 180 else (h, w))
    assert (reader.info.height, reader.info.width) == theirs.shape[1:3]
    assert reader.info.rotation == flag % 360
    for i, frame in reader.iter_frames(channels=3):
        assert frame.shape == (reader.info.height, reader.info.width, 3)
        assert frame.flags.c_contiguous
        diff = np.abs(frame[..., :1].astype(int) - theirs[i].astype(int))
        assert diff.max() <= 1, (i, diff.max())
    theirs.close()
