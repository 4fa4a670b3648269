"""A synthetic arena with many "animals", for the growth benchmarks (benchmarks/scale.py).

Labs record arenas with 10-60 animals, and bottom-up grouping and top-down crops cost more
as the count grows, so the benchmarks need a scene whose animal count is a parameter and
whose keypoints are known. Each animal is ``scene.py``'s bright ellipse with a brighter
head blob, here with three nodes (head, thorax, tail). Animals live in their own cells of
a grid, wander inside them and turn, so they never touch and a frame always holds exactly
the number asked for. Everything follows from ``seed``: the same call writes the same
pixels, which keeps benchmark rows comparable between runs and machines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

BODY_HALF_LENGTH = 18.0
NODE_NAMES = ("head", "thorax", "tail")
EDGES = (("head", "thorax"), ("thorax", "tail"))
ANCHOR = "thorax"
CELL = 56  # px per grid cell: a turning animal (radius ~22) plus its wander, never touching
WANDER = 6.0  # px an animal strays from its cell centre
_REACH = int(BODY_HALF_LENGTH * 1.1 * 1.6) + 8  # half-width of the window an animal is drawn in


@dataclass(frozen=True)
class Crowd:
    """Where every animal is in every frame: ``centers (F, N, 2)`` (x, y) px, ``angles (F, N)``."""

    centers: np.ndarray
    angles: np.ndarray
    size: int

    @property
    def n_animals(self) -> int:
        return self.centers.shape[1]

    def keypoints(self) -> np.ndarray:
        """``(F, N, 3, 2)`` (head, thorax, tail) positions in (x, y) pixels."""
        d = BODY_HALF_LENGTH * np.stack([np.cos(self.angles), np.sin(self.angles)], axis=-1)
        return np.stack([self.centers + d, self.centers, self.centers - d], axis=2)


def max_animals(size: int) -> int:
    """How many animals fit a ``size`` x ``size`` frame, one per grid cell."""
    return (size // CELL) ** 2


def crowd(n_animals: int, n_frames: int, size: int, seed: int = 0) -> Crowd:
    """``n_animals`` in distinct random cells of the grid, each on its own smooth path."""
    per_side = size // CELL
    if n_animals > per_side**2:
        raise ValueError(
            f"{n_animals} animals do not fit a {size} px frame (at most {per_side**2})"
        )
    rng = np.random.default_rng(seed)
    cells = rng.choice(per_side**2, size=n_animals, replace=False)
    offset = (size - per_side * CELL) / 2 + CELL / 2
    home = np.stack([cells % per_side, cells // per_side], axis=1) * CELL + offset
    phase = rng.uniform(0, 2 * np.pi, (n_animals, 3))
    speed = rng.uniform(0.05, 0.15, (n_animals, 3))
    heading = rng.uniform(-np.pi, np.pi, n_animals)
    t = np.arange(n_frames)[:, None]
    dx = WANDER * np.sin(speed[:, 0] * t + phase[:, 0])
    dy = WANDER * np.sin(speed[:, 1] * t + phase[:, 1])
    centers = home[None] + np.stack([dx, dy], axis=-1)
    angles = heading[None] + 0.8 * np.sin(speed[:, 2] * t + phase[:, 2])
    return Crowd(centers=centers, angles=angles, size=size)


def background(size: int, rng: np.random.Generator) -> np.ndarray:
    """Smooth static texture in [20, 70]: coarse noise (one knot per ~40 px), upsampled."""
    knots = max(2, size // 40)
    coarse = rng.uniform(0, 1, (knots, knots))
    axis = np.linspace(0, knots - 1, size)
    i0 = np.minimum(axis.astype(int), knots - 2)
    f = axis - i0
    rows = coarse[i0] * (1 - f)[:, None] + coarse[i0 + 1] * f[:, None]
    up = rows[:, i0] * (1 - f)[None, :] + rows[:, i0 + 1] * f[None, :]
    return 20 + 50 * up


def render(centers: np.ndarray, angles: np.ndarray, bg: np.ndarray) -> np.ndarray:
    """One uint8 gray frame with an animal at each of ``centers (N, 2)`` / ``angles (N,)``.

    Each animal is drawn only in a window around it (the frame can be 2048 px wide)."""
    img = bg.astype(np.float64).copy()
    size = img.shape[0]
    for (cx, cy), angle in zip(centers, angles):
        x0, x1 = max(0, int(cx) - _REACH), min(size, int(cx) + _REACH + 1)
        y0, y1 = max(0, int(cy) - _REACH), min(size, int(cy) + _REACH + 1)
        yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float64)
        dx, dy = xx - cx, yy - cy
        c, s = np.cos(angle), np.sin(angle)
        along, across = dx * c + dy * s, -dx * s + dy * c
        body = np.exp(-(((along / (BODY_HALF_LENGTH * 1.1)) ** 2 + (across / 6.0) ** 2) ** 2))
        hx, hy = cx + BODY_HALF_LENGTH * c, cy + BODY_HALF_LENGTH * s
        head = np.exp(-((xx - hx) ** 2 + (yy - hy) ** 2) / (2 * 3.0**2))
        img[y0:y1, x0:x1] += 120 * body + 90 * head
    return np.clip(img, 0, 255).astype(np.uint8)


def frames(scene: Crowd, seed: int = 0) -> list[np.ndarray]:
    """Every frame of ``scene`` as a uint8 ``(size, size)`` array."""
    bg = background(scene.size, np.random.default_rng(seed + 1))
    return [render(c, a, bg) for c, a in zip(scene.centers, scene.angles)]


def write_video(
    path: Path, n_animals: int, n_frames: int, size: int, seed: int = 0, fps: int = 30
) -> np.ndarray:
    """Write the scene as h264 (near-lossless); return its keypoints ``(F, N, 3, 2)``."""
    scene = crowd(n_animals, n_frames, size, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width = stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": "12"}
        for gray in frames(scene, seed):
            rgb = np.repeat(gray[..., None], 3, axis=2)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")))
        container.mux(stream.encode())
    return scene.keypoints()
