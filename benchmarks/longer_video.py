"""A longer (and optionally larger) copy of a short fixture video, for benchmarks.

The fixtures' synthetic videos are 24 frames: too short to measure anything
but start-up. Played N times and re-encoded losslessly, they measure
steady-state speed and memory on the same pixels.
"""

from __future__ import annotations

from pathlib import Path


def longer_video(video: Path, loops: int, upscale: int, out: Path) -> Path:
    """``video`` played ``loops`` times with frames enlarged ``upscale`` times (nearest),
    re-encoded losslessly."""
    import av
    import numpy as np

    with av.open(str(video)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    frames = [np.repeat(np.repeat(f, upscale, 0), upscale, 1) for f in frames]
    with av.open(str(out), "w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.height, stream.width = frames[0].shape[:2]
        stream.pix_fmt = "yuv444p"
        stream.options = {"crf": "0"}
        for _ in range(loops):
            for arr in frames:
                for packet in stream.encode(av.VideoFrame.from_ndarray(arr, format="rgb24")):
                    container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    print(f"input: {video.name} x{loops}, {frames[0].shape[1]}x{frames[0].shape[0]}", flush=True)
    return out
