"""benchmarks/realistic_parity.py (issue 50 item 5): its dry run writes a sleap-nn training
config per recipe, from the fixtures, that our parser accepts, and names the training
commands; training itself (minutes of CPU) is never run here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sleap_infer.model.config import parse_config

from conftest import SHARED

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "realistic_parity.py"


@pytest.mark.skipif(not (SHARED / "models").is_dir(), reason="shared fixtures absent")
def test_dry_run_writes_configs_our_parser_accepts(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, str(SCRIPT), "--dry-run", "--epochs", "2", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    configs = sorted((tmp_path / "configs").glob("*.yaml"))
    names = [c.stem for c in configs]
    assert names == [
        "bottomup",
        "bottomup_convnext",
        "centroid_sigmoid",
        "multiclass_bottomup",
        "single_instance_stem2",
    ]
    for config in configs:
        raw = yaml.safe_load(config.read_text())
        assert raw["trainer_config"]["max_epochs"] == 2
        assert raw["trainer_config"]["train_steps_per_epoch"] == 40  # the quick default
        assert raw["trainer_config"]["optimizer"]["lr"] == 1e-3
        assert raw["trainer_config"]["ckpt_dir"] == str(tmp_path)
        assert Path(raw["data_config"]["train_labels_path"][0]).exists()
        parsed = parse_config(raw)
        if config.stem == "bottomup_convnext":
            assert raw["model_config"]["backbone_config"]["unet"] is None
            assert raw["model_config"]["backbone_config"]["convnext"]["model_type"] == "tiny"
        else:
            assert parsed.backbone.filters >= 16  # type: ignore[union-attr]
        assert f"train --config {config}" in res.stdout
    stem = yaml.safe_load((tmp_path / "configs" / "single_instance_stem2.yaml").read_text())
    assert stem["model_config"]["backbone_config"]["unet"]["stem_stride"] == 2
    sigmoid = yaml.safe_load((tmp_path / "configs" / "centroid_sigmoid.yaml").read_text())
    assert sigmoid["model_config"]["head_configs"]["centroid"]["confmaps"]["use_sigmoid_activation"]
    assert not list(tmp_path.glob("*/best.ckpt"))  # nothing trained


def test_shimmed_exe_runs_the_cli_behind_the_torchvision_shim(tmp_path: Path) -> None:
    """The bench venv's own ``bin/sleap-nn`` dies importing torchvision on CPU-only torch;
    the wrapper imports the shim first, and is rewritten only when its text changes."""
    sys.path.insert(0, str(SCRIPT.parent))
    import realistic_parity

    venv = tmp_path / "venv"
    exe = realistic_parity.shimmed_exe(venv, tmp_path)
    text = exe.read_text()
    assert text.startswith(f"#!{venv / 'bin' / 'python'}\n")
    assert text.index("torchvision_shim()") < text.index("from sleap_nn.cli import cli")
    assert exe.stat().st_mode & 0o111
    before = exe.stat().st_mtime_ns
    assert realistic_parity.shimmed_exe(venv, tmp_path) == exe
    assert exe.stat().st_mtime_ns == before
