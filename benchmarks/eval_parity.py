#!/usr/bin/env python
"""Evaluation parity: our ``infer eval`` metrics vs ``sleap-nn eval`` (0.3.5), same files.

Each case scores one prediction file against one ground truth twice: with
``sleap-nn eval -g GT -p PRED -s metrics.npz [flags]`` (in
``.bench-venv/sleap-nn``; its ``.json`` sibling is read back) and with
:func:`sleap_infer.evaluation.evaluate_files`. Every key sleap-nn writes is
compared exactly (arrays element by element), not only the headline numbers.

Cases: sleap-nn's own reference predictions of the tiled single-instance
model; ``infer predict`` top-down, bottom-up and single-instance predictions
on ``minimal_instance.pkg.slp``; and a perturbed copy of
``synthetic_multi.pkg.slp`` (noise, far-off and extra instances, dropped
nodes and frames, a one-visible-node ground truth, predicted instances in
the ground truth) under several option sets. Prints markdown tables:

    .venv/bin/python benchmarks/eval_parity.py [--out results.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sleap_io as sio

from sleap_infer.evaluation import evaluate_files, headline, to_json_safe
from sleap_infer.evaluation.report import HEADLINE

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
SLEAP_NN = ROOT / ".bench-venv" / "sleap-nn" / "bin" / "sleap-nn"
INFER = ROOT / ".venv" / "bin" / "infer"
VIDEOS = FIXTURES / "videos"
MODELS = FIXTURES / "models"


@dataclass(frozen=True)
class Case:
    name: str
    gt: Path
    pred: Path
    ours: dict[str, Any]
    theirs: tuple[str, ...] = ()


def predict(work: Path, name: str, models: list[str], video: Path) -> Path:
    """``infer predict`` on the CPU, once per run."""
    out = work / f"{name}.slp"
    cmd = [str(INFER), "predict", str(video), "-o", str(out), "-d", "cpu", "-q"]
    for m in models:
        cmd += ["-m", str(MODELS / m)]
    subprocess.run(cmd, check=True, capture_output=True)
    return out


def perturbed(work: Path, seed: int = 0) -> tuple[Path, Path]:
    """A ground truth and noisy predictions built from ``synthetic_multi.pkg.slp``.

    Ground truth: frame 3's first animal keeps one visible node (zero-area
    box: the distance fallback), frame 7 also holds a predicted instance.
    Predictions: 0.5 px noise, a few nodes dropped, one animal 15 px off, an
    extra false positive in some frames, frame 5 missing, frame 9 empty.
    """
    rng = np.random.default_rng(seed)
    labels = sio.load_slp(str(VIDEOS / "synthetic_multi.pkg.slp"))
    skeleton, video = labels.skeletons[0], labels.videos[0]
    gt_frames, pred_frames = [], []
    for lf in labels:
        gt_points = [inst.numpy() for inst in lf.user_instances]
        if lf.frame_idx == 3:
            gt_points[0][1] = np.nan
        gt = [sio.Instance.from_numpy(p, skeleton=skeleton) for p in gt_points]
        if lf.frame_idx == 7:
            extra = gt_points[0] + 4.0
            gt.append(sio.PredictedInstance.from_numpy(extra, skeleton=skeleton, score=0.5))
        gt_frames.append(sio.LabeledFrame(video=video, frame_idx=lf.frame_idx, instances=gt))
        if lf.frame_idx == 5:
            continue
        preds = []
        for k, p in enumerate(gt_points if lf.frame_idx != 9 else []):
            q = p + rng.normal(0, 0.5, p.shape)
            if k == 1 and lf.frame_idx % 4 == 0:
                q += 15.0
            q[rng.random(len(q)) < 0.1] = np.nan
            preds.append(q)
        if lf.frame_idx % 3 == 0:
            preds.append(rng.uniform(0, 128, (len(skeleton.nodes), 2)))
        instances = [
            sio.PredictedInstance.from_numpy(q, skeleton=skeleton, score=float(rng.uniform(0.3, 1)))
            for q in preds
        ]
        pred_frames.append(
            sio.LabeledFrame(video=video, frame_idx=lf.frame_idx, instances=instances)
        )
    gt_path, pred_path = work / "perturbed_gt.slp", work / "perturbed_pred.slp"
    sio.save_slp(sio.Labels(gt_frames, videos=[video], skeletons=[skeleton]), str(gt_path))
    sio.save_slp(sio.Labels(pred_frames, videos=[video], skeletons=[skeleton]), str(pred_path))
    return gt_path, pred_path


def cases(work: Path) -> list[Case]:
    mi = VIDEOS / "minimal_instance.pkg.slp"
    topdown = predict(
        work, "topdown", ["minimal_instance_centroid", "minimal_instance_centered_instance"], mi
    )
    bottomup = predict(work, "bottomup", ["minimal_instance_bottomup"], mi)
    single = predict(work, "single", ["minimal_instance_single_instance"], mi)
    gt, pred = perturbed(work)
    return [
        Case(
            "synthetic_single vs sleap-nn tiled single-instance",
            VIDEOS / "synthetic_single.pkg.slp",
            FIXTURES / "reference" / "single_instance_tiled.slp",
            {},
        ),
        Case("minimal_instance vs infer top-down", mi, topdown, {}),
        Case("minimal_instance vs infer bottom-up", mi, bottomup, {}),
        Case("minimal_instance vs infer single-instance", mi, single, {}),
        Case("perturbed synthetic_multi", gt, pred, {}),
        Case(
            "perturbed, stddev 0.05, threshold 0.3",
            gt,
            pred,
            {"oks_stddev": 0.05, "match_threshold": 0.3},
            ("--oks_stddev", "0.05", "--match_threshold", "0.3"),
        ),
        Case(
            "perturbed, oks_scale 400",
            gt,
            pred,
            {"oks_scale": 400.0},
            ("--oks_scale", "400"),
        ),
        Case(
            "perturbed, all labels",
            gt,
            pred,
            {"user_labels_only": False},
            ("--no-user_labels_only",),
        ),
    ]


def sleap_nn_metrics(case: Case, work: Path) -> dict[str, Any]:
    npz = work / "theirs.npz"
    npz.with_suffix(".json").unlink(missing_ok=True)
    cmd = [str(SLEAP_NN), "eval", "-g", str(case.gt), "-p", str(case.pred), "-s", str(npz)]
    subprocess.run([*cmd, *case.theirs], check=True, capture_output=True)
    return json.loads(npz.with_suffix(".json").read_text())


def compare(ours: dict[str, Any], theirs: dict[str, Any]) -> tuple[int, list[str]]:
    """Keys sleap-nn wrote, and those whose value we do not reproduce exactly."""
    n, differ = 0, []
    for section, values in theirs.items():
        for key, value in values.items():
            n += 1
            if ours.get(section, {}).get(key, "missing") != value:
                differ.append(f"{section}.{key}")
    return n, differ


def fmt(value: float | None) -> str:
    return "NaN" if value is None or value != value else f"{value:.6g}"


def run(work: Path) -> str:
    lines = []
    summary = ["| case | keys compared | identical | differing |", "|---|---|---|---|"]
    for case in cases(work):
        theirs = sleap_nn_metrics(case, work)
        raw = evaluate_files(case.gt, case.pred, **case.ours)
        ours = to_json_safe(raw)
        n, differ = compare(ours, theirs)
        summary.append(f"| {case.name} | {n} | {n - len(differ)} | {', '.join(differ) or '-'} |")
        lines += [
            f"\n### {case.name}\n",
            "| metric | ours | sleap-nn | equal? |",
            "|---|---|---|---|",
        ]
        for (label, value, _), (_, section, key, _) in zip(headline(raw), HEADLINE, strict=True):
            other = theirs[section][key]
            same = ours[section][key] == other
            lines.append(f"| {label} | {fmt(value)} | {fmt(other)} | {'yes' if same else 'NO'} |")
        c = raw["counts"]
        lines.append(
            f"\n{c['frame_pairs']} frame pairs, {c['matched']}/{c['gt_instances']} GT matched, "
            f"{c['unmatched_pred']} predictions unmatched"
        )
    return "\n".join(["## Summary\n", *summary, *lines])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--out", type=Path, help="Also write the tables here.")
    args = parser.parse_args()
    for needed in (SLEAP_NN, INFER, VIDEOS):
        if not needed.exists():
            sys.exit(f"{needed}: not found")
    with tempfile.TemporaryDirectory() as tmp:
        report = run(Path(tmp))
    print(report)
    if args.out:
        args.out.write_text(report + "\n")


if __name__ == "__main__":
    main()
