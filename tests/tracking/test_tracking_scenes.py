"""The extra synthetic tracking scenes: deterministic, and each has the motion it promises."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tracking_scenes.py"
spec = importlib.util.spec_from_file_location("tracking_scenes", EXAMPLE)
scenes = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = scenes
spec.loader.exec_module(scenes)


def _longest_run(flags: np.ndarray) -> int:
    best = run = 0
    for flag in flags:
        run = run + 1 if flag else 0
        best = max(best, run)
    return best


@pytest.mark.parametrize("name", sorted(scenes.SCENES))
def test_each_scene_is_deterministic_in_its_seed(name: str) -> None:
    a, b = scenes.simulate(name, 150, None, 3), scenes.simulate(name, 150, None, 3)
    c = scenes.simulate(name, 150, None, 4)
    assert np.array_equal(a.truth, b.truth)
    assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a.det_points, b.det_points))
    assert not np.allclose(a.truth, c.truth)


def test_crowded_packs_ten_animals_into_a_small_arena() -> None:
    scene = scenes.simulate("crowded", 200, None, 0)
    centres = scene.truth.mean(axis=2)
    assert centres.shape[1] == 10
    gaps = np.linalg.norm(centres[:, :, None] - centres[:, None], axis=-1)
    gaps[:, np.arange(10), np.arange(10)] = np.inf
    assert np.median(gaps.min(axis=2)) < 30  # a neighbour within about a body length


def test_occlusions_hide_animals_for_twenty_frames_or_more() -> None:
    scene = scenes.simulate("occlusions", 400, None, 0)
    seen = np.zeros((400, 4), bool)
    for f, animal in enumerate(scene.det_animal):
        seen[f, animal[animal >= 0]] = True
    assert all(_longest_run(~seen[:, a]) >= 20 for a in range(4))


def test_stop_go_animals_rest_then_move_fast() -> None:
    scene = scenes.simulate("stop-go", 400, None, 0)
    step = np.linalg.norm(np.diff(scene.truth.mean(axis=2), axis=0), axis=-1)  # (F-1, A)
    for a in range(4):
        assert _longest_run(step[:, a] < 1e-9) >= 14  # a rest
    assert step.max() > 2 * np.median(step[step > 1e-9])  # and sprints
