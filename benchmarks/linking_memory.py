#!/usr/bin/env python
"""Memory of identity linking per pose: the compact input, and the peak while linking.

A synthetic tracked video (5 animals, 15 nodes, 20,000 frames, tracks broken now and
then) is fed to :class:`~sleap_infer.tracking.linking.inputs.LinkInput` frame by frame,
as the journal reader does; ``tracemalloc`` reports what the input holds and the extra
peak of :func:`~sleap_infer.tracking.linking.link.link_tracks` (closed set, N=5).

    .venv/bin/python benchmarks/linking_memory.py
"""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sleap_infer.tracking.linking.inputs import LinkInput
from sleap_infer.tracking.linking.link import link_tracks


def main() -> None:
    rng = np.random.default_rng(0)
    n_frames, n_animals, n_nodes = 20000, 5, 15
    pos = rng.uniform(50, 950, (n_animals, 2))
    vel = np.zeros((n_animals, 2))
    shape = rng.normal(0, 10, (n_nodes, 2))
    ids = np.arange(n_animals)
    nxt = n_animals
    tracemalloc.start()
    inp = LinkInput()
    for f in range(n_frames):
        vel += rng.normal(0, 0.3, vel.shape)
        pos = np.clip(pos + vel, 0, 1000)
        keep = rng.random(n_animals) > 0.05
        for a in np.flatnonzero(rng.random(n_animals) < 0.002):
            ids[a], nxt = nxt, nxt + 1
        pts = (shape[None] + pos[keep][:, None]).astype(np.float32)
        scores = np.full(pts.shape[:2], 0.9, np.float32)
        inp.add_frame(f, pts, scores, np.full(len(pts), 0.9), ids[keep])
    held = tracemalloc.get_traced_memory()[0]
    n = len(inp.arrays()[1])
    tracemalloc.reset_peak()
    _, result = link_tracks(inp, max_tracks=n_animals)
    peak = tracemalloc.get_traced_memory()[1] - held
    print(f"{n} poses: input {held / n:.1f} B/pose, linking peak +{peak / n:.1f} B/pose")
    print(result)


if __name__ == "__main__":
    main()
