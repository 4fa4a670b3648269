"""``--backend auto`` in a pipeline: chosen per run, recorded, same answers, falls back.

The speed table is replaced by made-up rows here, so each test decides the choice
it checks (the real table's rows are one machine's figures)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio
from typer.testing import CliRunner

import sleap_infer
from sleap_infer.cli import app
from sleap_infer.core.errors import ExportError
from sleap_infer.runtimes import cache as cache_module
from sleap_infer.runtimes import choose
from sleap_infer.runtimes.speed_table import Cost, KindCosts

from conftest import counter_frames, write_video
from model_factory import config_dict, write_model_dir

pytestmark = pytest.mark.skipif(
    "onnx" not in choose.installed_runtimes(), reason="auto chooses among torch only here"
)


def _row(export_s: float) -> KindCosts:
    """Exported runtimes 20 ms/frame faster than torch, equal start-up: 40 frames save
    0.8 s, over the 0.3 s margin."""
    return KindCosts(
        {"torch": Cost(1.0, 25.0), "onnx": Cost(1.0, 5.0), "openvino": Cost(1.0, 5.0)},
        export_s=export_s,
    )


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    raw = config_dict("single_instance", preprocessing={"max_height": 48, "max_width": 64})
    return write_model_dir(tmp_path / "m", raw)


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(cache_module.CACHE_ENV, str(root))
    return root


def _frames(n: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (n, 48, 64, 1), dtype=np.uint8)


def _table(monkeypatch: pytest.MonkeyPatch, export_s: float) -> None:
    monkeypatch.setattr(choose, "CPU_COSTS", {"single_instance": _row(export_s)})


def test_load_defaults_to_auto_and_a_short_first_run_stays_on_torch(
    model: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table(monkeypatch, export_s=60.0)  # 3000 frames to earn the export back
    pipe = sleap_infer.load(model, device="cpu")
    assert pipe.spec.backend == "auto" and repr(pipe).endswith("auto/cpu)")
    pipe.predict(_frames(8))
    assert pipe.backend_name == "torch"
    assert "8 frames of single_instance" in pipe.backend_reason
    assert not cache.exists() or not any(cache.iterdir())  # nothing exported


def test_a_long_run_exports_once_gives_torchs_answers_and_later_runs_reuse_it(
    model: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table(monkeypatch, export_s=0.05)
    frames = _frames(40)
    fast = sleap_infer.load(model, device="cpu")
    got = fast.predict(frames)
    assert fast.backend_name in ("openvino", "onnx")
    assert any(cache.iterdir())  # exported on first use, into the cache
    want = sleap_infer.load(model, backend="torch", device="cpu").predict(frames)
    assert np.array_equal(got.valid, want.valid)
    np.testing.assert_allclose(got.points, want.points, atol=1e-4, equal_nan=True)
    # Cached now: even a short run has no export to pay for.
    _table(monkeypatch, export_s=1e9)
    again = sleap_infer.load(model, device="cpu")
    again.predict(frames)
    assert again.backend_name == fast.backend_name


def test_an_export_that_fails_falls_back_to_torch_with_a_warning(
    model: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table(monkeypatch, export_s=0.05)

    def broken(*_args: object, **_kwargs: object) -> None:
        raise ExportError("the exporter broke")

    monkeypatch.setattr(cache_module, "export_model", broken)
    video = write_video(tmp_path / "v.mp4", counter_frames(40, 48, 64))
    pipe = sleap_infer.load(model, device="cpu")
    with pytest.warns(RuntimeWarning, match="could not run these models here.*exporter broke"):
        result = pipe.predict_to_file(video, tmp_path / "out.slp", progress=False)
    assert result.backend == "torch" and pipe.backend_name == "torch"
    labels = sio.load_slp(str(tmp_path / "out.slp"))
    record = labels.provenance
    assert record["backend"] == "torch"
    assert record["backend_choice"]["asked"] == "auto"
    assert "the exporter broke" in record["backend_choice"]["reason"]


def test_an_explicit_backend_is_kept_whatever_the_table_says(
    model: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table(monkeypatch, export_s=0.0)
    pipe = sleap_infer.load(model, backend="torch", device="cpu")
    pipe.predict(_frames(40))
    assert pipe.auto is None and pipe.backend_name == "torch"
    assert repr(pipe).endswith("torch/cpu)")


def test_the_cli_says_which_backend_ran_in_its_line_summary_and_provenance(
    model: Path, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table(monkeypatch, export_s=0.05)
    video = write_video(tmp_path / "v.mp4", counter_frames(40, 48, 64))
    out, summary = tmp_path / "out.slp", tmp_path / "summary.json"
    args = ["predict", str(video), "-m", str(model), "-o", str(out), "--device", "cpu"]
    result = CliRunner().invoke(app, [*args, "--summary-json", str(summary)])
    assert result.exit_code == 0, result.output
    ran = json.loads(summary.read_text())["videos"][0]["backend"]
    assert ran in ("openvino", "onnx")
    assert f"FPS ({ran})" in result.output
    assert sio.load_slp(str(out)).provenance["backend"] == ran


def test_in_memory_frames_fall_back_before_the_first_frame_too(
    model: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An array's frame shape is known before its first batch: the export is tried there."""
    _table(monkeypatch, export_s=0.05)

    def broken(*_args: object, **_kwargs: object) -> None:
        raise ExportError("no exporter here")

    monkeypatch.setattr(cache_module, "export_model", broken)
    pipe = sleap_infer.load(model, device="cpu")
    with pytest.warns(RuntimeWarning, match="no exporter here"):
        pred = pipe.predict(_frames(40))
    assert pipe.backend_name == "torch" and pred.points.shape[0] == 40


def test_a_short_run_on_torch_never_builds_the_long_runs_layer(model: Path, cache: Path) -> None:
    """``auto`` builds the layer a long input would get (OpenVINO) only when a run picks it;
    a short run goes to torch and must not pay for it: OpenVINO's import (0.2-0.3 s) nor the
    exported layer's build and imports (20 ms, 1-2% of a 30-frame run, which ``auto`` must
    not lose against ``--backend torch``). A fresh interpreter, so nothing was imported."""
    pytest.importorskip("openvino")
    script = (
        "import sys, numpy as np, sleap_infer\n"
        f"pipe = sleap_infer.load({str(model)!r}, device='cpu')\n"
        "assert pipe.auto is not None and pipe.auto.candidates[0] == 'openvino'\n"
        "print(pipe.describe(), pipe.backend_label)\n"
        "pipe.predict(np.zeros((8, 48, 64, 1), np.uint8))\n"
        "print(pipe.backend_name, 'openvino' in sys.modules,\n"
        "      'sleap_infer.layers.exported' in sys.modules)\n"
    )
    env = {**os.environ, cache_module.CACHE_ENV: str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    described, ran = done.stdout.splitlines()
    assert described == "SingleInstanceLayer (single_instance) auto/cpu"
    assert ran.split() == ["torch", "False", "False"]
