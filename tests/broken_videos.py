"""Real broken video files, made with PyAV and byte surgery, for the failure tests."""

from __future__ import annotations

import struct
from pathlib import Path

import av
import numpy as np

from conftest import counter_frames, write_video


def noisy_frames(n: int, seed: int = 0) -> np.ndarray:
    """Counter frames plus noise: packets big enough that byte offsets land inside frames."""
    rng = np.random.default_rng(seed)
    noisy = counter_frames(n).astype(np.int16) + rng.integers(-8, 9, (n, 64, 96, 1))
    return np.clip(noisy, 0, 255).astype(np.uint8)


def faststart_mp4(path: Path, frames: np.ndarray, gop: int = 10) -> Path:
    """An mp4 whose index (moov) comes first, so a truncated copy still opens."""
    with av.open(str(path), mode="w", options={"movflags": "faststart"}) as container:
        stream = container.add_stream("libx264", rate=30)
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": "0", "g": str(gop)}
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())
    return path


def truncated_copy(src: Path, dst: Path, fraction: float) -> Path:
    """The first ``fraction`` of the bytes, as a recording cut off by a crash."""
    data = src.read_bytes()
    dst.write_bytes(data[: int(len(data) * fraction)])
    return dst


def zeroed_copy(src: Path, dst: Path, at: float = 0.7, n_bytes: int = 3000) -> Path:
    """Overwrite ``n_bytes`` at ``at`` of the file with zeros (a bad disk sector)."""
    data = bytearray(src.read_bytes())
    start = int(len(data) * at)
    data[start : start + n_bytes] = bytes(n_bytes)
    dst.write_bytes(bytes(data))
    return dst


def zero_frame_mp4(path: Path) -> Path:
    """A valid container header with no frames in it."""
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.width, stream.height = 96, 64
        stream.pix_fmt = "yuv420p"
        container.start_encoding()
    return path


def mjpeg_avi(path: Path, frames: np.ndarray) -> Path:
    """A Motion-JPEG AVI (every frame a keyframe), as many lab cameras record."""
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("mjpeg", rate=30)
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = "yuvj420p"
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())
    return path


def avi_claiming(path: Path, frames: np.ndarray, claimed: int, mjpeg: bool = False) -> Path:
    """An AVI whose headers claim ``claimed`` frames while it holds ``len(frames)``."""
    if mjpeg:
        mjpeg_avi(path, frames)
    else:
        write_video(path, frames, codec="mpeg4", options={"qscale": "2"})
    data = bytearray(path.read_bytes())
    avih = data.find(b"avih")
    strh = data.find(b"strh")
    struct.pack_into("<I", data, avih + 8 + 16, claimed)  # MainAVIHeader.dwTotalFrames
    struct.pack_into("<I", data, strh + 8 + 32, claimed)  # AVIStreamHeader.dwLength
    path.write_bytes(bytes(data))
    return path


def flipped_copy(
    src: Path, dst: Path, n_bits: int = 200, span: tuple[float, float] = (0.4, 0.6)
) -> Path:
    """Flip ``n_bits`` random bits in the ``span`` fraction of the file (a bad transfer):
    H.264 conceals the damage, and FFmpeg flags the frames it concealed corrupt."""
    data = bytearray(src.read_bytes())
    rng = np.random.default_rng(3)
    lo, hi = (int(len(data) * f) for f in span)
    for pos in rng.integers(lo, hi, n_bits):
        data[pos] ^= 1 << int(rng.integers(0, 8))
    dst.write_bytes(bytes(data))
    return dst
