"""Videos with chosen timestamps, rotation flags or damage, built with PyAV (and, where
a real ``ffmpeg -c copy`` is the point, the ffmpeg binary imageio-ffmpeg ships).

Each frame shows its ordinal as 10 black/white blocks, so a reader's frame ``i`` can be
checked against "the i-th frame written" whatever the codec does to grey levels.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

BITS = 10


def ordinal_frame(i: int, height: int = 64, width: int = 128) -> np.ndarray:
    img = np.full((height, width, 3), 60, np.uint8)
    for b in range(BITS):
        img[24:40, 4 + 12 * b : 12 + 12 * b] = 240 if (i >> b) & 1 else 10
    return img


def ordinal_of(img: np.ndarray) -> int:
    """The ordinal :func:`ordinal_frame` drew (read from the block centres)."""
    return sum(1 << b for b in range(BITS) if img[28:36, 6 + 12 * b : 10 + 12 * b].mean() > 128)


def write_stamped(
    path: Path,
    pts: Sequence[int],
    time_base: Fraction = Fraction(1, 1000),
    rotation: int | None = None,
    gop: int = 12,
    b_frames: int = 2,
) -> Path:
    """H.264 with one frame per timestamp in ``pts`` (in ``time_base`` units): gaps and
    jitter make variable frame rate; ``rotation`` sets the display-matrix flag phones write."""
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.height, stream.width = ordinal_frame(0).shape[:2]
        stream.pix_fmt = "yuv420p"
        stream.time_base = time_base
        stream.codec_context.time_base = time_base
        stream.options = {"g": str(gop), "bf": str(b_frames), "crf": "10"}
        if rotation is not None:
            stream.set_display_rotation(rotation)
        for i, stamp in enumerate(pts):
            frame = av.VideoFrame.from_ndarray(ordinal_frame(i), format="rgb24")
            frame.pts, frame.time_base = stamp, time_base
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return path


def vfr_pts(n: int, seed: int = 0, pauses: Sequence[int] = (20, 40)) -> list[int]:
    """Milliseconds: ~33 ms apart with +-8 ms jitter and a 150 ms pause after ``pauses``."""
    rng = np.random.default_rng(seed)
    out, t = [], 0
    for i in range(n):
        out.append(t)
        t += 33 + int(rng.integers(-8, 9)) + (150 if i in pauses else 0)
    return out


def dropped_pts(n_slots: int, drop: float = 0.1, seed: int = 1) -> list[int]:
    """A 30 fps webcam that lost ``drop`` of its frames: the survivors keep their stamps."""
    rng = np.random.default_rng(seed)
    return [round(k * 1000 / 30) for k in range(n_slots) if rng.random() > drop]


def ffmpeg_exe() -> str:
    """The ffmpeg binary (on PATH, or imageio-ffmpeg's), or skip."""
    found = shutil.which("ffmpeg")
    if found:
        return found
    try:
        import imageio_ffmpeg
    except ImportError:
        pytest.skip("no ffmpeg binary (neither on PATH nor from imageio-ffmpeg)")
    return imageio_ffmpeg.get_ffmpeg_exe()


def ffmpeg(*args: str) -> None:
    subprocess.run([ffmpeg_exe(), "-v", "error", "-y", *args], check=True)
