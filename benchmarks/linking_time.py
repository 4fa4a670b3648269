#!/usr/bin/env python
"""Identity linking's own time (``link_tracks``), per frame, on prediction files.

Each file is re-tracked in memory with ``--tracker`` (ByteTrack by default, whose
tracks linking joins), turned into linking's compact input as ``infer track``
does, and linked ``--repeats`` times; the minimum CPU time is reported, so the
figure is linking alone, not loading or tracking. Compare two trees by running
the same command in each (a ``git worktree`` of the baseline), alternating:

    PYTHONPATH=. .venv/bin/python benchmarks/linking_time.py DIR/detections.slp ...

Inputs: ``examples/tracking_synthetic.py OUT --animals 30 --frames 300 --no-video``
and ``examples/tracking_scenes.py OUT --scene crowded --frames 600 --no-video``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import sleap_io as sio

from sleap_infer.pipeline.retrack import retrack_labels
from sleap_infer.tracking.linking.inputs import LinkInput
from sleap_infer.tracking.linking.link import link_tracks
from sleap_infer.tracking.options import TrackingOptions


def linking_input(path: Path, tracker: str) -> LinkInput:
    labels = sio.load_slp(str(path))
    retrack_labels(labels, TrackingOptions(tracker=tracker))
    ids = {id(t): i for i, t in enumerate(labels.tracks)}
    n_nodes = len(labels.skeletons[0].nodes)
    inp = LinkInput()
    for lf in labels:
        pts = np.stack([i.numpy() for i in lf.instances]) if lf.instances else None
        pts = pts if pts is not None else np.zeros((0, n_nodes, 2))
        tracks = np.array([ids[id(i.track)] if i.track else -1 for i in lf.instances])
        scores = np.array([i.score for i in lf.instances])
        inp.add_frame(lf.frame_idx, pts, None, scores, tracks)
    return inp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--tracker", default="bytetrack")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print("| file | frames | detections | link CPU s (min) | ms/frame |")
    print("|---|---:|---:|---:|---:|")
    for path in args.files:
        inp = linking_input(path, args.tracker)
        normalize = args.tracker != "classic"  # sleap-nn's MOT trackers: q95 scores
        times = []
        for _ in range(args.repeats):
            t0 = time.process_time()
            link_tracks(inp, None, 30, None, 0.5, normalize)
            times.append(time.process_time() - t0)
        n = len(inp.frames)
        best = min(times)
        name = f"{path.parent.name}/{path.name}"
        print(f"| {name} | {n} | {len(inp.arrays()[1])} | {best:.3f} | {1000 * best / n:.3f} |")


if __name__ == "__main__":
    main()
