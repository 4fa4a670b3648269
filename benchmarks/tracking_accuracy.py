#!/usr/bin/env python
"""Identity-tracking accuracy on synthetic scenes: every tracker, ours and sleap-nn's, same input.

``examples/tracking_scenes.py`` makes the ground truth and a detector's output
(noise, missed nodes and animals, false positives, lower scores under
occlusion) for four scenes: ``crossing``, ``crowded``, ``occlusions`` and
``stop-go``, each over several seeds, with re-ID vectors in a second copy of
the detections (``detections_reid.slp``). Every tracker then tracks the *same*
detections file:

* ours: every tracker named in :data:`sleap_infer.tracking.registry.NAMES`
  (picked up at run time, so trackers added later get rows with no edit
  here), through :func:`sleap_infer.pipeline.retrack.retrack_file` (``infer
  track``, the CLI's retrack path);
* sleap-nn 0.3.5: every tracker its ``--tracker`` offers
  (:data:`SLEAP_NN_TRACKERS`, its "animal" presets), through its retrack-only
  mode (``sleap-nn predict -i detections.slp --tracking --tracker T``) in its
  own virtual environment (``.bench-venv/sleap-nn``), all runs in one process
  (``benchmarks/sleap_nn_batch.py``: start-up paid once);
* variants (:data:`VARIANTS`): ``--use_kalman`` on the classic tracker,
  ``--link_tracklets`` after classic and ByteTrack, the classic tracker on re-ID
  vectors; ours where :class:`~sleap_infer.tracking.options.TrackingOptions` has
  the field, else "n/a".

The appearance trackers (:data:`REID_TRACKERS`) track ``detections_reid.slp``;
the others ``detections.slp``. A tracker that cannot run (not built on our
side yet, or refused) gets an "n/a" row with its one-line reason.

Scored with py-motmetrics (MIT; benchmark-only: ``pip install motmetrics``) for
MOTA, IDF1 and ID switches, and ``benchmarks/hota.py`` for HOTA (DetA, AssA):
a tracked detection matches a true animal when their centroids are within
``--max-dist`` px (HOTA's similarity ``max(0, 1 - d / max_dist)``); untracked
detections are not hypotheses. Prints a markdown table per scene (mean over
seeds, and the worst seed's IDF1):

    .venv/bin/python benchmarks/tracking_accuracy.py [--scenes crossing --seeds 0 1 2 --frames 300]

``--sleap-nn-src DIR`` (an unpacked sleap-nn wheel, see ``mot_parity.py``) adds
rows for sleap-nn's MOT tracker classes run without its CLI: calibrated (as its
CLI runs them) and online (as ours run).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sleap_io as sio

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
EXAMPLE = ROOT / "examples" / "tracking_scenes.py"  # the crossing scene and others
SLEAP_NN = ROOT / ".bench-venv" / "sleap-nn" / "bin" / "sleap-nn"
SLEAP_NN_PYTHON = SLEAP_NN.parent / "python"
SCENES = ("crossing", "crowded", "occlusions", "stop-go")
METRICS = ("mota", "idf1", "num_switches")
# sleap-nn 0.3.5's `--tracker` choices (its cli.py `_TRACKER_CHOICES`).
SLEAP_NN_TRACKERS = (
    "classic",
    "sort",
    "deepsort",
    "strongsort",
    "bytetrack",
    "botsort",
    "ocsort",
    "deepocsort",
)
# Those that associate by appearance (sleap-nn's; ours: tracking.registry.appearance_names()).
REID_TRACKERS = ("botsort", "deepsort", "strongsort", "deepocsort")
ANIMALS = "{animals}"  # replaced by the scene's animal count


@dataclass(frozen=True)
class Variant:
    """A tracker with extra options: ours as TrackingOptions fields, sleap-nn's as flags."""

    label: str
    tracker: str
    ours: dict[str, Any]
    theirs: tuple[str, ...]
    reid: bool = False


VARIANTS = (
    Variant(
        "classic, re-ID vectors",
        "classic",
        {"features": "embeddings"},
        ("--features", "embeddings"),
        reid=True,
    ),
    Variant(
        "classic + use_kalman",
        "classic",
        {"use_kalman": True, "tracking_target_instance_count": ANIMALS},
        ("--use_kalman", "--tracking_target_instance_count", ANIMALS),
    ),
    Variant("classic + link_tracklets", "classic", {"link_tracklets": True}, ("--link_tracklets",)),
    Variant(
        "bytetrack + link_tracklets", "bytetrack", {"link_tracklets": True}, ("--link_tracklets",)
    ),
    Variant(
        "infer_bytetrack + link_tracklets",
        "infer_bytetrack",
        {"link_tracklets": True},
        ("--link_tracklets",),
    ),
)


@dataclass(frozen=True)
class Row:
    """One table row: ``side`` "ours" or "sleap-nn"; ``na`` the reason it cannot run."""

    label: str
    side: str
    tracker: str
    ours: dict[str, Any]
    theirs: tuple[str, ...]
    reid: bool
    na: str = ""


def rows(ours_trackers: tuple[str, ...] | None = None) -> list[Row]:
    """Every tracker either side has, ours next to sleap-nn's, then the variants."""
    if ours_trackers is None:
        from sleap_infer.tracking.registry import NAMES as ours_trackers
    from sleap_infer.tracking.options import TrackingOptions

    fields = {f.name for f in dataclasses.fields(TrackingOptions)}
    plain = [Variant(name, name, {}, (), name in REID_TRACKERS) for name in ours_trackers]
    plain += [
        Variant(name, name, {}, (), name in REID_TRACKERS)
        for name in SLEAP_NN_TRACKERS
        if name not in ours_trackers
    ]
    out = []
    for v in [*plain, *VARIANTS]:
        missing = sorted(set(v.ours) - fields)
        na = ""
        if v.tracker not in ours_trackers:
            na = f"no {v.tracker!r} in sleap_infer TRACKERS yet"
        elif missing:
            na = f"no TrackingOptions.{missing[0]} yet"
        out.append(Row(f"ours {v.label}", "ours", v.tracker, v.ours, (), v.reid, na))
        na = "" if v.tracker in SLEAP_NN_TRACKERS else "not a sleap-nn 0.3.5 tracker"
        flags = ("--tracker", v.tracker, *v.theirs)
        out.append(Row(f"sleap-nn {v.label}", "sleap-nn", v.tracker, {}, flags, v.reid, na))
    return out


Tracked = list[tuple[np.ndarray, np.ndarray]]  # per frame: (track ids (I,), centroids (I, 2))


def load_example():
    """The synthetic-data example, imported by path (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location("tracking_scenes", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def load_hota():
    """``benchmarks/hota.py``, imported by path (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_hota", HERE / "hota.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def centroids(points: np.ndarray) -> np.ndarray:
    """``(I, 2)`` mean of each instance's visible nodes."""
    if len(points) == 0:
        return np.zeros((0, 2))
    with np.errstate(invalid="ignore"):
        return np.nanmean(points, axis=1)


def read_tracked(path: Path, n_frames: int) -> Tracked:
    """A tracked file's ids (by track name; untracked -1) and centroids, per frame index."""
    labels = sio.load_slp(str(path))
    n = len(labels.skeletons[0].nodes)
    names: dict[str, int] = {}
    out: Tracked = [(np.zeros(0, np.int64), np.zeros((0, 2))) for _ in range(n_frames)]
    for lf in labels.labeled_frames:
        ids = [-1 if i.track is None else names.setdefault(i.track.name, len(names)) for i in lf]
        points = np.array([inst.numpy() for inst in lf.instances], dtype=np.float64)
        out[lf.frame_idx] = (np.array(ids, np.int64), centroids(points.reshape(len(ids), n, 2)))
    return out


def run_ours(row: Row, source: Path, output: Path, animals: int) -> Path:
    """Our ``retrack_file`` (``infer track``) with the row's options."""
    from sleap_infer.pipeline.retrack import retrack_file
    from sleap_infer.tracking.options import TrackingOptions

    options = {k: animals if v == ANIMALS else v for k, v in row.ours.items()}
    retrack_file(source, output, TrackingOptions(tracker=row.tracker, **options))
    return output


def sleap_nn_job(row: Row, source: Path, output: Path, animals: int) -> dict[str, Any]:
    """A ``benchmarks/sleap_nn_batch.py`` job: the row's retrack-only command."""
    flags = [str(animals) if f == ANIMALS else f for f in row.theirs]
    args = ["predict", "-i", str(source), "--tracking", *flags, "-o", str(output)]
    return {"args": args, "log": str(output.with_suffix(".log"))}


def run_sleap_nn_batch(jobs: list[dict[str, Any]], workroot: Path) -> list[dict[str, Any]]:
    """All sleap-nn jobs in one sleap-nn process; a result per job (rc, error, runtime_s)."""
    if not jobs:
        return []
    jobs_path, results_path = workroot / "sleap_nn_jobs.json", workroot / "sleap_nn_results.json"
    jobs_path.write_text(json.dumps(jobs))
    cmd = [str(SLEAP_NN_PYTHON), str(HERE / "sleap_nn_batch.py"), str(jobs_path)]
    with open(workroot / "sleap_nn_batch.log", "w") as log:
        subprocess.run([*cmd, str(results_path)], stdout=log, stderr=log, check=True)
    return json.loads(results_path.read_text())


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
        points = points.reshape(len(ids), n_nodes, 2)  # (an empty frame too)
        out.append((np.array(ids, dtype=np.int64), centroids(points)))
    return out, 1e3 * elapsed / max(len(frames), 1)


def score(truth: np.ndarray, tracked: Tracked, max_dist: float) -> dict[str, float]:
    """MOTA, IDF1, ID switches, HOTA (DetA, AssA) of ``tracked`` vs ``truth`` ``(F, A, N, 2)``."""
    import motmetrics as mm

    hota = load_hota()
    acc = mm.MOTAccumulator(auto_id=True)
    gt_ids = np.arange(truth.shape[1])
    hota_frames = []
    for f, (ids, cents) in enumerate(tracked):
        keep = (ids >= 0) & np.isfinite(cents).all(axis=1)
        gt = truth[f].mean(axis=1)
        dist = mm.distances.norm2squared_matrix(gt, cents[keep], max_d2=max_dist**2)
        acc.update(gt_ids, ids[keep], dist)
        sim = hota.centroid_similarity(gt, cents[keep], max_dist)
        hota_frames.append((gt_ids, ids[keep], sim))
    summary = mm.metrics.create().compute(acc, metrics=METRICS, name="run")
    values = {name: float(summary[name].iloc[0]) for name in METRICS}
    values.update(hota.hota(hota_frames))
    values["tracks"] = len({int(i) for ids, _ in tracked for i in ids if i >= 0})
    return values


def table(rows: list[tuple[str, dict[str, float]]]) -> str:
    """MOTA / IDF1 / switches / tracks / ms per frame (``tracking_options_accuracy.py``'s)."""
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


def scene_table(results: dict[str, list[dict[str, float]] | str]) -> str:
    """Mean over seeds per row, plus the worst seed's IDF1; "n/a: why" where a row cannot run."""
    lines = [
        "| tracker | MOTA | IDF1 | min IDF1 | ID switches | HOTA | DetA | AssA | tracks |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, runs in results.items():
        if isinstance(runs, str):
            lines.append(f"| {label} | n/a: {runs} | | | | | | | |")
            continue
        m = {key: float(np.mean([r[key] for r in runs])) for key in runs[0]}
        worst = min(r["idf1"] for r in runs)
        lines.append(
            f"| {label} | {m['mota']:.3f} | {m['idf1']:.3f} | {worst:.3f} "
            f"| {m['num_switches']:.1f} | {m['hota']:.3f} | {m['deta']:.3f} | {m['assa']:.3f} "
            f"| {m['tracks']:.1f} |"
        )
    return "\n".join(lines)


def run_seed(
    example: Any,
    scene: Any,
    seed: int,
    workdir: Path,
    table_rows: list[Row],
    results: dict[str, Any],
    args: argparse.Namespace,
) -> list[tuple[str, dict[str, Any], Path, np.ndarray]]:
    """One seed's files; our rows run and scored into ``results``; sleap-nn's jobs returned."""
    files = example.syn.write(scene, workdir, video=False)
    vectors = example.reid_vectors(scene, seed)
    reid = example.write_reid(files["detections"], vectors, workdir / "detections_reid.slp")
    animals = scene.truth.shape[1]
    pending = []
    for i, row in enumerate(table_rows):
        if row.na or isinstance(results[row.label], str):
            continue
        source = reid if row.reid else files["detections"]
        output = workdir / f"row{i}.{row.side}.slp"
        output.unlink(missing_ok=True)
        if row.side == "sleap-nn":
            pending.append(
                (row.label, sleap_nn_job(row, source, output, animals), output, scene.truth)
            )
            continue
        try:
            run_ours(row, source, output, animals)
        except Exception as exc:  # a row that cannot run is n/a
            results[row.label] = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
            continue
        tracked = read_tracked(output, args.frames)
        results[row.label].append(score(scene.truth, tracked, args.max_dist))
    return pending


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", nargs="+", default=list(SCENES), choices=SCENES)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--animals", type=int, help="default: the scene's own (4; crowded 10)")
    parser.add_argument("--max-dist", type=float, default=20.0, help="centroid match radius, px")
    parser.add_argument("--rows", nargs="*", help="only rows whose label contains one of these")
    parser.add_argument("--workdir", type=Path, help="keep the generated files here")
    parser.add_argument("--out", type=Path, help="also write the tables here (markdown)")
    parser.add_argument(
        "--sleap-nn-src",
        type=Path,
        help="an unpacked sleap-nn 0.3.5 wheel (see mot_parity.py): also runs its MOT "
        "tracker classes without its CLI, calibrated (as its CLI) and online (as ours)",
    )
    args = parser.parse_args()
    try:
        import motmetrics  # noqa: F401
    except ImportError:
        print("motmetrics is not installed: pip install motmetrics (benchmark only)")
        return 2
    table_rows = [r for r in rows() if not args.rows or any(k in r.label for k in args.rows)]
    if not SLEAP_NN_PYTHON.exists():
        print(f"note: {SLEAP_NN_PYTHON} not found, sleap-nn's trackers are n/a")
        table_rows = [
            dataclasses.replace(r, na=r.na or "sleap-nn's venv not installed")
            if r.side == "sleap-nn"
            else r
            for r in table_rows
        ]
    classes: list[str] = []
    if args.sleap_nn_src is not None:
        sys.path.insert(0, str(args.sleap_nn_src))
        import sleap_nn.tracking.mot  # noqa: F401  (its import adds a log handler)
        from loguru import logger

        logger.remove()
        classes = ["sort", "botsort", "ocsort", "bytetrack"]
    example = load_example()
    workroot = (args.workdir or Path(tempfile.mkdtemp(prefix="tracking_accuracy_"))).resolve()
    tables = []
    for scene_name in args.scenes:
        results: dict[str, Any] = {r.label: (r.na or []) for r in table_rows}
        pending: list[tuple[str, dict[str, Any], Path, np.ndarray]] = []
        for seed in args.seeds:
            scene = example.simulate(scene_name, args.frames, args.animals, seed)
            workdir = workroot / scene_name / f"seed{seed}"
            pending += run_seed(example, scene, seed, workdir, table_rows, results, args)
            for name in classes:
                for calibrated in (True, False):
                    label = f"sleap-nn {name} (class, {'calibrated' if calibrated else 'online'})"
                    detections = workdir / "detections.slp"
                    tracked, _ = run_sleap_nn_classes(name, detections, calibrated)
                    row_score = score(scene.truth, tracked, args.max_dist)
                    results.setdefault(label, []).append(row_score)
        outcomes = run_sleap_nn_batch([job for _, job, _, _ in pending], workroot)
        for (label, _, output, truth), outcome in zip(pending, outcomes, strict=True):
            if isinstance(results[label], str):
                continue
            if outcome["rc"] != 0:
                results[label] = outcome["error"][:160].replace("|", "/")
                continue
            tracked = read_tracked(output, args.frames)
            results[label].append(score(truth, tracked, args.max_dist))
        animals = args.animals or (10 if scene_name == "crowded" else 4)
        title = (
            f"### {scene_name} ({args.frames} frames, {animals} animals, "
            f"seeds {' '.join(map(str, args.seeds))})"
        )
        tables.append(f"{title}\n\n{scene_table(results)}")
        print(f"\n{tables[-1]}", flush=True)
    if args.out:
        args.out.write_text("\n\n".join(tables) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
