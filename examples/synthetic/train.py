"""Train the tiny single-instance model shipped in ``examples/models/synthetic_single_instance``.

Writes a sleap-nn-layout model directory (``training_config.yaml`` + ``best.ckpt``)
using our own network definition, so the demo and tests have a real, accurate
model without needing sleap-nn or network access. Run once; takes ~2 min on 2 CPU cores:

    python examples/synthetic/train.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sleap_infer.model.checkpoint import save_checkpoint
from sleap_infer.model.config import parse_config
from sleap_infer.nets import build_network

import scene

OUTPUT_STRIDE = 2
SIGMA = 2.5


def config_dict() -> dict:
    nodes = list(scene.NODE_NAMES)
    return {
        "data_config": {
            "preprocessing": {
                "ensure_rgb": False,
                "ensure_grayscale": False,
                "max_height": scene.SIZE,
                "max_width": scene.SIZE,
                "scale": 1.0,
                "crop_size": None,
            },
            "skeletons": [
                {
                    "name": "synthetic",
                    "nodes": [{"name": n} for n in nodes],
                    "edges": [{"source": {"name": nodes[0]}, "destination": {"name": nodes[1]}}],
                    "symmetries": [],
                }
            ],
        },
        "model_config": {
            "backbone_config": {
                "unet": {
                    "in_channels": 1,
                    "kernel_size": 3,
                    "filters": 8,
                    "filters_rate": 1.5,
                    "max_stride": 16,
                    "stem_stride": None,
                    "middle_block": True,
                    "up_interpolate": True,
                    "stacks": 1,
                    "convs_per_block": 2,
                    "output_stride": OUTPUT_STRIDE,
                },
                "convnext": None,
                "swint": None,
            },
            "head_configs": {
                "single_instance": {
                    "confmaps": {
                        "part_names": nodes,
                        "sigma": SIGMA,
                        "output_stride": OUTPUT_STRIDE,
                    }
                },
                "centroid": None,
                "centered_instance": None,
                "bottomup": None,
                "multi_class_bottomup": None,
                "multi_class_topdown": None,
            },
        },
        "name": "synthetic_single_instance",
        "description": "sleap_infer demo model trained on examples/synthetic/scene.py",
    }


def targets(points: np.ndarray) -> torch.Tensor:
    """Gaussian confidence maps ``(B, N, H/s, W/s)`` for keypoints ``(B, N, 2)``."""
    grid = np.arange(scene.SIZE // OUTPUT_STRIDE) * OUTPUT_STRIDE
    xs = grid[None, None, None, :]
    ys = grid[None, None, :, None]
    px = points[..., 0][..., None, None]
    py = points[..., 1][..., None, None]
    cms = np.exp(-((xs - px) ** 2 + (ys - py) ** 2) / (2 * SIGMA**2))
    return torch.from_numpy(cms.astype(np.float32))


def batch(rng: np.random.Generator, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    centers, angles = scene.random_poses(size, rng)
    imgs, pts = [], []
    for c, a in zip(centers, angles):
        bg = scene._background(rng) * rng.uniform(0.7, 1.3)
        img = scene.render(c, a, bg).astype(np.float32)
        img = np.clip(img + rng.normal(0, 3, img.shape), 0, 255)
        imgs.append(img)
        pts.append(scene.keypoints(c, a))
    x = torch.from_numpy(np.stack(imgs)[:, None].astype(np.uint8))
    return x, targets(np.stack(pts))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parents[1] / "models/synthetic_single_instance"
    )
    args = parser.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    raw = config_dict()
    net = build_network(parse_config(raw))
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps)
    t0 = time.time()
    for step in range(args.steps):
        x, y = batch(rng, args.batch_size)
        loss = torch.nn.functional.mse_loss(net(x)["SingleInstanceConfmapsHead"], y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {loss.item():.5f}  {time.time() - t0:.0f}s", flush=True)
    raw["model_config"]["total_params"] = sum(p.numel() for p in net.parameters())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "training_config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    save_checkpoint(args.out / "best.ckpt", net.state_dict(), global_step=args.steps)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
