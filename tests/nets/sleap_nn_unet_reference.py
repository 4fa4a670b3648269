"""Run sleap-nn 0.3.5's own UNet on saved weights and input (a script for its bench venv).

Usage: ``<bench-venv>/bin/python sleap_nn_unet_reference.py in.pt out.pt``; ``in.pt`` holds
``config`` (a ``backbone_config.unet`` dict), ``state`` and ``x``. Loads ``state`` into
``UNet.from_config(config)`` with ``strict=True`` and writes its decoder outputs, the
middle output and their strides.
"""

from __future__ import annotations

import sys

import torch
from omegaconf import OmegaConf
from sleap_nn.architectures.unet import UNet


def main(in_path: str, out_path: str) -> None:
    given = torch.load(in_path)
    net = UNet.from_config(OmegaConf.create(given["config"])).eval()
    net.load_state_dict(given["state"], strict=True)
    with torch.no_grad():
        result = net(given["x"])
    torch.save(
        {
            "outputs": result["outputs"],
            "strides": [int(s) for s in result["strides"]],
            "middle": result["middle_output"],
        },
        out_path,
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
