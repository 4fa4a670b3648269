#!/usr/bin/env python
"""Peak RSS of ``infer predict`` on the first 200 frames vs the whole video.

Predictions stream into a journal batch by batch and decoding runs behind a
bounded queue, so peak memory should not grow with the number of frames.
Each run is a fresh subprocess; its peak RSS comes from ``os.wait4``.

    .venv/bin/python benchmarks/rss_vs_length.py [--model DIR ...] [--video PATH]

Segmentation masks at full resolution, on a long, large input (the 24-frame
synthetic video upscaled 4x to 512x512 and played 100 times: 2400 frames):

    .venv/bin/python benchmarks/rss_vs_length.py \
        --model ../shared/fixtures/models/synthetic_bottomup_segmentation \
        --video ../shared/fixtures/videos/synthetic_multi.mp4 --loops 100 --upscale 4 \
        --extra=--full-res-masks
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from longer_video import longer_video

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))


def peak_rss(cmd: list[str]) -> tuple[float, float]:
    """Run ``cmd``; return (peak RSS MiB, wall seconds). Linux reports ru_maxrss in KiB."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.read().decode()[-2000:]}")
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return usage.ru_maxrss / scale, wall


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    models = FIXTURES / "models"
    p.add_argument("--model", type=Path, action="append", default=None)
    p.add_argument("--video", type=Path, default=FIXTURES / "videos" / "centered_pair_small.mp4")
    p.add_argument("--short", type=int, default=200)
    p.add_argument("--loops", type=int, default=1, help="play the video this many times")
    p.add_argument("--upscale", type=int, default=1, help="and enlarge its frames this much")
    p.add_argument("--extra", default="", help="more infer predict options")
    args = p.parse_args()
    model_dirs = args.model or [
        models / "minimal_instance_centroid",
        models / "minimal_instance_centered_instance",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        video = args.video
        if args.loops > 1 or args.upscale > 1:
            video = longer_video(video, args.loops, args.upscale, Path(tmp) / "long.mp4")
        results = []
        for frames in (f"0-{args.short - 1}", None):
            cmd = [
                sys.executable,
                "-m",
                "sleap_infer",
                "predict",
                str(video),
                "-q",
                "--device",
                "cpu",
                "-o",
                str(Path(tmp) / "out.slp"),
                "--overwrite",
            ]
            for m in model_dirs:
                cmd += ["--model", str(m)]
            if frames:
                cmd += ["--frames", frames]
            cmd += shlex.split(args.extra)
            mib, wall = peak_rss(cmd)
            label = frames or "all frames"
            results.append(mib)
            print(f"{label:>12}: peak RSS {mib:7.1f} MiB  ({wall:.1f} s)", flush=True)
    print(f"growth: {results[1] - results[0]:+.1f} MiB ({results[1] / results[0]:.3f}x)")


if __name__ == "__main__":
    main()
