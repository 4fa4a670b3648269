#!/usr/bin/env python
"""Classic-tracker parity: our ``retrack_file`` vs sleap-nn's retrack-only mode, same detections.

For each case, the same prediction file is re-tracked twice: by sleap-nn
0.3.5 (``sleap-nn predict -i preds.slp --tracking [flags] -o out.slp``, in
``.bench-venv/sleap-nn``) and by :func:`sleap_infer.pipeline.retrack.retrack_file` with
the same options. Detections are paired by their coordinates (poses) or box
and area (masks), since sleap-nn reorders a frame's detections under local
queues and drops the ones it leaves untracked (those count as untracked).
Inputs: the fixtures' mask and re-ID reference files, sleap-nn's top-down and
centroid predictions on ``centered_pair_small.mp4`` (``benchmarks/agreement.py``
keeps them in ``.bench-venv/agreement``; made here with ``sleap-nn predict`` if
missing), and ``examples/tracking_synthetic.py``'s crossing animals (600
frames, 4 animals, with a video for the optical-flow case, which needs
OpenCV here too). Prints a markdown table:

    .venv/bin/python benchmarks/tracking_parity.py [--out results.md] [--cases default greedy]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sleap_io as sio
from vs_sleap_nn import sleap_nn_venv

from sleap_infer.core.tracking import TrackingOptions
from sleap_infer.pipeline.retrack import retrack_file

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
BENCH = ROOT / ".bench-venv"
SLEAP_NN = BENCH / "sleap-nn" / "bin" / "sleap-nn"
VIDEO = FIXTURES / "videos" / "centered_pair_small.mp4"
MODELS = FIXTURES / "models"


@dataclass(frozen=True)
class Case:
    name: str
    source: str  # key of INPUTS
    ours: dict[str, Any]  # TrackingOptions fields
    theirs: tuple[str, ...] = ()  # sleap-nn flags


CASES = (
    Case("default (keypoints/oks, fixed window)", "topdown", {}),
    Case(
        "centroids/euclidean",
        "topdown",
        {"features": "centroids", "scoring": "euclidean_dist"},
        ("--features", "centroids", "--scoring_method", "euclidean_dist"),
    ),
    Case(
        "bboxes/iou",
        "topdown",
        {"features": "bboxes", "scoring": "iou"},
        ("--features", "bboxes", "--scoring_method", "iou"),
    ),
    Case(
        "local queues, max_tracks 2",
        "topdown",
        {"candidates": "local_queues", "max_tracks": 2},
        ("--candidates_method", "local_queues", "--max_tracks", "2"),
    ),
    Case("greedy", "topdown", {"matching": "greedy"}, ("--track_matching_method", "greedy")),
    Case("optical flow", "topdown", {"use_flow": True}, ("--use_flow",)),
    Case("one-node skeleton (auto centroids)", "centroid", {}),
    Case("synthetic: default", "synthetic", {}),
    Case(
        "synthetic: local queues, max_tracks 4, greedy",
        "synthetic",
        {"max_tracks": 4, "matching": "greedy"},
        ("--max_tracks", "4", "--track_matching_method", "greedy"),
    ),
    Case(
        "synthetic: min_new_track_points 4, robust_quantile 0.8, window 8",
        "synthetic",
        {
            "min_new_track_points": 4,
            "reduction": "robust_quantile",
            "robust_quantile": 0.8,
            "window_size": 8,
        },
        (
            "--min_new_track_points",
            "4",
            "--scoring_reduction",
            "robust_quantile",
            "--robust_best_instance",
            "0.8",
            "--tracking_window_size",
            "8",
        ),
    ),
    Case(
        "synthetic: optical flow",
        "synthetic",
        {"use_flow": True},
        ("--use_flow",),
    ),
    Case("masks (auto mask_iou, local queues 25)", "masks", {}),
    Case(
        "masks, fixed window 3, greedy",
        "masks",
        {"candidates": "fixed_window", "window_size": 3, "matching": "greedy"},
        (
            "--candidates_method",
            "fixed_window",
            "--tracking_window_size",
            "3",
            "--track_matching_method",
            "greedy",
        ),
    ),
    Case("re-ID vectors (auto embeddings/cosine)", "embedding", {}, ("--features", "embeddings")),
)


def _sleap_nn_predictions(name: str, models: list[str], work: Path) -> Path:
    kept = BENCH / "agreement" / f"{name}.sleap_nn.slp"
    if kept.is_file():
        return kept
    out = work / f"{name}.slp"
    cmd = [str(SLEAP_NN), "predict", "--data_path", str(VIDEO), "-o", str(out)]
    cmd += ["--device", "cpu", "--batch_size", "4", "--peak_threshold", "0.2"]
    for model in models:
        cmd += ["--model_paths", str(MODELS / model)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def _synthetic(work: Path) -> Path:
    path = ROOT / "examples" / "tracking_synthetic.py"
    spec = importlib.util.spec_from_file_location("tracking_synthetic", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.write(module.simulate(600, 4, 0), work / "synthetic")["detections"]


INPUTS: dict[str, Callable[[Path], Path]] = {
    "topdown": lambda w: _sleap_nn_predictions(
        "topdown", ["minimal_instance_centroid", "minimal_instance_centered_instance"], w
    ),
    "centroid": lambda w: _sleap_nn_predictions("centroid", ["minimal_instance_centroid"], w),
    "synthetic": _synthetic,
    "masks": lambda w: FIXTURES / "reference" / "bottomup_segmentation.slp",
    "embedding": lambda w: FIXTURES / "reference" / "embedding.slp",
}


def _key(det: Any) -> tuple[Any, ...]:
    if isinstance(det, sio.SegmentationMask):
        return ("mask", tuple(det.bbox), det.area)
    pts = np.round(det.numpy(), 4)
    return ("pose", *(None if np.isnan(v) else float(v) for v in pts.ravel()))


def _tracks(path: Path, masks: bool) -> dict[int, dict[tuple[Any, ...], str | None]]:
    out: dict[int, dict[tuple[Any, ...], str | None]] = {}
    for lf in sio.load_slp(str(path)):
        dets = lf.masks if masks else lf.instances
        out[lf.frame_idx] = {_key(d): d.track.name if d.track is not None else None for d in dets}
    return out


def compare(ours: Path, theirs: Path, masks: bool) -> dict[str, Any]:
    a, b = _tracks(ours, masks), _tracks(theirs, masks)
    frames = instances = same_frames = same = dropped = 0
    for frame, dets in a.items():
        if masks and not dets:
            continue
        other = b.get(frame, {})
        agree = [name == other.get(key) for key, name in dets.items()]
        dropped += sum(key not in other for key in dets)
        frames += 1
        instances += len(agree)
        same += sum(agree)
        same_frames += all(agree)
    names = {n for d in a.values() for n in d.values() if n}
    their_names = {n for d in b.values() for n in d.values() if n}
    return {
        "frames": frames,
        "instances": instances,
        "frame_pct": 100 * same_frames / max(frames, 1),
        "instance_pct": 100 * same / max(instances, 1),
        "tracks": f"{len(names)} / {len(their_names)}",
        "dropped": dropped,
    }


def run_case(case: Case, source: Path, work: Path) -> dict[str, Any]:
    slug = "".join(c if c.isalnum() else "_" for c in case.name)
    ours, theirs = work / f"{slug}.ours.slp", work / f"{slug}.sleap_nn.slp"
    t0 = time.perf_counter()
    retrack_file(source, ours, TrackingOptions(**case.ours))
    ours_s = time.perf_counter() - t0
    cmd = [str(SLEAP_NN), "predict", "-i", str(source), "--tracking", "-o", str(theirs)]
    proc = subprocess.run([*cmd, *case.theirs], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"sleap-nn failed on {case.name}: {proc.stderr[-2000:]}")
    result = compare(ours, theirs, case.source == "masks" or case.source == "embedding")
    return {**result, "ours_s": ours_s}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="also write the table here")
    p.add_argument("--cases", nargs="*", help="only cases whose name contains one of these")
    p.add_argument("--work", type=Path, help="keep the tracked files here")
    args = p.parse_args()
    if not FIXTURES.is_dir():
        sys.exit(f"needs the shared fixtures at {FIXTURES}")
    sleap_nn_venv(SLEAP_NN.parents[1])  # installs sleap-nn there on first use
    flow = importlib.util.find_spec("cv2") is not None
    work = args.work or Path(tempfile.mkdtemp(prefix="tracking_parity_"))
    work.mkdir(parents=True, exist_ok=True)
    sources: dict[str, Path] = {}
    rows = [
        "| case | frames | instances | frames agreeing | instances agreeing "
        "| tracks (ours / sleap-nn) | untracked by sleap-nn (dropped) | ours s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in CASES:
        if args.cases and not any(c in case.name for c in args.cases):
            continue
        if case.ours.get("use_flow") and not flow:
            rows.append(f"| {case.name} | skipped: OpenCV not installed here | | | | | | |")
            continue
        if case.source not in sources:
            sources[case.source] = INPUTS[case.source](work)
        r = run_case(case, sources[case.source], work)
        rows.append(
            f"| {case.name} | {r['frames']} | {r['instances']} | {r['frame_pct']:.1f}% "
            f"| {r['instance_pct']:.1f}% | {r['tracks']} | {r['dropped']} | {r['ours_s']:.2f} |"
        )
        print(rows[-1], flush=True)
    table = "\n".join(rows)
    print(f"\n{table}")
    if args.out:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
