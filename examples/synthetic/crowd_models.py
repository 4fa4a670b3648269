"""sleap-nn-layout models for the many-animal scene (crowd.py): build, random-init, train.

The growth benchmarks need multi-animal models whose peaks sit on real animals: with
random weights a confidence map peaks everywhere, and bottom-up grouping then costs what
noise costs, not what animals cost. So the bottom-up and top-down (centroid + centered
instance) models are trained here, briefly, with our own network definition and saved as
sleap-nn saves them (``training_config.yaml`` + ``best.ckpt``), which both tools load.
The frame-size rows instead want a realistic network (UNet filters 32, max stride 32), for
which :func:`write_model` with ``train_steps=0`` saves seeded random weights and zeroes the
heads: the network costs what it costs, and no noise peaks reach the decoders.

    python examples/synthetic/crowd_models.py --out examples/models   # ~6 min, one thread

``--network realistic`` trains the same scene on the realistic network instead (UNet
filters 32, max stride 32; 3M parameters, 12 MB a checkpoint, so not shipped): the int8
rows of the growth benchmark need a model whose cost is the network's, as a lab's is,
and whose peaks sit on animals. Its training frames are 128 px (a multiple of the stride).
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import crowd

from sleap_infer.model.checkpoint import save_checkpoint
from sleap_infer.model.config import parse_config
from sleap_infer.nets import build_network

SIGMA = 2.5  # confidence-map spread, px
PAF_SIGMA = 5.0  # half-width of a part affinity field, px
CROP = 64  # centered-instance crop, px
TRAIN_SIZE = 112  # training frames: up to (112 // CELL)^2 = 4 animals
REALISTIC_TRAIN_SIZE = 128  # the same 4 animals, on a multiple of max stride 32
KINDS = ("bottomup", "centroid", "centered_instance", "single_instance")
SMALL = {"filters": 8, "max_stride": 16}  # the trained crowd models
REALISTIC = {"filters": 32, "max_stride": 32}  # the frame-size rows
CONVNEXT_TINY = {"filters": 0, "max_stride": 32, "backbone": "convnext"}  # frame-size rows too
# --network: folder prefix, network settings, training frame size.
NETWORKS: dict[str, tuple[str, dict[str, int], int]] = {
    "small": ("crowd", SMALL, TRAIN_SIZE),
    "realistic": ("crowd32", REALISTIC, REALISTIC_TRAIN_SIZE),
}
# sleap-nn hands the checkpoint to Lightning, which parses this as a version (no "n/a").
LIGHTNING_VERSION = "2.5.0"


def _skeleton() -> dict[str, Any]:
    return {
        "name": "crowd",
        "nodes": [{"name": n} for n in crowd.NODE_NAMES],
        "edges": [{"source": {"name": a}, "destination": {"name": b}} for a, b in crowd.EDGES],
        "symmetries": [],
    }


def _head(kind: str) -> dict[str, Any]:
    nodes = list(crowd.NODE_NAMES)
    confmaps = {"part_names": nodes, "sigma": SIGMA, "output_stride": 2}
    if kind == "bottomup":  # sleap-nn 0.3.5 requires loss_weight here, and only here
        edges = [list(e) for e in crowd.EDGES]
        pafs = {"edges": edges, "sigma": PAF_SIGMA, "output_stride": 4, "loss_weight": 1.0}
        return {"confmaps": {**confmaps, "loss_weight": 1.0}, "pafs": pafs}
    if kind == "centroid":
        return {"confmaps": {"anchor_part": crowd.ANCHOR, "sigma": SIGMA, "output_stride": 2}}
    if kind == "centered_instance":
        return {"confmaps": {**confmaps, "anchor_part": crowd.ANCHOR}}
    return {"confmaps": confmaps}


def _convnext_tiny() -> dict[str, Any]:
    """sleap-nn 0.3.5's ConvNeXt-tiny backbone block with its defaults (no pretrained
    weights: torchvision would download them), output stride 2 like the UNets here."""
    return {
        "pre_trained_weights": None,
        "model_type": "tiny",
        "arch": None,
        "stem_patch_kernel": 4,
        "stem_patch_stride": 2,
        "in_channels": 1,
        "kernel_size": 3,
        "filters_rate": 2,
        "convs_per_block": 2,
        "up_interpolate": True,
        "output_stride": 2,
        "max_stride": 32,
    }


def config(
    template: dict[str, Any], kind: str, filters: int, max_stride: int, backbone: str = "unet"
) -> dict[str, Any]:
    """``template`` (a sleap-nn training_config.yaml) re-aimed at the crowd scene: its
    skeleton, one ``kind`` head, a UNet with ``filters`` and ``max_stride`` (or, with
    ``backbone="convnext"``, sleap-nn's ConvNeXt-tiny), no frame cap."""
    raw = copy.deepcopy(template)
    pre = raw["data_config"]["preprocessing"]
    pre.update({"max_height": None, "max_width": None, "scale": 1.0, "ensure_rgb": False})
    pre.update(
        {"ensure_grayscale": False, "crop_size": CROP if kind == "centered_instance" else None}
    )
    raw["data_config"]["skeletons"] = [_skeleton()]
    model = raw["model_config"]
    model["backbone_config"] = {
        "unet": {
            "in_channels": 1,
            "kernel_size": 3,
            "filters": filters,
            "filters_rate": 1.5,
            "max_stride": max_stride,
            "stem_stride": None,
            "middle_block": True,
            "up_interpolate": True,
            "stacks": 1,
            "convs_per_block": 2,
            "output_stride": 2,
        },
        "convnext": None,
        "swint": None,
    }
    if backbone == "convnext":
        model["backbone_config"].update(unet=None, convnext=_convnext_tiny())
    elif backbone != "unet":
        raise ValueError(f"backbone {backbone!r}: unet or convnext")
    model["head_configs"] = {k: None for k in model["head_configs"]}
    model["head_configs"][kind] = _head(kind)
    raw.setdefault("trainer_config", {})["run_name"] = f"crowd_{kind}"
    return raw


def _confmaps(points: np.ndarray, size: int, stride: int) -> np.ndarray:
    """``(C, size/stride, size/stride)`` Gaussians, max over instances, for ``points (N, C, 2)``."""
    grid = np.arange(size // stride) * stride
    out = np.zeros((points.shape[1], len(grid), len(grid)), np.float32)
    for inst in points:
        for c, (x, y) in enumerate(inst):
            g = np.exp(-((grid[None, :] - x) ** 2 + (grid[:, None] - y) ** 2) / (2 * SIGMA**2))
            np.maximum(out[c], g, out=out[c])
    return out


def _pafs(points: np.ndarray, size: int, stride: int = 4) -> np.ndarray:
    """``(2 * edges, H, W)`` unit vectors along each edge within PAF_SIGMA of it (x, y per edge)."""
    grid = np.arange(size // stride) * stride
    xx, yy = np.meshgrid(grid, grid)
    index = {n: i for i, n in enumerate(crowd.NODE_NAMES)}
    out = np.zeros((2 * len(crowd.EDGES), len(grid), len(grid)), np.float32)
    for inst in points:
        for e, (a, b) in enumerate(crowd.EDGES):
            p, q = inst[index[a]], inst[index[b]]
            v = q - p
            length = float(np.hypot(*v)) or 1.0
            u = v / length
            along = (xx - p[0]) * u[0] + (yy - p[1]) * u[1]
            across = -(xx - p[0]) * u[1] + (yy - p[1]) * u[0]
            near = (along >= 0) & (along <= length) & (np.abs(across) <= PAF_SIGMA)
            out[2 * e][near] = u[0]
            out[2 * e + 1][near] = u[1]
    return out


def _sample(
    kind: str, rng: np.random.Generator, size: int = TRAIN_SIZE
) -> tuple[np.ndarray, list[np.ndarray]]:
    """One training image (uint8, size x size) and its targets, one array per head."""
    per_side = size // crowd.CELL
    n = 1 if kind == "single_instance" else int(rng.integers(1, per_side**2 + 1))
    scene = crowd.crowd(n, 1, size, seed=int(rng.integers(1 << 31)))
    bg = crowd.background(size, rng) * rng.uniform(0.7, 1.3)
    img = crowd.render(scene.centers[0], scene.angles[0], bg).astype(np.float32)
    img = np.clip(img + rng.normal(0, 3, img.shape), 0, 255).astype(np.uint8)
    pts = scene.keypoints()[0]
    if kind == "bottomup":
        return img, [_confmaps(pts, size, 2), _pafs(pts, size)]
    if kind == "centroid":
        return img, [_confmaps(pts[:, 1:2], size, 2)]
    if kind == "centered_instance":
        pick = int(rng.integers(n))
        x0, y0 = (np.round(pts[pick, 1]) - CROP // 2).astype(int)
        padded = np.pad(img, CROP, mode="constant")
        crop = padded[y0 + CROP : y0 + 2 * CROP, x0 + CROP : x0 + 2 * CROP]
        return crop, [_confmaps(pts[pick : pick + 1] - [x0, y0], CROP, 2)]
    return img, [_confmaps(pts, size, 2)]


def train(
    net: torch.nn.Module,
    kind: str,
    steps: int,
    batch_size: int,
    seed: int,
    size: int = TRAIN_SIZE,
) -> None:
    """Adam on fresh renders each step (MSE on every head); prints the loss now and then."""
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    t0 = time.time()
    for step in range(steps):
        samples = [_sample(kind, rng, size) for _ in range(batch_size)]
        x = torch.from_numpy(np.stack([s[0] for s in samples])[:, None])
        outs = net(x)
        loss = sum(
            torch.nn.functional.mse_loss(
                out, torch.from_numpy(np.stack([s[1][i] for s in samples]))
            )
            for i, out in enumerate(outs.values())
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 100 == 0 or step == steps - 1:
            print(
                f"{kind} step {step:5d} loss {loss.item():.5f} {time.time() - t0:.0f}s", flush=True
            )


def write_model(
    out: Path,
    template: dict[str, Any],
    kind: str,
    *,
    filters: int,
    max_stride: int,
    train_steps: int = 0,
    batch_size: int = 8,
    seed: int = 0,
    backbone: str = "unet",
    train_size: int = TRAIN_SIZE,
) -> Path:
    """A sleap-nn model folder at ``out``: trained for ``train_steps``, or (0) seeded random
    weights with the output heads zeroed (no confidence anywhere, so no peaks)."""
    raw = config(template, kind, filters, max_stride, backbone)
    torch.manual_seed(seed)
    net = build_network(parse_config(raw))
    if train_steps:
        train(net, kind, train_steps, batch_size, seed, train_size)
    else:
        with torch.no_grad():
            for name, p in net.named_parameters():
                if "head_layers" in name:
                    p.zero_()
    raw["model_config"]["total_params"] = sum(p.numel() for p in net.parameters())
    out.mkdir(parents=True, exist_ok=True)
    (out / "training_config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    save_checkpoint(
        out / "best.ckpt",
        net.state_dict(),
        global_step=train_steps,
        lightning_version=LIGHTNING_VERSION,
    )
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--template", type=Path, required=True, help="a sleap-nn training_config.yaml")
    p.add_argument("--out", type=Path, default=Path(__file__).parents[1] / "models")
    p.add_argument("--kinds", default="bottomup,centroid,centered_instance")
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument(
        "--network",
        choices=sorted(NETWORKS),
        default="small",
        help="small: UNet filters 8 (examples/models/crowd_*); realistic: filters 32, max"
        " stride 32 (written as crowd32_*)",
    )
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 on a busy machine)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)  # 2 threads on a busy 2-core machine spin: 40x slower
    template = yaml.safe_load(args.template.read_text())
    prefix, settings, size = NETWORKS[args.network]
    for kind in args.kinds.split(","):
        path = write_model(
            args.out / f"{prefix}_{kind}",
            template,
            kind,
            **settings,
            train_steps=args.steps,
            batch_size=args.batch_size,
            train_size=size,
        )
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
