#!/usr/bin/env python
"""Decoding a video to RGB with PyAV: what swscale's thread setting costs per frame.

PyAV 17+ converts each frame through a new swscale context; at its default thread
count (0: one per core) that context starts and joins a thread pool for every frame.
This times 300 frames of each video four ways (decode only; ``to_ndarray`` at the
default threads; ``threads=1``; one reused ``VideoReformatter`` at ``threads=1``), the
decoder set up as ``sources/video.py`` sets it, and checks that every way gives the
same pixels. Two rounds; compare within one run.

    python benchmarks/rgb_convert.py                 # the benchmark videos
    python benchmarks/rgb_convert.py some_video.mp4
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import av
import numpy as np
from av.video.reformatter import VideoReformatter
from longer_video import longer_video
from vs_sleap_nn import FIXTURES

FRAMES = 300
WAYS = ("decode only", "to_ndarray default", "to_ndarray threads=1", "reused reformatter")


def convert(path: Path, way: str) -> tuple[float, float, list[np.ndarray]]:
    """Wall and CPU seconds (the process's, every thread) for FRAMES frames, and every
    50th frame's pixels."""
    samples: list[np.ndarray] = []
    reformatter = VideoReformatter()
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        stream.thread_count = 0
        t0, c0 = time.perf_counter(), time.process_time()
        for n, frame in enumerate(container.decode(stream)):
            if way == "to_ndarray default":
                rgb = frame.to_ndarray(format="rgb24")
            elif way == "to_ndarray threads=1":
                rgb = frame.to_ndarray(format="rgb24", threads=1)
            elif way == "reused reformatter":
                rgb = reformatter.reformat(frame, format="rgb24", threads=1).to_ndarray()
            else:
                rgb = None
            if rgb is not None and n % 50 == 0:
                samples.append(rgb)
            if n + 1 >= FRAMES:
                break
        return time.perf_counter() - t0, time.process_time() - c0, samples


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if len(sys.argv) > 1:
            videos = [Path(p) for p in sys.argv[1:]]
        else:
            robot = FIXTURES / "videos" / "small_robot.mp4"
            videos = [
                FIXTURES / "videos" / "centered_pair_small.mp4",
                longer_video(robot, 2, 1, Path(tmp) / "small_robot_x2.mp4"),
            ]
        for video in videos:
            print(f"{video.name}, {FRAMES} frames (PyAV {av.__version__})")
            for round_ in (1, 2):
                reference = None
                for way in WAYS:
                    seconds, cpu, samples = convert(video, way)
                    if way == "to_ndarray default":
                        reference = samples
                    same = ""
                    if samples and reference is not None:
                        equal = all(np.array_equal(a, b) for a, b in zip(samples, reference))
                        same = ", same pixels" if equal else ", DIFFERENT pixels"
                    timing = f"{seconds:.3f} s wall, {cpu:.3f} s CPU"
                    print(f"  round {round_}: {way:22s} {timing}{same}")


if __name__ == "__main__":
    main()
