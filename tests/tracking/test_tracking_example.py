"""The synthetic tracking example: deterministic, animals that really cross, readable files."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import sleap_io as sio

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tracking_synthetic.py"
spec = importlib.util.spec_from_file_location("tracking_synthetic", EXAMPLE)
example = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = example  # dataclasses look their module up by name
spec.loader.exec_module(example)


def test_same_seed_same_scene_other_seed_other_scene() -> None:
    a, b, c = example.simulate(120, 4, 0), example.simulate(120, 4, 0), example.simulate(120, 4, 1)
    assert a.truth.shape == (120, 4, 5, 2)
    assert np.array_equal(a.truth, b.truth)
    for name in ("det_points", "det_point_scores", "det_scores", "det_animal"):
        assert all(
            np.array_equal(x, y, equal_nan=True) for x, y in zip(getattr(a, name), getattr(b, name))
        )
    assert not np.allclose(a.truth, c.truth)


def test_animals_cross_and_occlusion_shows_in_the_detections() -> None:
    scene = example.simulate(200, 4, 0)
    centres = scene.truth.mean(axis=2)
    gaps = np.linalg.norm(centres[:, :, None] - centres[:, None], axis=-1)
    upper = np.triu_indices(4, k=1)
    pairs = gaps[:, upper[0], upper[1]]  # (F, 6)
    assert pairs.min() < 5.0  # one animal passes right over another
    assert (pairs.min(axis=1) < 15.0).sum() >= 10  # ... over several frames
    assert (scene.truth >= 0).all() and (scene.truth <= example.ARENA).all()

    occ = example.occlusion(centres)
    animal = np.concatenate(scene.det_animal)
    scores = np.concatenate(scene.det_scores)
    frame = np.repeat(np.arange(200), [len(s) for s in scene.det_scores])
    true = animal >= 0
    covered = np.zeros(len(animal), dtype=bool)
    covered[true] = occ[frame[true], animal[true]] > 0.3
    assert scores[covered].mean() < scores[true & ~covered].mean() - 0.15
    assert len(animal) < 200 * 4 + (animal < 0).sum()  # some animals were missed
    visible = np.concatenate([np.isfinite(p[..., 0]).sum(axis=1) for p in scene.det_points])
    assert visible.min() >= 1 and (visible < 5).any()


def test_writes_truth_detections_and_video(tmp_path: Path) -> None:
    scene = example.simulate(20, 3, 2)
    files = example.write(scene, tmp_path, video=True)
    truth = sio.load_slp(str(files["truth"]))
    assert [t.name for t in truth.tracks] == ["animal_0", "animal_1", "animal_2"]
    assert [n.name for n in truth.skeletons[0].nodes] == list(example.NODES)
    first = truth.find(truth.video, 0)[0]
    assert [i.track.name for i in first.instances] == ["animal_0", "animal_1", "animal_2"]
    assert np.allclose(first.instances[1].numpy(), scene.truth[0, 1])

    detections = sio.load_slp(str(files["detections"]))
    assert not detections.tracks
    assert Path(detections.video.filename).name == "video.mp4"
    counts = {lf.frame_idx: len(lf.instances) for lf in detections.labeled_frames}
    assert [counts.get(f, 0) for f in range(20)] == [len(s) for s in scene.det_scores]
    inst = detections.find(detections.video, 5)[0].instances[0]
    assert isinstance(inst, sio.PredictedInstance) and inst.track is None
    assert np.isclose(inst.score, scene.det_scores[5][0])
    assert np.allclose(inst.numpy(), scene.det_points[5][0], equal_nan=True)
    assert detections.video.shape[:3] == (20, example.ARENA, example.ARENA)
