"""Small constructed :class:`~sleap_infer.qc.records.VideoData` for the finder tests."""

from __future__ import annotations

import numpy as np

from sleap_infer.qc.records import VideoData

NODES = ["head", "mid", "tail"]
BODY = np.array([[20.0, 0.0], [0.0, 0.0], [-20.0, 0.0]])  # a 40 px animal facing +x


def smooth_scene(
    n_frames: int = 300, n_tracks: int = 2, seed: int = 0, noise: float = 0.5
) -> VideoData:
    """``n_tracks`` animals on smooth, well-separated circular paths, scores near 0.9."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_frames)[:, None]
    centre = np.stack(
        [
            200 + 150 * k + 60 * np.cos(0.02 * t + k) for k in range(n_tracks)
        ],
        axis=1,
    )[..., 0]
    cy = 300 + 60 * np.sin(0.02 * t + np.arange(n_tracks))
    points = np.empty((n_frames, n_tracks, len(NODES), 2))
    points[..., 0] = centre[..., None] + BODY[:, 0]
    points[..., 1] = cy[..., None] + BODY[:, 1]
    points += rng.normal(0, noise, points.shape)
    scores = np.clip(rng.normal(0.9, 0.02, points.shape[:3]), 0, 1)
    return VideoData(
        video="scene.mp4",
        video_index=0,
        frames=np.arange(n_frames, dtype=np.int64),
        n_frames=n_frames,
        tracked=True,
        track_names=[f"track_{k}" for k in range(n_tracks)],
        node_names=list(NODES),
        edges=[(0, 1), (1, 2)],
        points=points,
        point_scores=scores,
        instance_scores=scores.mean(axis=2),
        present=np.ones((n_frames, n_tracks), dtype=bool),
        frame_size=(1000, 1000),
    )
