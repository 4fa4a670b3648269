"""examples/tracking_scenes.py's re-ID vectors: per animal, degraded under cover, stored as
sleap-nn's appearance trackers read them (``identity_embedding``, kept by the .slp)."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import sleap_io as sio

from conftest import EXAMPLES


def _scenes():
    spec = importlib.util.spec_from_file_location(
        "tracking_scenes", EXAMPLES / "tracking_scenes.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_vectors_follow_the_animal_and_blur_under_cover(tmp_path):
    scenes = _scenes()
    scene = scenes.simulate("crowded", 60, 6, seed=1)
    vectors = scenes.reid_vectors(scene, 1)
    again = scenes.reid_vectors(scene, 1)
    assert all(np.array_equal(a, b) for a, b in zip(vectors, again))  # seeded
    assert [len(v) for v in vectors] == [len(a) for a in scene.det_animal]
    rows = np.concatenate(vectors)
    animals = np.concatenate(scene.det_animal)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    real = animals >= 0
    # the mean vector of an animal: its own detections match it better than others'
    means = np.stack([rows[animals == a].mean(axis=0) for a in range(6)])
    cos = rows[real] @ means.T
    assert (cos.argmax(axis=1) == animals[real]).mean() > 0.9


def test_write_reid_keeps_detections_and_adds_one_vector_each(tmp_path):
    scenes = _scenes()
    scene = scenes.simulate("crossing", 20, None, seed=0)
    files = scenes.syn.write(scene, tmp_path, video=False)
    vectors = scenes.reid_vectors(scene, 0)
    path = scenes.write_reid(files["detections"], vectors, tmp_path / "reid.slp")
    plain, reid = sio.load_slp(str(files["detections"])), sio.load_slp(str(path))
    for a, b in zip(plain.labeled_frames, reid.labeled_frames, strict=True):
        assert len(a.instances) == len(b.instances)
        for x, y in zip(a.instances, b.instances):
            np.testing.assert_array_equal(x.numpy(), y.numpy())
            expected = vectors[b.frame_idx][b.instances.index(y)]
            np.testing.assert_allclose(y.identity_embedding.vector, expected)
