"""Model directories: config parsing, safe checkpoint loading, strict weight loading."""

from __future__ import annotations

import os
import sys
import types
import zipfile
from pathlib import Path

import h5py
import pytest
import torch
import yaml

from sleap_infer.core.errors import ConfigError, ModelError
from sleap_infer.model.checkpoint import load_checkpoint, load_state_dict
from sleap_infer.model.config import load_config, parse_config
from sleap_infer.model.loader import load_model, resolve_model_dir

from cli_runs import error_lines, run_cli
from conftest import FIXTURE_MODELS, fixture_model
from model_factory import config_dict, write_model_dir

MODEL_TYPES = list(FIXTURE_MODELS)


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_shared_checkpoints_load_strictly(shared: Path, model_type: str) -> None:
    model = load_model(fixture_model(shared, model_type))
    assert model.model_type == model_type
    n_params = sum(p.numel() for p in model.network.parameters())
    assert n_params == model.config.total_params
    # Every tensor in the checkpoint landed in the network unchanged.
    state = load_state_dict(model.path / "best.ckpt")
    net_state = model.network.state_dict()
    assert set(state) == set(net_state)
    for key, value in state.items():
        assert torch.equal(value, net_state[key]), key


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_self_built_checkpoints_roundtrip(tmp_path: Path, model_type: str) -> None:
    raw = config_dict(model_type)
    src = write_model_dir(tmp_path / model_type, raw, seed=3)
    model = load_model(src)
    assert model.config.model_type == model_type
    again = load_model(src / "best.ckpt")  # a ckpt path resolves to its directory
    x = torch.randint(0, 255, (2, 1, 64, 64), dtype=torch.uint8)
    out_a, out_b = model.network(x), again.network(x)
    assert set(out_a) == {h.name for h in model.config.heads}
    for k in out_a:
        assert torch.equal(out_a[k], out_b[k])


@pytest.mark.parametrize(
    ("unet", "message"),
    [
        ({"stem_stride": 4}, "stem_stride 4"),
        ({"middle_block": False}, "middle_block"),
        ({"stacks": 2}, "stacks"),
        ({"convs_per_block": 1}, "convs_per_block"),
        ({"max_stride": 12}, "power of two"),
    ],
)
def test_unsupported_unet_configs_are_rejected(unet: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(config_dict("single_instance", unet=unet))


@pytest.mark.filterwarnings("ignore::sleap_infer.model.schema.UnknownConfigKeyWarning")
def test_unknown_backbone_and_model_type(tmp_path: Path) -> None:
    raw = config_dict("single_instance")
    raw["model_config"]["backbone_config"] = {"unet": None, "mobilenet": {"width": 1}}
    with pytest.raises(ConfigError, match="backbone 'mobilenet' is not supported"):
        parse_config(raw)
    raw = config_dict("single_instance")
    raw["model_config"]["head_configs"] = {"single_instance": None, "pose2000": {}}
    with pytest.raises(ConfigError, match="unknown model type 'pose2000'"):
        parse_config(raw)


def test_part_names_default_to_skeleton_and_anchor_index() -> None:
    cfg = parse_config(config_dict("centered_instance"))
    assert cfg.part_names == ("head", "thorax", "tail")
    assert cfg.anchor_index == 1
    assert cfg.confmap_head.channels == 3
    bu = parse_config(config_dict("bottomup"))
    assert bu.paf_edges == ((0, 1), (1, 2))
    assert bu.head("PartAffinityFieldsHead").channels == 4


def test_missing_and_corrupt_model_dirs(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="does not exist"):
        resolve_model_dir(tmp_path / "nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelError, match="no training_config.yaml"):
        resolve_model_dir(empty)
    src = write_model_dir(tmp_path / "m", config_dict("single_instance"))
    (src / "best.ckpt").write_bytes(b"not a zip at all")
    with pytest.raises(ModelError, match="not a torch checkpoint"):
        load_model(src)
    good = write_model_dir(tmp_path / "g", config_dict("single_instance"))
    data = (good / "best.ckpt").read_bytes()
    (good / "best.ckpt").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match="best.ckpt"):
        load_model(good)
    (good / "training_config.yaml").write_text("data_config: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(good / "training_config.yaml")


def test_legacy_sleap_dir_is_named(tmp_path: Path) -> None:
    (tmp_path / "training_config.json").write_text("{}")
    (tmp_path / "best_model.h5").write_bytes(b"")
    with pytest.raises(ModelError, match="legacy SLEAP 1.x"):
        resolve_model_dir(tmp_path)


def test_weights_that_do_not_match_config(tmp_path: Path) -> None:
    src = write_model_dir(tmp_path / "m", config_dict("single_instance"))
    raw = yaml.safe_load((src / "training_config.yaml").read_text())
    raw["model_config"]["backbone_config"]["unet"]["filters"] = 6
    (src / "training_config.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ModelError, match="weights do not match training_config.yaml"):
        load_model(src)


class _Exploit:
    """Unpickling this would run ``Path.touch`` on a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_checkpoint_unpickler_never_runs_foreign_callables(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    src = write_model_dir(tmp_path / "m", config_dict("single_instance"))
    ckpt = torch.load(src / "best.ckpt", weights_only=True)
    ckpt["config"] = _Exploit(marker)
    torch.save(ckpt, src / "best.ckpt")
    # Sanity: the payload is live (plain pickle would execute it).
    with zipfile.ZipFile(src / "best.ckpt") as zf:
        name = next(n for n in zf.namelist() if n.endswith("data.pkl"))
        assert b"touch" in zf.read(name)
    loaded = load_checkpoint(src / "best.ckpt")
    assert not marker.exists()
    assert "state_dict" in loaded
    model = load_model(src)  # still loads: only the tensors matter
    assert model.model_type == "single_instance"


def test_foreign_classes_become_placeholders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Real sleap-nn checkpoints pickle sleap_nn / omegaconf classes that are not installed.
    module = types.ModuleType("fake_sleap_nn_config")

    class TrainingJobConfig:
        def __init__(self) -> None:
            self.max_stride = 16

    TrainingJobConfig.__module__ = module.__name__
    TrainingJobConfig.__qualname__ = "TrainingJobConfig"
    module.TrainingJobConfig = TrainingJobConfig  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    path = tmp_path / "x.ckpt"
    torch.save({"state_dict": {"model.w": torch.ones(2)}, "config": TrainingJobConfig()}, path)
    monkeypatch.delitem(sys.modules, module.__name__)
    loaded = load_checkpoint(path)
    assert type(loaded["config"]).__name__ == "TrainingJobConfig"
    assert type(loaded["config"]).__module__.startswith("sleap_infer.placeholder")
    assert load_state_dict(path)["w"].tolist() == [1.0, 1.0]


def _not_regular(path: Path, kind: str) -> str:
    """Replace ``path`` by a FIFO or a link to /dev/zero; the words the refusal uses."""
    if path.exists():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
        return "a FIFO"
    path.symlink_to("/dev/zero")
    return "a character device"


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_a_training_config_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, alarm: None, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    src = write_model_dir(tmp_path / "m", config_dict("single_instance"))
    what = _not_regular(src / "training_config.yaml", kind)
    expected = rf"training_config\.yaml: is {what}.*, not a regular file"
    with pytest.raises(ConfigError, match=expected):
        load_model(src)
    code, stderr = run_cli(capsys, "info", src)
    assert code == 1 and len(error_lines(stderr)) == 1 and what in stderr


@pytest.mark.parametrize("name", ["training_config.json", "best_model.h5"])
@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
def test_sleap_1_files_that_are_not_regular_files_are_refused(
    tmp_path: Path, alarm: None, kind: str, name: str
) -> None:
    (tmp_path / "training_config.json").write_text("{}")
    with h5py.File(tmp_path / "best_model.h5", "w"):
        pass
    what = _not_regular(tmp_path / name, kind)
    with pytest.raises(ModelError, match=rf"{name}: is {what}"):
        load_model(tmp_path)


def test_a_checkpoint_that_is_not_a_regular_file_is_named(tmp_path: Path, alarm: None) -> None:
    src = write_model_dir(tmp_path / "m", config_dict("single_instance"))
    _not_regular(src / "best.ckpt", "fifo")
    with pytest.raises(ModelError, match=r"best\.ckpt: is a FIFO"):
        load_model(src)


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.complex64])
def test_non_float_weights_are_refused_by_name(tmp_path: Path, dtype: torch.dtype) -> None:
    src = write_model_dir(tmp_path / "m", config_dict("single_instance"))
    ckpt = torch.load(src / "best.ckpt", weights_only=False)
    key = next(k for k, v in ckpt["state_dict"].items() if v.ndim == 4)  # the first conv
    ckpt["state_dict"][key] = (ckpt["state_dict"][key] * 10).to(dtype)
    torch.save(ckpt, src / "best.ckpt")
    name = str(dtype).removeprefix("torch.")
    with pytest.raises(ModelError) as err:
        load_model(src)
    assert str(err.value) == (
        f"{src / 'best.ckpt'}: weight {key.removeprefix('model.')!r} is {name}, not a float "
        "(1 such tensor(s)); the checkpoint is damaged or was not saved by sleap-nn"
    )


def test_configs_read_the_same_with_libyaml_as_in_pure_python(shared: Path) -> None:
    # load_config uses libyaml's safe loader when PyYAML has it (6x faster); every config
    # here (the fixtures' sleap-nn configs, our examples') must give what yaml.safe_load gives.
    if not getattr(yaml, "__with_libyaml__", False):
        pytest.skip("PyYAML built without libyaml")
    examples = Path(__file__).resolve().parents[2] / "examples" / "models"
    configs = [*shared.rglob("training_config.yaml"), *examples.rglob("training_config.yaml")]
    assert len(configs) >= 10
    for path in configs:
        text = path.read_text()
        assert yaml.load(text, Loader=yaml.CSafeLoader) == yaml.safe_load(text), path
