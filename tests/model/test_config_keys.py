"""Every sleap-nn 0.3.5 config key has a verdict; keys that change predictions and are not
reproduced are refused by name; unknown keys warn once, never silently.

``sleap_nn_0_3_5_config_keys.txt`` is sleap-nn's schema as read from its source by
``tools/sleap_nn_config_keys.py``: regenerate it for a newer sleap-nn and the first test
names every key still without a verdict.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml

from sleap_infer.core.errors import ConfigError
from sleap_infer.model import schema
from sleap_infer.model.loader import load_model
from sleap_infer.model.schema import RULES, UnknownConfigKeyWarning, markdown_table

from cli_runs import error_lines, run_cli
from conftest import ROOT, SHARED, SYNTHETIC_MODEL
from model_factory import config_dict, write_model_dir

KEY_LIST = Path(__file__).with_name("sleap_nn_0_3_5_config_keys.txt")


def test_every_schema_key_has_a_verdict() -> None:
    keys = KEY_LIST.read_text().split()
    assert len(keys) == len(set(keys)) > 200
    missing = [k for k in keys if k not in RULES]
    assert not missing, f"sleap-nn config keys without a verdict in schema.py: {missing}"
    stale = [k for k in RULES if k not in keys]
    assert not stale, f"verdicts for keys the stored schema no longer has: {stale}"
    for key, rule in RULES.items():
        assert rule.verdict in schema.VERDICTS and rule.note, key


def test_the_docs_table_is_the_schema_table() -> None:
    doc = (ROOT / "docs" / "config_keys.md").read_text()
    assert markdown_table() in doc, "regenerate docs/config_keys.md from schema.markdown_table()"


def _write(tmp_path: Path, name: str, edit) -> Path:
    raw = config_dict(name.split("-")[0])
    edit(raw)
    return write_model_dir(tmp_path / name, raw)


def test_a_key_that_changes_predictions_is_refused_by_name(tmp_path: Path, capsys) -> None:
    path = write_model_dir(tmp_path / "identity", config_dict("multi_class_bottomup"))
    raw = yaml.safe_load((path / "training_config.yaml").read_text())
    raw["model_config"]["head_configs"]["multi_class_bottomup"]["class_maps"]["class_output"] = (
        "identity"
    )
    (path / "training_config.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError) as err:
        load_model(path)
    message = str(err.value)
    assert "\n" not in message
    assert str(path) in message and "class_maps.class_output: 'identity'" in message
    code, stderr = run_cli(capsys, "info", path)
    assert code != 0 and len(error_lines(stderr)) == 1
    assert "class_output" in error_lines(stderr)[0]


def test_default_values_of_refusable_keys_load(tmp_path: Path) -> None:
    def track(raw):
        raw["model_config"]["head_configs"]["multi_class_bottomup"]["class_maps"][
            "class_output"
        ] = "track"

    load_model(_write(tmp_path, "multi_class_bottomup", track))


def test_an_unknown_key_warns_once_and_names_itself(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(schema, "_warned", set())

    def unknown(raw):
        raw["model_config"]["head_configs"]["centroid"]["confmaps"]["new_knob"] = 3
        raw["data_config"]["preprocessing"]["future_block"] = {"a": 1, "b": 2}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = _write(tmp_path, "centroid", unknown)
        load_model(path)
        load_model(path)
    ours = [w for w in caught if issubclass(w.category, UnknownConfigKeyWarning)]
    assert sorted(str(w.message).split(": ")[1].split(" ")[0] for w in ours) == [
        "data_config.preprocessing.future_block",
        "model_config.head_configs.centroid.confmaps.new_knob",
    ]


def _fixture_configs() -> list[Path]:
    found = [SYNTHETIC_MODEL, *sorted((SHARED / "models").glob("*"))]
    return [p for p in found if (p / "training_config.yaml").exists()]


@pytest.mark.parametrize("folder", _fixture_configs(), ids=lambda p: p.name)
def test_models_written_by_sleap_nn_have_only_known_keys(folder: Path) -> None:
    raw = yaml.safe_load((folder / "training_config.yaml").read_text())
    unknown = [k for k, _ in schema.config_keys(raw) if schema.rule(k) is None]
    assert not unknown
