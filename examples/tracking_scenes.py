#!/usr/bin/env python
"""More synthetic tracking scenes, each with a different kind of motion than the crossing one.

``examples/tracking_synthetic.py`` makes animals that wander and cross. These
scenes reuse its bodies, detector and files, and change what makes identity
hard:

* ``crowded``: many animals (10 by default) in a quarter of the arena's area,
  so neighbours are always close and occlusions constant;
* ``occlusions``: long disappearances: each animal vanishes from the detector
  for 20-60 frames at a time (hidden under cover), and comes back elsewhere;
* ``stop-go``: animals that rest for 15-90 frames, then dart off at up to
  three times their cruising speed: a motion model's velocity is wrong at
  both ends of every pause.

``crossing`` is the original scene. Same arguments, same files:

    python examples/tracking_scenes.py OUTDIR --scene stop-go [--frames 600 --seed 0] [--reid]

``--reid`` also writes ``detections_reid.slp``: the same detections, each
carrying a re-ID vector as an embedding model's output is stored (the
instance's ``identity_embedding``, saved with ``save_embedding_vectors=True``;
sleap-nn's appearance trackers read it there). A vector is its animal's fixed
base vector plus noise, and degrades under occlusion: it drifts towards the
covering animal's vector and gets noisier (:func:`reid_vectors`).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import sleap_io as sio

HERE = Path(__file__).resolve().parent


def _synthetic():
    """``tracking_synthetic`` imported by path (examples/ is not a package)."""
    name = "tracking_synthetic"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


syn = _synthetic()


def _warped_paths(clock: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(F, A, 2)`` the crossing scene's sinusoid paths, each animal on its own clock."""
    n_animals = clock.shape[1]
    t = clock[:, :, None, None]  # (F, A, 1, 1)
    omega = rng.uniform(0.008, 0.035, (1, n_animals, 2, 3))
    phase = rng.uniform(0, 2 * np.pi, (1, n_animals, 2, 3))
    amp = rng.dirichlet(np.ones(3), (1, n_animals, 2)) * rng.uniform(70, 95, (1, n_animals, 2, 1))
    return syn.ARENA / 2 + (amp * np.sin(omega * t + phase)).sum(axis=-1)


def crowded(n_frames: int, n_animals: int | None, seed: int):
    """Many animals, half the arena's width: always a neighbour within a body length."""
    rng = np.random.default_rng(seed)
    n = n_animals or 10
    centres = syn.ARENA / 2 + 0.5 * (syn.paths(n_frames, n, rng) - syn.ARENA / 2)
    return syn.detect(syn.poses(centres), syn.occlusion(centres), rng)


def occlusions(n_frames: int, n_animals: int | None, seed: int):
    """The crossing scene's motion, with every animal hidden for 20-60 frames now and then."""
    rng = np.random.default_rng(seed)
    n = n_animals or 4
    centres = syn.paths(n_frames, n, rng)
    scene = syn.detect(syn.poses(centres), syn.occlusion(centres), rng)
    hidden = np.zeros((n_frames, n), bool)
    for a in range(n):
        f = int(rng.integers(10, 80))
        while f < n_frames:
            length = int(rng.integers(20, 61))
            hidden[f : f + length, a] = True
            f += length + int(rng.integers(60, 160))
    for f in range(n_frames):
        animal = scene.det_animal[f]
        keep = ~((animal >= 0) & hidden[f, np.maximum(animal, 0)])
        scene.det_points[f] = scene.det_points[f][keep]
        scene.det_point_scores[f] = scene.det_point_scores[f][keep]
        scene.det_scores[f] = scene.det_scores[f][keep]
        scene.det_animal[f] = animal[keep]
    return scene


def stop_go(n_frames: int, n_animals: int | None, seed: int):
    """Rests of 15-90 frames between runs at 1-3x cruising speed, per animal."""
    rng = np.random.default_rng(seed)
    n = n_animals or 4
    speed = np.zeros((n_frames, n))
    for a in range(n):
        f = 0
        while f < n_frames:
            run = int(rng.integers(20, 120))
            speed[f : f + run, a] = rng.uniform(1.0, 3.0)
            f += run
            rest = int(rng.integers(15, 91))
            speed[f : f + rest, a] = 0.0
            f += rest
    clock = np.cumsum(speed, axis=0)
    centres = _warped_paths(clock, rng)
    return syn.detect(syn.poses(centres), syn.occlusion(centres), rng)


def crossing(n_frames: int, n_animals: int | None, seed: int):
    return syn.simulate(n_frames, n_animals or 4, seed)


SCENES: dict[str, Callable] = {
    "crossing": crossing,
    "crowded": crowded,
    "occlusions": occlusions,
    "stop-go": stop_go,
}


REID_DIM = 64
REID_NOISE = 0.5  # noise vector norm, relative to the unit base vector (std 0.5 / sqrt(D))


def reid_vectors(scene, seed: int, dim: int = REID_DIM) -> list[np.ndarray]:
    """Per frame ``(I, D)`` float32 unit re-ID vectors for the scene's detections.

    Each animal has a random unit base vector. A detection's vector is its
    animal's base, mixed with the base of the animal drawn over it by half the
    occlusion (a covered animal's crop shows its neighbour), plus noise whose
    std grows threefold at full cover; a false positive gets a random vector.
    Seeded apart from the scene, so adding vectors never changes the detections.
    """
    rng = np.random.default_rng([seed, 31])
    n_animals = scene.truth.shape[1]
    base = rng.normal(size=(n_animals, dim))
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    centres = scene.truth[:, :, syn.NODES.index("thorax")]  # the body's origin
    d = np.linalg.norm(centres[:, :, None] - centres[:, None, :], axis=-1)  # (F, A, A)
    cover = np.clip(1 - d / syn.OCCLUSION_RADIUS, 0, 1)
    cover = np.where(np.triu(np.ones((n_animals, n_animals), bool), k=1), cover, 0)
    occ, over = cover.max(axis=2), cover.argmax(axis=2)  # (F, A): how much, and by whom
    sigma = REID_NOISE / np.sqrt(dim)
    out = []
    for f, animals in enumerate(scene.det_animal):
        vecs = np.empty((len(animals), dim))
        for i, a in enumerate(animals):
            if a < 0:
                vecs[i] = rng.normal(size=dim)
                continue
            mix = 0.5 * occ[f, a]
            vecs[i] = (1 - mix) * base[a] + mix * base[over[f, a]]
            vecs[i] += rng.normal(0, sigma * (1 + 2 * occ[f, a]), dim)
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        out.append(vecs.astype(np.float32))
    return out


def write_reid(detections: Path, vectors: list[np.ndarray], path: Path) -> Path:
    """``detections`` (as ``syn.write`` made it) again at ``path``, with re-ID vectors."""
    labels = sio.load_slp(str(detections))
    for lf in labels.labeled_frames:
        for instance, vector in zip(lf.instances, vectors[lf.frame_idx], strict=True):
            instance.identity_embedding = sio.Embedding(vector)
    sio.save_slp(labels, str(path), save_embedding_vectors=True)
    return path


def simulate(scene: str, n_frames: int = 600, n_animals: int | None = None, seed: int = 0):
    """A scene's ground truth and detections (deterministic in its arguments)."""
    return SCENES[scene](n_frames, n_animals, seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--scene", choices=sorted(SCENES), default="crossing")
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--animals", type=int, help="default: the scene's own")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-video", action="store_true", help="write the .slp files only")
    parser.add_argument("--reid", action="store_true", help="also detections_reid.slp")
    args = parser.parse_args()
    scene = simulate(args.scene, args.frames, args.animals, args.seed)
    files = syn.write(scene, args.outdir, video=not args.no_video)
    if args.reid:
        vectors = reid_vectors(scene, args.seed)
        reid_path = args.outdir / "detections_reid.slp"
        files["detections_reid"] = write_reid(files["detections"], vectors, reid_path)
    n_det = sum(len(s) for s in scene.det_scores)
    print(f"{args.scene}: {args.frames} frames, {scene.truth.shape[1]} animals, {n_det} detections")
    for name, path in files.items():
        print(f"  {name}: {path}")


if __name__ == "__main__":
    main()
