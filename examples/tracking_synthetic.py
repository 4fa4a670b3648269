#!/usr/bin/env python
"""Synthetic multi-animal ground truth for tracking: animals that cross, occlude and swap.

Identity tracking is judged on what makes it hard: animals passing close to or
over each other, swapping places, dropping out of the detector for a few
frames, and spurious detections. This script makes all of it happen, seeded, so
the same arguments always give the same files:

    python examples/tracking_synthetic.py OUTDIR [--frames 600 --animals 4 --seed 0]

writes ``OUTDIR/truth.slp`` (true poses, one ``Track`` per animal),
``OUTDIR/detections.slp`` (untracked predicted instances: the truth with
keypoint noise, missed nodes, missed animals and a few false positives, scored
lower where an animal is occluded, as a detector's mean point confidence is)
and ``OUTDIR/video.mp4`` (the animals drawn in gray, unless ``--no-video``;
both files reference it either way).

Each animal's centre is a sum of three slow sinusoids about the arena's centre,
so paths are smooth and keep crossing; its five nodes lie along its heading
(the direction of motion) with a slight bend. Animal ``j`` is drawn over
animal ``i < j``: the lower one is the occluded one.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import sleap_io as sio

ARENA = 256  # px, square
NODES = ("head", "neck", "thorax", "abdomen", "tail")
BODY = np.array([16.0, 8.0, 0.0, -10.0, -20.0])  # node offsets along the heading, px
POINT_NOISE = 1.0  # keypoint noise std, px
OCCLUSION_RADIUS = 28.0  # px between centres at which a lower animal starts to be covered


@dataclass
class Scene:
    """Ground truth and detections for one synthetic video."""

    truth: np.ndarray  # (F, A, N, 2) true keypoints
    det_points: list[np.ndarray]  # per frame (I, N, 2), NaN = missed node
    det_point_scores: list[np.ndarray]  # per frame (I, N)
    det_scores: list[np.ndarray]  # per frame (I,) instance score = mean visible point score
    det_animal: list[np.ndarray]  # per frame (I,) true animal index, -1 = false positive


def paths(n_frames: int, n_animals: int, rng: np.random.Generator) -> np.ndarray:
    """``(F, A, 2)`` smooth centres: three random sinusoids per axis about the centre."""
    t = np.arange(n_frames, dtype=np.float64)[:, None, None, None]  # (F, 1, 1, 1)
    omega = rng.uniform(0.008, 0.035, (1, n_animals, 2, 3))
    phase = rng.uniform(0, 2 * np.pi, (1, n_animals, 2, 3))
    amp = rng.dirichlet(np.ones(3), (1, n_animals, 2)) * rng.uniform(70, 95, (1, n_animals, 2, 1))
    return ARENA / 2 + (amp * np.sin(omega * t + phase)).sum(axis=-1)


def poses(centres: np.ndarray) -> np.ndarray:
    """``(F, A, N, 2)`` keypoints along each animal's heading, bent by its turning."""
    vel = np.gradient(centres, axis=0)
    heading = np.unwrap(np.arctan2(vel[..., 1], vel[..., 0]), axis=0)
    turn = np.clip(np.gradient(heading, axis=0), -0.1, 0.1)  # rad/frame
    bend = -turn[..., None] * 4.0 * np.abs(BODY) / 20.0  # nodes lag the turn
    angle = heading[..., None] + bend  # (F, A, N)
    along = np.stack([np.cos(angle), np.sin(angle)], axis=-1)  # (F, A, N, 2)
    return centres[:, :, None, :] + BODY[:, None] * along


def occlusion(centres: np.ndarray) -> np.ndarray:
    """``(F, A)`` in [0, 1]: how much of each animal the animals drawn over it cover."""
    d = np.linalg.norm(centres[:, :, None] - centres[:, None, :], axis=-1)  # (F, A, A)
    cover = np.clip(1 - d / OCCLUSION_RADIUS, 0, 1)
    above = np.triu(np.ones(d.shape[1:], dtype=bool), k=1)  # j > i is drawn over i
    return np.where(above, cover, 0).max(axis=2)


def detect(truth: np.ndarray, occ: np.ndarray, rng: np.random.Generator) -> Scene:
    """A detector's output: noisy, incomplete, occasionally wrong; shuffled per frame."""
    n_frames, n_animals, n_nodes, _ = truth.shape
    scene = Scene(truth, [], [], [], [])
    for f in range(n_frames):
        pts, animal = [], []
        for a in range(n_animals):
            if rng.random() < 0.02 + 0.4 * occ[f, a]:
                continue  # missed animal
            pts.append(truth[f, a] + rng.normal(0, POINT_NOISE, (n_nodes, 2)))
            animal.append(a)
        conf = [
            np.clip(rng.uniform(0.72, 1.0, n_nodes) * (1 - 0.6 * occ[f, a]), 0, 1) for a in animal
        ]
        if rng.random() < 0.03:  # a false positive: a bad pose somewhere, poorly scored
            centre, angle = rng.uniform(20, ARENA - 20, 2), rng.uniform(0, 2 * np.pi)
            pts.append(centre + BODY[:, None] * [np.cos(angle), np.sin(angle)])
            conf.append(rng.uniform(0.25, 0.65, n_nodes))
            animal.append(-1)
        order = rng.permutation(len(pts))
        points = np.array(pts, dtype=np.float64).reshape(-1, n_nodes, 2)[order]
        scores = np.array(conf, dtype=np.float64).reshape(-1, n_nodes)[order]
        animal_ids = np.array(animal, dtype=np.int64)[order]
        node_occ = occ[f, np.maximum(animal_ids, 0)][:, None]
        missed = rng.random(points.shape[:2]) < 0.04 + 0.3 * node_occ
        missed[missed.all(axis=1), 0] = False  # a detection keeps at least one node
        points[missed] = np.nan
        scores[missed] = np.nan
        scene.det_points.append(points)
        scene.det_point_scores.append(scores)
        scene.det_scores.append(np.nanmean(scores, axis=1) if len(scores) else np.zeros(0))
        scene.det_animal.append(animal_ids)
    return scene


def simulate(n_frames: int = 600, n_animals: int = 4, seed: int = 0) -> Scene:
    """The whole synthetic video's ground truth and detections (deterministic in ``seed``)."""
    rng = np.random.default_rng(seed)
    centres = paths(n_frames, n_animals, rng)
    return detect(poses(centres), occlusion(centres), rng)


def render(truth: np.ndarray, path: Path, fps: int = 30) -> None:
    """Draw every animal as a tapering body along its nodes, lower animals first, as gray mp4."""
    import av

    along = np.linspace(0, len(NODES) - 1, 4 * len(NODES) - 3)  # points along the body
    sigma = np.interp(along, [0, len(NODES) - 1], [4.5, 2.5])
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mpeg4", rate=fps)
        stream.width = stream.height = ARENA
        stream.pix_fmt = "yuv420p"
        for frame in truth:
            img = np.full((ARENA, ARENA), 40.0)
            for a, pose in enumerate(frame):  # later animals cover earlier ones
                nodes = np.arange(len(NODES))
                body = np.stack([np.interp(along, nodes, pose[:, i]) for i in (0, 1)], axis=1)
                lo = np.clip(np.floor(body.min(axis=0) - 12), 0, ARENA).astype(int)
                hi = np.clip(np.ceil(body.max(axis=0) + 12), 0, ARENA).astype(int)
                yy, xx = np.mgrid[lo[1] : hi[1], lo[0] : hi[0]]
                d2 = (xx[..., None] - body[:, 0]) ** 2 + (yy[..., None] - body[:, 1]) ** 2
                blob = np.exp(-(d2 / (2 * sigma**2)).min(axis=-1))
                patch = img[lo[1] : hi[1], lo[0] : hi[0]]
                patch[:] = patch * (1 - blob) + (120 + 30 * a) * blob
            gray = av.VideoFrame.from_ndarray(np.clip(img, 0, 255).astype(np.uint8), format="gray")
            out.mux(stream.encode(gray))
        out.mux(stream.encode())


def write(scene: Scene, outdir: Path, video: bool = True) -> dict[str, Path]:
    """Write ``truth.slp``, ``detections.slp`` and (``video``) ``video.mp4`` into ``outdir``."""
    outdir.mkdir(parents=True, exist_ok=True)
    files = {"truth": outdir / "truth.slp", "detections": outdir / "detections.slp"}
    files["video"] = outdir / "video.mp4"
    if video:
        render(scene.truth, files["video"])
    vid = sio.Video(filename=str(files["video"]), open_backend=False)
    skeleton = sio.Skeleton(list(NODES))  # Skeleton(list) keeps the list: pass a fresh one
    tracks = [sio.Track(name=f"animal_{a}") for a in range(scene.truth.shape[1])]
    truth_frames, det_frames = [], []
    for f, frame in enumerate(scene.truth):
        truth_frames.append(
            sio.LabeledFrame(
                video=vid,
                frame_idx=f,
                instances=[
                    sio.Instance.from_numpy(p, skeleton, track=t) for p, t in zip(frame, tracks)
                ],
            )
        )
        det = [
            sio.PredictedInstance.from_numpy(
                p, skeleton, point_scores=np.nan_to_num(s), score=float(sc)
            )
            for p, s, sc in zip(scene.det_points[f], scene.det_point_scores[f], scene.det_scores[f])
        ]
        det_frames.append(sio.LabeledFrame(video=vid, frame_idx=f, instances=det))
    common = {"videos": [vid], "skeletons": [skeleton]}
    sio.save_slp(
        sio.Labels(labeled_frames=truth_frames, tracks=tracks, **common), str(files["truth"])
    )
    sio.save_slp(sio.Labels(labeled_frames=det_frames, **common), str(files["detections"]))
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--animals", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-video", action="store_true", help="write the .slp files only")
    args = parser.parse_args()
    scene = simulate(args.frames, args.animals, args.seed)
    files = write(scene, args.outdir, video=not args.no_video)
    n_det = sum(len(s) for s in scene.det_scores)
    print(f"{args.frames} frames, {args.animals} animals, {n_det} detections")
    for name, path in files.items():
        print(f"  {name}: {path}")


if __name__ == "__main__":
    main()
