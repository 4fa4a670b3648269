#!/usr/bin/env python
"""Tracker parity at the CLI: ``infer track`` / ``infer predict -t`` vs sleap-nn's ``--tracking``.

Each case tracks the same detections twice: sleap-nn 0.3.5 (``sleap-nn predict -i
preds.slp --tracking [flags] -o out.slp`` in ``.bench-venv/sleap-nn``; all its runs
share one process, ``benchmarks/sleap_nn_batch.py``, and their outputs are cached
under ``.bench-venv/tracking_parity/`` by input content and flags) and ours
(``infer track preds.slp [the same flags] -o out.slp``, our CLI in this process).
Prediction cases (``predict:``) run each tool's whole pipeline instead, ``infer
predict VIDEO -m ... -t`` against ``sleap-nn predict --data_path VIDEO
--model_paths ... --tracking``, on the fixture models.

Inputs: the fixtures' mask and re-ID reference files; ``examples/tracking_synthetic.py``'s
crossing animals (600 frames, 4 animals, with a video for the optical-flow case,
which needs OpenCV here too; ``synthetic_reid``: the same detections with re-ID
vectors); and REAL predictions (:data:`REAL`): top-down and bottom-up on
``centered_pair_small.mp4`` (frames 0-299), bottom-up and single-instance on
``small_robot.mp4``, each predicted both by us (``:ours``) and by sleap-nn
(``:sleap_nn``), so each tool tracks the other's output too.

Beyond the classic cases (:data:`CASES`), :func:`tracker_cases` adds, for every
MOT tracker (sleap-nn's, and any new name in our ``TRACKERS``) and the classic
one, the option groups (:data:`GROUPS`) and the classic appearance blend, on the
synthetic scene (appearance trackers: ``synthetic_reid``); :func:`real_cases` every
MOT tracker by the groups sleap-nn accepts for one (defaults, the MOT knobs,
``--mot_param``, ``--link_tracklets``) on every real input (the appearance trackers,
which sleap-nn refuses without re-ID vectors, by their defaults only).

Counting (:func:`compare`): detections are paired by their coordinates (poses) or
box and area (masks): exactly in re-tracking cases, within :data:`PAIR_PX` (the
two tools' predictions differ by decoding) in prediction cases. Every detection
either side wrote counts: one written by one side only, or left untracked by
either, is a difference (an untracked detection is a track of its own). "same" is
the share with the same track after the best one-to-one renaming of our tracks
onto sleap-nn's. A case one side cannot run is an "n/a" row with its reason.

    .venv/bin/python benchmarks/tracking_parity.py [--out results.md] [--cases default real]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import io
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

from sleap_infer.cli import main as infer_main
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.tracking.registry import NAMES as TRACKERS

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
BENCH = ROOT / ".bench-venv"
SLEAP_NN = BENCH / "sleap-nn" / "bin" / "sleap-nn"
VIDEO = FIXTURES / "videos" / "centered_pair_small.mp4"
ROBOT = FIXTURES / "videos" / "small_robot.mp4"
MODELS = FIXTURES / "models"
CACHE = BENCH / "tracking_parity"  # sleap-nn's outputs, by input content and flags
PAIR_PX = 2.0  # prediction cases: the two tools' poses of one animal are this close


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
    (  # a key every MOT tracker reads (sleap-nn refuses oks_stddev off the oks similarity)
        "mot_param box_padding=0.2",
        {"mot_param": ("box_padding=0.2",)},
        ("--mot_param", "box_padding=0.2"),
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


# Real predictions: (video, models, frames); each predicted by us and by sleap-nn.
REAL: dict[str, tuple[Path, tuple[str, ...], str]] = {
    "topdown_pair": (
        VIDEO,
        ("minimal_instance_centroid", "minimal_instance_centered_instance"),
        "0-299",
    ),
    "bottomup_pair": (VIDEO, ("minimal_instance_bottomup",), "0-299"),
    "bottomup_robot": (ROBOT, ("minimal_instance_bottomup",), ""),
    "single_robot": (ROBOT, ("minimal_instance_single_instance",), ""),
}
PREDICTORS = ("ours", "sleap_nn")
# The groups sleap-nn runs with a MOT tracker (it refuses the classic cleanups there).
REAL_GROUPS = ("default", "mot knobs", "mot_param box_padding=0.2", "link_tracklets")
GEOMETRIC = tuple(t for t in MOT_TRACKERS if t not in REID_TRACKERS)


def real_cases() -> tuple[Case, ...]:
    """Every MOT tracker on every real input by :data:`REAL_GROUPS` (appearance trackers:
    defaults only, which sleap-nn refuses without vectors), then ``infer predict -t`` vs
    ``sleap-nn predict --tracking`` by defaults (a minute a case here: last)."""
    groups = {g[0]: g for g in GROUPS}
    out = []
    for real in REAL:
        for who in PREDICTORS:
            source = f"{real}:{who}"
            for tracker in MOT_TRACKERS:
                for name in REAL_GROUPS if tracker in GEOMETRIC else ("default",):
                    _, ours, theirs, _ = groups[name]
                    flags = ("--tracker", tracker, *theirs)
                    name = f"{source}: {tracker}: {name}"
                    out.append(Case(name, source, {"tracker": tracker, **ours}, flags))
    for real in REAL:
        for tracker in GEOMETRIC:
            flags = ("--tracker", tracker)
            name = f"predict: {real}: {tracker}: default"
            out.append(Case(name, f"predict:{real}", {"tracker": tracker}, flags))
    return tuple(out)


def not_ours(case: Case) -> str:
    """Why our side cannot run ``case`` yet ("" when it can)."""
    tracker = case.ours.get("tracker", "classic")
    if tracker not in TRACKERS:
        return f"no {tracker!r} in sleap_infer TRACKERS yet"
    fields = {f.name for f in dataclasses.fields(TrackingOptions)}
    missing = sorted(set(case.ours) - fields)
    return f"no TrackingOptions.{missing[0]} yet" if missing else ""


def run_infer(args: list[str]) -> tuple[int, str]:
    """Our CLI (``infer ARGS``) in this process; ``(exit code, stderr)``."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            infer_main([str(a) for a in args])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0) if not isinstance(exc.code, str) else 1
        except Exception as exc:  # a crash is a row's reason, not the benchmark's end
            print(f"{type(exc).__name__}: {exc}", file=err)
            code = 1
    return code, err.getvalue()


def _frames(frames: str) -> list[str]:
    return ["--frames", frames] if frames else []


def _sleap_nn_predict_args(video: Path, models: tuple[str, ...], frames: str) -> list[str]:
    args = ["predict", "--data_path", str(video), "--device", "cpu", "--batch_size", "4"]
    args += ["--peak_threshold", "0.2", *_frames(frames)]
    for model in models:
        args += ["--model_paths", str(MODELS / model)]
    return args


def _our_predict_args(video: Path, models: tuple[str, ...], frames: str) -> list[str]:
    args = ["predict", str(video), "--device", "cpu", "-b", "4", "-q", *_frames(frames)]
    for model in models:
        args += ["-m", str(MODELS / model)]
    return args


def _sleap_nn_predictions(
    name: str, models: tuple[str, ...], work: Path, video: Path = VIDEO, frames: str = ""
) -> Path:
    """sleap-nn's predictions (untracked), made once and kept under ``.bench-venv``."""
    kept = BENCH / "agreement" / f"{name}.sleap_nn.slp"
    if kept.is_file() and not frames and video == VIDEO:
        return kept
    out = CACHE / f"{name}.predictions.sleap_nn.slp"
    if not out.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        job = {"args": [*_sleap_nn_predict_args(video, models, frames), "-o", str(out)]}
        outcome = run_sleap_nn([{**job, "log": str(work / f"{name}.predict.log")}], work)[0]
        if outcome["rc"] != 0:
            raise RuntimeError(f"sleap-nn predict: {outcome['error']}")
    return out


def _our_predictions(name: str, work: Path) -> Path:
    video, models, frames = REAL[name]
    out = work / f"{name}.predictions.ours.slp"
    code, err = run_infer(
        [*_our_predict_args(video, models, frames), "-o", str(out), "--overwrite"]
    )
    if code != 0:
        raise RuntimeError(f"infer predict: {err.strip().splitlines()[-1:]}")
    return out


def _real_input(key: str) -> Callable[[Path], Path]:
    name, who = key.split(":")
    video, models, frames = REAL[name]
    if who == "ours":
        return lambda w: _our_predictions(name, w)
    return lambda w: _sleap_nn_predictions(name, models, w, video, frames)


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
        "topdown", ("minimal_instance_centroid", "minimal_instance_centered_instance"), w
    ),
    "centroid": lambda w: _sleap_nn_predictions("centroid", ("minimal_instance_centroid",), w),
    "synthetic": _synthetic,
    "synthetic_reid": _synthetic_reid,
    "masks": lambda w: FIXTURES / "reference" / "bottomup_segmentation.slp",
    "embedding": lambda w: FIXTURES / "reference" / "embedding.slp",
    "masks_crossing": lambda w: _scene_masks("crossing", False, w),
    "masks_occlusions": lambda w: _scene_masks("occlusions", False, w),
    "masks_occlusions_reid": lambda w: _scene_masks("occlusions", True, w),
    **{f"{name}:{who}": _real_input(f"{name}:{who}") for name in REAL for who in PREDICTORS},
}


def _key(det: Any) -> tuple[Any, ...]:
    if isinstance(det, sio.SegmentationMask):
        return ("mask", tuple(det.bbox), det.area)
    pts = np.round(det.numpy(), 4)
    return ("pose", *(None if np.isnan(v) else float(v) for v in pts.ravel()))


Det = tuple[tuple[Any, ...], np.ndarray | None, str | None]  # (key, pose, track name)


def _tracks(path: Path, masks: bool) -> dict[int, list[Det]]:
    out: dict[int, list[Det]] = {}
    for lf in sio.load_slp(str(path)):
        dets = lf.masks if masks else lf.predicted_instances
        out[lf.frame_idx] = [
            (_key(d), None if masks else d.numpy(), d.track.name if d.track is not None else None)
            for d in dets
        ]
    return out


def _pair_frame(
    a: list[Det], b: list[Det], tol: float | None
) -> list[tuple[int | None, int | None]]:
    """Index pairs of one frame's detections (None: on one side only): by key, or with
    ``tol`` by the nearest poses (mean distance over the nodes both show, at most ``tol``)."""
    if tol is None:
        where = {det[0]: j for j, det in enumerate(b)}
        pairs: list[tuple[int | None, int | None]] = [
            (i, where.pop(d[0], None)) for i, d in enumerate(a)
        ]
        return pairs + [(None, j) for j in sorted(where.values())]
    cost = np.full((len(a), len(b)), np.inf)
    for i, (_, pa, _) in enumerate(a):
        for j, (_, pb, _) in enumerate(b):
            d = np.linalg.norm(pa - pb, axis=-1)
            if np.isfinite(d).any():
                cost[i, j] = float(np.nanmean(d))
    taken: list[tuple[int | None, int | None]] = []
    if cost.size:
        big = np.where(np.isfinite(cost), cost, 1e9)
        rows, cols = linear_sum_assignment(big)
        taken = [(int(r), int(c)) for r, c in zip(rows, cols) if cost[r, c] <= tol]
    left_a = sorted(set(range(len(a))) - {i for i, _ in taken})
    left_b = sorted(set(range(len(b))) - {j for _, j in taken})
    return taken + [(i, None) for i in left_a] + [(None, j) for j in left_b]


def _renamed_same(pairs: list[tuple[str | None, str | None]]) -> int:
    """Detections with the same track after the best one-to-one renaming of ours onto
    sleap-nn's. Untracked (None) is a track of its own: the same only where both sides
    left that detection untracked, a difference where one side tracked it."""
    same = sum(a is None and b is None for a, b in pairs)
    mine = sorted({a for a, _ in pairs if a})
    theirs = sorted({b for _, b in pairs if b})
    if not mine or not theirs:
        return same
    ia, ib = {n: i for i, n in enumerate(mine)}, {n: i for i, n in enumerate(theirs)}
    counts = np.zeros((len(mine), len(theirs)))
    for a, b in pairs:
        if a and b:
            counts[ia[a], ib[b]] += 1
    rows, cols = linear_sum_assignment(-counts)
    return same + int(counts[rows, cols].sum())


ONE_SIDE = "<absent>"  # a detection the other side did not write


def compare(ours: Path, theirs: Path, masks: bool, tol: float | None = None) -> dict[str, Any]:
    """Every detection either side wrote, paired (see :func:`_pair_frame`); a detection
    untracked on either side or written by one side only is a difference."""
    a, b = _tracks(ours, masks), _tracks(theirs, masks)
    pairs: list[tuple[str | None, str | None]] = []
    frames = same_frames = 0
    for frame in sorted(set(a) | set(b)):
        da, db = a.get(frame, []), b.get(frame, [])
        if not da and not db:
            continue
        here = [
            (ONE_SIDE if i is None else da[i][2], ONE_SIDE if j is None else db[j][2])
            for i, j in _pair_frame(da, db, tol)
        ]
        pairs += here
        frames += 1
        same_frames += all(x == y and x != ONE_SIDE for x, y in here)
    both = [pair for pair in pairs if ONE_SIDE not in pair]  # one side only: a difference
    named = [(x if x != ONE_SIDE else None, y if y != ONE_SIDE else None) for x, y in pairs]
    n = len(pairs)
    same = _renamed_same(both)
    return {
        "frames": frames,
        "detections": n,
        "same": same,
        "same_pct": 100 * same / max(n, 1),
        "same_name_pct": 100 * sum(x == y and x != ONE_SIDE for x, y in pairs) / max(n, 1),
        "frame_pct": 100 * same_frames / max(frames, 1),
        "untracked": f"{sum(x is None for x, _ in pairs)} / {sum(y is None for _, y in pairs)}",
        "one_side": f"{sum(x == ONE_SIDE for x, _ in pairs)} / "
        f"{sum(y == ONE_SIDE for _, y in pairs)}",
        "tracks": f"{len({x for x, _ in named if x})} / {len({y for _, y in named if y})}",
    }


@functools.cache
def _digest(path: Path) -> str:
    """The detections of ``path`` (coordinates, scores, re-ID vectors, masks), not its bytes:
    our prediction files carry run times, so two equal runs differ byte for byte."""
    h = hashlib.sha1()
    for lf in sio.load_slp(str(path)):
        h.update(str((lf.frame_idx, lf.video.filename)).encode())
        for inst in lf.instances:
            h.update(
                np.ascontiguousarray(
                    inst.numpy(scores=isinstance(inst, sio.PredictedInstance))
                ).tobytes()
            )
            h.update(repr(getattr(inst, "score", None)).encode())
            emb = getattr(inst, "identity_embedding", None)
            if emb is not None:
                h.update(np.asarray(emb.vector, np.float64).tobytes())
        for m in lf.masks:
            h.update(repr((tuple(m.bbox), m.area, getattr(m, "score", None))).encode())
            emb = getattr(m, "identity_embedding", None)
            if emb is not None:
                h.update(np.asarray(emb.vector, np.float64).tobytes())
    return h.hexdigest()


def run_ours(case: Case, source: Path | None, work: Path) -> tuple[Path, float]:
    """Ours on ``case`` at the CLI (raises with the CLI's last line where it fails)."""
    slug = "".join(c if c.isalnum() else "_" for c in case.name)
    ours = work / f"{slug}.ours.slp"
    ours.unlink(missing_ok=True)
    if case.source.startswith("predict:"):
        video, models, frames = REAL[case.source.split(":", 1)[1]]
        args = [*_our_predict_args(video, models, frames), "-t", *case.theirs]
    else:
        args = ["track", str(source), *case.theirs]
    t0 = time.perf_counter()
    code, err = run_infer([*args, "-o", str(ours), "--overwrite"])
    if code != 0:
        lines = [ln for ln in err.strip().splitlines() if ln.strip()]
        raise RuntimeError(lines[-1] if lines else f"exit {code}")
    return ours, time.perf_counter() - t0


def sleap_nn_job(case: Case, source: Path | None, work: Path) -> tuple[Path, dict[str, Any]]:
    """sleap-nn's output path for ``case`` (in the cache) and its job."""
    if case.source.startswith("predict:"):
        video, models, frames = REAL[case.source.split(":", 1)[1]]
        args = [*_sleap_nn_predict_args(video, models, frames), "--tracking", *case.theirs]
        content = "predict"
    else:
        args = ["predict", "-i", str(source), "--tracking", *case.theirs]
        content = _digest(source)  # type: ignore[arg-type]
    key = hashlib.sha1(json.dumps([content, args[3:] if content != "predict" else args]).encode())
    theirs = CACHE / f"{key.hexdigest()[:16]}.slp"
    slug = "".join(c if c.isalnum() else "_" for c in case.name)
    return theirs, {"args": [*args, "-o", str(theirs)], "log": str(work / f"{slug}.sleap_nn.log")}


def run_sleap_nn(jobs: list[dict[str, Any]], work: Path) -> list[dict[str, Any]]:
    """sleap-nn's runs, all in one process; ``{"rc", "error"}`` per job."""
    if not jobs:
        return []
    (work / "jobs.json").write_text(json.dumps(jobs))
    python = SLEAP_NN.parent / "python"
    cmd = [str(python), str(Path(__file__).parent / "sleap_nn_batch.py")]
    cmd += [str(work / "jobs.json"), str(work / "results.json")]
    with open(work / "sleap_nn_batch.log", "a") as log:
        subprocess.run(cmd, stdout=log, stderr=log, check=True)
    return json.loads((work / "results.json").read_text())


HEADER = (
    "| case | frames | detections | same track (after renaming) | same name "
    "| frames all same | untracked (ours / sleap-nn) | one side only (ours / sleap-nn) "
    "| tracks (ours / sleap-nn) | ours s |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def row(name: str, r: dict[str, Any]) -> str:
    return (
        f"| {name} | {r['frames']} | {r['detections']} | {r['same']} ({r['same_pct']:.1f}%) "
        f"| {r['same_name_pct']:.1f}% | {r['frame_pct']:.1f}% | {r['untracked']} "
        f"| {r['one_side']} | {r['tracks']} | {r['ours_s']:.2f} |"
    )


def na_row(name: str, why: str) -> str:
    return f"| {name} | n/a: {why.replace('|', '/')} |" + " |" * 8


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="also write the table here")
    p.add_argument("--cases", nargs="*", help="only cases whose name contains one of these")
    p.add_argument("--work", type=Path, help="keep the tracked files here")
    args = p.parse_args()
    if not FIXTURES.is_dir():
        sys.exit(f"needs the shared fixtures at {FIXTURES}")
    sleap_nn_venv(SLEAP_NN.parents[1])  # installs sleap-nn there on first use
    CACHE.mkdir(parents=True, exist_ok=True)
    flow = importlib.util.find_spec("cv2") is not None
    work = args.work or Path(tempfile.mkdtemp(prefix="tracking_parity_"))
    work.mkdir(parents=True, exist_ok=True)
    sources: dict[str, Path] = {}
    lines: dict[str, str] = {}
    pending: list[tuple[Case, Path, Path, float]] = []
    jobs: list[dict[str, Any]] = []
    cases = [*CASES, *tracker_cases(), *mask_cases(), *real_cases()]
    for case in cases:
        if args.cases and not any(c in case.name for c in args.cases):
            continue
        if case.ours.get("use_flow") and not flow:
            lines[case.name] = na_row(case.name, "OpenCV not installed here")
            continue
        if why := not_ours(case):
            lines[case.name] = na_row(case.name, why)
            continue
        source = None
        if not case.source.startswith("predict:"):
            if case.source not in sources:
                sources[case.source] = INPUTS[case.source](work)
            source = sources[case.source]
        theirs, job = sleap_nn_job(case, source, work)
        try:
            ours, seconds = run_ours(case, source, work)
        except Exception as exc:  # a case ours refuses: n/a, with its one line
            lines[case.name] = na_row(case.name, f"ours: {exc}".splitlines()[0][:160])
            continue
        pending.append((case, ours, theirs, seconds))
        if not theirs.is_file() and job["args"] not in [j["args"] for j in jobs]:
            jobs.append(job)
        lines[case.name] = ""
    outcomes = {json.dumps(j["args"]): o for j, o in zip(jobs, run_sleap_nn(jobs, work))}
    for case, ours, theirs, seconds in pending:
        if not theirs.is_file():
            outcome = next((o for k, o in outcomes.items() if str(theirs) in k), None)
            why = outcome["error"] if outcome else "no output"
            lines[case.name] = na_row(case.name, f"sleap-nn: {why[:160]}")
            continue
        masks = case.source in ("masks", "embedding") or case.source.startswith("masks_")
        tol = PAIR_PX if case.source.startswith("predict:") else None
        lines[case.name] = row(case.name, {**compare(ours, theirs, masks, tol), "ours_s": seconds})
    table = "\n".join([HEADER, *lines.values()])
    print(f"\n{table}")
    if args.out:
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
