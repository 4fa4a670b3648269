#!/usr/bin/env python
"""Config-override parity: our layers with :func:`apply_overrides` vs sleap-nn 0.3.5's
``--max_height`` / ``--max_width`` / ``--input_scale`` / ``--crop_size`` flags.

sleap-nn predicts the same frames once per case; our torch layer runs on the
same decoded frames with the same overrides, instances are paired per frame
by their coordinates, and the largest point difference (pixels) and the
instance counts are printed as a markdown table. Needs the fixtures and
``.bench-venv/sleap-nn``:

    .venv/bin/python benchmarks/overrides_parity.py [--frames 0-9] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import sleap_io as sio
from scipy.optimize import linear_sum_assignment

from sleap_infer.core.options import PredictOptions
from sleap_infer.core.overrides import ConfigOverrides
from sleap_infer.layers import build_layer
from sleap_infer.model.loader import load_model
from sleap_infer.model.overrides import apply_overrides
from sleap_infer.runtimes import backend_maker

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
SLEAP_NN = ROOT / ".bench-venv" / "sleap-nn" / "bin" / "sleap-nn"
VIDEO = FIXTURES / "videos" / "centered_pair_small.mp4"
TOPDOWN = ("minimal_instance_centroid", "minimal_instance_centered_instance")

# (name, model dirs, sleap-nn flags, our overrides)
CASES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], ConfigOverrides], ...] = (
    (
        "topdown scale 0.75 crop 112",
        TOPDOWN,
        ("--input_scale", "0.75", "--crop_size", "112"),
        ConfigOverrides(input_scale=0.75, crop_size=112),
    ),
    (
        "topdown max 448x448",
        TOPDOWN,
        ("--max_height", "448", "--max_width", "448"),
        ConfigOverrides(max_height=448, max_width=448),
    ),
    (
        "bottomup scale 0.5",
        ("minimal_instance_bottomup",),
        ("--input_scale", "0.5"),
        ConfigOverrides(input_scale=0.5),
    ),
    (
        "single max 256x256",
        ("minimal_instance_single_instance",),
        ("--max_height", "256", "--max_width", "256"),
        ConfigOverrides(max_height=256, max_width=256),
    ),
)


def frame_range(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def sleap_nn_points(
    out: Path, models: tuple[str, ...], flags: tuple[str, ...], frames: str
) -> dict:
    """Run sleap-nn once (reusing ``out`` if present): frame index -> (I, N, 2) points."""
    if not out.exists():
        cmd = [str(SLEAP_NN), "predict", "--data_path", str(VIDEO), "--device", "cpu"]
        for name in models:
            cmd += ["-m", str(FIXTURES / "models" / name)]
        cmd += [*flags, "--frames", frames, "-o", str(out)]
        subprocess.run(cmd, check=True, capture_output=True)
    labels = sio.load_slp(str(out))
    return {
        lf.frame_idx: np.stack([i.numpy() for i in lf.instances]) for lf in labels if lf.instances
    }


def ours(models: tuple[str, ...], overrides: ConfigOverrides, frames: list[int]) -> dict:
    loaded = apply_overrides([load_model(FIXTURES / "models" / m) for m in models], overrides)
    layer = build_layer(loaded, backend_maker("torch", "cpu"), PredictOptions())
    video = sio.load_video(str(VIDEO))
    images = np.stack([np.asarray(video[i]) for i in frames])
    preds = layer.predict(images)
    return {f: preds.points[b][preds.valid[b]] for b, f in enumerate(frames)}


def max_diff(a: np.ndarray, b: np.ndarray) -> float:
    """Largest point difference after pairing instances by mean distance (NaN-aware)."""
    if len(a) == 0 or len(b) == 0:
        return 0.0
    cost = np.nan_to_num(np.nanmean(np.linalg.norm(a[:, None] - b[None], axis=-1), -1), nan=1e9)
    rows, cols = linear_sum_assignment(cost)
    return float(np.nanmax(np.abs(a[rows] - b[cols]), initial=0.0))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", default="0-9")
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    if not VIDEO.is_file() or not SLEAP_NN.is_file():
        print("fixtures or .bench-venv/sleap-nn missing", file=sys.stderr)
        return 1
    work = args.work or Path(tempfile.mkdtemp(prefix="overrides-parity-"))
    work.mkdir(parents=True, exist_ok=True)
    frames = frame_range(args.frames)
    print("| case | frames | instances (sleap-nn / ours) | max point diff (px) |")
    print("|---|---|---|---|")
    worst = 0.0
    for i, (name, models, flags, overrides) in enumerate(CASES):
        theirs = sleap_nn_points(work / f"case{i}.slp", models, flags, args.frames)
        mine = ours(models, overrides, frames)
        n_theirs = sum(len(theirs.get(f, ())) for f in frames)
        n_mine = sum(len(mine[f]) for f in frames)
        diff = max(max_diff(mine[f], theirs.get(f, np.empty((0, 1, 2)))) for f in frames)
        worst = max(worst, diff)
        print(f"| {name} | {len(frames)} | {n_theirs} / {n_mine} | {diff:.4f} |")
    return 0 if worst < 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
