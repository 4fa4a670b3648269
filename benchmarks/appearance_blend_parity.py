#!/usr/bin/env python
"""Appearance-blend parity: our classic tracker vs sleap-nn 0.3.5's ``Tracker``, same detections.

The synthetic scenes (``examples/tracking_scenes.py``) get a re-ID vector per
detection (the animal's identity plus noise; a false positive a random one; some
detections none), saved with the vectors into a ``.slp``. Then, per scene, seed
and option set:

* ours: :func:`sleap_infer.pipeline.retrack.retrack_labels` on that file;
* sleap-nn's: its ``Tracker.from_config(...)`` stepped over the same frames in a
  subprocess with ``PYTHONPATH`` set to a sleap-nn source tree (default
  ``/work/sleap_nn_035_src``, the 0.3.5 wheel's ``sleap_nn``); our package never
  imports it.

Every detection sleap-nn tracks is compared with ours by its index in the frame:
same track name and same tracking score (float32). Prints a markdown table:

    .venv/bin/python benchmarks/appearance_blend_parity.py [--sleap-nn-src DIR]
        [--scenes crossing crowded stop-go --seeds 0 1 --frames 300]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import sleap_io as sio

ROOT = Path(__file__).resolve().parents[1]

# (label, our TrackingOptions kwargs, sleap-nn Tracker.from_config kwargs)
OPTION_SETS = [
    (
        "oks w=0.3",
        {"appearance_weight": 0.3},
        {"appearance_weight": 0.3},
    ),
    (
        "oks w=0.5 local_queues",
        {"appearance_weight": 0.5, "candidates": "local_queues"},
        {"appearance_weight": 0.5, "candidates_method": "local_queues"},
    ),
    (
        "centroids euclid w=0.4 s=6",
        {
            "appearance_weight": 0.4,
            "features": "centroids",
            "scoring": "euclidean_dist",
            "euclidean_scale": 6.0,
        },
        {
            "appearance_weight": 0.4,
            "features": "centroids",
            "scoring_method": "euclidean_dist",
            "euclidean_scale": 6.0,
        },
    ),
    (
        "oks w=0.8 max",
        {"appearance_weight": 0.8, "reduction": "max"},
        {"appearance_weight": 0.8, "scoring_reduction": "max"},
    ),
]

SLEAP_NN_SIDE = r"""
import json, sys
import numpy as np
import sleap_io as sio
from sleap_nn.tracking.tracker import Tracker
path, kwargs = sys.argv[1], json.loads(sys.argv[2])
labels = sio.load_slp(path)
tracker = Tracker.from_config(**kwargs)
out = []
for lf in sorted(labels.labeled_frames, key=lambda lf: lf.frame_idx):
    insts = list(lf.instances)
    tracker.track(insts, lf.frame_idx)
    out.append([[None if i.track is None else i.track.name,
                 None if i.track is None else float(np.float32(i.tracking_score))]
                for i in insts])
print(json.dumps(out))
"""


def _scenes():
    spec = importlib.util.spec_from_file_location(
        "tracking_scenes", ROOT / "examples" / "tracking_scenes.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["tracking_scenes"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def write_detections(scene_name: str, n_frames: int, seed: int, path: Path) -> None:
    scenes = _scenes()
    scene = scenes.simulate(scene_name, n_frames, None, seed)
    rng = np.random.default_rng(1000 + seed)
    n_animals = scene.truth.shape[1]
    identity = rng.normal(0, 1, (n_animals, 16))
    vid = sio.Video(filename="video.mp4", open_backend=False)
    skeleton = sio.Skeleton(list(scenes._synthetic().NODES))
    frames = []
    for f in range(len(scene.det_points)):
        insts = []
        for p, s, sc, a in zip(
            scene.det_points[f], scene.det_point_scores[f], scene.det_scores[f], scene.det_animal[f]
        ):
            inst = sio.PredictedInstance.from_numpy(
                p, skeleton, point_scores=np.nan_to_num(s), score=float(sc)
            )
            if rng.random() > 0.1:  # one in ten detections carries no vector
                base = identity[a] if a >= 0 else rng.normal(0, 1, 16)
                vec = (base + rng.normal(0, 0.6, 16)).astype(np.float32)
                inst.identity_embedding = sio.Embedding(vec)
            insts.append(inst)
        frames.append(sio.LabeledFrame(video=vid, frame_idx=f, instances=insts))
    labels = sio.Labels(labeled_frames=frames, videos=[vid], skeletons=[skeleton])
    sio.save_slp(labels, str(path), save_embedding_vectors=True)


def ours(path: Path, kwargs: dict) -> list[list[list]]:
    from sleap_infer.pipeline.retrack import retrack_labels
    from sleap_infer.tracking.options import TrackingOptions

    labels = sio.load_slp(str(path))
    retrack_labels(labels, TrackingOptions(**kwargs))
    return [
        [
            [
                None if i.track is None else i.track.name,
                None if i.track is None else float(np.float32(i.tracking_score)),
            ]
            for i in lf.instances
        ]
        for lf in sorted(labels.labeled_frames, key=lambda lf: lf.frame_idx)
    ]


def theirs(path: Path, kwargs: dict, src: Path) -> list[list[list]]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", SLEAP_NN_SIDE, str(path), json.dumps(kwargs)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(a: list[list[list]], b: list[list[list]]) -> tuple[int, int, int]:
    """(detections sleap-nn tracked, of those: same track, same track and score)."""
    n = same = exact = 0
    for fa, fb in zip(a, b, strict=True):
        for (name_a, score_a), (name_b, score_b) in zip(fa, fb, strict=True):
            if name_b is None:
                continue
            n += 1
            if name_a == name_b:
                same += 1
                exact += score_a == score_b
    return n, same, exact


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sleap-nn-src", type=Path, default=Path("/work/sleap_nn_035_src"))
    parser.add_argument("--scenes", nargs="+", default=["crossing", "crowded", "stop-go"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--frames", type=int, default=300)
    args = parser.parse_args()
    print("| scene | seed | options | sleap-nn tracked | same track | same track+score |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for scene in args.scenes:
            for seed in args.seeds:
                path = Path(tmp) / f"{scene}-{seed}.slp"
                write_detections(scene, args.frames, seed, path)
                for label, our_kw, their_kw in OPTION_SETS:
                    n, same, exact = compare(
                        ours(path, our_kw), theirs(path, their_kw, args.sleap_nn_src)
                    )
                    print(f"| {scene} | {seed} | {label} | {n} | {same} | {exact} |", flush=True)


if __name__ == "__main__":
    main()
