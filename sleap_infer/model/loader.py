"""Resolve a user-given model path to a directory, and load its network.

A model path may be the directory sleap-nn trained into, or its
``best.ckpt`` / ``training_config.yaml``; all resolve to the directory.
Legacy SLEAP 1.x directories (``training_config.json`` + ``best_model.h5``,
or either file) load through :mod:`sleap_infer.model.legacy` into the same
config and network types; a folder with both configs is a sleap-nn one.
A folder written by ``infer export`` loads without a checkpoint
(:mod:`sleap_infer.model.exported`): config and hash only, no network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from sleap_infer.core.config import ModelConfig
from sleap_infer.core.errors import ModelError
from sleap_infer.core.files import file_sha256
from sleap_infer.core.startup import span
from sleap_infer.model.checkpoint import load_state_dict
from sleap_infer.model.config import load_config
from sleap_infer.model.legacy import LEGACY_CONFIG, LEGACY_WEIGHTS, check_legacy_dir, load_legacy
from sleap_infer.nets import build_network

CONFIG_NAME = "training_config.yaml"
CKPT_NAME = "best.ckpt"


def resolve_model_dir(path: str | Path) -> Path:
    """The model directory a path points at, or a :class:`ModelError` saying why not."""
    p = Path(path).expanduser()
    if not p.exists():
        raise ModelError(f"{p}: model path does not exist")
    if p.is_file():
        if p.suffix in (".ckpt", ".h5") or p.name.startswith("training_config"):
            p = p.parent
        else:
            raise ModelError(
                f"{p}: expected a model directory, best.ckpt or training_config.yaml "
                f"(or a SLEAP 1.x {LEGACY_WEIGHTS})"
            )
    from sleap_infer.model.exported import is_export_dir

    if is_export_dir(p):
        return p
    if not (p / CONFIG_NAME).exists():
        if (p / LEGACY_CONFIG).exists():
            check_legacy_dir(p)
            return p
        raise ModelError(f"{p}: no {CONFIG_NAME} in model directory")
    if not (p / CKPT_NAME).exists():
        raise ModelError(f"{p}: no {CKPT_NAME} in model directory")
    return p


@dataclass
class LoadedModel:
    """A model directory's parsed config and its network with weights loaded."""

    path: Path
    config: ModelConfig
    network: torch.nn.Module
    checkpoint_sha256: str
    legacy: bool = False  # a SLEAP 1.x folder (training_config.json + best_model.h5)
    # An ``infer export`` folder run on its own: ``network`` is None, the graph is here.
    export_dir: Path | None = None

    @property
    def model_type(self) -> str:
        return self.config.model_type

    @property
    def config_file(self) -> Path:
        """The training config the model was read from (YAML, or SLEAP 1.x's JSON)."""
        return self.path / (LEGACY_CONFIG if self.legacy else CONFIG_NAME)

    @property
    def weights_file(self) -> Path:
        return self.path / (LEGACY_WEIGHTS if self.legacy else CKPT_NAME)


def _describe_mismatch(missing: list[str], unexpected: list[str]) -> str:
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing (e.g. {missing[0]})")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected (e.g. {unexpected[0]})")
    return ", ".join(parts)


def _load_sleap_nn(model_dir: Path) -> tuple[ModelConfig, torch.nn.Module]:
    """Parse the config, rebuild the network and load ``best.ckpt`` strictly."""
    with span("config_parse"):
        config = load_config(model_dir / CONFIG_NAME)
    ckpt_path = model_dir / CKPT_NAME
    with span("checkpoint_read"):
        state = load_state_dict(ckpt_path, config.model_type)
    with span("network_build"):
        network = build_network(config)
    expected = network.state_dict()
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    if missing or unexpected:
        raise ModelError(
            f"{ckpt_path}: weights do not match {CONFIG_NAME} "
            f"({_describe_mismatch(missing, unexpected)})"
        )
    wrong = [k for k, v in expected.items() if tuple(v.shape) != tuple(state[k].shape)]
    if wrong:
        k = wrong[0]
        raise ModelError(
            f"{ckpt_path}: weights do not match {CONFIG_NAME} ({len(wrong)} tensors differ "
            f"in shape, e.g. {k}: checkpoint {tuple(state[k].shape)} vs config "
            f"{tuple(expected[k].shape)})"
        )
    _refuse_non_float(ckpt_path, expected, state)
    with span("load_state_dict"):
        network.load_state_dict(state, strict=True)
    return config, network


def _refuse_non_float(
    path: Path, expected: dict[str, torch.Tensor], state: dict[str, torch.Tensor]
) -> None:
    """Refuse integer, bool or complex tensors where the network holds floats.

    ``load_state_dict`` casts them silently (complex drops its imaginary part), so such a
    checkpoint predicted junk. Integer buffers the network itself keeps as integers
    (BatchNorm's ``num_batches_tracked``) are fine.
    """
    bad = [
        k for k, v in expected.items() if v.is_floating_point() and not state[k].is_floating_point()
    ]
    if bad:
        k = bad[0]
        raise ModelError(
            f"{path}: weight {k!r} is {str(state[k].dtype).removeprefix('torch.')}, not a "
            f"float ({len(bad)} such tensor(s)); the checkpoint is damaged or was not "
            "saved by sleap-nn"
        )


def first_non_finite(network: torch.nn.Module) -> str | None:
    """The name of the first weight (parameter or buffer) holding NaN or Inf, or None.

    Such weights make every output NaN: single-instance points at (0, 0) with NaN
    scores, and no peaks at all for the other types, which reads as "nothing detected".
    """
    for name, tensor in network.state_dict().items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            return name
    return None


def load_model(path: str | Path) -> LoadedModel:
    """Load a sleap-nn (``best.ckpt``) or SLEAP 1.x (``best_model.h5``) model directory."""
    from sleap_infer.model.exported import is_export_dir, load_exported, stage_dirs

    model_dir = resolve_model_dir(path)
    if is_export_dir(model_dir):
        stages = stage_dirs(model_dir)
        if len(stages) != 1:
            raise ModelError(
                f"{model_dir}: a top-down pair export (two stages); give it as the only -m"
            )
        return load_exported(stages[0])
    legacy = not (model_dir / CONFIG_NAME).exists()
    config, network = load_legacy(model_dir) if legacy else _load_sleap_nn(model_dir)
    weights = model_dir / (LEGACY_WEIGHTS if legacy else CKPT_NAME)
    with span("weights_check"):
        bad = first_non_finite(network)
    if bad is not None:
        raise ModelError(
            f"{model_dir}: {weights.name} holds NaN or Inf weights (first: {bad!r}); "
            "the model cannot predict (retrain, or use an earlier checkpoint)"
        )
    network.eval()
    for param in network.parameters():
        param.requires_grad_(False)
    with span("checkpoint_hash"):
        digest = file_sha256(weights)
    return LoadedModel(model_dir, config, network, digest, legacy=legacy)
