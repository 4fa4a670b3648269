#!/usr/bin/env python
"""Identity-tracking accuracy on synthetic crossing animals: ours vs sleap-nn, same detections.

``examples/tracking_synthetic.py`` makes the ground truth and a detector's
output (noise, missed nodes and animals, false positives, lower scores under
occlusion). Every tracker then tracks the *same* detections file:

* ours, ``classic`` (defaults), ``bytetrack``, ``sort``, ``botsort`` and
  ``ocsort``, through
  :func:`sleap_infer.tracking.make_tracker` driven frame by frame, as the
  predictor drives it (only ``step`` is timed);
* sleap-nn 0.3.5's ``classic`` (its default), ``bytetrack``, ``sort``,
  ``botsort`` and ``ocsort`` (its "animal" presets), through its retrack-only
  mode (``sleap-nn predict -i detections.slp --tracking --tracker ...``) in its
  own virtual environment; its time is the tracking runtime it logs
  (calibration included, start-up and I/O not);
* without that environment, with ``--sleap-nn-src`` (an unpacked sleap-nn
  wheel, see ``mot_parity.py``): sleap-nn's MOT tracker classes, both as its CLI
  runs them (whole-video ``prepare`` first: score normalization and
  calibration) and online, as ours run (``track`` only).

Scored with py-motmetrics (MIT; a benchmark-only dependency: ``pip install
motmetrics``): a tracked detection matches a true animal when their centroids
are within ``--max-dist`` px; untracked detections are not hypotheses. Prints
a markdown table per seed and the mean over seeds:

    .venv/bin/python benchmarks/tracking_accuracy.py [--scene crossing --seeds 0 1 2 --frames 600]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import sleap_io as sio

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tracking_scenes.py"  # the crossing scene and others
SLEAP_NN = ROOT / ".bench-venv" / "sleap-nn" / "bin" / "sleap-nn"
METRICS = ("mota", "idf1", "num_switches")

# (label, our tracker or None, sleap-nn --tracker or None)
TRACKERS = (
    ("ours classic", "classic", None),
    ("sleap-nn classic", None, "classic"),
    ("ours bytetrack", "bytetrack", None),
    ("sleap-nn bytetrack", None, "bytetrack"),
    ("ours sort", "sort", None),
    ("sleap-nn sort", None, "sort"),
    ("ours botsort", "botsort", None),
    ("sleap-nn botsort", None, "botsort"),
    ("ours ocsort", "ocsort", None),
    ("sleap-nn ocsort", None, "ocsort"),
)

Tracked = list[tuple[np.ndarray, np.ndarray]]  # per frame: (track ids (I,), centroids (I, 2))


def load_example():
    """The synthetic-data example, imported by path (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location("tracking_scenes", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def centroids(points: np.ndarray) -> np.ndarray:
    """``(I, 2)`` mean of each instance's visible nodes."""
    if len(points) == 0:
        return np.zeros((0, 2))
    with np.errstate(invalid="ignore"):
        return np.nanmean(points, axis=1)


def run_ours(tracker_name: str, detections: Path) -> tuple[Tracked, float]:
    """Our tracker over the detections file, frame by frame; ``(tracked, ms per frame)``."""
    from sleap_infer.core.tracking import TrackingOptions
    from sleap_infer.tracking import Detections, make_tracker

    labels = sio.load_slp(str(detections))
    n_nodes = len(labels.skeletons[0].nodes)
    tracker = make_tracker(TrackingOptions(tracker=tracker_name), "poses", n_nodes)
    frames = sorted(labels.labeled_frames, key=lambda lf: lf.frame_idx)
    out: Tracked = []
    elapsed = 0.0
    for lf in frames:
        points = np.array([inst.numpy() for inst in lf.instances], dtype=np.float64)
        points = points.reshape(-1, n_nodes, 2)
        scores = np.array([inst.score for inst in lf.instances], dtype=np.float64)
        det = Detections(frame_idx=lf.frame_idx, points=points, scores=scores)
        start = time.perf_counter()
        assignment = tracker.step(det)
        elapsed += time.perf_counter() - start
        assert len(assignment.track_ids) == len(det), "a tracker dropped a detection"
        out.append((assignment.track_ids, centroids(points)))
    return out, 1e3 * elapsed / max(len(frames), 1)


def run_sleap_nn(tracker_name: str, detections: Path, workdir: Path) -> tuple[Tracked, float]:
    """sleap-nn's retrack-only mode on the detections file; ``(tracked, ms per frame)``."""
    output = workdir / f"sleap_nn_{tracker_name}.slp"
    cmd = [str(SLEAP_NN), "predict", "-i", str(detections), "--tracking"]
    cmd += ["--tracker", tracker_name, "-o", str(output)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    runtime = re.findall(r"Total runtime: ([0-9.]+) secs", proc.stdout + proc.stderr)
    labels = sio.load_slp(str(output))
    names = {track.name: i for i, track in enumerate(labels.tracks)}
    out: Tracked = []
    for lf in sorted(labels.labeled_frames, key=lambda lf: lf.frame_idx):
        ids = [names[inst.track.name] if inst.track is not None else -1 for inst in lf.instances]
        points = np.array([inst.numpy() for inst in lf.instances], dtype=np.float64)
        out.append((np.array(ids, dtype=np.int64), centroids(points.reshape(len(ids), -1, 2))))
    ms = 1e3 * float(runtime[-1]) / max(len(out), 1) if runtime else float("nan")
    return out, ms


def run_sleap_nn_classes(
    tracker_name: str, detections: Path, calibrated: bool
) -> tuple[Tracked, float]:
    """sleap-nn's own MOT tracker class on the detections, without its CLI (no torch).

    ``calibrated``: as its CLI runs it (``prepare`` over the whole video first,
    which normalizes scores and calibrates, then ``finalize``); else online, as
    ours runs (``track`` only). Needs sleap-nn's source on ``sys.path``
    (``--sleap-nn-src``).
    """
    from sleap_nn.tracking.mot import MOTParams, build_mot_tracker

    labels = sio.load_slp(str(detections))
    n_nodes = len(labels.skeletons[0].nodes)
    tracker = build_mot_tracker(MOTParams.for_tracker(tracker_name), "pose", n_nodes)
    frames = sorted(labels.labeled_frames, key=lambda lf: lf.frame_idx)
    objs = [(lf.frame_idx, list(lf.instances)) for lf in frames]
    start = time.perf_counter()
    if calibrated:
        tracker.prepare(objs)
    for frame_idx, instances in objs:
        tracker.track(instances, frame_idx)
    tracker.finalize()
    elapsed = time.perf_counter() - start
    out: Tracked = []
    for _, instances in objs:
        ids = [-1 if i.track is None else int(i.track.name[6:]) for i in instances]
        points = np.array([i.numpy() for i in instances], dtype=np.float64)
        out.append((np.array(ids, dtype=np.int64), centroids(points.reshape(len(ids), -1, 2))))
    return out, 1e3 * elapsed / max(len(frames), 1)


def score(truth: np.ndarray, tracked: Tracked, max_dist: float) -> dict[str, float]:
    """MOTA, IDF1 and ID switches of ``tracked`` against ``truth`` ``(F, A, N, 2)``."""
    import motmetrics as mm

    acc = mm.MOTAccumulator(auto_id=True)
    gt_ids = np.arange(truth.shape[1])
    for f, (ids, cents) in enumerate(tracked):
        keep = (ids >= 0) & np.isfinite(cents).all(axis=1)
        gt = truth[f].mean(axis=1)
        dist = mm.distances.norm2squared_matrix(gt, cents[keep], max_d2=max_dist**2)
        acc.update(gt_ids, ids[keep], dist)
    summary = mm.metrics.create().compute(acc, metrics=METRICS, name="run")
    values = {name: float(summary[name].iloc[0]) for name in METRICS}
    values["tracks"] = len({int(i) for ids, _ in tracked for i in ids if i >= 0})
    return values


def table(rows: list[tuple[str, dict[str, float]]]) -> str:
    lines = [
        "| tracker | MOTA | IDF1 | ID switches | tracks created | ms/frame |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, r in rows:
        lines.append(
            f"| {label} | {r['mota']:.3f} | {r['idf1']:.3f} | {r['num_switches']:.1f} "
            f"| {r['tracks']:.1f} | {r['ms']:.3f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--animals", type=int, help="default: the scene's own (4; crowded 10)")
    parser.add_argument("--scene", default="crossing", help="see examples/tracking_scenes.py")
    parser.add_argument("--max-dist", type=float, default=20.0, help="centroid match radius, px")
    parser.add_argument("--workdir", type=Path, help="keep the generated files here")
    parser.add_argument(
        "--sleap-nn-src",
        type=Path,
        help="an unpacked sleap-nn 0.3.5 wheel (see mot_parity.py): without its CLI, runs "
        "its MOT tracker classes instead, calibrated (as its CLI) and online (as ours)",
    )
    args = parser.parse_args()
    try:
        import motmetrics  # noqa: F401
    except ImportError:
        print("motmetrics is not installed: pip install motmetrics (benchmark only)")
        return 2
    if not SLEAP_NN.exists():
        print(f"note: {SLEAP_NN} not found, sleap-nn's trackers are skipped")
    example = load_example()
    workroot = args.workdir or Path(tempfile.mkdtemp(prefix="tracking_accuracy_"))
    trackers = list(TRACKERS)
    if args.sleap_nn_src is not None and not SLEAP_NN.exists():
        sys.path.insert(0, str(args.sleap_nn_src))
        import sleap_nn.tracking.mot  # noqa: F401  (its import adds a log handler)
        from loguru import logger

        logger.remove()
        for name in ("sort", "botsort", "ocsort", "bytetrack"):
            trackers.append((f"sleap-nn {name} (class, calibrated)", None, f"class:{name}"))
            trackers.append((f"sleap-nn {name} (class, online)", None, f"online:{name}"))
    results: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in trackers}
    for seed in args.seeds:
        workdir = workroot / f"seed{seed}"
        scene = example.simulate(args.scene, args.frames, args.animals, seed)
        files = example.syn.write(scene, workdir, video=False)
        rows = []
        for label, ours, theirs in trackers:
            if theirs is not None and ":" in theirs:
                kind, name = theirs.split(":")
                tracked, ms = run_sleap_nn_classes(name, files["detections"], kind == "class")
                row = {**score(scene.truth, tracked, args.max_dist), "ms": ms}
                results[label].append(row)
                rows.append((label, row))
                continue
            if theirs is not None and not SLEAP_NN.exists():
                continue
            if ours is not None:
                try:
                    tracked, ms = run_ours(ours, files["detections"])
                except ImportError as exc:  # a tracker not built yet
                    print(f"{label}: skipped ({exc})")
                    continue
            else:
                tracked, ms = run_sleap_nn(theirs, files["detections"], workdir)
            row = {**score(scene.truth, tracked, args.max_dist), "ms": ms}
            results[label].append(row)
            rows.append((label, row))
        animals = scene.truth.shape[1]
        print(
            f"\n{args.scene} seed {seed} ({args.frames} frames, {animals} animals):\n{table(rows)}"
        )
    mean = [
        (label, {key: float(np.mean([r[key] for r in runs])) for key in runs[0]})
        for label, runs in results.items()
        if runs
    ]
    print(f"\n{args.scene}, mean over seeds {args.seeds}:\n{table(mean)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
