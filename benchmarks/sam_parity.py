"""SAM masks: infer's ``--mask-backend sam`` against sleap-nn 0.3.5's, pixel for pixel.

Usage (from the repository root; takes minutes: ViT-B encodes a 1024 px image per frame)::

    PYTHONPATH=. .venv/bin/python benchmarks/sam_parity.py \\
        [--checkpoint vit_b.pth] [--frames 0-2] [--out /tmp/sam_parity]

Without ``--checkpoint`` a ViT-B with random weights is made (``torch.manual_seed(0)``,
``sam_model_registry["vit_b"]()``, ``torch.save(state_dict)``): random weights are
enough to compare two implementations of the same arithmetic. Both sides load that
file once and mask, for each prompt mode (pose, centroid, box, and pose with
--sam-disjointify-masks), ``minimal_instance.pkg.slp`` (1 frame, 2 instances) and
the first ``--frames`` of ``synthetic_multi.pkg.slp`` (2 instances a frame).
sleap-nn runs in its own venv (``.bench-venv/sleap-nn``, with ``segment-anything``
installed there) through ``run_sam_segmentation``, the function its
``predict --mask_backend`` calls; its overlay is not drawn (sleap-nn 0.3.5's
overlay fails on OpenCV 5 when a score is under the floor). Prints, per input and
mode, masks equal / total and the largest score difference; exits 1 on any
difference.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BENCH_PY = Path(os.environ.get("SLEAP_NN_PYTHON", ROOT / ".bench-venv/sleap-nn/bin/python"))
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT / "shared/fixtures"))
MODES = {
    "pose": ("pose", False),
    "centroid": ("centroid", False),
    "box": ("box", False),
    "pose+disjointify": ("pose", True),
}

SLEAP_NN = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, {bench!r})
    from sleap_nn_batch import torchvision_shim
    torchvision_shim()
    import torch
    torch.set_num_threads({threads})
    from sleap_nn.inference.sam import get_mask_backend, run_sam_segmentation
    backend = get_mask_backend("sam", sam_checkpoint={ckpt!r}, sam_model_type="vit_b",
                               device="cpu")
    for job in json.loads({jobs!r}):
        run_sam_segmentation(job["input"], "sam", prompt_mode=job["mode"], backend=backend,
                             disjointify_masks=job["disjointify"], frames=job["frames"],
                             output_path=job["theirs"])
        print("sleap-nn", job["theirs"], flush=True)
    """
)


def make_checkpoint(path: Path) -> None:
    import torch

    from sleap_infer.sam.models import sam_registry

    torch.manual_seed(0)
    torch.save(sam_registry()["vit_b"]().state_dict(), path)


def run_ours(checkpoint: Path, jobs: list[dict]) -> None:
    from sleap_infer.sam.models import Sam1, load_sam
    from sleap_infer.sam.run import SamOptions, segment

    model = Sam1(load_sam(checkpoint, "vit_b", "cpu"))
    for job in jobs:
        options = SamOptions(prompt_mode=job["mode"], disjointify=job["disjointify"])
        frames = None if job["frames"] is None else [(f, f) for f in job["frames"]]
        segment(Path(job["input"]), Path(job["ours"]), options, "cpu", frames, True, model)
        print("infer", job["ours"], flush=True)


def compare(ours: str, theirs: str) -> tuple[int, int, float]:
    """(masks equal, masks in either, largest |score difference|) of two outputs."""
    import sleap_io as sio

    a = {lf.frame_idx: lf for lf in sio.load_slp(ours).labeled_frames}
    b = {lf.frame_idx: lf for lf in sio.load_slp(theirs).labeled_frames}
    equal, total, dscore = 0, 0, 0.0
    for idx in sorted(set(a) | set(b)):
        ma = list(a[idx].masks) if idx in a else []
        mb = list(b[idx].masks) if idx in b else []
        total += max(len(ma), len(mb))
        for x, y in zip(ma, mb, strict=False):
            same = (
                x.data.shape == y.data.shape
                and np.array_equal(x.data, y.data)
                and tuple(x.scale) == tuple(y.scale)
                and tuple(x.offset) == tuple(y.offset)
            )
            equal += int(same)
            dscore = max(dscore, abs(float(x.score) - float(y.score)))
    return equal, total, dscore


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", type=Path)
    ap.add_argument("--frames", default="0-2", help="synthetic_multi frames (inclusive a-b)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/sam_parity"))
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    ckpt = args.checkpoint or args.out / "vit_b_random_seed0.pth"
    if not ckpt.exists():
        make_checkpoint(ckpt)
    lo, hi = (int(v) for v in args.frames.split("-"))
    inputs = {
        "minimal_instance": (FIXTURES / "videos/minimal_instance.pkg.slp", None),
        "synthetic_multi": (FIXTURES / "videos/synthetic_multi.pkg.slp", list(range(lo, hi + 1))),
    }
    jobs = []
    for name, (path, frames) in inputs.items():
        for label, (mode, disjoint) in MODES.items():
            stem = f"{name}.{label.replace('+', '_')}"
            jobs.append(
                {
                    "name": name,
                    "label": label,
                    "input": str(path),
                    "mode": mode,
                    "disjointify": disjoint,
                    "frames": frames,
                    "ours": str(args.out / f"{stem}.infer.slp"),
                    "theirs": str(args.out / f"{stem}.sleap_nn.slp"),
                }
            )
    script = SLEAP_NN.format(
        bench=str(ROOT / "benchmarks"), threads=args.threads, ckpt=str(ckpt), jobs=json.dumps(jobs)
    )
    subprocess.run([str(BENCH_PY), "-c", script], check=True)
    run_ours(ckpt, jobs)
    bad = 0
    print(f"{'input':18} {'mode':18} equal/total  max|dscore|")
    for job in jobs:
        equal, total, dscore = compare(job["ours"], job["theirs"])
        bad += int(equal != total)
        print(f"{job['name']:18} {job['label']:18} {equal:>5}/{total:<5}  {dscore:.2e}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
