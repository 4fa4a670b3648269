"""An export cache that cannot be written is no dead end (issue 29): one warning naming it
and ``SLEAP_INFER_CACHE``, then a temporary cache for this run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sleap_infer.core.artifact import METADATA_NAME
from sleap_infer.layers import PredictOptions, build_layer
from sleap_infer.model.loader import load_model
from sleap_infer.runtimes import backend_maker
from sleap_infer.runtimes import cache as cache_module

from model_factory import config_dict, write_model_dir


def test_an_unwritable_cache_falls_back_to_a_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file where the cache's parent should be")
    monkeypatch.setenv(cache_module.CACHE_ENV, str(blocker / "cache"))
    monkeypatch.setattr(cache_module, "_FALLBACK", [])
    raw = config_dict("single_instance", preprocessing={"max_height": 48, "max_width": 48})
    model = load_model(write_model_dir(tmp_path / "m", raw))
    messages: list[str] = []
    layer = build_layer(
        [model], backend_maker("onnx", "cpu", notify=messages.append), PredictOptions()
    )
    frames = np.random.default_rng(0).integers(0, 256, (2, 40, 60, 1), dtype=np.uint8)
    layer.predict(frames)  # predicts: no dead end
    [warning] = [m for m in messages if m.startswith("warning:")]
    assert str(blocker / "cache") in warning and "SLEAP_INFER_CACHE" in warning
    used = layer.backend.exports[0]
    assert used.parent == cache_module._FALLBACK[0] and (used / METADATA_NAME).is_file()
    # A second model in the same run reuses the temporary cache without a second warning.
    messages.clear()
    assert cache_module.writable_cache_root(messages.append) == used.parent and not messages


def test_a_writable_cache_is_used_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cache_module.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(cache_module, "_FALLBACK", [])
    assert cache_module.writable_cache_root(print) == tmp_path / "cache"
    assert list((tmp_path / "cache").iterdir()) == []  # the probe leaves nothing
