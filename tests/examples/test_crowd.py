"""examples/synthetic/crowd.py: the many-animal scene is deterministic and holds exactly N animals.

The growth benchmarks (benchmarks/scale.py) compare rows across runs and machines, so the
scene must give the same pixels for the same seed, and the animal-count rows mean nothing
unless each frame shows the number of animals asked for, none touching another.
"""

from __future__ import annotations

import av
import crowd  # examples/synthetic/crowd.py
import numpy as np
import pytest


@pytest.mark.parametrize("n_animals", [2, 10, 30, 60])
def test_scene_has_n_separate_animals(n_animals: int) -> None:
    scene = crowd.crowd(n_animals, n_frames=5, size=512, seed=3)
    points = scene.keypoints()
    assert points.shape == (5, n_animals, 3, 2)
    assert np.all((points > 0) & (points < 512))
    centers = scene.centers
    gaps = np.linalg.norm(centers[:, :, None] - centers[:, None, :], axis=-1)
    gaps[:, np.arange(n_animals), np.arange(n_animals)] = np.inf
    assert gaps.min() > 2 * crowd.BODY_HALF_LENGTH  # bodies never overlap


def test_same_seed_same_pixels_other_seed_other_pixels() -> None:
    a = crowd.frames(crowd.crowd(10, 3, 384, seed=1), seed=1)
    b = crowd.frames(crowd.crowd(10, 3, 384, seed=1), seed=1)
    c = crowd.frames(crowd.crowd(10, 3, 384, seed=2), seed=2)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not np.array_equal(a[0], c[0])


def test_every_animal_is_drawn_bright_at_its_thorax() -> None:
    scene = crowd.crowd(30, 1, 512, seed=0)
    frame = crowd.frames(scene)[0]
    thorax = np.round(scene.keypoints()[0, :, 1]).astype(int)
    assert np.all(frame[thorax[:, 1], thorax[:, 0]] > 120)  # background is <= 70


def test_too_many_animals_is_refused() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        crowd.crowd(crowd.max_animals(384) + 1, 1, 384)


def test_video_has_the_frames_and_size_asked_for(tmp_path) -> None:
    truth = crowd.write_video(tmp_path / "c.mp4", n_animals=10, n_frames=4, size=384, seed=0)
    assert truth.shape == (4, 10, 3, 2)
    with av.open(str(tmp_path / "c.mp4")) as container:
        decoded = [f.to_ndarray(format="gray") for f in container.decode(video=0)]
    assert len(decoded) == 4 and decoded[0].shape == (384, 384)
