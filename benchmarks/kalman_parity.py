#!/usr/bin/env python
"""``--use-kalman`` parity: ours vs sleap-nn 0.3.5's ``KalmanShiftTracker`` class, on random scenes.

Each case is a random scene (2-5 animals moving with noisy, drifting velocity,
crossing; missed animals, hidden nodes, strays, now and then a dropped frame).
sleap-nn's tracker (``Tracker.from_config(use_kalman=True, ...)``, pykalman EM)
tracks it frame by frame through its ``track()``, and ours through
:func:`sleap_infer.tracking.make_tracker`; each detection's track id is
compared (sleap-nn drops a detection it leaves untracked from its output: that
reads as -1 here, as ours writes it). The last column counts the detections
whose track sleap-nn's Kalman shift changed against its plain tracker on the
same options: the scenes do exercise the shift. Options vary per case: candidates
(fixed_window / local_queues via ``max_tracks``), features and scoring, centroid
or keypoints Kalman features, node subsets, warm-up length and reset gap.

sleap-nn is not installed: ``--sleap-nn-src`` points at an unpacked 0.3.5 source
(as ``benchmarks/mot_parity.py``), and pykalman, which its tracker imports, is
found through ``--pykalman-path`` (a folder holding the ``pykalman`` package and
its ``skbase`` dependency, e.g. a scratch venv's site-packages; only those two
are put on ``sys.path``, after ours).

    .venv/bin/python benchmarks/kalman_parity.py --sleap-nn-src DIR --pykalman-path DIR
        [--cases 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sleap_infer.tracking import POSES, Detections, make_tracker  # noqa: E402
from sleap_infer.tracking.options import TrackingOptions  # noqa: E402

SHAPE = np.array([[0.0, 0.0], [14.0, 3.0], [26.0, -2.0], [8.0, 9.0], [18.0, 12.0]])


def scene(rng: np.random.Generator, n_animals: int, n_nodes: int) -> list[Detections]:
    n_frames = int(rng.integers(40, 120))
    pos = rng.uniform(60, 340, (n_animals, 2))
    vel = rng.uniform(-5, 5, (n_animals, 2))
    shape = SHAPE[:n_nodes] * rng.uniform(0.6, 2.0)
    noise = rng.uniform(0.3, 2.5)
    frames, f = [], 0
    for _ in range(n_frames):
        f += 1 if rng.random() > 0.05 else int(rng.integers(2, 9))
        vel += rng.normal(0, 0.6, vel.shape)
        pos += vel
        shown = [a for a in range(n_animals) if rng.random() > 0.08]
        pts = [shape + pos[a] + rng.normal(0, noise, shape.shape) for a in shown]
        if rng.random() < 0.1:
            pts.append(shape + rng.uniform(20, 380, 2))
        order = rng.permutation(len(pts))
        pts = np.array([pts[i] for i in order]).reshape(-1, n_nodes, 2)
        if n_nodes > 1:
            pts[rng.random(pts.shape[:2]) < 0.12] = np.nan
        frames.append(Detections(f, pts, rng.uniform(0.3, 1.0, len(pts))))
    return frames


def options(rng: np.random.Generator, n_animals: int, n_nodes: int) -> dict:
    """One case's tracker options (sleap-nn keyword names)."""
    features = str(rng.choice(["keypoints", "keypoints", "centroids", "bboxes"]))
    scoring = {"keypoints": "oks", "centroids": "euclidean_dist", "bboxes": "iou"}[features]
    if n_nodes == 1:
        features, scoring = "centroids", "euclidean_dist"
    kf = dict(
        kf_track_features=str(rng.choice(["centroid", "centroid", "keypoints"])),
        kf_init_frame_count=int(rng.choice([3, 5, 10, 10])),
        kf_reset_gap_size=int(rng.choice([2, 5, 5])),
        kf_node_indices=None
        if rng.random() < 0.6 or n_nodes == 1
        else sorted(rng.choice(n_nodes, int(rng.integers(1, n_nodes + 1)), replace=False).tolist()),
    )
    local = rng.random() < 0.5
    return dict(
        features=features,
        scoring_method=scoring,
        candidates_method="local_queues" if local else "fixed_window",
        window_size=int(rng.choice([3, 5, 8])),
        max_tracks=n_animals if local else None,
        tracking_target_instance_count=n_animals,
        **kf,
    )


def theirs(
    opts: dict, frames: list[Detections], n_nodes: int, kalman: bool = True
) -> list[np.ndarray]:
    import sleap_io as sio
    from sleap_nn.tracking.tracker import Tracker

    if not kalman:
        opts = {k: v for k, v in opts.items() if not k.startswith("kf_")}
    tracker = Tracker.from_config(use_kalman=kalman, **opts)
    skeleton = sio.Skeleton([f"n{i}" for i in range(n_nodes)])
    out = []
    for det in frames:
        objs = [
            sio.PredictedInstance.from_numpy(p, skeleton=skeleton, score=float(s))
            for p, s in zip(det.points, det.scores)
        ]
        tracked = tracker.track(objs, det.frame_idx)
        by_id = {id(o): o for o in tracked}
        ids = []
        for o in objs:
            kept = by_id.get(id(o))
            ids.append(-1 if kept is None or kept.track is None else int(kept.track.name[6:]))
        out.append(np.array(ids, np.int64))
    return out


def ours(opts: dict, frames: list[Detections], n_nodes: int) -> list[np.ndarray]:
    o = TrackingOptions(
        features=opts["features"],
        scoring=opts["scoring_method"],
        candidates=opts["candidates_method"],
        window_size=opts["window_size"],
        max_tracks=opts["max_tracks"],
        tracking_target_instance_count=opts["tracking_target_instance_count"],
        use_kalman=True,
        kf_track_features=opts["kf_track_features"],
        kf_init_frame_count=opts["kf_init_frame_count"],
        kf_node_indices=None if opts["kf_node_indices"] is None else tuple(opts["kf_node_indices"]),
        kf_reset_gap_size=opts["kf_reset_gap_size"],
    )
    tracker = make_tracker(o, POSES, n_nodes)
    return [tracker.step(det).track_ids for det in frames]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sleap-nn-src", type=Path, required=True)
    parser.add_argument("--pykalman-path", type=Path, required=True)
    args = parser.parse_args()
    sys.path.insert(1, str(args.sleap_nn_src))
    sys.path.append(str(args.pykalman_path))
    import sleap_nn.tracking.tracker  # noqa: F401
    from loguru import logger

    logger.remove()
    rng = np.random.default_rng(args.seed)
    rows: dict[str, list[int]] = {}
    for _ in range(args.cases):
        n_animals, n_nodes = int(rng.integers(2, 6)), int(rng.choice([1, 3, 5]))
        frames = scene(rng, n_animals, n_nodes)
        opts = options(rng, n_animals, n_nodes)
        key = f"{opts['candidates_method']}, kf {opts['kf_track_features']}"
        a, b = theirs(opts, frames, n_nodes), ours(opts, frames, n_nodes)
        plain = theirs(opts, frames, n_nodes, kalman=False)
        row = rows.setdefault(key, [0, 0, 0, 0, 0, 0])
        row[0] += 1
        row[1] += len(frames)
        row[2] += sum(bool(np.array_equal(x, y)) for x, y in zip(a, b))
        row[3] += sum(len(x) for x in a)
        row[4] += sum(int((x != y).sum()) for x, y in zip(a, b))
        row[5] += sum(int((x != y).sum()) for x, y in zip(a, plain))
    print(
        "| candidates, Kalman features | cases | frames | frames same | detections | differ"
        " | sleap-nn: Kalman changed |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for key, (cases, n_frames, same, dets, differ, moved) in sorted(rows.items()):
        print(f"| {key} | {cases} | {n_frames} | {same} | {dets} | {differ} | {moved} |")
    total = sum(r[4] for r in rows.values())
    print(f"\ndetections with a different track: {total}")
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
