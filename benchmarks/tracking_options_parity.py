#!/usr/bin/env python
"""``infer track`` vs sleap-nn retrack-only, with the cull, clean and connect options.

Both re-track the same synthetic detections (``examples/tracking_scenes.py``)
with the same option group; sleap-nn 0.3.5 runs from ``.bench-venv/sleap-nn``
(installed there once, as ``benchmarks/vs_sleap_nn.py`` does; needs the
network the first time). Every instance sleap-nn writes is looked up in our
output by frame and coordinates; printed per scene and group: instances
compared, with the same track, and those we keep that sleap-nn dropped (a
counted, deliberate difference: a culled or untracked pose stays in our file,
untracked). The pre-cull group is expected to differ where a frame holds more
poses than the target: sleap-nn's ``cull_frame_instances`` keeps the lowest
scores (see ``sleap_infer/tracking/cleanup.py``).

    .venv/bin/python benchmarks/tracking_options_parity.py [--scenes crossing stop-go
        --seeds 0 1 2 --frames 300]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import sleap_io as sio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def groups(animals: int) -> dict[str, list[str]]:
    """Option groups as sleap-nn spells them; ours are the same names with dashes."""
    a = str(animals)
    return {
        "pre-cull": ["--tracking_target_instance_count", a, "--tracking_pre_cull_to_target", "1"],
        "pre-cull+iou": [
            *("--tracking_target_instance_count", a, "--tracking_pre_cull_to_target", "1"),
            *("--tracking_pre_cull_iou_threshold", "0.5"),
        ],
        "clean": ["--tracking_clean_instance_count", a],
        "clean+iou": [
            "--tracking_clean_instance_count",
            a,
            "--tracking_clean_iou_threshold",
            "0.5",
        ],
        "connect": [
            *("--tracking_target_instance_count", a, "--post_connect_single_breaks"),
            *("--max_tracks", a),
        ],
    }


def _tracks(path: Path) -> dict[tuple[int, bytes], str | None]:
    out = {}
    for lf in sio.load_slp(str(path)):
        for inst in lf.instances:
            key = (lf.frame_idx, np.asarray(inst.numpy(), np.float32).tobytes())
            out[key] = inst.track.name if inst.track is not None else None
    return out


def compare(ours: Path, theirs: Path) -> tuple[int, int, int]:
    """(sleap-nn's instances, same track in ours, ours kept that sleap-nn dropped)."""
    a, b = _tracks(ours), _tracks(theirs)
    same = sum(1 for k, name in b.items() if a.get(k, "missing") == name)
    return len(b), same, len(set(a) - set(b))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", nargs="+", default=["crossing", "crowded", "stop-go"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--frames", type=int, default=300)
    args = parser.parse_args()
    vs = _load("vs_sleap_nn", HERE / "vs_sleap_nn.py")
    scenes = _load("tracking_scenes", ROOT / "examples" / "tracking_scenes.py")
    exe = vs.sleap_nn_venv(ROOT / ".bench-venv" / "sleap-nn")
    work = Path(tempfile.mkdtemp(prefix="tracking_options_parity_"))
    print("| scene | seed | group | sleap-nn instances | same track | kept, dropped by sleap-nn |")
    print("|---|---:|---|---:|---:|---:|")
    for name in args.scenes:
        for seed in args.seeds:
            scene = scenes.simulate(name, args.frames, None, seed)
            files = scenes.syn.write(scene, work / f"{name}{seed}", video=False)
            for group, flags in groups(scene.truth.shape[1]).items():
                theirs = work / f"{name}{seed}_{group}_sleap_nn.slp"
                ours = work / f"{name}{seed}_{group}_ours.slp"
                cmd = [str(exe), "predict", "-i", str(files["detections"]), "--tracking"]
                subprocess.run([*cmd, *flags, "-o", str(theirs)], check=True, capture_output=True)
                dashed = [f.replace("_", "-") if f.startswith("--") else f for f in flags]
                mine = [sys.executable, "-m", "sleap_infer", "track", str(files["detections"])]
                subprocess.run([*mine, *dashed, "-o", str(ours)], check=True, capture_output=True)
                total, same, extra = compare(ours, theirs)
                print(f"| {name} | {seed} | {group} | {total} | {same} | {extra} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
