"""The tracker registry: every entry builds, every config is sleap-nn 0.3.5's preset, and
``--mot_param`` and ``--help`` read the configs (so neither can drift from them)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from sleap_infer.cli import main
from sleap_infer.core.errors import UsageError
from sleap_infer.tracking import make_tracker, registry
from sleap_infer.tracking.base import POSES
from sleap_infer.tracking.mot_param import FIELDS
from sleap_infer.tracking.options import TrackingOptions

# sleap-nn 0.3.5's MOTParams.for_tracker(name, "animal").as_dict() per tracker, stored as
# facts (written once from sleap-nn's venv; sleap-nn is never imported by the package).
STORED = json.loads(
    (Path(__file__).parent / "data" / "sleap_nn_0.3.5_mot_presets.json").read_text()
)
SLEAP_NN_PRESETS: dict[str, dict] = STORED["presets"]


def test_sleap_nn_s_trackers_are_all_registered_under_their_own_names() -> None:
    ours = {e.sleap_nn_name for e in registry.TRACKERS if e.sleap_nn_name}
    assert ours == {*SLEAP_NN_PRESETS, "classic"}
    assert set(registry.names(family=registry.MOT)) == set(SLEAP_NN_PRESETS)
    assert registry.DEFAULT == "classic" == TrackingOptions().tracker


@pytest.mark.parametrize("name", registry.NAMES)
def test_each_entry_imports_a_tracker_and_a_frozen_config(name: str) -> None:
    entry = registry.entry(name)
    cls, config = registry.tracker_class(name), registry.config_class(name)
    assert cls.__module__.startswith(f"sleap_infer.tracking.{entry.family}.")
    assert config.__module__.startswith(f"sleap_infer.tracking.{entry.family}.")
    assert dataclasses.is_dataclass(config) and config.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert entry.summary and "\n" not in entry.summary
    options = TrackingOptions(tracker=name)
    vectors = entry.vectors == registry.NEEDS_VECTORS
    tracker = make_tracker(options, POSES, 3, has_embeddings=vectors)
    assert isinstance(tracker, cls)
    assert all(callable(getattr(tracker, m)) for m in ("step", "state"))


@pytest.mark.parametrize("name", sorted(SLEAP_NN_PRESETS))
def test_each_mot_config_default_is_sleap_nn_s_animal_preset(name: str) -> None:
    preset = registry.preset(name)
    assert preset, name
    for key, value in preset.items():
        assert key in SLEAP_NN_PRESETS[name], f"{name}: {key} is not a MOTParams field"
        assert value == SLEAP_NN_PRESETS[name][key], f"{name}.{key}"
        assert key in FIELDS  # the parser's list of sleap-nn's keys


@pytest.mark.parametrize("name", registry.NAMES)
def test_a_mot_param_key_is_legal_exactly_when_it_is_a_config_field(name: str) -> None:
    fields = set(registry.knobs(name))
    for key in FIELDS:
        value = registry.preset(name).get(key, FIELDS[key])
        text = f"{key}={'none' if value is None else value}"
        if key in fields:
            TrackingOptions(tracker=name, mot_param=[text])
        else:
            with pytest.raises(UsageError) as err:
                TrackingOptions(tracker=name, mot_param=[text])
            assert "\n" not in str(err.value)


def test_a_mot_param_override_reaches_the_tracker_and_bounds_are_checked() -> None:
    from sleap_infer.tracking.mot.core import mot_params

    params = mot_params(TrackingOptions(tracker="ocsort", mot_param=["delta_t=7"]))
    assert params.extra["delta_t"] == 7 and params.extra["use_byte"] is False
    bytetrack = mot_params(TrackingOptions(tracker="bytetrack"))
    assert bytetrack.extra["fuse_score"] is True and bytetrack.min_hits == 2
    with pytest.raises(UsageError, match="track_high_threshold must be in"):
        registry.config_class("sort")(track_high_threshold=1.5)
    with pytest.raises(UsageError, match="delta_t must be >= 1"):
        registry.config_class("ocsort")(delta_t=0)


def test_the_tracker_flags_help_is_rendered_from_the_configs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit) as done:
        main(["track", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert not done.value.code
    for name in registry.NAMES:
        assert f"{name}: {registry.entry(name).summary}" in text
    high = {n: registry.preset(n)["track_high_threshold"] for n in SLEAP_NN_PRESETS}
    assert "(0.5; sort 0.1, botsort/ocsort/deepocsort 0.6)" in text, high
    assert "confirmed (3; bytetrack/botsort 2)" in text
