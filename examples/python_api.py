"""The Python API in one page: load a model, predict frames in memory, write files.

Runs as it is on a fresh checkout (no GPU, no downloads): it uses the small
model trained by ``examples/synthetic/train.py`` (shipped in
``examples/models/``) and renders its synthetic scene.

    python examples/python_api.py [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import sleap_io as sio

import sleap_infer

HERE = Path(__file__).resolve().parent
MODEL = HERE / "models" / "synthetic_single_instance"
sys.path.insert(0, str(HERE / "synthetic"))

from scene import write_video  # noqa: E402  (examples/synthetic/scene.py)


def main(out: Path) -> None:
    video = out / "scene.mp4"
    truth = write_video(video, n_frames=60)  # ground truth: (60, 2 nodes, 2)

    # 1. Load once: a model folder (or a top-down pair: load(centroid_dir, instance_dir)).
    #    Options are infer predict's, by the same names and defaults.
    pipe = sleap_infer.load(MODEL, device="cpu", peak_threshold=0.2, batch_size=8)
    print(pipe)

    # 2. Frames in memory: (N, H, W, C), (N, H, W), a list of frames, one frame ...
    frames = sio.load_video(str(video))[:20]  # (20, 160, 160, 3) uint8
    pred = pipe.predict(frames)
    print(pred, "points", pred.points.shape, "scores", pred.point_scores.shape)
    error = np.linalg.norm(pred.points[:, 0] - truth[:20], axis=-1)
    print(f"mean error against ground truth: {np.nanmean(error):.2f} px")

    # ... or a path (video, image folder, .slp project) or a sio.Video, with a frame selection.
    by_path = pipe.predict(video, frames="40-59")
    by_video = pipe.predict(sio.load_video(str(video)), frames=range(40, 60))
    assert np.array_equal(by_path.points, by_video.points, equal_nan=True)

    # ... one frame of it (the instances found), or a table for analysis.
    first = pred[0]
    print(first, "points", first.points.shape)  # (instances, nodes, 2)
    print(pred.to_dataframe().head(4))  # frame, instance, track, node, x, y, score

    # ... or frame by frame as they are predicted: memory stays flat on any length.
    for frame in pipe.stream(video, frames="0-19", progress=False):
        assert np.array_equal(frame.points, pred[frame.frame_idx].points, equal_nan=True)

    # 3. As SLEAP labels, for every tool that reads them.
    labels = pred.to_labels()
    labels.save(str(out / "first20.slp"))
    print("labels:", labels)

    # 4. One video to a file, as `infer predict` writes it: journaled (resume=True continues
    #    an interrupted run), atomic, and a finished output is never replaced unasked.
    result = pipe.predict_to_file(video, out / "scene.predictions.slp")
    print("file:", result.output, result.counts)
    try:
        pipe.predict_to_file(video, out / "scene.predictions.slp", frames="0-3")
    except sleap_infer.SleapInferError as exc:
        print("refused:", exc)

    # 5. A batch of videos, as the command line runs it (skips finished outputs).
    batch = sleap_infer.predict([video], MODEL, output=out / "batch", device="cpu")
    for outcome in batch.outcomes:
        print("batch:", outcome.task.video.name, outcome.status, outcome.counts.instances)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="where to write (default: a temporary folder)")
    args = parser.parse_args()
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        main(args.out)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
