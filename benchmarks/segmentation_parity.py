#!/usr/bin/env python
"""Every row of the fixtures' segmentation/tiling reference table, through ``infer predict``.

sleap-nn 0.3.5 wrote ``../shared/fixtures/reference/*.slp`` from the
``.pkg.slp`` inputs (embedded frames); this runs ``infer predict`` with the
same models, input and flags, per backend, and compares every frame of the
output with sleap-nn's: mask count and order, mask bits (IoU of any mask that
differs), scale and offset, scores; polygons (``--mask-output both``); and
keypoints for the tiled single-instance model.

    .venv/bin/python benchmarks/segmentation_parity.py                  # torch and onnx
    .venv/bin/python benchmarks/segmentation_parity.py --backends torch --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import sleap_io as sio

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))

# reference file -> (models, input, extra flags)
ROWS: dict[str, tuple[list[str], str, list[str]]] = {
    "bottomup_segmentation": (["synthetic_bottomup_segmentation"], "synthetic_multi", []),
    "bottomup_segmentation_both": (
        ["synthetic_bottomup_segmentation"],
        "synthetic_multi",
        ["--mask-output", "both"],
    ),
    "bottomup_segmentation_fullres_cleanup": (
        ["synthetic_bottomup_segmentation"],
        "synthetic_multi",
        ["--full-res-masks", "--mask-cleanup", "--min-mask-area", "50"],
    ),
    "bottomup_segmentation_tiled": (
        ["synthetic_bottomup_segmentation_tiled"],
        "synthetic_multi",
        [],
    ),
    "semantic_segmentation": (["synthetic_semantic_segmentation"], "synthetic_multi", []),
    "semantic_segmentation_tiled": (
        ["synthetic_semantic_segmentation_tiled"],
        "synthetic_multi",
        [],
    ),
    "cis_topdown": (
        ["synthetic_centroid", "synthetic_centered_instance_segmentation"],
        "synthetic_multi",
        [],
    ),
    "single_instance_tiled": (["synthetic_single_instance_tiled"], "synthetic_single", []),
}


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        return 0.0
    return float((a & b).sum() / max(1, (a | b).sum()))


def compare(ours: sio.Labels, theirs: sio.Labels) -> dict[str, object]:
    """Per-frame comparison of masks, ROIs and instances."""
    a = {lf.frame_idx: lf for lf in ours}
    b = {lf.frame_idx: lf for lf in theirs}
    out: dict[str, object] = {
        "frames": len(set(a) | set(b)),
        "masks": [0, 0],
        "rois": [0, 0],
        "instances": [0, 0],
        "count_mismatch_frames": 0,
        "masks_differing": 0,
        "min_iou": 1.0,
        "max_score_diff": 0.0,
        "geometry_mismatch": 0,
        "roi_mismatch": 0,
        "max_keypoint_diff_px": 0.0,
    }
    for f in sorted(set(a) | set(b)):
        la, lb = a.get(f), b.get(f)
        ma, mb = (la.masks if la is not None else []), (lb.masks if lb is not None else [])
        ra, rb = (la.rois if la is not None else []), (lb.rois if lb is not None else [])
        ia, ib = (la.instances if la is not None else []), (lb.instances if lb is not None else [])
        for key, x, y in (("masks", ma, mb), ("rois", ra, rb), ("instances", ia, ib)):
            out[key][0] += len(x)  # type: ignore[index]
            out[key][1] += len(y)  # type: ignore[index]
        if (len(ma), len(ra), len(ia)) != (len(mb), len(rb), len(ib)):
            out["count_mismatch_frames"] += 1  # type: ignore[operator]
            continue
        for x, y in zip(ma, mb):
            iou = _iou(x.data, y.data)
            out["masks_differing"] += iou < 1.0  # type: ignore[operator]
            out["min_iou"] = min(out["min_iou"], iou)  # type: ignore[type-var]
            out["geometry_mismatch"] += (x.scale, x.offset) != (y.scale, y.offset)  # type: ignore[operator]
            diff = abs(x.score - y.score)
            out["max_score_diff"] = max(out["max_score_diff"], diff)  # type: ignore[type-var]
        for x, y in zip(ra, rb):
            out["roi_mismatch"] += x.geometry.wkt != y.geometry.wkt  # type: ignore[operator]
        for x, y in zip(ia, ib):
            d = np.nanmax(np.abs(x.numpy() - y.numpy())) if len(x.numpy()) else 0.0
            out["max_keypoint_diff_px"] = max(out["max_keypoint_diff_px"], float(d))  # type: ignore[type-var]
    return out


def run_row(name: str, backend: str, tmp: Path) -> dict[str, object]:
    models, data, flags = ROWS[name]
    out = tmp / f"{name}.{backend}.slp"
    cmd = [sys.executable, "-m", "sleap_infer", "predict"]
    cmd += [str(FIXTURES / "videos" / f"{data}.pkg.slp"), "-o", str(out), "-q", "--overwrite"]
    cmd += ["--device", "cpu", "--backend", backend, *flags]
    for m in models:
        cmd += ["--model", str(FIXTURES / "models" / m)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        return {"error": (res.stdout + res.stderr).strip().splitlines()[-1:]}
    ours = sio.load_slp(str(out))
    theirs = sio.load_slp(str(FIXTURES / "reference" / f"{name}.slp"))
    return compare(ours, theirs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="torch,onnx")
    p.add_argument("--rows", default=",".join(ROWS))
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    if not (FIXTURES / "reference").is_dir():
        raise SystemExit(f"shared fixtures not found at {FIXTURES} (set SLEAP_INFER_FIXTURES)")
    report: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        for name in args.rows.split(","):
            for backend in args.backends.split(","):
                result = run_row(name, backend, Path(tmp_name))
                report[f"{name}/{backend}"] = result
                print(f"{name:40s} {backend:6s} {json.dumps(result)}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
