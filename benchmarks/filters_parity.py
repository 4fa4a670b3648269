#!/usr/bin/env python
"""Instance-filter parity: :func:`filter_instances` vs sleap-nn 0.3.5's ``--filter_*`` flags.

sleap-nn predicts the same frames once unfiltered and once per filter case;
our filter is applied to its unfiltered instances, and the instances kept must
be exactly the ones sleap-nn's filtered run wrote (paired per frame by their
coordinates). ``--no_empty_frames`` is checked on the frames written. Prints a
markdown table; needs the fixtures and ``.bench-venv/sleap-nn``:

    .venv/bin/python benchmarks/filters_parity.py [--frames 0-49] [--work DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import sleap_io as sio

from sleap_infer.ops.instance_filters import filter_instances

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
SLEAP_NN = ROOT / ".bench-venv" / "sleap-nn" / "bin" / "sleap-nn"
VIDEO = FIXTURES / "videos" / "centered_pair_small.mp4"
MODELS = {
    "topdown": ("minimal_instance_centroid", "minimal_instance_centered_instance"),
    "bottomup": ("minimal_instance_bottomup",),
}

# (name, sleap-nn flags, our filter_instances knobs)
CASES: tuple[tuple[str, tuple[str, ...], dict[str, object]], ...] = (
    (
        "overlap iou 0.05",
        ("--filter_overlapping", "--filter_overlapping_threshold", "0.05"),
        {"overlap_method": "iou", "overlap_threshold": 0.05},
    ),
    (
        "overlap oks 0.01",
        (
            "--filter_overlapping",
            "--filter_overlapping_method",
            "oks",
            "--filter_overlapping_threshold",
            "0.01",
        ),
        {"overlap_method": "oks", "overlap_threshold": 0.01},
    ),
    ("min visible nodes 2", ("--filter_min_visible_nodes", "2"), {"min_visible_nodes": 2}),
    (
        "min visible fraction 0.75",
        ("--filter_min_visible_node_fraction", "0.75"),
        {"min_visible_node_fraction": 0.75},
    ),
    (
        "min mean node score 0.6",
        ("--filter_min_mean_node_score", "0.6"),
        {"min_mean_node_score": 0.6},
    ),
    ("min instance score 1.0", ("--filter_min_instance_score", "1.0"), {"min_instance_score": 1.0}),
    (
        "all + no empty frames",
        (
            "--filter_overlapping",
            "--filter_overlapping_threshold",
            "0.05",
            "--filter_min_visible_nodes",
            "2",
            "--filter_min_instance_score",
            "1.0",
            "--filter_min_mean_node_score",
            "0.6",
            "--no_empty_frames",
        ),
        {
            "overlap_method": "iou",
            "overlap_threshold": 0.05,
            "min_visible_nodes": 2,
            "min_instance_score": 1.0,
            "min_mean_node_score": 0.6,
        },
    ),
)


def sleap_nn_predict(
    models: tuple[str, ...], frames: str, out: Path, flags: tuple[str, ...]
) -> None:
    if out.exists():
        return
    cmd = [
        str(SLEAP_NN),
        "predict",
        "-i",
        str(VIDEO),
        "--frames",
        frames,
        "--device",
        "cpu",
        "-o",
        str(out),
        *flags,
    ]
    for model in models:
        cmd += ["--model_paths", str(FIXTURES / "models" / model)]
    subprocess.run(cmd, check=True, capture_output=True)


def key(inst: sio.PredictedInstance) -> tuple[float, ...]:
    """An instance's identity across two runs: its coordinates (NaN as a sentinel)."""
    return tuple(np.nan_to_num(inst.numpy(), nan=-1e9).round(3).ravel().tolist())


def instances_kept(labels: sio.Labels) -> dict[int, Counter]:
    return {lf.frame_idx: Counter(key(i) for i in lf.instances) for lf in labels}


def ours(base: sio.Labels, knobs: dict[str, object]) -> tuple[dict[int, Counter], set[int]]:
    """Our filter on sleap-nn's unfiltered instances: kept instances, frames left non-empty."""
    kept: dict[int, Counter] = {}
    non_empty: set[int] = set()
    for lf in base:
        insts = list(lf.instances)
        if not insts:
            kept[lf.frame_idx] = Counter()
            continue
        arr = np.stack([i.numpy(scores=True) for i in insts]).astype(np.float32)[None]
        scores = np.array([[i.score for i in insts]], np.float32)
        valid = np.ones(scores.shape, bool)
        keep = filter_instances(arr[..., :2], arr[..., 2], scores, valid, **knobs)[0]  # type: ignore[arg-type]
        kept[lf.frame_idx] = Counter(key(i) for i, k in zip(insts, keep) if k)
        if keep.any():
            non_empty.add(lf.frame_idx)
    return kept, non_empty


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", default="0-49")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--cases", nargs="+", type=int, default=list(range(len(CASES))))
    parser.add_argument("--work", type=Path, default=None, help="keep sleap-nn outputs here")
    args = parser.parse_args()
    if not (SLEAP_NN.exists() and VIDEO.exists()):
        print("skipped: sleap-nn bench venv or fixtures missing", file=sys.stderr)
        return 0
    work = args.work or Path(tempfile.mkdtemp(prefix="filters_parity_"))
    work.mkdir(parents=True, exist_ok=True)
    print("| model | case | instances | sleap-nn kept | ours kept | agree | frames written |")
    print("|---|---|---|---|---|---|---|")
    failed = 0
    for model in args.models:
        base_path = work / f"{model}_base.slp"
        sleap_nn_predict(MODELS[model], args.frames, base_path, ())
        base = sio.load_slp(str(base_path))
        total = sum(len(lf.instances) for lf in base)
        for i in args.cases:
            name, flags, knobs = CASES[i]
            out = work / f"{model}_case{i}.slp"
            sleap_nn_predict(MODELS[model], args.frames, out, flags)
            theirs_labels = sio.load_slp(str(out))
            theirs = instances_kept(theirs_labels)
            mine, non_empty = ours(base, knobs)
            frames = {lf.frame_idx for lf in theirs_labels}
            expect_frames = non_empty if "--no_empty_frames" in flags else set(mine)
            agree = (
                all(
                    theirs.get(f, Counter()) == mine.get(f, Counter())
                    for f in set(theirs) | set(mine)
                )
                and frames == expect_frames
            )
            failed += not agree
            n_theirs = sum(sum(c.values()) for c in theirs.values())
            n_mine = sum(sum(c.values()) for c in mine.values())
            print(
                f"| {model} | {name} | {total} | {n_theirs} | {n_mine} | "
                f"{'yes' if agree else 'NO'} | {len(frames)} (ours {len(expect_frames)}) |",
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
