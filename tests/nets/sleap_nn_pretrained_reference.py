"""Build sleap-nn 0.3.5's own ``Model`` around a pretrained backbone (a script, not a test).

Usage: ``python sleap_nn_pretrained_reference.py jobs.json`` with ``sleap_nn`` (and its
``omegaconf``) importable next to this venv's ``transformers`` and ``timm``: the sleap-nn
bench venv has no ``transformers``, so the caller puts its packages on the path. Each job
in ``jobs.json`` holds ``model_type``, ``backbone`` (a ``backbone_config.pretrained``
dict whose ``model_name`` is a folder with the HF ``config.json``, ``weights: false``),
``heads`` (the ``head_configs`` block), ``seed``, the input ``shape`` and ``out``, where
the random-init ``state`` dict (``strict=True`` material for our loader), the input
``x`` and every head output are written. One process serves every job: importing
sleap-nn and transformers takes longer than building the tiny models.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from sleap_nn_batch import torchvision_shim

torchvision_shim()  # a CUDA torchvision next to a CPU torch: timm and sleap-nn import it

from omegaconf import OmegaConf  # noqa: E402
from sleap_nn.architectures.model import Model  # noqa: E402

NODES = ["head", "thorax", "tail"]


def run(job: dict) -> None:
    heads = OmegaConf.create(job["heads"])
    for block in heads.values():  # what training fills in before building
        block.setdefault("loss_weight", 1.0)
        if "part_names" in block and block.part_names is None:
            block.part_names = NODES
        if "edges" in block and block.edges is None:
            block.edges = [["head", "thorax"], ["thorax", "tail"]]
    torch.manual_seed(job["seed"])
    model = Model("pretrained", OmegaConf.create(job["backbone"]), heads, job["model_type"])
    model.eval()
    x = torch.rand(*job["shape"])
    with torch.no_grad():
        outputs = model(x)
    torch.save({"state": model.state_dict(), "x": x, "outputs": dict(outputs)}, job["out"])


if __name__ == "__main__":
    for one in json.loads(Path(sys.argv[1]).read_text()):
        run(one)
