"""A first-use export says when it starts and when it ends, and how long it took
(issue 30): the progress display shows it as a stage of its own and keeps its
seconds out of the prediction's ETA."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sleap_infer.core.errors import ExportError
from sleap_infer.layers import PredictOptions, build_layer
from sleap_infer.model.loader import load_model
from sleap_infer.runtimes import backend_maker
from sleap_infer.runtimes import cache as cache_module
from sleap_infer.runtimes.cache import ExportNotice

from model_factory import config_dict, write_model_dir


def _layer(tmp_path: Path, messages: list[str]) -> Any:  # a layer of any kind
    raw = config_dict("single_instance", preprocessing={"max_height": 48, "max_width": 48})
    model = load_model(write_model_dir(tmp_path / "m", raw))
    return build_layer(
        [model], backend_maker("onnx", "cpu", notify=messages.append), PredictOptions()
    )


def _frames() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (2, 40, 60, 1), dtype=np.uint8)


def test_a_fresh_export_is_bracketed_by_started_and_finished_notices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache_module.CACHE_ENV, str(tmp_path / "cache"))
    messages: list[str] = []
    _layer(tmp_path, messages).predict(_frames())
    stages = [getattr(m, "stage", None) for m in messages]
    assert stages[0] == "started" and stages[-1] == "finished"
    assert stages.count("started") == stages.count("finished") == 1
    assert messages[0].startswith("Exporting m to onnx for ")
    done = messages[-1]
    assert isinstance(done, ExportNotice) and done.seconds is not None and done.seconds > 0
    assert done == f"exported m to onnx: done in {done.seconds:.1f} s"
    # Cached now: a second run exports nothing and says nothing.
    messages.clear()
    _layer(tmp_path, messages).predict(_frames())
    assert messages == []


def test_a_failing_export_ends_its_stage_and_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache_module.CACHE_ENV, str(tmp_path / "cache"))

    def broken(*_args: object, **_kwargs: object) -> None:
        raise ExportError("the exporter broke")

    monkeypatch.setattr(cache_module, "export_model", broken)
    messages: list[str] = []
    with pytest.raises(ExportError, match="the exporter broke"):
        _layer(tmp_path, messages).predict(_frames())
    assert [getattr(m, "stage", None) for m in messages] == ["started", "failed"]


def test_a_notice_survives_pickling_for_devices_workers() -> None:
    notice = ExportNotice("exported m to onnx: done in 2.0 s", "finished", 2.0)
    back = pickle.loads(pickle.dumps(notice))
    assert (back, back.stage, back.seconds) == (notice, "finished", 2.0)
