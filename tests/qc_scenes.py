"""Small constructed qc inputs: :class:`~sleap_infer.qc.records.VideoData` for the finder
tests, and a small tracked .slp for the reader, run and CLI tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import sleap_io as sio

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
        [200 + 150 * k + 60 * np.cos(0.02 * t + k) for k in range(n_tracks)],
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


def write_project(path: Path) -> Path:
    """A tracked file mixing every case: predictions, a user instance made from one, an
    untracked prediction, a missing point, a gap in the frames."""
    skeleton = sio.Skeleton(nodes=["a", "b", "c"], edges=[("a", "b"), ("b", "c")])
    video = sio.Video(
        filename="clip.mp4", backend_metadata={"shape": (50, 480, 640, 1)}, open_backend=False
    )
    t0, t1 = sio.Track(name="left"), sio.Track(name="right")
    frames = []
    for f in (0, 1, 2, 5):
        pts = np.array([[10.0 + f, 20.0], [12.0, 22.0], [14.0, 24.0]])
        left = sio.PredictedInstance.from_numpy(
            pts, skeleton, point_scores=np.array([0.9, 0.8, 0.7]), score=0.8, track=t0
        )
        right_pts = pts + 100
        if f == 1:
            right_pts[2] = np.nan
        right = sio.PredictedInstance.from_numpy(
            right_pts, skeleton, point_scores=np.array([0.5, 0.5, 0.5]), score=0.5, track=t1
        )
        insts: list[sio.Instance] = [left, right]
        if f == 2:  # the user corrected "right"; and one prediction has no track
            insts.append(
                sio.Instance.from_numpy(right_pts + 1, skeleton, track=t1, from_predicted=right)
            )
            insts.append(sio.PredictedInstance.from_numpy(pts + 300, skeleton, score=0.3))
        frames.append(sio.LabeledFrame(video=video, frame_idx=f, instances=insts))
    labels = sio.Labels(labeled_frames=frames, videos=[video], skeletons=[skeleton])
    labels.tracks = [t0, t1]
    sio.save_slp(labels, str(path))
    return path
