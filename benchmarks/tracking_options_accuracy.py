#!/usr/bin/env python
"""The classic tracker with and without sleap-nn's cull/clean/connect options, per scene.

Same scenes, detections and scoring as ``benchmarks/tracking_accuracy.py``
(py-motmetrics: ``pip install motmetrics``; benchmark only); the animal count
``A`` is given as sleap-nn's ``--max_instances`` would give it (target count,
and ``max_tracks`` for break joining, as sleap-nn's CLI derives them):

    .venv/bin/python benchmarks/tracking_options_accuracy.py [--scenes crossing crowded
        occlusions stop-go --seeds 0 1 2 --frames 600]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import sleap_io as sio

HERE = Path(__file__).resolve().parent


def _accuracy():
    spec = importlib.util.spec_from_file_location(
        "tracking_accuracy", HERE / "tracking_accuracy.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def variants(animals: int) -> dict[str, dict[str, object]]:
    a = animals
    return {
        "classic": {},
        "+pre-cull": {"tracking_target_instance_count": a, "tracking_pre_cull_to_target": 1},
        "+clean": {"tracking_clean_instance_count": a},
        "+connect": {
            "tracking_target_instance_count": a,
            "post_connect_single_breaks": True,
            "max_tracks": a,
        },
        "+all three": {
            "tracking_target_instance_count": a,
            "tracking_pre_cull_to_target": 1,
            "tracking_clean_instance_count": a,
            "post_connect_single_breaks": True,
            "max_tracks": a,
        },
    }


def run(options: dict[str, object], detections: Path, centroids) -> tuple[list, float]:
    from sleap_infer.tracking import Detections, make_tracker
    from sleap_infer.tracking.cleanup import with_cleanup
    from sleap_infer.tracking.options import TrackingOptions

    labels = sio.load_slp(str(detections))
    n_nodes = len(labels.skeletons[0].nodes)
    opts = TrackingOptions(**options)  # type: ignore[arg-type]
    tracker = with_cleanup(make_tracker(opts, "poses", n_nodes), opts, "poses", n_nodes, False)
    out, elapsed = [], 0.0
    frames = sorted(labels.labeled_frames, key=lambda lf: lf.frame_idx)
    for lf in frames:
        points = np.array([i.numpy() for i in lf.instances], np.float64).reshape(-1, n_nodes, 2)
        scores = np.array([i.score for i in lf.instances], np.float64)
        start = time.perf_counter()
        answer = tracker.step(Detections(lf.frame_idx, points, scores))
        elapsed += time.perf_counter() - start
        out.append((answer.track_ids, centroids(points)))
    return out, 1e3 * elapsed / max(len(frames), 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scenes", nargs="+", default=["crossing", "crowded", "occlusions", "stop-go"]
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--max-dist", type=float, default=20.0)
    args = parser.parse_args()
    acc = _accuracy()
    scenes = acc.load_example()
    workroot = Path(tempfile.mkdtemp(prefix="tracking_options_"))
    for name in args.scenes:
        results: dict[str, list[dict[str, float]]] = {}
        for seed in args.seeds:
            scene = scenes.simulate(name, args.frames, None, seed)
            files = scenes.syn.write(scene, workroot / f"{name}{seed}", video=False)
            for label, options in variants(scene.truth.shape[1]).items():
                tracked, ms = run(options, files["detections"], acc.centroids)
                row = {**acc.score(scene.truth, tracked, args.max_dist), "ms": ms}
                results.setdefault(label, []).append(row)
        mean = [
            (label, {k: float(np.mean([r[k] for r in runs])) for k in runs[0]})
            for label, runs in results.items()
        ]
        print(f"\n{name}, mean over seeds {args.seeds} ({args.frames} frames):")
        print(acc.table(mean))
    return 0


if __name__ == "__main__":
    sys.exit(main())
