"""Same commands, two checkouts, identical outputs: the check behind a refactor.

``run`` predicts every fixture model type (and each output format, tracking,
projects, a lone re-ID model) with one ``infer`` executable into a folder;
``compare`` then says, file by file, whether two such folders hold the same
predictions. HDF5 files (``.slp``, analysis ``.h5``, ``.nwb``) are compared
dataset by dataset, bit for bit (NaN equals NaN); what records *when* and
*how long* (provenance, NWB timestamps and identifiers) is left out, because it
differs between any two runs (the provenance's keys are compared: the same
record is written). CSV files are compared as text.

    python benchmarks/same_outputs.py run --infer OLD/.venv/bin/infer --out /tmp/before
    python benchmarks/same_outputs.py run --infer .venv/bin/infer --out /tmp/after
    python benchmarks/same_outputs.py compare /tmp/before /tmp/after

``--backend auto`` (issue 48) against explicit torch, in one folder, floats within
1e-4 (points, scores, boxes, vectors; masks and everything else exactly), with the
runtime auto ran on each case; ``--backends`` runs each listed backend on every case:

    python benchmarks/same_outputs.py run --infer .venv/bin/infer --out /tmp/auto \
        --backends onnx,auto,torch,openvino
    python benchmarks/same_outputs.py compare /tmp/auto /tmp/auto --pair auto,torch --tol 1e-4

Needs ``../shared/fixtures``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
M = FIXTURES / "models"
V = FIXTURES / "videos"

# name: (models, input, extra flags)
CASES: dict[str, tuple[list[str], str, list[str]]] = {
    "single": (["minimal_instance_single_instance"], "small_robot.mp4", ["--frames", "0-39"]),
    "centroid": (["minimal_instance_centroid"], "centered_pair_small.mp4", ["--frames", "0-39"]),
    "topdown": (
        ["minimal_instance_centroid", "minimal_instance_centered_instance"],
        "centered_pair_small.mp4",
        ["--frames", "0-39"],
    ),
    "bottomup": (["minimal_instance_bottomup"], "centered_pair_small.mp4", ["--frames", "0-39"]),
    "multiclass_bottomup": (
        ["minimal_instance_multiclass_bottomup"],
        "centered_pair_small.mp4",
        ["--frames", "0-39"],
    ),
    # Every instance-stage peak kept: at the default threshold this under-trained model
    # finds no node, which would compare nothing.
    "multiclass_topdown": (
        ["minimal_instance_centroid", "minimal_instance_multiclass_centered_instance"],
        "centered_pair_small.mp4",
        ["--frames", "0-39", "--peak-threshold", "0", "--centroid-peak-threshold", "0.2"],
    ),
    "segmentation": (["synthetic_bottomup_segmentation"], "synthetic_multi.pkg.slp", []),
    "semantic": (["synthetic_semantic_segmentation"], "synthetic_multi.pkg.slp", []),
    "topdown_segmentation": (
        ["synthetic_centroid", "synthetic_centered_instance_segmentation"],
        "synthetic_multi.pkg.slp",
        [],
    ),
    "tiled": (["synthetic_bottomup_segmentation_tiled"], "synthetic_multi.pkg.slp", []),
    "single_tiled": (["synthetic_single_instance_tiled"], "synthetic_single.pkg.slp", []),
    "bbox_centernet": (["synthetic_bbox_centernet"], "synthetic_multi.pkg.slp", []),
    "bbox_ssd": (["synthetic_bbox_ssd"], "synthetic_multi.pkg.slp", []),
    "bbox_topdown_segmentation": (
        ["synthetic_bbox_centernet", "synthetic_centered_instance_segmentation"],
        "synthetic_multi.pkg.slp",
        [],
    ),
    "embedding_fused": (
        ["synthetic_centroid", "synthetic_embedding"],
        "synthetic_multi.pkg.slp",
        [],
    ),
    "embedding_lone": (["synthetic_embedding"], "synthetic_multi.pkg.slp", []),
}
BACKENDS = ("torch", "onnx")
# Torch only: formats, tracking, filters, project flags.
EXTRA: dict[str, tuple[list[str], str, list[str]]] = {
    "topdown_h5": (
        CASES["topdown"][0],
        "centered_pair_small.mp4",
        ["--frames", "0-19", "--format", "analysis-h5"],
    ),
    "topdown_csv": (
        CASES["topdown"][0],
        "centered_pair_small.mp4",
        ["--frames", "0-19", "--format", "csv"],
    ),
    "topdown_nwb": (
        CASES["topdown"][0],
        "centered_pair_small.mp4",
        ["--frames", "0-19", "--format", "nwb"],
    ),
    "bbox_csv": (["synthetic_bbox_centernet"], "synthetic_multi.pkg.slp", ["--format", "csv"]),
    "bottomup_tracked": (
        ["minimal_instance_bottomup"],
        "centered_pair_small.mp4",
        ["--frames", "0-59", "-t"],
    ),
    "segmentation_tracked": (
        ["synthetic_bottomup_segmentation"],
        "synthetic_multi.pkg.slp",
        ["-t"],
    ),
    "segmentation_polygons": (
        ["synthetic_bottomup_segmentation"],
        "synthetic_multi.pkg.slp",
        ["--mask-output", "both"],
    ),
    "topdown_filtered": (
        CASES["topdown"][0],
        "centered_pair_small.mp4",
        ["--frames", "0-39", "--filter-overlapping", "--filter-min-instance-score", "0.3"],
    ),
    "project_labeled": (
        CASES["topdown"][0],
        "minimal_instance.pkg.slp",
        ["--only-labeled-frames"],
    ),
    "embedding_lone_tracked": (["synthetic_embedding"], "synthetic_multi.pkg.slp", ["-t"]),
}
SUFFIX = {"analysis-h5": ".h5", "csv": ".csv", "nwb": ".nwb"}
# Records of when and how long, not of what was predicted.
# The provenance record says how and when a run went (timings, pids, host, dates);
# NWB gives every object a random UUID. Neither is a prediction.
VOLATILE = (
    "provenance",
    "timestamp",
    "identifier",
    "session_start_time",
    "file_create_date",
    "date",
    "object_id",
)


def output_name(case: str, backend: str, flags: list[str]) -> str:
    fmt = flags[flags.index("--format") + 1] if "--format" in flags else "slp"
    return f"{case}.{backend}{SUFFIX.get(fmt, '.slp')}"


def run(
    infer: str, out: Path, only: set[str] | None = None, backends: tuple[str, ...] = BACKENDS
) -> int:
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(c, b, *CASES[c]) for c in CASES for b in backends]
    jobs += [(c, "torch", *EXTRA[c]) for c in EXTRA]
    jobs = [j for j in jobs if only is None or j[0] in only]
    failed = 0
    for case, backend, models, video, flags in jobs:
        target = out / output_name(case, backend, flags)
        cmd = [infer, "predict", str(V / video), "-q", "--backend", backend, "-o", str(target)]
        for m in models:
            cmd += ["-m", str(M / m)]
        cmd += flags
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        took = time.perf_counter() - t0
        status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}"
        print(f"{case:28s} {backend:6s} {status:8s} {took:6.1f}s  {target.name}", flush=True)
        if proc.returncode != 0:
            failed += 1
            print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
    return 1 if failed else 0


def _same_array(a: np.ndarray, b: np.ndarray, tol: float = 0.0) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.fields is not None:
        return all(_same_array(a[f], b[f], tol) for f in a.dtype.names or ())
    if np.issubdtype(a.dtype, np.floating):
        if tol:
            return bool(np.allclose(a, b, rtol=0.0, atol=tol, equal_nan=True))
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def _strip(value: object) -> object:
    """JSON with its provenance and timing keys removed."""
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if k != "provenance" and not any(w in k for w in VOLATILE)
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _attr(value: object) -> object:
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, str):
        try:
            return _strip(json.loads(value))
        except ValueError:
            return value
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _volatile(name: str) -> bool:
    return any(w in name.lower() for w in VOLATILE)


def _record_keys(value: object) -> set[str]:
    """The top-level keys of a JSON record stored as a string (or array of one)."""
    if isinstance(value, np.ndarray):
        value = value.ravel()[0] if value.size else "{}"
    if isinstance(value, bytes):
        value = value.decode()
    try:
        record = json.loads(str(value))
    except ValueError:
        return set()
    return set(record) if isinstance(record, dict) else set()


def compare_h5(a: Path, b: Path, tol: float = 0.0, same_record: bool = True) -> list[str]:
    diffs: list[str] = []
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        names_a: list[str] = []
        names_b: list[str] = []
        fa.visit(names_a.append)
        fb.visit(names_b.append)
        if sorted(names_a) != sorted(names_b):
            diffs.append(f"objects differ: {sorted(set(names_a) ^ set(names_b))}")
        for name in sorted(set(names_a) & set(names_b)):
            if same_record and "provenance" in name and isinstance(fa[name], h5py.Dataset):
                keys_a, keys_b = _record_keys(fa[name][()]), _record_keys(fb[name][()])
                if keys_a != keys_b:
                    diffs.append(f"{name}: other keys ({sorted(keys_a ^ keys_b)})")
            if _volatile(name):
                continue
            oa, ob = fa[name], fb[name]
            for key in set(oa.attrs) | set(ob.attrs):
                if _volatile(key):
                    continue
                va = _attr(oa.attrs.get(key))
                vb = _attr(ob.attrs.get(key))
                if va != vb:
                    diffs.append(f"{name} attr {key} differs")
            if isinstance(oa, h5py.Dataset):
                xa, xb = oa[()], ob[()]
                if isinstance(xa, np.ndarray) and xa.dtype.kind in "SOU":
                    same = [_attr(x) for x in xa.ravel()] == [_attr(x) for x in xb.ravel()]
                elif isinstance(xa, np.ndarray):
                    same = _same_array(xa, xb, tol)
                else:
                    same = _attr(xa) == _attr(xb)
                if not same:
                    diffs.append(f"dataset {name} differs")
    return diffs


def _contents(path: Path) -> str:
    """How much a .slp holds (so "identical" is never about two empty files)."""
    if path.suffix != ".slp":
        return ""
    with h5py.File(path, "r") as f:
        counts = {
            "instances": len(f["instances"]) if "instances" in f else 0,
            "masks": len(f["masks"]) if "masks" in f else 0,
            "boxes": len(f["bboxes/x1"]) if "bboxes/x1" in f else 0,
            "vectors": len(f["embeddings/owner_id"]) if "embeddings/owner_id" in f else 0,
        }
    return ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "EMPTY"


def _ran(path: Path) -> str:
    """The runtime a .slp's run used (its provenance's ``backend``)."""
    if path.suffix != ".slp":
        return ""
    with h5py.File(path, "r") as f:
        raw = f["metadata"].attrs.get("json") if "metadata" in f else None
    record = json.loads(raw.decode() if isinstance(raw, bytes) else raw or "{}")
    return str(record.get("provenance", {}).get("backend", "?"))


def compare(a_dir: Path, b_dir: Path, tol: float = 0.0, pair: tuple[str, str] | None = None) -> int:
    """File by file; with ``pair`` (``auto,torch``) the files of backend ``pair[0]`` in
    ``a_dir`` against the same case's ``pair[1]`` file (their provenance records differ
    by design: which runtime ran and why)."""
    files = sorted(p.name for p in a_dir.iterdir() if p.is_file())
    if pair is not None:
        files = [n for n in files if f".{pair[0]}." in n]
    bad = 0
    for name in files:
        other = b_dir / (name.replace(f".{pair[0]}.", f".{pair[1]}.") if pair else name)
        if not other.exists():
            print(f"{name}: missing in {b_dir}")
            bad += 1
            continue
        if name.endswith(".csv"):
            diffs = [] if (a_dir / name).read_bytes() == other.read_bytes() else ["text differs"]
        else:
            diffs = compare_h5(a_dir / name, other, tol, same_record=pair is None)
        what = "identical" if not tol else f"same within {tol:g}"
        verdict = what if not diffs else "DIFFERENT: " + "; ".join(diffs)
        ran = f"ran {_ran(a_dir / name)}" if pair else ""
        print(f"{name:40s} {ran:14s} {_contents(a_dir / name):32s} {verdict}")
        bad += bool(diffs)
    print(f"{len(files) - bad} of {len(files)} outputs {'identical' if not tol else 'the same'}")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--infer", default="infer")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--only", help="comma-separated case names (default: all)")
    r.add_argument("--backends", default=",".join(BACKENDS), help="comma list, in run order")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--tol", type=float, default=0.0, help="floats may differ by this much")
    c.add_argument("--pair", help="BACKEND,BACKEND: compare these two runs of each case")
    args = parser.parse_args()
    if not FIXTURES.is_dir():
        print(f"needs {FIXTURES}", file=sys.stderr)
        return 2
    if args.cmd == "run":
        only = set(args.only.split(",")) if args.only else None
        return run(args.infer, args.out, only, tuple(args.backends.split(",")))
    pair = tuple(args.pair.split(",")) if args.pair else None
    return compare(args.a, args.b, args.tol, pair)  # type: ignore[arg-type]


if __name__ == "__main__":
    sys.exit(main())
