"""``make demo``: predict on a synthetic video with known keypoints and report the error.

1. renders ``demo_out/synthetic.mp4`` (300 frames) with exact ground truth;
2. runs ``infer predict`` with the bundled model ``examples/models/synthetic_single_instance``;
3. reads the ``.slp`` back with sleap-io and prints the mean keypoint error in pixels.

When the shared sleap-nn fixtures are present (``../shared/fixtures``), it also
runs a real sleap-nn checkpoint on a real video.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import sleap_io as sio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import scene  # noqa: E402

MODEL = ROOT / "examples" / "models" / "synthetic_single_instance"
OUT = ROOT / "demo_out"
SHARED = ROOT.parent / "shared" / "fixtures"


def infer(*args: str) -> None:
    cmd = [sys.executable, "-m", "sleap_infer", *args]
    print("$ infer " + " ".join(args), flush=True)
    subprocess.run(cmd, check=True)


def keypoint_errors(pred_path: Path, truth: np.ndarray) -> np.ndarray:
    """Per (frame, node) distance to ground truth; NaN where nothing was predicted."""
    labels = sio.load_slp(str(pred_path))
    err = np.full(truth.shape[:2], np.nan)
    for lf in labels:
        if lf.instances:
            pts = lf.instances[0].numpy()
            err[lf.frame_idx] = np.linalg.norm(pts - truth[lf.frame_idx], axis=1)
    return err


def main() -> None:
    OUT.mkdir(exist_ok=True)
    video = OUT / "synthetic.mp4"
    truth = scene.write_video(video, n_frames=300)
    pred = OUT / "synthetic.mp4.predictions.slp"
    # --overwrite: the demo renders its video afresh, so it replaces its own earlier output
    # (by default infer predict keeps finished outputs and skips those videos).
    infer(
        "predict",
        str(video),
        "--model",
        str(MODEL),
        "-o",
        str(pred),
        "--device",
        "cpu",
        "--overwrite",
    )
    err = keypoint_errors(pred, truth)
    found = np.isfinite(err)
    print(
        f"\nsynthetic demo: {found.all(axis=1).sum()}/{len(err)} frames with both nodes; "
        f"mean keypoint error {np.nanmean(err):.2f} px "
        f"(median {np.nanmedian(err):.2f}, 95th pct {np.nanpercentile(err, 95):.2f}) "
        f"per node: "
        + ", ".join(
            f"{name} {np.nanmean(err[:, i]):.2f}" for i, name in enumerate(scene.NODE_NAMES)
        )
    )
    robot_model = SHARED / "models" / "minimal_instance_single_instance"
    robot_video = SHARED / "videos" / "small_robot.mp4"
    if robot_model.exists() and robot_video.exists():
        print("\nshared fixtures found: running a real sleap-nn checkpoint too")
        infer(
            "predict",
            str(robot_video),
            "--model",
            str(robot_model),
            "-o",
            str(OUT / "small_robot.mp4.predictions.slp"),
            "--device",
            "cpu",
            "--overwrite",
        )


if __name__ == "__main__":
    main()
