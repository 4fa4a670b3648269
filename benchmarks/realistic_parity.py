#!/usr/bin/env python
"""Parity on sleap-nn-trained models of realistic shape (issue 50): train, then compare.

The shared fixtures are tiny (filters 8-16, max stride 4-8) and trained for a few
steps, which hides what real models do: a confident sigmoid centroid head saturates
to exactly 1.0 on neighbouring pixels (flat-topped peaks), UNets use ``stem_stride``,
deeper strides and wider layers. This script

1. writes one sleap-nn ``training_config.yaml`` per recipe: a fixture model's config
   with a realistic backbone and head, the recipe's labels, ``--epochs`` and the
   output folder;
2. with ``--train``, trains each with ``sleap-nn train`` in the bench venv (minutes of
   CPU per recipe at the defaults; the tests never do);
3. compares whole-video predictions of sleap-nn and ours (torch, onnx) on the trained
   models with :mod:`agreement`'s own machinery (same table, same matching).

    .venv/bin/python benchmarks/realistic_parity.py --dry-run          # configs + commands
    .venv/bin/python benchmarks/realistic_parity.py --train --epochs 5
    .venv/bin/python benchmarks/realistic_parity.py --recipes centroid_sigmoid --frames 0-99

Trained models stay in ``--out`` (default ``.bench-venv/realistic``) and are reused: a
recipe whose folder holds ``best.ckpt`` is not trained again unless ``--retrain``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))
OUT = ROOT / ".bench-venv" / "realistic"


@dataclass(frozen=True)
class Recipe:
    """A fixture model's config with a realistic backbone and head settings."""

    base: str  # fixture model folder whose training_config.yaml is the template
    labels: str  # under FIXTURES/videos
    video: str  # predicted by both tools
    unet: dict[str, Any]  # the backbone's settings (a UNet's unless ``backbone`` says)
    # Dotted paths under model_config.head_configs -> value.
    head: dict[str, Any] = field(default_factory=dict)
    # sleap-nn's backbone_config key; another than "unet" replaces the fixture's UNet
    # with ``unet`` as that backbone's whole config (sleap-nn's built-in ConvNeXt, Swin-T).
    backbone: str = "unet"


CONVNEXT_TINY = {
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
REALISTIC_UNET = {"filters": 32, "filters_rate": 1.5, "max_stride": 16, "up_interpolate": True}

RECIPES: dict[str, Recipe] = {
    # Focal-style sigmoid centroid head: saturated maps, flat-topped peaks (item 1).
    "centroid_sigmoid": Recipe(
        "minimal_instance_centroid",
        "minimal_instance.pkg.slp",
        "centered_pair_small.mp4",
        {**REALISTIC_UNET, "output_stride": 2},
        {"centroid.confmaps.use_sigmoid_activation": True, "centroid.confmaps.output_stride": 2},
    ),
    # A stem-strided UNet (item 2): sleap-nn trains stem_stride 2.
    "single_instance_stem2": Recipe(
        "minimal_instance_single_instance",
        "small_robot_minimal.slp",
        "small_robot.mp4",
        {**REALISTIC_UNET, "filters": 16, "stem_stride": 2, "output_stride": 2},
        {"single_instance.confmaps.output_stride": 2},
    ),
    # Deeper, wider bottom-up: more peaks per node, PAFs at stride 4.
    "bottomup": Recipe(
        "minimal_instance_bottomup",
        "minimal_instance.pkg.slp",
        "centered_pair_small.mp4",
        {**REALISTIC_UNET, "output_stride": 2},
        {"bottomup.confmaps.output_stride": 2, "bottomup.pafs.output_stride": 4},
    ),
    # sleap-nn's built-in ConvNeXt-T (from scratch): a non-UNet backbone at stride 32.
    "bottomup_convnext": Recipe(
        "minimal_instance_bottomup",
        "minimal_instance.pkg.slp",
        "centered_pair_small.mp4",
        CONVNEXT_TINY,
        {"bottomup.confmaps.output_stride": 2, "bottomup.pafs.output_stride": 4},
        backbone="convnext",
    ),
    # Multi-class bottom-up: identity maps instead of PAFs.
    "multiclass_bottomup": Recipe(
        "minimal_instance_multiclass_bottomup",
        "minimal_instance.pkg.slp",
        "centered_pair_small.mp4",
        {**REALISTIC_UNET, "output_stride": 2},
        {
            "multi_class_bottomup.confmaps.output_stride": 2,
            "multi_class_bottomup.class_maps.output_stride": 2,
        },
    ),
}


def training_config(
    name: str, recipe: Recipe, out: Path, epochs: int, steps: int = 100, lr: float = 1e-4
) -> dict[str, Any]:
    """The recipe's ``training_config.yaml`` as a dict: the fixture's, realistic.

    ``steps`` per epoch and ``lr`` trade training time for peak strength: on a shared
    2-CPU machine 3 epochs of 40 steps at 1e-3 give maps with peaks near 1 in minutes
    (sleap-nn's 100 steps at 1e-4 need ~4 minutes per epoch and stay near 0.25 loss).
    """
    base = FIXTURES / "models" / recipe.base / "training_config.yaml"
    raw = copy.deepcopy(yaml.safe_load(base.read_text()))
    raw["data_config"]["train_labels_path"] = [str(FIXTURES / "videos" / recipe.labels)]
    raw["data_config"]["val_labels_path"] = None
    model = raw["model_config"]
    if recipe.backbone == "unet":
        model["backbone_config"]["unet"].update(recipe.unet)
    else:
        model["backbone_config"]["unet"] = None
        model["backbone_config"][recipe.backbone] = dict(recipe.unet)
    model.pop("total_params", None)  # sleap-nn writes the new count
    for dotted, value in recipe.head.items():
        *parents, leaf = dotted.split(".")
        node = model["head_configs"]
        for key in parents:
            node = node[key]
        node[leaf] = value
    trainer = raw["trainer_config"]
    trainer.update(
        {
            "max_epochs": epochs,
            "ckpt_dir": str(out),
            "run_name": name,
            "trainer_accelerator": "cpu",
            "use_wandb": False,
            "save_ckpt": True,
            "train_steps_per_epoch": steps,
            "min_train_steps_per_epoch": steps,
        }
    )
    trainer["optimizer"]["lr"] = lr
    return raw


def write_config(
    name: str, recipe: Recipe, out: Path, epochs: int, steps: int = 100, lr: float = 1e-4
) -> Path:
    """``out/configs/<name>.yaml``; never inside a fixture folder."""
    path = out / "configs" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = training_config(name, recipe, out, epochs, steps, lr)
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


SHIM_WRAPPER = """#!{python}
# sleap-nn's CLI with benchmarks/sleap_nn_batch.py's torchvision shim first (written by
# realistic_parity.py): a CUDA torchvision next to a CPU torch cannot import otherwise.
import sys
sys.path.insert(0, {benchmarks!r})
from sleap_nn_batch import torchvision_shim
torchvision_shim()
from sleap_nn.cli import cli
sys.argv[0] = "sleap-nn"
cli()
"""


def shimmed_exe(venv: Path, out: Path) -> Path:
    """``out/sleap-nn``: the venv's CLI behind the torchvision shim.

    The bench venv's ``bin/sleap-nn`` dies at import on ``operator torchvision::nms
    does not exist`` where the mirror pairs a CUDA torchvision with a CPU torch;
    training and predicting never call ``nms``, so the shim's schema-only op is enough.
    """
    exe = out / "sleap-nn"
    text = SHIM_WRAPPER.format(
        python=venv / "bin" / "python", benchmarks=str(Path(__file__).parent)
    )
    if not exe.exists() or exe.read_text() != text:
        exe.write_text(text)
        exe.chmod(0o755)
    return exe


def train_cmd(exe: Path, config: Path) -> list[str]:
    return [str(exe), "train", "--config", str(config)]


def model_dir(out: Path, name: str) -> Path:
    """Where ``sleap-nn train`` writes the recipe's model (``ckpt_dir/run_name``)."""
    return out / name


def compare(names: list[str], exe: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Both tools over each trained model's video, tabulated by agreement.py.

    Predictions go to ``--out``/results (sleap-nn's, cached and shared) and
    results/<label> (ours), so the package before a fix (``PYTHONPATH``) and after it
    are compared with the very same sleap-nn output.
    """
    sys.path.insert(0, str(Path(__file__).parent))
    import agreement

    models = args.out
    run = argparse.Namespace(**vars(args))
    run.out = args.out / "results"
    run.ours_out = run.out / args.label
    run.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "SLEAP_INFER_CACHE": cache}
        for name in names:
            recipe = RECIPES[name]
            # An absolute model path: agreement joins it under FIXTURES/models unchanged.
            agreement.CASES[name] = agreement.Case([str(model_dir(models, name))], recipe.video)
            report[name] = agreement.run_case(name, exe, run, env)
    agreement.print_table(report)
    for name, res in report.items():
        print(
            f"{name}: refinement guard fired on {res['refinement_fallbacks']} peaks;"
            f" flat-top pixels {res['flat_tops']}"
        )
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--recipes", default=",".join(RECIPES), help=f"comma list of {', '.join(RECIPES)}"
    )
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--steps", type=int, default=40, help="training steps per epoch")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--train", action="store_true", help="train recipes without a best.ckpt")
    p.add_argument("--retrain", action="store_true", help="train every recipe again")
    p.add_argument(
        "--dry-run", action="store_true", help="write configs, print the training commands, stop"
    )
    p.add_argument("--frames", default=None, help="e.g. 0-99 for a quick comparison")
    p.add_argument("--backends", default="torch,onnx")
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--peak-threshold", type=float, default=0.2)
    p.add_argument(
        "--min-line-scores",
        type=float,
        default=None,
        help="bottom-up grouping, both tools (a few epochs leave PAF lines under 0.25)",
    )
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument(
        "--label", default="after", help="results/<label>/ holds ours (e.g. before, after)"
    )
    p.add_argument("--json", type=Path, default=None, help="write the report here")
    p.add_argument("--venv", type=Path, default=ROOT / ".bench-venv" / "sleap-nn")
    args = p.parse_args()
    if not (FIXTURES / "models").is_dir():
        raise SystemExit(f"shared fixtures not found at {FIXTURES} (set SLEAP_INFER_FIXTURES)")
    names = args.recipes.split(",")
    unknown = [n for n in names if n not in RECIPES]
    if unknown:
        raise SystemExit(f"unknown recipe {unknown[0]!r}: choose from {', '.join(RECIPES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    exe = args.venv / "bin" / "sleap-nn"
    if not args.dry_run:
        sys.path.insert(0, str(Path(__file__).parent))
        from vs_sleap_nn import sleap_nn_venv

        sleap_nn_venv(args.venv)  # installs it there once, as agreement.py does
        exe = shimmed_exe(args.venv, args.out)
    to_train = []
    for name in names:
        config = write_config(name, RECIPES[name], args.out, args.epochs, args.steps, args.lr)
        trained = (model_dir(args.out, name) / "best.ckpt").exists()
        if args.retrain or ((args.train or args.dry_run) and not trained):
            to_train.append((name, config))
        elif not trained and not args.dry_run:
            raise SystemExit(
                f"{name}: no trained model in {model_dir(args.out, name)}; use --train"
            )
        print(f"{name}: {config}", flush=True)
    for _name, config in to_train:
        print(" ".join(train_cmd(exe, config)), flush=True)
        if not args.dry_run:
            subprocess.run(train_cmd(exe, config), check=True)
    if args.dry_run:
        return
    # agreement.run_case reads these.
    args.backends = args.backends.split(",")
    args.compare_only, args.rerun = False, False
    report = compare(names, exe, args)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
