"""Sigmoid-head parity across runtimes: maps and decoded peaks, torch vs ONNX Runtime vs
OpenVINO, for centroid models with ``use_sigmoid_activation: true``.

Maps: the network alone (its ``nn.Sigmoid`` written out as our exports write it),
exported with ``torch.onnx.export`` and run by each runtime. Peaks: the real layers on
each backend (the exported graph decodes in-graph). Builds a random-weight UNet centroid
model in ``<scratch>``; pass more centroid model folders to check them too (e.g. the
ConvNeXtV2 one ``tools/pretrained_parity.py`` writes)::

    PYTHONPATH=. python tools/sigmoid_parity.py <scratch> [model folder ...]
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import openvino as ov
import torch

from sleap_infer.core.options import PredictOptions
from sleap_infer.export.wrappers.base import with_plain_sigmoids
from sleap_infer.layers import build_layer
from sleap_infer.model.loader import load_model
from sleap_infer.runtimes import backend_maker

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from model_factory import config_dict, write_model_dir

FRAMES = np.random.default_rng(11).integers(0, 256, (4, 64, 96, 1), dtype=np.uint8)
HEAD = "CentroidConfmapsHead"


class _Maps(torch.nn.Module):
    def __init__(self, network: torch.nn.Module) -> None:
        super().__init__()
        self.network = network

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)[HEAD]


def _check(folder: Path, scratch: Path) -> None:
    model = load_model(folder)
    nchw = np.ascontiguousarray(FRAMES.transpose(0, 3, 1, 2))
    with torch.no_grad():
        ref = model.network(torch.from_numpy(nchw))[HEAD].numpy()
    path = scratch / f"{folder.name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = _Maps(with_plain_sigmoids(model.network).eval())
        torch.onnx.export(net, (torch.from_numpy(nchw),), str(path), input_names=["image"])
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    by_ort = session.run(None, {"image": nchw})[0]
    compiled = ov.Core().compile_model(str(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    by_ov = compiled(nchw)[0]
    print(
        f"{folder.name}: maps in [{ref.min():.4f}, {ref.max():.4f}]; max|diff| vs torch: "
        f"onnxruntime {np.abs(by_ort - ref).max():.2e}, openvino {np.abs(by_ov - ref).max():.2e}"
    )
    options = PredictOptions(peak_threshold=0.5, max_instances=8)
    base = build_layer([model], backend_maker("torch", "cpu"), options).predict(FRAMES)
    for runtime in ("onnx", "openvino"):
        got = build_layer([model], backend_maker(runtime, "cpu"), options).predict(FRAMES)
        xy = np.nanmax(np.abs(got.extras["centroids"] - base.extras["centroids"]))
        score = np.nanmax(np.abs(got.instance_scores - base.instance_scores))
        print(
            f"  {runtime}: {int(base.valid.sum())} peaks, same slots "
            f"{bool((got.valid == base.valid).all())}, max|xy diff| {xy:.2e} px, "
            f"max|score diff| {score:.2e}"
        )


def main(scratch: Path, folders: list[Path]) -> None:
    raw = config_dict("centroid")
    raw["model_config"]["head_configs"]["centroid"]["confmaps"]["use_sigmoid_activation"] = True
    unet = write_model_dir(scratch / "unet_sigmoid_centroid", raw, seed=3)
    for folder in [unet, *folders]:
        _check(folder, scratch)


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
