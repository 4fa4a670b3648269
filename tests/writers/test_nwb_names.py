"""Names NWB cannot hold: node names refused before the first frame, track names fitted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from sleap_infer.core.errors import UsageError
from sleap_infer.core.products import Product
from sleap_infer.writers.nwb_names import check_node_names, nwb_name, nwb_names
from sleap_infer.writers.registry import FORMATS, refuse

import scene
from cli_runs import error_lines, run_cli
from conftest import SYNTHETIC_MODEL
from output_cases import needs_nwb


@pytest.mark.parametrize(
    ("nodes", "why"),
    [
        (["ear/left", "tail"], "holds '/' or ':'"),
        (["ear:left", "tail"], "holds '/' or ':'"),
        (["", "tail"], "is empty"),
        (["tail", "tail"], "is repeated"),
    ],
)
def test_a_node_nwb_cannot_hold_is_one_line(nodes: list[str], why: str) -> None:
    with pytest.raises(UsageError, match=f"node {nodes[0]!r} {why}") as caught:
        check_node_names(nodes)
    assert "\n" not in str(caught.value)
    with pytest.raises(UsageError):  # the registry's hook, run before predicting
        refuse(FORMATS["nwb"], [Product.POSES], "single_instance", nodes)


def test_other_formats_and_good_names_pass() -> None:
    check_node_names(["ear, left", "tail.tip", "nose (tip)"])
    for fmt in ("slp", "csv", "analysis-h5", "dlc-csv"):
        refuse(FORMATS[fmt], [Product.POSES], "single_instance", ["a/b", "", "a/b"])


def test_track_names_are_fitted_not_refused() -> None:
    assert nwb_name("cage 1/left:a") == "cage 1_left_a"
    assert nwb_name("") == "_"
    assert nwb_names(["a/b", "a_b", "a:b", "c"]) == ["a_b", "a_b_2", "a_b_3", "c"]


def model_with_node(tmp_path: Path, name: str) -> Path:
    """The synthetic single-instance model with its first node (``head``) renamed."""
    model = Path(shutil.copytree(SYNTHETIC_MODEL, tmp_path / "model"))
    config_file = model / "training_config.yaml"
    raw = yaml.safe_load(config_file.read_text())
    raw["data_config"]["skeletons"][0]["nodes"][0]["name"] = name
    raw["data_config"]["skeletons"][0]["edges"][0]["source"]["name"] = name
    raw["model_config"]["head_configs"]["single_instance"]["confmaps"]["part_names"][0] = name
    config_file.write_text(yaml.safe_dump(raw, sort_keys=False))
    return model


@needs_nwb
def test_predict_refuses_before_the_first_frame(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Before: the whole video was predicted, then writing failed (ValueError: name
    'ear/left' cannot contain a '/' or ':'), the run exit 1 with a journal left behind."""
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=4)
    model = model_with_node(tmp_path, "ear/left")
    out = tmp_path / "v.nwb"
    code, err = run_cli(capsys, "predict", video, "-m", model, "--format", "nwb", "-o", out, "-q")
    assert code == 2, err
    [line] = error_lines(err)
    assert "node 'ear/left' holds '/' or ':'" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "v.mp4"]  # nothing ran
