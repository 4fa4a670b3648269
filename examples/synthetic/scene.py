"""A synthetic "animal" with known keypoints, for the demo and for accuracy tests.

A bright ellipse body with a brighter head blob moves along a Lissajous path
over a textured background while turning. Its two keypoints, ``head`` and
``tail``, are known exactly, so predictions can be scored in pixels.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np

SIZE = 160  # frames are SIZE x SIZE, gray
BODY_HALF_LENGTH = 18.0
NODE_NAMES = ("head", "tail")


def _background(rng: np.random.Generator) -> np.ndarray:
    """Smooth, static texture in [20, 70]: coarse noise, bilinearly upsampled."""
    coarse = rng.uniform(0, 1, (12, 12))
    axis = np.linspace(0, 11, SIZE)
    i0 = np.minimum(axis.astype(int), 10)
    f = axis - i0
    rows = coarse[i0] * (1 - f)[:, None] + coarse[i0 + 1] * f[:, None]
    up = rows[:, i0] * (1 - f)[None, :] + rows[:, i0 + 1] * f[None, :]
    return 20 + 50 * up


def keypoints(center: np.ndarray, angle: float) -> np.ndarray:
    """``(2, 2)`` (head, tail) positions in (x, y) pixel coordinates."""
    d = BODY_HALF_LENGTH * np.array([np.cos(angle), np.sin(angle)])
    return np.stack([center + d, center - d])


def render(center: np.ndarray, angle: float, background: np.ndarray) -> np.ndarray:
    """One ``(SIZE, SIZE)`` uint8 frame (pixel centres at integer coordinates)."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64)
    dx, dy = xx - center[0], yy - center[1]
    c, s = np.cos(angle), np.sin(angle)
    along, across = dx * c + dy * s, -dx * s + dy * c
    body = np.exp(-(((along / (BODY_HALF_LENGTH * 1.1)) ** 2 + (across / 6.0) ** 2) ** 2))
    head = keypoints(center, angle)[0]
    head_blob = np.exp(-((xx - head[0]) ** 2 + (yy - head[1]) ** 2) / (2 * 3.0**2))
    img = background + 120 * body + 90 * head_blob
    return np.clip(img, 0, 255).astype(np.uint8)


def trajectory(n_frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Centres ``(n, 2)`` and headings ``(n,)`` for the demo video."""
    t = np.arange(n_frames) / 30.0
    cx = SIZE / 2 + 45 * np.sin(0.9 * t)
    cy = SIZE / 2 + 40 * np.sin(1.3 * t + 0.5)
    vx, vy = 45 * 0.9 * np.cos(0.9 * t), 40 * 1.3 * np.cos(1.3 * t + 0.5)
    return np.stack([cx, cy], axis=1), np.arctan2(vy, vx)


def random_poses(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Training poses covering the frame, any heading."""
    margin = BODY_HALF_LENGTH + 6
    centers = rng.uniform(margin, SIZE - margin, (n, 2))
    return centers, rng.uniform(-np.pi, np.pi, n)


def write_video(path: Path, n_frames: int = 300, seed: int = 0) -> np.ndarray:
    """Write the demo video (h264) and return ground truth ``(n, 2 nodes, 2)``."""
    rng = np.random.default_rng(seed)
    background = _background(rng)
    centers, angles = trajectory(n_frames)
    truth = np.stack([keypoints(c, a) for c, a in zip(centers, angles)])
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.width = stream.height = SIZE
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": "12"}
        for c, a in zip(centers, angles):
            gray = render(c, a, background)
            frame = av.VideoFrame.from_ndarray(
                np.repeat(gray[..., None], 3, axis=2), format="rgb24"
            )
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return truth
