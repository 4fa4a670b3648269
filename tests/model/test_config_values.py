"""Wrong types and ranges in a training config are one line at load (issue 29).

``max_stride: "four"`` was a traceback (also in ``infer info``); ``scale: 0`` was an
"unexpected error" per video instead of one config error before any video.
"""

from __future__ import annotations

import pytest
import yaml

from sleap_infer.core.errors import ConfigError
from sleap_infer.model.config import parse_config
from sleap_infer.model.loader import load_model

from cli_runs import error_lines, run_cli
from conftest import counter_frames, write_video
from model_factory import config_dict, write_model_dir


def _edit(raw: dict, path: str, value) -> dict:
    node = raw
    *parents, last = path.split(".")
    for key in parents:
        node = node[key]
    node[last] = value
    return raw


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        ("model_config.backbone_config.unet.max_stride", "four", "'four': must be a whole"),
        ("model_config.backbone_config.unet.max_stride", 0, "0: must be a whole number >= 1"),
        ("model_config.backbone_config.unet.filters_rate", True, "True: must be a number > 0"),
        ("data_config.preprocessing.scale", 0, "scale 0: must be a number > 0"),
        ("data_config.preprocessing.scale", [0.5, float("nan")], "nan: must be a number"),
        ("data_config.preprocessing.max_height", 10.5, "10.5: must be a whole number"),
        ("model_config.head_configs.single_instance.confmaps.sigma", -1, "sigma -1"),
        ("model_config.head_configs.single_instance.confmaps.output_stride", "x", "'x'"),
    ],
)
def test_bad_values_name_key_and_value(path: str, value, said: str) -> None:
    raw = _edit(config_dict("single_instance"), path, value)
    with pytest.raises(ConfigError) as err:
        parse_config(raw, source="m/training_config.yaml")
    message = str(err.value)
    assert message.startswith(f"m/training_config.yaml: {path} ") and said in message


def test_good_values_in_other_forms_still_load() -> None:
    raw = config_dict("single_instance")
    _edit(raw, "data_config.preprocessing.scale", [0.5, 0.5])
    _edit(raw, "model_config.backbone_config.unet.max_stride", 8.0)
    _edit(raw, "data_config.preprocessing.crop_hw", [None, None])
    assert parse_config(raw).max_stride == 8


def test_info_and_predict_refuse_before_any_video(tmp_path, capsys) -> None:
    model = write_model_dir(tmp_path / "model", config_dict("single_instance"))
    config = model / "training_config.yaml"
    raw = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump(_edit(raw, "data_config.preprocessing.scale", 0)))
    with pytest.raises(ConfigError, match=str(model)):
        load_model(model)
    videos = [write_video(tmp_path / f"v{i}.mp4", counter_frames(2)) for i in range(2)]
    for args in (("info", model), ("predict", *videos, "-m", model, "-q")):
        code, err = run_cli(capsys, *args)
        lines = error_lines(err)
        assert code == 1 and len(lines) == 1 and "preprocessing.scale 0" in lines[0], err
        assert str(model) in lines[0]
    assert not list(tmp_path.glob("v*.predictions*"))
