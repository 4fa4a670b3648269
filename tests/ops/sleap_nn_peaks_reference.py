"""Run sleap-nn 0.3.5's own peak finding on saved maps (a script for its bench venv).

Usage: ``<bench-venv>/bin/python sleap_nn_peaks_reference.py maps.pt out.pt``. Writes
``{(kind, threshold, refinement): outputs}`` for kind ``local``/``global``,
thresholds 0.1 and 0.6, refinement ``None``/``"integral"``.

sleap-nn's package ``__init__`` imports its whole predictor (and torchvision); only
``inference/ops/peaks.py`` and ``crops.py`` are loaded here, with its
``make_centered_bboxes`` taken from the data layer's source, so the numbers are
its code's, unchanged.
"""

from __future__ import annotations

import ast
import glob
import importlib.util
import sys
import types
from pathlib import Path

import torch


def _load_peaks() -> types.ModuleType:
    root = glob.glob(f"{sys.prefix}/lib/python3*/site-packages/sleap_nn")[0]
    src = Path(root, "data", "instance_cropping.py").read_text()
    fn = next(
        n
        for n in ast.parse(src).body
        if isinstance(n, ast.FunctionDef) and n.name == "make_centered_bboxes"
    )
    cropping = types.ModuleType("sleap_nn.data.instance_cropping")
    exec("import torch\n" + str(ast.get_source_segment(src, fn)), cropping.__dict__)
    for name in ("sleap_nn", "sleap_nn.data", "sleap_nn.inference", "sleap_nn.inference.ops"):
        package = types.ModuleType(name)
        package.__path__ = []
        sys.modules[name] = package
    sys.modules["sleap_nn.data.instance_cropping"] = cropping
    module = None
    for name in ("crops", "peaks"):
        full = f"sleap_nn.inference.ops.{name}"
        spec = importlib.util.spec_from_file_location(full, f"{root}/inference/ops/{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
    assert module is not None
    return module


def main(maps_path: str, out_path: str) -> None:
    peaks = _load_peaks()
    maps = torch.load(maps_path)
    out = {}
    for threshold in (0.1, 0.6):
        for refinement in (None, "integral"):
            out[("local", threshold, refinement)] = peaks.find_local_peaks(
                maps, threshold, refinement
            )
            out[("global", threshold, refinement)] = peaks.find_global_peaks(
                maps, threshold, refinement
            )
    torch.save(out, out_path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
