#!/usr/bin/env python
"""What tracking costs: time per frame next to a bottom-up prediction's, and offline-step memory.

1. **Time.** Each of our trackers (every name in
   :data:`sleap_infer.tracking.registry.NAMES`, picked up at run time; the
   appearance ones get re-ID vectors) tracks ``examples/tracking_synthetic.py``
   detections of 2, 10 and 30 animals frame by frame, as the predictor drives
   it (only ``step`` is timed). The "%" columns set that against prediction
   time per frame of a bottom-up run: (a) on a 2-CPU machine, our measured
   57 ms/frame (``docs/benchmarks.md``: ``infer predict``, torch, the fixture
   bottom-up model ``minimal_instance_bottomup`` on 300 frames of
   ``centered_pair_small.mp4``, 17.1 s end to end; ``--predict-ms`` to change);
   ``--measure-predict`` times it here instead (``infer predict --progress
   none``, two lengths so start-up cancels, CPU time of all threads: on a
   crowded machine torch's spinning threads inflate it); (b) on an H200, 1.06
   ms/frame (``docs/gpu.md``: same model, fp32, batch 8). The tracker's time
   is its CPU time (one thread), which a busy shared machine does not inflate
   as it does wall time (shown too). The prediction time is the same for every
   animal count: the network's cost per frame does not depend on it, only the
   grouping's (small), so the % at 10 and 30 animals are upper bounds.
2. **Memory.** Peak Python heap (``tracemalloc``) of the steps that see the
   whole video: post-clean and single-break joining
   (:class:`sleap_infer.tracking.cleanup.CleanedTracker`, around an oracle
   tracker that hands out the true ids with a one-frame break now and then and
   a stray detection over the count), and identity linking
   (:mod:`sleap_infer.tracking.linking.link`, where present), on a long synthetic
   video (``--long-frames`` x ``--long-animals``) made frame by frame so that
   the input itself is never held; per detection = peak / detections.

    .venv/bin/python benchmarks/tracking_cost.py [--frames 300 --long-frames 100000]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
MODEL = FIXTURES / "models" / "minimal_instance_bottomup"
VIDEO = FIXTURES / "videos" / "centered_pair_small.mp4"
GPU_MS = 1.06  # docs/gpu.md: bottomup fp32 batch 8 on an H200, ms/frame
CPU_MS = 57.0  # docs/benchmarks.md: ours torch bottom-up, 300 frames in 17.1 s (2 CPUs)
ANIMALS = (2, 10, 30)


def load_scenes():
    """``examples/tracking_scenes.py`` (and through it ``tracking_synthetic``), by path."""
    path = ROOT / "examples" / "tracking_scenes.py"
    spec = importlib.util.spec_from_file_location("tracking_scenes", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def tracker_rows() -> list[tuple[str, dict[str, Any]]]:
    """``(label, TrackingOptions fields)``: every tracker we have, then option variants."""
    from sleap_infer.tracking.registry import NAMES as TRACKERS

    rows = [(name, {"tracker": name}) for name in TRACKERS]
    rows.append(("classic + use_kalman", {"tracker": "classic", "use_kalman": True}))
    return rows


def time_tracker(
    fields: dict[str, Any], scene: Any, vectors: list[np.ndarray]
) -> tuple[float, float]:
    """``(CPU, wall)`` ms per frame of ``step`` over the scene (raises where it cannot run)."""
    from sleap_infer.tracking import Detections, make_tracker
    from sleap_infer.tracking.options import TrackingOptions
    from sleap_infer.tracking.registry import appearance_names

    animals = scene.truth.shape[1]
    known = {f.name for f in dataclasses.fields(TrackingOptions)}
    missing = sorted(set(fields) - known)
    if missing:
        raise LookupError(f"no TrackingOptions.{missing[0]} yet")
    if "use_kalman" in fields:
        fields = {**fields, "tracking_target_instance_count": animals}
    options = TrackingOptions(**fields)
    reid = options.tracker in appearance_names()
    n_nodes = scene.truth.shape[2]
    tracker = make_tracker(options, "poses", n_nodes, **({"has_embeddings": True} if reid else {}))
    cpu = wall = 0.0
    for f, points in enumerate(scene.det_points):
        det = Detections(
            frame_idx=f,
            points=points,
            scores=scene.det_scores[f],
            embeddings=vectors[f].astype(np.float64) if reid else None,
        )
        start, start_cpu = time.perf_counter(), time.process_time()
        tracker.step(det)
        cpu += time.process_time() - start_cpu
        wall += time.perf_counter() - start
    n = len(scene.det_points)
    return 1e3 * cpu / n, 1e3 * wall / n


def predict_ms(frames: tuple[int, int], work: Path) -> tuple[float, float] | None:
    """Steady ``(CPU, wall)`` ms/frame of ``infer predict`` (fixture bottom-up, CPU device).

    Two runs of different lengths; the difference cancels start-up. CPU time is the
    child's user + system time (all its threads), from ``getrusage``.
    """
    if not (MODEL.is_dir() and VIDEO.is_file()):
        return None
    times, cpus = [], []
    for n in frames:
        out = work / f"predict_{n}.slp"
        out.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "sleap_infer", "predict", str(VIDEO), "-m", str(MODEL)]
        cmd += ["--frames", f"0-{n - 1}", "-o", str(out), "--progress", "none", "-d", "cpu"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    span = frames[1] - frames[0]
    return 1e3 * (cpus[1] - cpus[0]) / span, 1e3 * (times[1] - times[0]) / span


def long_video(n_frames: int, n_animals: int, seed: int = 0):
    """Frame by frame ``(points (I, 5, 2), scores (I,), true ids (I,))`` of a long video.

    Animals on slow sinusoids; every 97th frame one animal gets a fresh id for that
    frame only (a single break to join), every 89th frame a stray detection (one over
    the count, for the post-clean). Nothing is kept between frames.
    """
    rng = np.random.default_rng(seed)
    omega = rng.uniform(0.005, 0.02, (n_animals, 2))
    phase = rng.uniform(0, 2 * np.pi, (n_animals, 2))
    body = np.array([16.0, 8.0, 0.0, -10.0, -20.0])
    next_id = n_animals
    for f in range(n_frames):
        centre = 500 + 400 * np.sin(omega * f + phase)  # (A, 2)
        points = centre[:, None, :] + body[None, :, None] * np.array([1.0, 0.0])
        points = points + rng.normal(0, 1.0, points.shape)
        scores = rng.uniform(0.7, 1.0, n_animals)
        ids = np.arange(n_animals)
        if f % 97 == 0 and f:
            ids[rng.integers(n_animals)] = next_id
            next_id += 1
        if f % 89 == 0:
            stray = rng.uniform(0, 1000, (1, 1, 2)) + body[None, :, None] * np.array([0.0, 1.0])
            points = np.concatenate([points, stray])
            scores = np.append(scores, 0.3)
            ids = np.append(ids, next_id)
            next_id += 1
        yield f, points, scores, ids


class OracleTracker:
    """Hands out the ids it is given (:func:`long_video`'s); the cleanup steps under test
    wrap it, so their memory is measured without a real tracker's."""

    needs_images = False

    def __init__(self) -> None:
        self.next_ids: np.ndarray = np.zeros(0, np.int64)
        self.n_tracks = 0

    def step(self, detections: Any) -> Any:
        from sleap_infer.tracking import Assignment

        ids = self.next_ids[: len(detections)]
        self.n_tracks = max(self.n_tracks, int(ids.max(initial=-1)) + 1)
        return Assignment(track_ids=ids, scores=np.ones(len(ids), np.float32))

    def state(self) -> Any:
        from sleap_infer.tracking.base import TrackerState

        return TrackerState()

    def load_state(self, state: Any) -> None:
        pass


def cleanup_memory(n_frames: int, n_animals: int) -> tuple[int, int, float]:
    """``(peak bytes, detections, seconds)`` of post-clean + break joining over the video."""
    from sleap_infer.tracking import Detections
    from sleap_infer.tracking.cleanup import CleanedTracker
    from sleap_infer.tracking.options import TrackingOptions

    options = TrackingOptions(
        tracking_target_instance_count=n_animals,
        tracking_clean_instance_count=n_animals,
        post_connect_single_breaks=True,
    )
    for warm in (True, False):  # the first pass imports what the steps import lazily
        oracle = OracleTracker()
        tracker = CleanedTracker(oracle, options, untracked_take_part=False)
        if warm:
            for f, points, scores, ids in long_video(200, n_animals):
                oracle.next_ids = ids
                tracker.step(Detections(frame_idx=f, points=points, scores=scores))
    detections = 0
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    for f, points, scores, ids in long_video(n_frames, n_animals):
        oracle.next_ids = ids
        tracker.step(Detections(frame_idx=f, points=points, scores=scores))
        detections += len(ids)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak, detections, seconds


def linking_memory(n_frames: int, n_animals: int) -> tuple[int, int, float]:
    """``(peak bytes, detections, seconds)`` of collecting and linking the tracked video."""
    from sleap_infer.tracking.linking.inputs import LinkInput
    from sleap_infer.tracking.linking.link import link_tracks

    warm = LinkInput()  # imports what linking imports lazily, before measuring
    for f, points, scores, ids in long_video(200, n_animals):
        warm.add_frame(f, points, None, scores, ids)
    link_tracks(warm, max_tracks=n_animals)
    detections = 0
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    start = time.perf_counter()
    inp = LinkInput()
    for f, points, scores, ids in long_video(n_frames, n_animals):
        inp.add_frame(f, points, None, scores, ids)
        detections += len(ids)
    link_tracks(inp, max_tracks=n_animals)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak, detections, seconds


def time_table(frames: int, predict: float) -> str:
    scenes = load_scenes()
    cpu_label = f"{predict:.1f} ms"
    lines = [
        "| tracker | animals | tracking CPU ms/frame | wall ms/frame "
        f"| % of CPU predict ({cpu_label}) | % of H200 predict ({GPU_MS} ms) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for animals in ANIMALS:
        scene = scenes.syn.simulate(frames, animals, 0)
        vectors = scenes.reid_vectors(scene, 0)
        for label, fields in tracker_rows():
            try:
                ms, wall = time_tracker(fields, scene, vectors)
            except Exception as exc:  # a tracker not built (or refused) here: n/a
                reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:120].replace("|", "/")
                lines.append(f"| {label} | {animals} | n/a: {reason} | | | |")
                continue
            cpu = f"{100 * ms / predict:.1f}%"
            lines.append(
                f"| {label} | {animals} | {ms:.3f} | {wall:.3f} | {cpu} "
                f"| {100 * ms / GPU_MS:.0f}% |"
            )
            print(lines[-1], flush=True)
    return "\n".join(lines)


def memory_table(steps: dict[str, list[int]], n_animals: int) -> str:
    lines = [
        f"| step ({n_animals} animals) | frames | detections | peak heap "
        "| bytes / detection | wall s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    measures = {"clean": cleanup_memory, "link": linking_memory}
    labels = {
        "clean": "post-clean + connect single breaks",
        "link": "link_tracklets (collect + link)",
    }
    for key, frame_counts in steps.items():
        for n_frames in frame_counts:
            try:
                peak, detections, seconds = measures[key](n_frames, n_animals)
            except ImportError as exc:
                lines.append(f"| {labels[key]} | {n_frames} | n/a: {exc} | | | |")
                break
            lines.append(
                f"| {labels[key]} | {n_frames} | {detections} | {peak / 2**20:.2f} MiB "
                f"| {peak / detections:.1f} | {seconds:.1f} |"
            )
            print(lines[-1], flush=True)
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300, help="frames per timing scene")
    parser.add_argument("--predict-ms", type=float, default=CPU_MS, help="CPU reference")
    parser.add_argument("--measure-predict", action="store_true", help="time it here instead")
    parser.add_argument("--predict-frames", type=int, nargs=2, default=(50, 250))
    parser.add_argument("--long-frames", type=int, nargs="+", default=[100_000])
    parser.add_argument(
        "--link-frames", type=int, nargs="+", help="linking's lengths (default: --long-frames)"
    )
    parser.add_argument("--long-animals", type=int, default=10)
    parser.add_argument("--skip", nargs="*", default=(), choices=("time", "memory"))
    parser.add_argument("--out", type=Path, help="also write the tables here (markdown)")
    args = parser.parse_args()
    tables = []
    if "time" not in args.skip:
        predict = args.predict_ms
        if args.measure_predict:
            with tempfile.TemporaryDirectory() as tmp:
                measured = predict_ms(args.predict_frames, Path(tmp))
            print(f"prediction here (CPU ms, wall ms) per frame: {measured}", flush=True)
            predict = measured[0] if measured else predict
        tables.append(time_table(args.frames, predict))
    if "memory" not in args.skip:
        steps = {"clean": args.long_frames, "link": args.link_frames or args.long_frames}
        tables.append(memory_table(steps, args.long_animals))
    text = "\n\n".join(tables)
    print(f"\n{text}")
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
