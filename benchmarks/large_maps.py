#!/usr/bin/env python
"""Steady-state ms/frame of a raw-maps (segmentation) model on large frames, in memory.

The fixture segmentation models cap their frames at 128 px (``max_height`` /
``max_width``), which an exported backend cannot override. This copies a model into a
temporary folder with the cap lifted (same checkpoint), so a frame reaches the network
whole and its maps are as large as the frame: the case where the layer's own decoding
(torch, beside ONNX Runtime's or OpenVINO's pool) is a few large ops. Frames are the
fixture video's first 8 tiled up to ``--size``, 24 a round, 3 rounds after a warm-up
call; the minimum and the median of the rounds are printed. Run it in two checkouts
(``PYTHONPATH=<tree>``), alternating, to compare revisions::

    SLEAP_INFER_FIXTURES=../shared/fixtures python benchmarks/large_maps.py \\
        --model synthetic_bottomup_segmentation --size 2048 --backend openvino
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

FIXTURES = Path(
    os.environ.get("SLEAP_INFER_FIXTURES", Path(__file__).parents[2] / "shared" / "fixtures")
)


def uncapped(model: Path, folder: Path) -> Path:
    """A copy of ``model`` in ``folder`` whose frames are not capped in size."""
    out = folder / model.name
    shutil.copytree(model, out)
    cfg_path = out / "training_config.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg["data_config"]["preprocessing"].update(max_height=None, max_width=None)
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="synthetic_bottomup_segmentation", help="fixture model")
    ap.add_argument("--size", type=int, default=2048, help="frame side, px")
    ap.add_argument("--backend", default="openvino")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    import sleap_io as sio

    import sleap_infer

    video = sio.load_video(str(FIXTURES / "videos" / "synthetic_multi.mp4"))
    small = np.stack([video[i] for i in range(8)])[..., :1]
    reps = -(-args.size // min(small.shape[1:3]))
    frames = np.tile(small, (1, reps, reps, 1))[:, : args.size, : args.size]
    frames = np.concatenate([frames] * 3)
    with tempfile.TemporaryDirectory() as tmp:
        model = uncapped(FIXTURES / "models" / args.model, Path(tmp))
        pipe = sleap_infer.load(model, backend=args.backend, batch_size=4)
        pipe.predict(frames[:8])  # export, compile, warm up
        times = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            pipe.predict(frames)
            times.append(1000 * (time.perf_counter() - t0) / len(frames))
    print(
        f"{args.model} {args.size}px {args.backend}: {min(times):.1f} ms/frame (min of"
        f" {args.rounds}), {float(np.median(times)):.1f} median"
    )


if __name__ == "__main__":
    main()
