"""Parity of our pretrained (HuggingFace) backbones and sigmoid heads with sleap-nn 0.3.5.

Dev script, not a test (tests never import sleap-nn). Builds sleap-nn's own ``Model``
for tiny random-init HF encoders (ConvNeXtV2, ResNet, Swinv2 in decoder mode; DINOv2 in
encoder mode under an embedding head) from an explicit HF config saved to disk, saves
its weights like training does, loads the folder with ``sleap_infer.load_model``
(``strict=True``) and prints the largest difference of every head output.

Run (sleap-nn unpacked from its wheel, plus omegaconf/loguru; torchvision may be a stub
since no pretrained path uses it)::

    TORCHVISION_STUB=<stub folder> PYTHONPATH=.:<sleap_nn src>:<deps> \\
        python tools/pretrained_parity.py <scratch dir>
"""

from __future__ import annotations

import copy
import os
import sys
from pathlib import Path

import torch
import transformers
import yaml
from omegaconf import OmegaConf

# Load every HF class before a torchvision stub (TORCHVISION_STUB, a folder) can be seen:
# transformers decides once, at import, whether torchvision is there.
for _name in ("ConvNextV2Backbone", "ResNetBackbone", "Swinv2Backbone", "Dinov2Backbone"):
    getattr(transformers, _name)
if os.environ.get("TORCHVISION_STUB"):
    sys.path.append(os.environ["TORCHVISION_STUB"])
from sleap_nn.architectures.model import Model  # noqa: E402

from sleap_infer.model.checkpoint import save_checkpoint  # noqa: E402
from sleap_infer.model.loader import load_model  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from model_factory import config_dict  # noqa: E402

ENCODERS = {
    "convnextv2": transformers.ConvNextV2Config(
        num_channels=3, depths=[1, 1, 1, 1], hidden_sizes=[8, 16, 24, 32]
    ),
    "resnet": transformers.ResNetConfig(
        num_channels=3,
        embedding_size=8,
        hidden_sizes=[8, 16, 24, 32],
        depths=[1, 1, 1, 1],
        layer_type="basic",
    ),
    "swinv2": transformers.Swinv2Config(
        num_channels=3,
        image_size=64,
        embed_dim=8,
        depths=[1, 1, 1, 1],
        num_heads=[1, 1, 2, 2],
        window_size=4,
    ),
    "dinov2": transformers.Dinov2Config(
        num_channels=3,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        patch_size=8,
        image_size=64,
    ),
}
CASES = [  # (encoder, model type, head edits, output stride, mode)
    ("unet", "centroid", {"use_sigmoid_activation": True}, 2, ""),
    ("convnextv2", "centroid", {"use_sigmoid_activation": True}, 2, "auto"),
    ("convnextv2", "bottomup", {}, 4, "auto"),
    ("resnet", "single_instance", {}, 2, "auto"),
    ("swinv2", "multi_class_topdown", {}, 4, "decoder"),
    ("dinov2", "embedding", {}, 2, "auto"),
]


def main(scratch: Path) -> None:
    torch.manual_seed(0)
    for encoder, model_type, edits, stride, mode in CASES:
        folder = scratch / f"{encoder}_{model_type}"
        hf_dir = folder / "pretrained_backbone"
        raw = config_dict(model_type)
        if encoder in ENCODERS:
            ENCODERS[encoder].save_pretrained(hf_dir)
            raw["model_config"]["backbone_config"] = {
                "unet": None, "convnext": None, "swint": None,
                "pretrained": {
                    "source": "hf", "model_name": str(hf_dir), "weights": False, "mode": mode,
                    "in_channels": 3, "output_stride": stride, "max_stride": 32,
                    "normalize": True, "filters_rate": 2.0, "convs_per_block": 2,
                    "kernel_size": 3, "up_interpolate": True,
                },
            }  # fmt: skip
        backbone_type = "pretrained" if encoder in ENCODERS else encoder
        heads = raw["model_config"]["head_configs"][model_type]
        for block in heads.values():
            block["output_stride"] = stride if model_type != "embedding" else 32
        if edits:
            heads["confmaps"].update(edits)
        if model_type == "multi_class_topdown":
            heads["class_vectors"]["output_stride"] = 32
        head_cfg = OmegaConf.create(copy.deepcopy(heads))
        for block in head_cfg.values():  # what training fills in before building
            block.setdefault("loss_weight", 1.0)
            if "part_names" in block and block.part_names is None:
                block.part_names = ["head", "thorax", "tail"]
            if "edges" in block and block.edges is None:
                block.edges = [["head", "thorax"], ["thorax", "tail"]]
        backbone_cfg = raw["model_config"]["backbone_config"][backbone_type]
        theirs = Model(backbone_type, OmegaConf.create(backbone_cfg), head_cfg, model_type).eval()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "training_config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
        save_checkpoint(folder / "best.ckpt", theirs.state_dict())
        ours = load_model(folder).network
        x = torch.rand(2, 1, 64, 96)
        if model_type == "embedding":
            x = torch.rand(2, 1, 64, 64)
        with torch.no_grad():
            ref = theirs(x)
            got = ours(x)
        for name, tensor in ref.items():
            gap = (got[name] - tensor).abs().max().item()
            lo, hi = tensor.min().item(), tensor.max().item()
            print(
                f"{encoder:10s} {model_type:20s} {name:28s} shape {tuple(tensor.shape)} "
                f"range [{lo:.3g}, {hi:.3g}] max|diff| {gap:.2e}"
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
