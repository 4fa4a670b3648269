#!/usr/bin/env python
"""SLEAP 1.x (Keras) models on our PyTorch networks: vs TensorFlow, SLEAP 1.x and sleap-nn.

    .venv/bin/python benchmarks/legacy_models.py                 # everything below
    .venv/bin/python benchmarks/legacy_models.py --skip-sleap-nn  # steps 1-3 only (a minute)
    .venv/bin/python benchmarks/legacy_models.py --cases topdown --frames 0-99

1. Extracts sleap-nn's public SLEAP 1.x test models (``tests/assets/legacy_models/<name>/``:
   ``best_model.h5``, ``training_config.json``, ``dummy_activations.h5``, and
   ``labels_pr.val.slp`` where there is one) from a bare git mirror of sleap-nn
   (``--mirror``, default ``$SLEAP_NN_MIRROR`` or /work/.mirror/talmolab+sleap-nn/repo)
   into ``.legacy-models/`` (git-ignore it), where ``tests/model/test_legacy_models.py`` finds them.
2. Activations: each network on the all-zero input TensorFlow was given
   (``get_dummy_activations.py``); the max |ours - TensorFlow| of every output. Target <= 1e-4.
3. SLEAP 1.x itself: the legacy bottom-up model on ``minimal_instance.pkg.slp`` against
   ``labels_pr.val.slp``, SLEAP 1.x's own predictions on that image (it refined peaks
   with its offset head, we integrate; sleap-nn is run too).
4. sleap-nn 0.3.5 (``--venv``, default ``.bench-venv/sleap-nn``; ``vs_sleap_nn.py`` creates
   it) ``predict`` against our ``infer predict`` over the whole fixture video per case:
   instance counts and keypoint differences of matched instances. sleap-nn converts
   Keras transposed convolutions with torch's padding, one output pixel off from
   Keras, so a third run, "ours-torchpad", is our pipeline with that same padding
   (our loader monkeypatched): it separates that network difference from the rest.
   What is left between "ours-torchpad" and sleap-nn is our guard on integral
   refinement (``sleap_infer/ops/peaks.py``): on junk peaks whose patch sums to ~0 or
   less, sleap-nn's refined coordinates fly off (thousands of px), ours stay in the
   patch. Reported per case: instance counts; for instances paired frame by frame,
   the mean and max keypoint distance and the share within 0.5 px.
   Needs ../shared/fixtures.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import sleap_io as sio
import torch
from scipy.optimize import linear_sum_assignment

from sleap_infer.model.loader import load_model

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
MIRROR = Path(os.environ.get("SLEAP_NN_MIRROR", "/work/.mirror/talmolab+sleap-nn/repo"))
DEST = Path(os.environ.get("SLEAP_INFER_LEGACY_MODELS", ROOT / ".legacy-models"))
ASSETS = "tests/assets/legacy_models"
KEEP = ("best_model.h5", "training_config.json", "dummy_activations.h5", "labels_pr.val.slp")

# case -> (models: "legacy:<name>" from DEST or "new:<name>" from the fixtures, video)
CASES: dict[str, tuple[list[str], str]] = {
    "single": (["legacy:minimal_robot.UNet.single_instance"], "small_robot.mp4"),
    "centroid": (["legacy:minimal_instance.UNet.centroid"], "centered_pair_small.mp4"),
    "topdown": (
        ["legacy:minimal_instance.UNet.centroid", "legacy:minimal_instance.UNet.centered_instance"],
        "centered_pair_small.mp4",
    ),
    "bottomup": (["legacy:minimal_instance.UNet.bottomup"], "centered_pair_small.mp4"),
    "mixed_topdown": (
        ["legacy:minimal_instance.UNet.centroid", "new:minimal_instance_centered_instance"],
        "centered_pair_small.mp4",
    ),
    "mixed_topdown_rev": (
        ["new:minimal_instance_centroid", "legacy:minimal_instance.UNet.centered_instance"],
        "centered_pair_small.mp4",
    ),
    # The min_tracks models' own video is not public: these run them on another two-fly
    # video, so their poses mean little, but both tools see the same maps.
    "multiclass_bottomup": (
        ["legacy:min_tracks_2node.UNet.bottomup_multiclass"],
        "centered_pair_small.mp4",
    ),
    "multiclass_topdown": (
        [
            "legacy:minimal_instance.UNet.centroid",
            "legacy:min_tracks_2node.UNet.topdown_multiclass",
        ],
        "centered_pair_small.mp4",
    ),
}
DEFAULT_CASES = "single,topdown,bottomup,mixed_topdown,mixed_topdown_rev"
TRANSPOSED = ("centroid", "centered_instance", "bottomup")  # models with transposed convs

# `infer` with the legacy loader keeping torch's transposed-conv padding, as sleap-nn does.
TORCH_PADDING = (
    "import sys\n"
    "import sleap_infer.model.legacy.load as legacy\n"
    "legacy.use_keras_transposed_convs = lambda network: 0\n"
    "from sleap_infer.cli import main\n"
    "main(sys.argv[1:])\n"
)


# ------------------------------------------------------------------ 1. extract
def extract(mirror: Path, dest: Path) -> list[str]:
    """Copy the kept files of every legacy model out of the bare mirror; returns the names."""
    git = ["git", f"--git-dir={mirror}"]
    listing = subprocess.run(
        [*git, "ls-tree", "-r", "--name-only", "HEAD", ASSETS],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    names = set()
    for path in listing:
        rel = Path(path).relative_to(ASSETS)
        if len(rel.parts) != 2 or rel.name not in KEEP:
            continue
        names.add(rel.parts[0])
        target = dest / rel
        if target.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        blob = subprocess.run([*git, "show", f"HEAD:{path}"], check=True, capture_output=True)
        target.write_bytes(blob.stdout)
    return sorted(names)


# -------------------------------------------------------------- 2. activations
def activation_gaps(folder: Path) -> dict[str, tuple[float, float]]:
    """Output name -> (max |ours - TensorFlow|, max |TensorFlow|) on the stored zero input."""
    model = load_model(folder)
    gaps: dict[str, tuple[float, float]] = {}
    with h5py.File(folder / "dummy_activations.h5", "r") as f:
        n, h, w, c = json.loads(f["metadata"][()])["input_shape"]
        with torch.no_grad():
            ours = model.network(torch.zeros(n, c, h, w))
        for key in f:
            name = key.removesuffix("_0")
            if key == "metadata":
                continue
            ref = f[key][()]
            if name not in ours:
                gaps[key] = (float("nan"), float(np.abs(ref).max()))  # offset head: dropped
                continue
            got = ours[name].numpy()
            got = got.transpose(0, 2, 3, 1) if got.ndim == 4 else got
            gaps[key] = (float(np.abs(got - ref).max()), float(np.abs(ref).max()))
    return gaps


# ------------------------------------------------------------ 3. and 4. runs
CLOSE_PX = 0.5


def _by_frame(path: Path) -> dict[int, np.ndarray]:
    labels = sio.load_slp(str(path))
    return {
        lf.frame_idx: np.stack([i.numpy() for i in lf.instances]).astype(np.float64)
        for lf in labels.labeled_frames
        if lf.instances
    }


def compare(ours: Path, theirs: Path) -> dict[str, float]:
    """Instance counts, and keypoint distances after pairing each frame's instances
    (Hungarian on mean node distance): mean and max over keypoints both found, and the
    share of paired instances whose keypoints all lie within ``CLOSE_PX``."""
    a, b = _by_frame(ours), _by_frame(theirs)
    dists, close, paired = [], 0, 0
    for f in sorted(set(a) & set(b)):
        d = np.linalg.norm(a[f][:, None] - b[f][None], axis=-1)  # (Ia, Ib, nodes)
        both = ~np.isnan(d)
        cost = np.where(both.any(-1), np.where(both, d, 0).sum(-1) / both.sum(-1).clip(1), 1e9)
        for r, c in zip(*linear_sum_assignment(cost)):
            pair = d[r, c][~np.isnan(d[r, c])]
            if pair.size:
                dists.append(pair)
                paired += 1
                close += bool(pair.max() <= CLOSE_PX)
    flat = np.concatenate(dists) if dists else np.full(1, np.nan)
    return {
        "instances": sum(len(v) for v in a.values()),
        "other_instances": sum(len(v) for v in b.values()),
        "paired": paired,
        "close_share": close / paired if paired else float("nan"),
        "mean_px": float(flat.mean()),
        "max_px": float(flat.max()),
    }


def run(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        tail = "\n".join((res.stdout + res.stderr).splitlines()[-15:])
        raise SystemExit(f"command failed ({res.returncode}): {shlex.join(cmd)}\n{tail}")
    return time.perf_counter() - t0


def ours_cmd(
    models: list[Path],
    data: Path,
    out: Path,
    frames: str | None,
    torch_padding: bool,
    extra: list[str],
) -> list[str]:
    head = (
        [sys.executable, "-c", TORCH_PADDING]
        if torch_padding
        else [sys.executable, "-m", "sleap_infer"]
    )
    cmd = [*head, "predict", str(data), "-o", str(out), "-q", "--overwrite", "--device", "cpu"]
    for m in models:
        cmd += ["--model", str(m)]
    return cmd + (["--frames", frames] if frames else []) + extra


def sleap_nn_cmd(
    exe: Path, models: list[Path], data: Path, out: Path, frames: str | None, extra: list[str]
) -> list[str]:
    cmd = [str(exe), "predict", "--data_path", str(data), "--output_path", str(out)]
    cmd += ["--device", "cpu"]
    for m in models:
        cmd += ["--model_paths", str(m)]
    return cmd + (["--frames", frames] if frames else []) + extra


def model_paths(specs: list[str]) -> list[Path]:
    out = []
    for spec in specs:
        kind, _, name = spec.partition(":")
        out.append(DEST / name if kind == "legacy" else FIXTURES / "models" / name)
    return out


def describe(label: str, result: dict[str, float], wall: float) -> str:
    return (
        f"  {label:<14} {result['instances']:6d} vs {result['other_instances']:6d} instances;"
        f" paired: Δ mean {result['mean_px']:.4f} px, max {result['max_px']:.3g} px,"
        f" {result['close_share']:.1%} within {CLOSE_PX} px  ({wall:.0f} s)"
    )


def sleap_1x_check(exe: Path | None, tmp: Path) -> dict[str, Any]:
    """Legacy bottom-up on minimal_instance.pkg.slp vs SLEAP 1.x's own labels_pr.val.slp."""
    folder = DEST / "minimal_instance.UNet.bottomup"
    truth = folder / "labels_pr.val.slp"
    data = FIXTURES / "videos" / "minimal_instance.pkg.slp"
    report: dict[str, Any] = {}
    print("\nSLEAP 1.x's own predictions (bottom-up, minimal_instance.pkg.slp):")
    runs = [("ours", tmp / "pr_ours.slp", None)]
    if exe is not None:
        runs.append(("sleap-nn", tmp / "pr_snn.slp", exe))
    for label, out, tool in runs:
        if tool is None:
            wall = run(ours_cmd([folder], data, out, None, False, []))
        else:
            wall = run(sleap_nn_cmd(tool, [folder], data, out, None, []))
        result = compare(out, truth)
        print(describe(label, result, wall))
        report[label] = result
    return report


def compare_case(
    case: str,
    exe: Path,
    frames: str | None,
    tmp: Path,
    extra_ours: list[str],
    extra_theirs: list[str],
) -> dict[str, Any]:
    specs, video_name = CASES[case]
    models, video = model_paths(specs), FIXTURES / "videos" / video_name
    theirs = tmp / f"{case}.sleap_nn.slp"
    wall_theirs = run(sleap_nn_cmd(exe, models, video, theirs, frames, extra_theirs))
    print(f"\n{case}: {video_name} ({frames or 'all frames'}), models {', '.join(specs)}")
    print(f"  sleap-nn predict {wall_theirs:.0f} s")
    report: dict[str, Any] = {"video": video_name, "frames": frames, "models": specs}
    variants = [("ours", False)]
    if any(s.startswith("legacy:") and s.endswith(TRANSPOSED) for s in specs):
        variants.append(("ours-torchpad", True))
    for label, torch_padding in variants:
        out = tmp / f"{case}.{label}.slp"
        wall = run(ours_cmd(models, video, out, frames, torch_padding, extra_ours))
        result = compare(out, theirs)
        print(describe(label, result, wall))
        report[label] = result
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mirror", type=Path, default=MIRROR)
    p.add_argument("--cases", default=DEFAULT_CASES, help=f"any of {', '.join(CASES)}")
    p.add_argument("--frames", default=None, help="e.g. 0-99 (default: the whole video)")
    p.add_argument("--peak-threshold", type=float, default=None, help="both tools")
    p.add_argument("--skip-sleap-nn", action="store_true")
    p.add_argument("--venv", type=Path, default=ROOT / ".bench-venv" / "sleap-nn")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    names = extract(args.mirror, DEST)
    print(f"{len(names)} SLEAP 1.x models in {DEST}")
    report: dict[str, Any] = {"activations": {}}
    print("\nmax |ours - TensorFlow| on the stored zero input (target <= 1e-4):")
    for name in names:
        gaps = activation_gaps(DEST / name)
        report["activations"][name] = gaps
        for key, (gap, scale) in gaps.items():
            shown = "dropped (offset head)" if np.isnan(gap) else f"{gap:.2e}"
            print(f"  {name:<42} {key:<30} {shown:<22} (outputs up to {scale:.3g})")
    exe = args.venv / "bin" / "sleap-nn"
    have_sleap_nn = not args.skip_sleap_nn and exe.exists()
    if not args.skip_sleap_nn and not exe.exists():
        print(f"\nno sleap-nn at {exe}: run benchmarks/vs_sleap_nn.py once to create it")
    if not (FIXTURES / "videos").is_dir():
        print(f"\nshared fixtures not found at {FIXTURES}: stopping after the activations")
    else:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            report["sleap_1x"] = sleap_1x_check(exe if have_sleap_nn else None, tmp)
            threshold = [] if args.peak_threshold is None else [str(args.peak_threshold)]
            extra_ours = ["--peak-threshold", *threshold] if threshold else []
            extra_theirs = ["--peak_threshold", *threshold] if threshold else []
            report["sleap_nn"] = {}
            for case in args.cases.split(",") if have_sleap_nn else []:
                report["sleap_nn"][case] = compare_case(
                    case, exe, args.frames, tmp, extra_ours, extra_theirs
                )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
