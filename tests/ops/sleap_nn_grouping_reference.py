"""Run sleap-nn 0.3.5's PAF scoring and grouping on saved cases (a script for its bench venv).

Usage: ``<bench-venv>/bin/python sleap_nn_grouping_reference.py cases.pt out.pt``. Each
case is ``{pafs (1, 2E, H, W), points (P, 2), values (P,), channel (P,), n_nodes, edges,
paf_stride, min_line_scores, min_instance_peaks}``; writes, per case, sleap-nn's
``(instances (I, N, 2), instance scores (I,))`` from ``PAFScorer.predict``, channels-last
PAFs as its predictor passes them. Only ``inference/ops/paf.py`` (and the ``interp1d`` it
needs) are loaded, not the package ``__init__`` with its predictor and torchvision.
"""

from __future__ import annotations

import glob
import importlib.util
import sys
import types
from pathlib import Path

import torch


def _load(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _load_paf() -> types.ModuleType:
    root = Path(glob.glob(f"{sys.prefix}/lib/python3*/site-packages/sleap_nn")[0])
    for pkg in ("sleap_nn", "sleap_nn.inference", "sleap_nn.inference.ops"):
        stub = types.ModuleType(pkg)
        stub.__path__ = []  # a package, without running its __init__
        sys.modules[pkg] = stub
    _load("sleap_nn.inference.utils", root / "inference" / "utils.py")
    return _load("sleap_nn.inference.ops.paf", root / "inference" / "ops" / "paf.py")


def main() -> None:
    paf = _load_paf()
    cases = torch.load(sys.argv[1])
    out = []
    for c in cases:
        scorer = paf.PAFScorer(
            part_names=[str(i) for i in range(c["n_nodes"])],
            edges=[(str(a), str(b)) for a, b in c["edges"]],
            pafs_stride=c["paf_stride"],
            min_line_scores=c["min_line_scores"],
            min_instance_peaks=c["min_instance_peaks"],
        )
        inst, _, scores, *_ = scorer.predict(
            pafs=c["pafs"].permute(0, 2, 3, 1),
            peaks=[c["points"]],
            peak_vals=[c["values"]],
            peak_channel_inds=[c["channel"].to(torch.int32)],
        )
        out.append((inst[0], scores[0]))
    torch.save(out, sys.argv[2])


if __name__ == "__main__":
    main()
