#!/usr/bin/env python
"""End-to-end ``infer predict`` vs sleap-nn's own ``sleap-nn predict``, same model, video, CPU.

Both tools run as subprocesses on the same machine in the same run, one
after the other, with the same batch size and device, so the ratio is fair
whatever the machine. sleap-nn goes into its own virtual environment
(created on first use; it is never a dependency of sleap_infer):

    .venv/bin/python benchmarks/vs_sleap_nn.py                  # the keypoint cases
    .venv/bin/python benchmarks/vs_sleap_nn.py --cases segmentation,semantic,tiled
    .venv/bin/python benchmarks/vs_sleap_nn.py --cases single --repeats 3
    .venv/bin/python benchmarks/vs_sleap_nn.py --ours torch --ours "onnx:--backend onnx"

Reported per case: wall time of each tool's whole command (start-up, model
load, decode, inference, writing), end-to-end FPS and their ratio; the
steady-state throughput of each (frames / (wall of the full run - wall of a
10-frame run), which removes start-up from both alike) and its ratio; the
pure PyAV decode time of the video as a floor; and how far our keypoints are
from sleap-nn's (instances matched per frame). Segmentation cases run on the
fixture's 24-frame synthetic video played ``--loops`` times (a longer input,
written once with PyAV), and report how many masks agree pixel for pixel.
Needs ../shared/fixtures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from longer_video import longer_video

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
SLEAP_NN = os.environ.get("SLEAP_NN_SPEC", "sleap-nn==0.3.5")
# sleap-nn needs torchvision; torchvision's wheels pin their torch. These two are a matching pair.
SLEAP_NN_TORCH = os.environ.get("SLEAP_NN_TORCH", "torch==2.14.1 torchvision==0.29.1")
PRIME_FRAMES = 10

CASES = {
    "single": (["minimal_instance_single_instance"], "small_robot.mp4"),
    "topdown": (
        ["minimal_instance_centroid", "minimal_instance_centered_instance"],
        "centered_pair_small.mp4",
    ),
    "bottomup": (["minimal_instance_bottomup"], "centered_pair_small.mp4"),
    "segmentation": (["synthetic_bottomup_segmentation"], "synthetic_multi.mp4"),
    "semantic": (["synthetic_semantic_segmentation"], "synthetic_multi.mp4"),
    "topdown_segmentation": (
        ["synthetic_centroid", "synthetic_centered_instance_segmentation"],
        "synthetic_multi.mp4",
    ),
    "tiled": (["synthetic_bottomup_segmentation_tiled"], "synthetic_multi.mp4"),
    "bbox_centernet": (["synthetic_bbox_centernet"], "synthetic_multi.mp4"),
    "bbox_ssd": (["synthetic_bbox_ssd"], "synthetic_multi.mp4"),
    "bbox_topdown_segmentation": (
        ["synthetic_bbox_centernet", "synthetic_centered_instance_segmentation"],
        "synthetic_multi.mp4",
    ),
}
MASK_CASES = {"segmentation", "semantic", "topdown_segmentation", "tiled"}
BOX_CASES = {"bbox_centernet", "bbox_ssd", "bbox_topdown_segmentation"}


@dataclass
class ToolRun:
    label: str
    walls: list[float] = field(default_factory=list)
    short_wall: float = 0.0  # a PRIME_FRAMES run: start-up + model load + a few frames
    instances: int = 0
    delta_px_mean: float | None = None
    delta_px_max: float | None = None

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    def fps(self, frames: int) -> float:
        return frames / self.wall

    def throughput(self, frames: int) -> float:
        steady = self.wall - self.short_wall
        return (frames - PRIME_FRAMES) / steady if steady > 0 else float("nan")


def sleap_nn_venv(path: Path) -> Path:
    """The venv's ``sleap-nn`` executable, installing it there first if needed."""
    exe = path / "bin" / "sleap-nn"
    if exe.exists():
        return exe
    print(f"installing {SLEAP_NN} into {path} (once)...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    pip = [str(path / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, *shlex.split(SLEAP_NN_TORCH)], check=True)
    subprocess.run([*pip, SLEAP_NN], check=True)
    return exe


def run_timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        tail = "\n".join((res.stdout + res.stderr).splitlines()[-15:])
        raise SystemExit(f"command failed ({res.returncode}): {shlex.join(cmd)}\n{tail}")
    return wall


def ours_cmd(
    models: list[Path],
    video: Path,
    out: Path,
    args: argparse.Namespace,
    extra: str,
    frames: str | None,
) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "sleap_infer",
        "predict",
        str(video),
        "-o",
        str(out),
        "-q",
        "--overwrite",
        "--device",
        "cpu",
        "--batch-size",
        str(args.batch_size),
    ]
    for m in models:
        cmd += ["--model", str(m)]
    if frames:
        cmd += ["--frames", frames]
    return cmd + shlex.split(extra)


def sleap_nn_cmd(
    exe: Path,
    models: list[Path],
    video: Path,
    out: Path,
    args: argparse.Namespace,
    frames: str | None,
) -> list[str]:
    cmd = [
        str(exe),
        "predict",
        "--data_path",
        str(video),
        "--output_path",
        str(out),
        "--device",
        "cpu",
        "--batch_size",
        str(args.batch_size),
    ]
    for m in models:
        cmd += ["--model_paths", str(m)]
    if frames:
        cmd += ["--frames", frames]
    return cmd


def decode_seconds(video: Path) -> tuple[float, int]:
    """Pure PyAV decode of every frame to RGB arrays: the floor for any predictor."""
    import av

    t0 = time.perf_counter()
    n = 0
    with av.open(str(video)) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        for frame in container.decode(stream):
            frame.to_ndarray(format="rgb24")
            n += 1
    return time.perf_counter() - t0, n


def compare_masks(ours: Path, theirs: Path) -> tuple[int, int, float, float]:
    """Mask counts of both files, the share of frames whose masks agree pixel for pixel
    (same count and order), and the worst mask IoU over frames with the same count."""
    import numpy as np
    import sleap_io as sio

    def by_frame(path: Path) -> dict[int, list[np.ndarray]]:
        labels = sio.load_slp(str(path))
        return {lf.frame_idx: [m.data for m in lf.masks] for lf in labels.labeled_frames}

    a, b = by_frame(ours), by_frame(theirs)
    frames = sorted(set(a) | set(b))
    same, worst = 0, 1.0
    for f in frames:
        ma, mb = a.get(f, []), b.get(f, [])
        if len(ma) != len(mb):
            worst = 0.0
            continue
        ious = [
            (x & y).sum() / max(1, (x | y).sum()) if x.shape == y.shape else 0.0
            for x, y in zip(ma, mb)
        ]
        worst = min([worst, *ious])
        same += all(v == 1.0 for v in ious)
    n_a = sum(len(v) for v in a.values())
    n_b = sum(len(v) for v in b.values())
    return n_a, n_b, same / max(1, len(frames)), worst


def compare_boxes(ours: Path, theirs: Path) -> tuple[int, int, float, float]:
    """Box counts of both files, the share of frames with the same box count, and the
    largest corner difference (px) over boxes paired in order."""
    import numpy as np
    import sleap_io as sio

    def by_frame(path: Path) -> dict[int, np.ndarray]:
        labels = sio.load_slp(str(path))
        return {
            lf.frame_idx: np.array([[b.x1, b.y1, b.x2, b.y2] for b in lf.bboxes]).reshape(-1, 4)
            for lf in labels.labeled_frames
        }

    a, b = by_frame(ours), by_frame(theirs)
    frames = sorted(set(a) | set(b))
    same, worst = 0, 0.0
    for f in frames:
        x, y = a.get(f, np.zeros((0, 4))), b.get(f, np.zeros((0, 4)))
        if len(x) != len(y):
            worst = float("inf")
            continue
        same += 1
        if len(x):
            worst = max(worst, float(np.abs(x - y).max()))
    n_a = sum(len(v) for v in a.values())
    n_b = sum(len(v) for v in b.values())
    return n_a, n_b, same / max(1, len(frames)), worst


def compare(ours: Path, theirs: Path) -> tuple[int, int, float, float]:
    """Instance counts of both files and the keypoint difference of matched instances."""
    import numpy as np
    import sleap_io as sio

    from sleap_infer.bench.measure import keypoint_delta
    from sleap_infer.vocab.predictions import BatchPredictions

    def by_frame(path: Path) -> dict[int, np.ndarray]:
        labels = sio.load_slp(str(path))
        return {
            lf.frame_idx: np.stack([i.numpy() for i in lf.instances])
            for lf in labels.labeled_frames
            if lf.instances
        }

    a, b = by_frame(ours), by_frame(theirs)
    n_a = sum(len(v) for v in a.values())
    n_b = sum(len(v) for v in b.values())
    dists: list[tuple[float, float, int]] = []
    for f in sorted(set(a) & set(b)):

        def one(p: np.ndarray) -> BatchPredictions:
            return BatchPredictions(
                points=p[None].astype(np.float32),
                point_scores=np.ones(p.shape[:2], np.float32)[None],
                instance_scores=np.ones((1, len(p)), np.float32),
                valid=np.ones((1, len(p)), bool),
            )

        mean, worst, n = keypoint_delta(one(a[f]), one(b[f]))
        if n:
            dists.append((mean * n, worst, n))
    total = sum(n for *_, n in dists)
    mean = sum(s for s, *_ in dists) / total if total else float("nan")
    worst = max((w for _, w, _ in dists), default=float("nan"))
    return n_a, n_b, mean, worst


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default="single,topdown,bottomup")
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--loops", type=int, default=20, help="segmentation cases: input replays")
    p.add_argument("--repeats", type=int, default=1, help="full runs per tool (median wall)")
    p.add_argument(
        "--ours",
        action="append",
        default=None,
        metavar="LABEL[:ARGS]",
        help="a variant of infer predict, e.g. 'onnx:--backend onnx' (repeatable)",
    )
    p.add_argument("--venv", type=Path, default=ROOT / ".bench-venv" / "sleap-nn")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    if not (FIXTURES / "models").is_dir():
        raise SystemExit(f"shared fixtures not found at {FIXTURES} (set SLEAP_INFER_FIXTURES)")
    variants = [v.partition(":")[::2] for v in (args.ours or ["torch"])]
    exe = sleap_nn_venv(args.venv)
    report: dict[str, object] = {
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "batch_size": args.batch_size,
        "sleap_nn": SLEAP_NN,
        "cases": {},
    }
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for case in args.cases.split(","):
            names, video_name = CASES[case]
            models = [FIXTURES / "models" / n for n in names]
            video = FIXTURES / "videos" / video_name
            if case in MASK_CASES | BOX_CASES:
                video = longer_video(video, args.loops, 1, tmp / f"{case}.mp4")
                video_name = f"{video_name} x{args.loops}"
            decode_s, n_frames = decode_seconds(video)
            short = f"0-{PRIME_FRAMES - 1}"
            theirs = ToolRun("sleap-nn")
            theirs_out = tmp / f"{case}.sleap_nn.slp"
            runs: list[tuple[ToolRun, list[str], list[str]]] = [
                (
                    theirs,
                    sleap_nn_cmd(exe, models, video, theirs_out, args, None),
                    sleap_nn_cmd(exe, models, video, tmp / "short.slp", args, short),
                )
            ]
            outs = {}
            for label, extra in variants:
                out = tmp / f"{case}.{label}.slp"
                outs[label] = out
                runs.append(
                    (
                        ToolRun(label),
                        ours_cmd(models, video, out, args, extra, None),
                        ours_cmd(models, video, tmp / "short.slp", args, extra, short),
                    )
                )
            for run, _, short_cmd in runs:  # primes caches (and exports) untimed, then timed
                run_timed(short_cmd)
                run.short_wall = run_timed(short_cmd)
            for _ in range(args.repeats):  # interleaved, so drift hits every tool alike
                for run, full_cmd, _ in runs:
                    run.walls.append(run_timed(full_cmd))
            print(f"\n{case}: {video_name}, {n_frames} frames, models {', '.join(names)}")
            print(f"  pure PyAV decode {decode_s:.2f} s ({n_frames / decode_s:.0f} FPS)")
            print(
                f"  sleap-nn     wall {theirs.wall:7.2f} s  {theirs.fps(n_frames):6.1f} FPS e2e"
                f"  {theirs.throughput(n_frames):6.1f} FPS steady"
            )
            rows = {}
            for run, *_ in runs[1:]:
                if case in BOX_CASES:
                    n_ours, n_theirs, mean, worst = compare_boxes(outs[run.label], theirs_out)
                    agree = f"{mean:.1%} of frames same count (max corner Δ {worst:.2e} px)"
                elif case in MASK_CASES:
                    n_ours, n_theirs, mean, worst = compare_masks(outs[run.label], theirs_out)
                    agree = f"{mean:.1%} of frames identical (worst IoU {worst:.4f})"
                else:
                    n_ours, n_theirs, mean, worst = compare(outs[run.label], theirs_out)
                    agree = f"Δ {mean:.4f} px (max {worst:.3f})"
                run.instances, theirs.instances = n_ours, n_theirs
                run.delta_px_mean, run.delta_px_max = mean, worst
                e2e = theirs.wall / run.wall
                steady = run.throughput(n_frames) / theirs.throughput(n_frames)
                print(
                    f"  ours/{run.label:<7} wall {run.wall:7.2f} s"
                    f"  {run.fps(n_frames):6.1f} FPS e2e"
                    f"  {run.throughput(n_frames):6.1f} FPS steady  -> {e2e:.2f}x e2e,"
                    f" {steady:.2f}x steady, {run.wall / decode_s:.1f}x decode time;"
                    f" found {n_ours} vs {n_theirs}, {agree}"
                )
                rows[run.label] = {**asdict(run), "e2e_ratio": e2e, "steady_ratio": steady}
            report["cases"][case] = {  # type: ignore[index]
                "video": video_name,
                "frames": n_frames,
                "decode_s": decode_s,
                "sleap_nn": asdict(theirs),
                "ours": rows,
            }
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
