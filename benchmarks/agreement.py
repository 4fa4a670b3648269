#!/usr/bin/env python
"""Whole-video keypoint agreement: ours (torch, onnx) vs sleap-nn's own predictor, every model type.

The parity tests feed sleap-nn's stored, preprocessed golden frames; this runs
both tools end to end over whole videos, as a user would, so it also covers
decoding, batching, crops and every rare frame the goldens miss:

    .venv/bin/python benchmarks/agreement.py                       # all six model types
    .venv/bin/python benchmarks/agreement.py --cases topdown --frames 0-99
    .venv/bin/python benchmarks/agreement.py --json agreement.json

For each case it runs ``sleap-nn predict`` (in ``.bench-venv/sleap-nn``, which
``vs_sleap_nn.py`` creates; its outputs are cached in the output folder and
reused while the command is unchanged), ``infer predict`` and ``infer predict
--backend onnx`` (exports go to a fresh cache, so a stale export of older code
is never used), all on CPU with the same batch size and thresholds. Instances
are matched per frame (Hungarian on mean keypoint distance over the nodes both
found) and the table reports, per pair of tools: instances of each, points
compared, mean and max distance, how many points differ by more than 0.01 px,
nodes found by one side only, identity disagreements, and how many points lie
outside the frame. It also checks that sleap-io (sleap-nn's reader) and our
reader decode every frame identically, which isolates decoding as a cause.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
OUT = ROOT / ".bench-venv" / "agreement"
BEYOND_PX = 0.01  # "points beyond": the threshold docs/parity.md quotes
NO_MATCH = 1e9


@dataclass(frozen=True)
class Case:
    """A model type's fixture models and video, and thresholds that leave something to compare."""

    models: list[str]
    video: str = "centered_pair_small.mp4"
    # The multi-class centered-instance fixture is barely trained: its peaks are < 0.1,
    # so at 0.2 both tools output nothing. It runs with every instance peak kept
    # (threshold 0) and the centroid stage at the usual threshold.
    peak_threshold: float | None = None  # None: --peak-threshold
    centroid_threshold: float | None = None

    @property
    def gray(self) -> bool:
        return self.video != "small_robot.mp4"


CASES: dict[str, Case] = {
    "single_instance": Case(["minimal_instance_single_instance"], "small_robot.mp4"),
    "centroid": Case(["minimal_instance_centroid"]),
    "topdown": Case(["minimal_instance_centroid", "minimal_instance_centered_instance"]),
    "multiclass_topdown": Case(
        ["minimal_instance_centroid", "minimal_instance_multiclass_centered_instance"],
        peak_threshold=0.0,
        centroid_threshold=0.2,
    ),
    "bottomup": Case(["minimal_instance_bottomup"]),
    "multiclass_bottomup": Case(["minimal_instance_multiclass_bottomup"]),
}
PAIRS = [
    ("torch", "sleap-nn"),
    ("onnx", "sleap-nn"),
    ("onnx", "torch"),
    ("torch-unguarded", "sleap-nn"),
    ("openvino", "sleap-nn"),
]
SAME_PX = 1e-4  # an instance "agrees" when every node both found lies this close


# ------------------------------------------------------------------ comparing
@dataclass
class Frame:
    """One frame's instances: ``points (n, nodes, 2)`` and each instance's track name."""

    points: np.ndarray
    tracks: list[str | None]


def load_frames(path: Path) -> dict[int, Frame]:
    """Frame index -> instances of a ``.slp`` (frames without instances are left out)."""
    import sleap_io as sio

    labels = sio.load_slp(str(path))
    out: dict[int, Frame] = {}
    for lf in labels.labeled_frames:
        if not lf.instances:
            continue
        pts = np.stack([inst.numpy() for inst in lf.instances]).astype(np.float64)
        names = [inst.track.name if inst.track is not None else None for inst in lf.instances]
        out[lf.frame_idx] = Frame(pts, names)
    return out


def match_instances(a: np.ndarray, b: np.ndarray) -> list[tuple[int, int]]:
    """Pairs ``(i, j)`` of ``a (n, N, 2)`` and ``b (m, N, 2)`` instances (Hungarian).

    The cost is the mean distance over nodes both found; pairs with no such
    node are not matched.
    """
    if not len(a) or not len(b):
        return []
    from scipy.optimize import linear_sum_assignment

    d = np.linalg.norm(a[:, None] - b[None], axis=-1)  # (n, m, N)
    both = ~np.isnan(d)
    count = both.sum(axis=-1)
    cost = np.where(count > 0, np.where(both, d, 0).sum(axis=-1) / np.maximum(count, 1), NO_MATCH)
    rows, cols = linear_sum_assignment(cost)
    return [(int(i), int(j)) for i, j in zip(rows, cols, strict=True) if cost[i, j] < NO_MATCH]


@dataclass
class Agreement:
    """How far two tools' predictions of the same frames are apart."""

    label: str
    instances_a: int = 0
    instances_b: int = 0
    matched: int = 0
    # Instances of either side without a partner (frames one side left empty included):
    # every one is a difference, never set aside.
    unmatched: int = 0
    same: int = 0  # matched instances with the same nodes, each within SAME_PX
    points: int = 0  # nodes found by both, in matched instances
    mean_px: float = float("nan")
    max_px: float = float("nan")
    beyond: int = 0  # points farther apart than BEYOND_PX
    beyond_1px: int = 0
    beyond_patch: int = 0  # farther apart than a refinement patch's half-width (2 map px)
    one_sided: int = 0  # nodes found by one side only, in matched instances
    id_mismatch: int = 0  # matched instances with different track names
    outside_a: int = 0  # points outside the frame
    outside_b: int = 0
    worst: list[dict[str, object]] = field(default_factory=list)  # largest differences


def common_nodes(a: Frame, b: Frame) -> tuple[Frame, Frame]:
    """Both frames cut to their common leading nodes.

    sleap-nn 0.3.5 writes a centroid model's output with a one-node "centroid"
    skeleton; ours puts it on the anchor node (node 0 here) of the model's skeleton.
    """
    n = min(a.points.shape[1], b.points.shape[1])
    return Frame(a.points[:, :n], a.tracks), Frame(b.points[:, :n], b.tracks)


def _outside(frames: dict[int, Frame], height: int, width: int) -> int:
    """Points outside the ``[0, width] x [0, height]`` frame."""
    n = 0
    for fr in frames.values():
        x, y = fr.points[..., 0], fr.points[..., 1]
        n += int(((x < 0) | (y < 0) | (x > width) | (y > height)).sum())
    return n


def compare(
    label: str,
    a: dict[int, Frame],
    b: dict[int, Frame],
    size: tuple[int, int],
    reach: float = float("inf"),
    top: int = 8,
) -> Agreement:
    """Match ``a``'s and ``b``'s instances frame by frame and summarise the distances.

    ``size`` is the frame's ``(height, width)``; ``reach`` the half-width of an
    integral refinement patch in frame px: two refinements of the same peak
    that stay inside their patch are never farther apart than twice that, one
    that stays and one that leaves are farther apart than ``reach``.
    """
    res = Agreement(label)
    res.instances_a = sum(len(f.points) for f in a.values())
    res.instances_b = sum(len(f.points) for f in b.values())
    res.outside_a, res.outside_b = _outside(a, *size), _outside(b, *size)
    dists: list[np.ndarray] = []
    worst: list[tuple[float, int, int, int]] = []
    for idx in sorted(set(a) & set(b)):
        fa, fb = common_nodes(a[idx], b[idx])
        for i, j in match_instances(fa.points, fb.points):
            res.matched += 1
            d = np.linalg.norm(fa.points[i] - fb.points[j], axis=-1)
            res.one_sided += int(
                np.isnan(fa.points[i, :, 0]).__xor__(np.isnan(fb.points[j, :, 0])).sum()
            )
            res.id_mismatch += fa.tracks[i] != fb.tracks[j]
            found = d[~np.isnan(d)]
            one_side = np.isnan(fa.points[i, :, 0]) ^ np.isnan(fb.points[j, :, 0])
            res.same += bool(not one_side.any() and (found <= SAME_PX).all())
            dists.append(found)
            worst += [(float(d[n]), int(idx), i, int(n)) for n in np.flatnonzero(d > BEYOND_PX)]
    res.unmatched = res.instances_a + res.instances_b - 2 * res.matched
    flat = np.concatenate(dists) if dists else np.empty(0)
    res.points = int(flat.size)
    if flat.size:
        res.mean_px, res.max_px = float(flat.mean()), float(flat.max())
        res.beyond = int((flat > BEYOND_PX).sum())
        res.beyond_1px = int((flat > 1.0).sum())
        res.beyond_patch = int((flat > reach).sum())
    worst.sort(reverse=True)
    res.worst = [{"px": w, "frame": f, "instance": i, "node": n} for w, f, i, n in worst[:top]]
    return res


# -------------------------------------------------------------------- running
def _run(cmd: list[str], env: dict[str, str] | None = None) -> str:
    """Run ``cmd``; its stderr, or exit with the tail of its output on failure."""
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        tail = "\n".join((res.stdout + res.stderr).splitlines()[-20:])
        raise SystemExit(f"command failed ({res.returncode}): {shlex.join(cmd)}\n{tail}")
    return res.stderr


def fallback_count(stderr: str, counter: str = "refinement fallbacks") -> int | None:
    """A counter COUNTING_SNIPPET printed (``counter: n``), None if it printed none."""
    for line in stderr.splitlines():
        if line.startswith(f"{counter}:"):
            return int(line.split(":")[1])
    return None


def thresholds(case: Case, args: argparse.Namespace) -> tuple[float, float | None]:
    """The case's ``(peak, centroid)`` thresholds, passed alike to both tools."""
    peak = args.peak_threshold if case.peak_threshold is None else case.peak_threshold
    return peak, case.centroid_threshold


def sleap_nn_cmd(exe: Path, case: Case, out: Path, args: argparse.Namespace) -> list[str]:
    peak, centroid = thresholds(case, args)
    cmd = [str(exe), "predict", "--data_path", str(FIXTURES / "videos" / case.video)]
    cmd += ["--output_path", str(out), "--device", "cpu", "--batch_size", str(args.batch_size)]
    cmd += ["--peak_threshold", str(peak)]
    cmd += ["--centroid_peak_threshold", str(centroid)] if centroid is not None else []
    line = getattr(args, "min_line_scores", None)  # realistic_parity.py: weak PAFs
    cmd += ["--min_line_scores", str(line)] if line is not None else []
    for m in case.models:
        cmd += ["--model_paths", str(FIXTURES / "models" / m)]
    return cmd + (["--frames", args.frames] if args.frames else [])


# Runs `infer predict` with counters, printed to stderr at exit: on integral refinement, how
# many peaks at or above the threshold keep their integer position because their patch mean
# fell outside the patch (where sleap-nn writes the wild value instead); and flat tops, how
# many map pixels at or above the threshold equal their 3x3 neighbourhood's maximum with at
# least one neighbour just as high (a saturated plateau). Packages from before the guard
# argument (issue 50's "before" run) are counted too.
COUNTING_SNIPPET = """
import atexit, inspect, sys
import torch
import sleap_infer.layers.base as base
import sleap_infer.ops.peaks as peaks
threshold = float(sys.argv.pop(1))
count = [0, 0]
plain = peaks.integral_offsets
takes_guard = "guard" in inspect.signature(plain).parameters
def counting(patches, guard=True):
    if guard:
        k = patches.shape[-1]
        strong = patches[..., k // 2, k // 2] >= threshold
        count[0] += int((peaks.refinement_fallbacks(patches) & strong).sum())
    return plain(patches, guard) if takes_guard else plain(patches)
peaks.integral_offsets = counting
def flat_tops(maps):
    m = maps.detach().float().reshape(-1, 1, *maps.shape[-2:])
    top = torch.nn.functional.max_pool2d(m, 3, 1, 1)
    ties = torch.nn.functional.conv2d((m == top).float(), torch.ones(1, 1, 3, 3), padding=1)
    return int(((m == top) & (m >= threshold) & (ties > 1)).sum())
def counted(find):
    def wrapper(maps, *a, **k):
        count[1] += flat_tops(maps)
        return find(maps, *a, **k)
    return wrapper
base.find_local_peaks = counted(base.find_local_peaks)
base.find_global_peaks = counted(base.find_global_peaks)
atexit.register(lambda: print(f"refinement fallbacks: {count[0]}", file=sys.stderr))
atexit.register(lambda: print(f"flat tops: {count[1]}", file=sys.stderr))
from sleap_infer.cli import main
sys.argv[0] = "infer"
main()
"""


def ours_cmd(case: Case, out: Path, args: argparse.Namespace, backend: str) -> list[str]:
    peak, centroid = thresholds(case, args)
    if backend == "torch":  # in-graph refinement cannot be counted from the host
        cmd = [sys.executable, "-c", COUNTING_SNIPPET, str(peak)]
    else:
        cmd = [sys.executable, "-m", "sleap_infer"]
    cmd += ["predict", str(FIXTURES / "videos" / case.video), "-o", str(out), "-q"]
    cmd += ["--overwrite", "--device", "cpu", "--batch-size", str(args.batch_size)]
    if backend == "torch-unguarded":  # sleap-nn's refinement as it is: no guard
        cmd += ["--backend", "torch", "--refine-like-sleap-nn", "--peak-threshold", str(peak)]
    else:
        cmd += ["--backend", backend, "--peak-threshold", str(peak)]
    cmd += ["--centroid-peak-threshold", str(centroid)] if centroid is not None else []
    line = getattr(args, "min_line_scores", None)
    cmd += ["--min-line-scores", str(line)] if line is not None else []
    for m in case.models:
        cmd += ["--model", str(FIXTURES / "models" / m)]
    return cmd + (["--frames", args.frames] if args.frames else [])


def cached_run(cmd: list[str], out: Path, rerun: bool) -> Path:
    """Run ``cmd`` unless ``out`` was written by the very same command (sleap-nn is slow)."""
    stamp = out.with_suffix(".cmd.json")
    if not rerun and out.exists() and stamp.exists() and json.loads(stamp.read_text()) == cmd:
        print(f"  reusing {out.name}", flush=True)
        return out
    out.unlink(missing_ok=True)
    _run(cmd)
    stamp.write_text(json.dumps(cmd))
    return out


DECODE_SNIPPET = """
import hashlib, sys, sleap_io as sio
v = sio.load_video(sys.argv[1], grayscale=sys.argv[2] == "1")
frames = [int(i) for i in sys.argv[3].split(",")] if sys.argv[3] else range(v.shape[0])
for i in frames:
    print(i, hashlib.md5(v[i].tobytes()).hexdigest())
"""


def decode_check(python: Path, video: Path, gray: bool, frames: list[int] | None) -> dict[str, int]:
    """Frames that sleap-io (sleap-nn's reader) and our reader decode to the same bytes."""
    from sleap_infer.sources.video import VideoReader

    wanted = ",".join(map(str, frames)) if frames else ""
    res = subprocess.run(
        [str(python), "-c", DECODE_SNIPPET, str(video), "1" if gray else "0", wanted],
        capture_output=True,
        text=True,
        check=True,
    )
    theirs = dict(line.split() for line in res.stdout.splitlines())
    reader = VideoReader(video)
    same = differ = 0
    for index, img in reader.iter_frames(frames, channels=1 if gray else 3):
        digest = hashlib.md5(np.ascontiguousarray(img).tobytes()).hexdigest()
        if theirs.get(str(index)) == digest:
            same += 1
        else:
            differ += 1
    return {"identical": same, "different": differ, "sleap_io_frames": len(theirs)}


def parse_frames(spec: str | None, n_frames: int) -> list[int] | None:
    from sleap_infer.sources.frames import parse_frames as parse

    return parse(spec, n_frames)


def patch_reach(case: Case, patch_size: int = 5) -> float:
    """Half-width of a refinement patch in frame px, for the model that finds the keypoints."""
    from sleap_infer.model.loader import load_model

    config = load_model(FIXTURES / "models" / case.models[-1]).config
    return patch_size // 2 * config.confmap_head.output_stride / config.preprocessing.scale


def video_frames(video: Path) -> int:
    from sleap_infer.sources.video import VideoReader

    return VideoReader(video).info.n_frames


def video_size(video: Path) -> tuple[int, int]:
    from sleap_infer.sources.video import VideoReader

    info = VideoReader(video).info
    return info.height, info.width


def run_case(
    name: str, exe: Path, args: argparse.Namespace, env: dict[str, str]
) -> dict[str, object]:
    """Both tools over one case's video; the agreement of each pair."""
    case = CASES[name]
    tag = f".{args.frames.replace(',', '_')}" if args.frames else ""
    out = {"sleap-nn": args.out / f"{name}{tag}.sleap_nn.slp"}
    # Ours may go elsewhere (realistic_parity.py's --label: another package's run beside
    # this one's), sleap-nn's cached output is shared.
    ours_dir: Path = getattr(args, "ours_out", None) or args.out
    ours_dir.mkdir(parents=True, exist_ok=True)
    if not args.compare_only:
        print(f"{name}: sleap-nn ...", flush=True)
        cached_run(sleap_nn_cmd(exe, case, out["sleap-nn"], args), out["sleap-nn"], args.rerun)
    for backend in args.backends:
        out[backend] = ours_dir / f"{name}{tag}.{backend}.slp"
        if not args.compare_only:
            print(f"{name}: ours/{backend} ...", flush=True)
            stderr = _run(ours_cmd(case, out[backend], args, backend), env=env)
            if backend == "torch":
                counted = out[backend].with_suffix(".fallbacks.json")
                counted.write_text(json.dumps(fallback_count(stderr)))
                tops = out[backend].with_suffix(".flat_tops.json")
                tops.write_text(json.dumps(fallback_count(stderr, "flat tops")))
    counted = ours_dir / f"{name}{tag}.torch.fallbacks.json"
    fallbacks = json.loads(counted.read_text()) if counted.exists() else None
    tops = ours_dir / f"{name}{tag}.torch.flat_tops.json"
    flat = json.loads(tops.read_text()) if tops.exists() else None
    frames = {tool: load_frames(path) for tool, path in out.items() if path.exists()}
    size = video_size(FIXTURES / "videos" / case.video)
    rows = [
        compare(f"{a} vs {b}", frames[a], frames[b], size, patch_reach(case))
        for a, b in PAIRS
        if a in frames and b in frames
    ]
    return {
        "video": case.video,
        "models": case.models,
        "thresholds": thresholds(case, args),
        "refinement_fallbacks": fallbacks,
        "flat_tops": flat,
        "rows": [asdict(r) for r in rows],
    }


def print_table(report: dict[str, dict[str, object]]) -> None:
    head = (
        f"{'case':<20} {'pair':<26} {'inst A':>6} {'inst B':>6} {'unmat':>5} {'same':>5}"
        f" {'points':>7} {'mean px':>9}"
        f" {'max px':>8} {'>0.01':>6} {'>1px':>5} {'>patch':>6} {'1-side':>6} {'id!=':>4}"
        f" {'out A':>5} {'out B':>5}"
    )
    print("\n" + head + "\n" + "-" * len(head))
    for case, res in report.items():
        for r in res["rows"]:  # type: ignore[union-attr]
            print(
                f"{case:<20} {r['label']:<26} {r['instances_a']:>6} {r['instances_b']:>6}"
                f" {r['unmatched']:>5} {r['same']:>5} {r['points']:>7}"
                f" {r['mean_px']:>9.2e} {r['max_px']:>8.3g} {r['beyond']:>6}"
                f" {r['beyond_1px']:>5} {r['beyond_patch']:>6} {r['one_sided']:>6}"
                f" {r['id_mismatch']:>4}"
                f" {r['outside_a']:>5} {r['outside_b']:>5}"
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=",".join(CASES), help=f"comma list of {', '.join(CASES)}")
    p.add_argument("--frames", default=None, help="e.g. 0-99 for a quick run (default: all)")
    p.add_argument(
        "--backends",
        default="torch,onnx",
        help="ours: torch, onnx, and torch-unguarded (sleap-nn's refinement without our guard)",
    )
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--peak-threshold", type=float, default=0.2)
    p.add_argument("--out", type=Path, default=OUT, help="outputs (sleap-nn's are reused)")
    p.add_argument("--rerun", action="store_true", help="rerun sleap-nn even if cached")
    p.add_argument(
        "--compare-only", action="store_true", help="only compare the outputs of an earlier run"
    )
    p.add_argument("--no-decode-check", action="store_true")
    p.add_argument("--venv", type=Path, default=ROOT / ".bench-venv" / "sleap-nn")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    args.backends = args.backends.split(",")
    if not (FIXTURES / "models").is_dir():
        raise SystemExit(f"shared fixtures not found at {FIXTURES} (set SLEAP_INFER_FIXTURES)")
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).parent))
    from vs_sleap_nn import sleap_nn_venv

    exe = sleap_nn_venv(args.venv)
    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "SLEAP_INFER_CACHE": cache}
        for case in args.cases.split(","):
            report[case] = run_case(case, exe, args, env)
    decode: dict[str, object] = {}
    if not args.no_decode_check:
        for name, gray in {CASES[c].video: CASES[c].gray for c in report}.items():
            video = FIXTURES / "videos" / name
            frames = parse_frames(args.frames, video_frames(video))
            decode[name] = decode_check(args.venv / "bin" / "python", video, gray, frames)
    print_table(report)
    for case, res in report.items():
        print(
            f"{case}: peaks kept at their integer position (patch mean outside the patch):"
            f" {res['refinement_fallbacks']}"
        )
    for name, res in decode.items():
        print(f"decoding {name}: {res}")
    if args.json:
        args.json.write_text(json.dumps({"cases": report, "decode": decode}, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
