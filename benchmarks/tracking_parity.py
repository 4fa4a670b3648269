#!/usr/bin/env python
"""Tracker parity: our ``retrack_file`` vs sleap-nn's retrack-only mode, same detections.

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
OpenCV here too; ``synthetic_reid``: the same detections with re-ID vectors,
``examples/tracking_scenes.py --reid``).

Beyond the classic cases (:data:`CASES`), :func:`tracker_cases` adds, for every
MOT tracker (sleap-nn's, and any new name in our ``TRACKERS``) and the classic
one, the option groups (:data:`GROUPS`: defaults, pre-cull, clean, single-break
joining, the MOT knobs, ``--mot_param``, ``--use_kalman``, ``--link_tracklets``)
and the classic appearance blend. Appearance trackers track ``synthetic_reid``.
A case our side cannot run yet (tracker not in ``TRACKERS``, no such
``TrackingOptions`` field, or refused) is an "n/a" row with the reason.

Per detection (paired by coordinates): the same track name; "retro": untracked
here, tracked by sleap-nn (its MOT trackers label a track's tentative frames once
it confirms; online, ours cannot: docs/tracking-mot.md "Differences"), counted
apart from "other" differences; and the same track after the best one-to-one
renaming of our tracks onto sleap-nn's (same partition, other numbering).
sleap-nn's runs share one process (``benchmarks/sleap_nn_batch.py``).

    .venv/bin/python benchmarks/tracking_parity.py [--out results.md] [--cases default greedy]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
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
from scipy.optimize import linear_sum_assignment
from vs_sleap_nn import sleap_nn_venv

from sleap_infer.pipeline.retrack import retrack_file
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.tracking.registry import NAMES as TRACKERS

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
    Case(
        "re-ID vectors, --features embeddings (cosine)",
        "embedding",
        {"features": "embeddings"},
        ("--features", "embeddings"),
    ),
    Case("re-ID vectors, features unset (masks by mask IoU, as sleap-nn)", "embedding", {}),
)


# sleap-nn 0.3.5's MOT trackers (its --tracker choices less classic), and its appearance ones.
MOT_TRACKERS = ("bytetrack", "sort", "botsort", "ocsort", "deepsort", "strongsort", "deepocsort")
REID_TRACKERS = ("botsort", "deepsort", "strongsort", "deepocsort")
T = "4"  # the synthetic scene's animal count
MOT_KNOBS = {
    "track_buffer": 10,
    "min_hits": 2,
    "track_high_threshold": 0.4,
    "new_track_threshold": 0.5,
    "min_match_similarity": 0.4,
}
# (group, ours: TrackingOptions fields, sleap-nn flags, MOT trackers only)
GROUPS: tuple[tuple[str, dict[str, Any], tuple[str, ...], bool], ...] = (
    ("default", {}, (), False),
    (
        "pre-cull",
        {"tracking_target_instance_count": 4, "tracking_pre_cull_to_target": 1},
        ("--tracking_target_instance_count", T, "--tracking_pre_cull_to_target", "1"),
        False,
    ),
    (
        "clean",
        {"tracking_clean_instance_count": 4},
        ("--tracking_clean_instance_count", T),
        False,
    ),
    (
        "connect single breaks",
        {"tracking_target_instance_count": 4, "post_connect_single_breaks": True},
        ("--tracking_target_instance_count", T, "--post_connect_single_breaks"),
        False,
    ),
    (
        "mot knobs",
        MOT_KNOBS,
        tuple(x for k, v in MOT_KNOBS.items() for x in (f"--{k}", str(v))),
        True,
    ),
    (
        "mot_param oks_stddev=0.05",
        {"mot_param": ("oks_stddev=0.05",)},
        ("--mot_param", "oks_stddev=0.05"),
        True,
    ),
    ("link_tracklets", {"link_tracklets": True}, ("--link_tracklets",), False),
)


def tracker_cases() -> tuple[Case, ...]:
    """Every MOT tracker (sleap-nn's and ours) and classic, by option group."""
    names = [*MOT_TRACKERS, *(t for t in TRACKERS if t not in MOT_TRACKERS and t != "classic")]
    out = []
    for tracker in ["classic", *names]:
        source = "synthetic_reid" if tracker in REID_TRACKERS else "synthetic"
        for group, ours, theirs, mot_only in GROUPS:
            if mot_only and tracker == "classic":
                continue
            flags = ("--tracker", tracker, *theirs)
            out.append(Case(f"{tracker}: {group}", source, {"tracker": tracker, **ours}, flags))
    out.append(
        Case(
            "classic: use_kalman",
            "synthetic",
            {"use_kalman": True, "tracking_target_instance_count": 4},
            ("--use_kalman", "--tracking_target_instance_count", T),
        )
    )
    out.append(
        Case(
            "classic: appearance blend 0.5",
            "synthetic_reid",
            {"appearance_weight": 0.5},
            ("--appearance_weight", "0.5"),
        )
    )
    return tuple(out)


# Masks: each tracker alone and with --link_tracklets, on the crossing scene and on the
# occlusions scene (20-60-frame disappearances: linking has gaps to join), and the
# trackers that read re-ID vectors on the occlusions scene's masks carrying them.
MASK_TRACKERS = ("classic", "sort", "ocsort", "bytetrack")
MASK_REID_TRACKERS = ("classic", "botsort", "deepsort", "deepocsort")
LINK = {"link_tracklets": True}


def mask_cases() -> tuple[Case, ...]:
    out = []
    runs = [(t, src) for src in ("masks_crossing", "masks_occlusions") for t in MASK_TRACKERS]
    runs += [(t, "masks_occlusions_reid") for t in MASK_REID_TRACKERS]
    for tracker, source in runs:
        for group, ours, theirs in (("", {}, ()), (", link", LINK, ("--link_tracklets",))):
            flags = ("--tracker", tracker, *theirs)
            name = f"{source}: {tracker}{group}"
            out.append(Case(name, source, {"tracker": tracker, **ours}, flags))
    return tuple(out)


def not_ours(case: Case) -> str:
    """Why our side cannot run ``case`` yet ("" when it can)."""
    tracker = case.ours.get("tracker", "classic")
    if tracker not in TRACKERS:
        return f"no {tracker!r} in sleap_infer TRACKERS yet"
    fields = {f.name for f in dataclasses.fields(TrackingOptions)}
    missing = sorted(set(case.ours) - fields)
    return f"no TrackingOptions.{missing[0]} yet" if missing else ""


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


def _scenes() -> Any:
    path = ROOT / "examples" / "tracking_scenes.py"
    spec = importlib.util.spec_from_file_location("tracking_scenes", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _synthetic(work: Path) -> Path:
    syn = _scenes().syn
    return syn.write(syn.simulate(600, 4, 0), work / "synthetic")["detections"]


def _synthetic_reid(work: Path) -> Path:
    """The synthetic detections again, with re-ID vectors (``tracking_scenes --reid``)."""
    scenes = _scenes()
    scene = scenes.syn.simulate(600, 4, 0)
    detections = scenes.syn.write(scene, work / "synthetic_reid", video=False)["detections"]
    vectors = scenes.reid_vectors(scene, 0)
    return scenes.write_reid(detections, vectors, work / "synthetic_reid" / "reid.slp")


def _as_masks(detections: Path, out: Path, vectors: list[np.ndarray] | None = None) -> Path:
    """``detections`` as masks: discs of radius 6 px around each pose's visible nodes, on
    a half-resolution grid (``scale`` 0.5, as a stride-2 model writes them), scored as
    the pose (re-ID vectors moved onto them); the poses are dropped, so the masks are
    what gets tracked."""
    labels = sio.load_slp(str(detections))
    size = MASK_ARENA // 2
    yy, xx = np.mgrid[0:size, 0:size]
    for lf in labels:
        masks = []
        for i, inst in enumerate(lf.instances):
            grid = np.zeros((size, size), bool)
            for x, y in inst.numpy():
                if np.isfinite(x) and np.isfinite(y):
                    grid |= (xx - x / 2) ** 2 + (yy - y / 2) ** 2 <= 3.0**2
            if not grid.any():
                continue
            mask = sio.PredictedSegmentationMask.from_numpy(grid, 2, score=float(inst.score))
            if vectors is not None:
                mask.identity_embedding = sio.Embedding(vectors[lf.frame_idx][i])
            masks.append(mask)
        lf.masks = masks
        lf.instances = []
    out.parent.mkdir(parents=True, exist_ok=True)
    sio.save_slp(labels, str(out), save_embedding_vectors=vectors is not None)
    return out


def _scene_masks(scene_name: str, reid: bool, work: Path) -> Path:
    scenes = _scenes()
    scene = scenes.simulate(scene_name, 600, None, 0)
    folder = work / f"masks_{scene_name}{'_reid' if reid else ''}"
    detections = scenes.syn.write(scene, folder, video=False)["detections"]
    vectors = scenes.reid_vectors(scene, 0) if reid else None
    return _as_masks(detections, folder / "masks.slp", vectors)


MASK_ARENA = 256  # examples/tracking_synthetic.py's arena, px


INPUTS: dict[str, Callable[[Path], Path]] = {
    "topdown": lambda w: _sleap_nn_predictions(
        "topdown", ["minimal_instance_centroid", "minimal_instance_centered_instance"], w
    ),
    "centroid": lambda w: _sleap_nn_predictions("centroid", ["minimal_instance_centroid"], w),
    "synthetic": _synthetic,
    "synthetic_reid": _synthetic_reid,
    "masks": lambda w: FIXTURES / "reference" / "bottomup_segmentation.slp",
    "embedding": lambda w: FIXTURES / "reference" / "embedding.slp",
    "masks_crossing": lambda w: _scene_masks("crossing", False, w),
    "masks_occlusions": lambda w: _scene_masks("occlusions", False, w),
    "masks_occlusions_reid": lambda w: _scene_masks("occlusions", True, w),
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


def _renamed_same(pairs: list[tuple[str | None, str | None]]) -> int:
    """Detections with the same track after the best one-to-one renaming of ours."""
    mine = sorted({a for a, _ in pairs if a})
    theirs = sorted({b for _, b in pairs if b})
    same = sum(a is None and b is None for a, b in pairs)
    if not mine or not theirs:
        return same
    ia, ib = {n: i for i, n in enumerate(mine)}, {n: i for i, n in enumerate(theirs)}
    counts = np.zeros((len(mine), len(theirs)))
    for a, b in pairs:
        if a and b:
            counts[ia[a], ib[b]] += 1
    rows, cols = linear_sum_assignment(-counts)
    return same + int(counts[rows, cols].sum())


def compare(ours: Path, theirs: Path, masks: bool) -> dict[str, Any]:
    a, b = _tracks(ours, masks), _tracks(theirs, masks)
    frames = instances = same_frames = same_frames_retro = same = dropped = retro = differ = 0
    pairs: list[tuple[str | None, str | None]] = []
    for frame, dets in a.items():
        if masks and not dets:
            continue
        other = b.get(frame, {})
        agree = [name == other.get(key) for key, name in dets.items()]
        late = [
            name is None and other.get(key) is not None for key, name in dets.items()
        ]  # tracked by sleap-nn only: its retroactive labels (MOT)
        dropped += sum(key not in other for key in dets)
        differ += sum(
            key in other and name != other[key] and not x
            for (key, name), x in zip(dets.items(), late)
        )
        pairs += [(name, other.get(key)) for key, name in dets.items()]  # dropped: None
        frames += 1
        instances += len(agree)
        same += sum(agree)
        retro += sum(late)
        same_frames += all(agree)
        same_frames_retro += all(x or y for x, y in zip(agree, late))
    names = {n for d in a.values() for n in d.values() if n}
    their_names = {n for d in b.values() for n in d.values() if n}
    return {
        "frames": frames,
        "instances": instances,
        "frame_pct": 100 * same_frames / max(frames, 1),
        "frame_retro_pct": 100 * same_frames_retro / max(frames, 1),
        "instance_pct": 100 * same / max(instances, 1),
        "renamed_pct": 100 * _renamed_same(pairs) / max(instances, 1),
        "retro": retro,
        "other": differ,  # both wrote it, with different tracks, not retro
        "tracks": f"{len(names)} / {len(their_names)}",
        "dropped": dropped,
    }


def run_ours(case: Case, source: Path, work: Path) -> tuple[Path, Path, float]:
    """Ours on ``case`` (raises where it cannot run); ``(ours, theirs path, seconds)``."""
    slug = "".join(c if c.isalnum() else "_" for c in case.name)
    ours, theirs = work / f"{slug}.ours.slp", work / f"{slug}.sleap_nn.slp"
    ours.unlink(missing_ok=True)
    theirs.unlink(missing_ok=True)
    t0 = time.perf_counter()
    retrack_file(source, ours, TrackingOptions(**case.ours))
    return ours, theirs, time.perf_counter() - t0


def run_sleap_nn(jobs: list[dict[str, Any]], work: Path) -> list[dict[str, Any]]:
    """sleap-nn's retrack runs, all in one process; ``{"rc", "error"}`` per job."""
    if not jobs:
        return []
    (work / "jobs.json").write_text(json.dumps(jobs))
    python = SLEAP_NN.parent / "python"
    cmd = [str(python), str(Path(__file__).parent / "sleap_nn_batch.py")]
    cmd += [str(work / "jobs.json"), str(work / "results.json")]
    with open(work / "sleap_nn_batch.log", "w") as log:
        subprocess.run(cmd, stdout=log, stderr=log, check=True)
    return json.loads((work / "results.json").read_text())


HEADER = (
    "| case | frames | instances | frames agreeing | frames agreeing, retro aside "
    "| instances agreeing | retro | other | same after renaming "
    "| tracks (ours / sleap-nn) | untracked by sleap-nn (dropped) | ours s |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def row(name: str, r: dict[str, Any]) -> str:
    return (
        f"| {name} | {r['frames']} | {r['instances']} | {r['frame_pct']:.1f}% "
        f"| {r['frame_retro_pct']:.1f}% | {r['instance_pct']:.1f}% | {r['retro']} "
        f"| {r['other']} | {r['renamed_pct']:.1f}% | {r['tracks']} | {r['dropped']} "
        f"| {r['ours_s']:.2f} |"
    )


def na_row(name: str, why: str) -> str:
    return f"| {name} | n/a: {why.replace('|', '/')} |" + " |" * 11


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
    lines: dict[str, str] = {}
    pending: list[tuple[Case, Path, Path, float]] = []
    cases = [*CASES, *tracker_cases(), *mask_cases()]
    for case in cases:
        if args.cases and not any(c in case.name for c in args.cases):
            continue
        if case.ours.get("use_flow") and not flow:
            lines[case.name] = na_row(case.name, "OpenCV not installed here")
            continue
        if why := not_ours(case):
            lines[case.name] = na_row(case.name, why)
            continue
        if case.source not in sources:
            sources[case.source] = INPUTS[case.source](work)
        try:
            ours, theirs, seconds = run_ours(case, sources[case.source], work)
        except Exception as exc:  # a case ours refuses: n/a, with its one line
            lines[case.name] = na_row(case.name, f"ours: {exc}".splitlines()[0][:160])
            continue
        pending.append((case, ours, theirs, seconds))
        lines[case.name] = ""
    jobs = [
        {
            "args": [
                *("predict", "-i", str(sources[c.source]), "--tracking", "-o", str(theirs)),
                *c.theirs,
            ],
            "log": str(theirs.with_suffix(".log")),
        }
        for c, _, theirs, _ in pending
    ]
    for (case, ours, theirs, seconds), outcome in zip(
        pending, run_sleap_nn(jobs, work), strict=True
    ):
        if outcome["rc"] != 0:
            lines[case.name] = na_row(case.name, f"sleap-nn: {outcome['error'][:160]}")
            continue
        masks = case.source in ("masks", "embedding") or case.source.startswith("masks_")
        lines[case.name] = row(case.name, {**compare(ours, theirs, masks), "ours_s": seconds})
    table = "\n".join([HEADER, *lines.values()])
    print(f"\n{table}")
    if args.out:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
