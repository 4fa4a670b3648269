#!/usr/bin/env python
"""Identity-linking parity: ours vs sleap-nn 0.3.5's ``link_tracklets``, on random scenes.

Each case is a random *tracked* video: animals wandering (some crossing), each
animal's track broken into fragments that get new ids (a tracker losing it),
frames where an animal is missed, stray detections with their own short
tracks, double detections of one animal, untracked detections, single-node
poses in some cases, a frame stride or dropped frames in others; the number
of animals ``N`` is given (closed set) in about half of the cases. No re-ID
vectors: the port refuses them (sleap-nn's appearance calibration is not ported).

sleap-nn's ``link_tracklets`` (``calibration=None``: it calibrates the video
itself, as after an uncalibrated tracker) relabels the sleap-io objects; ours
(:func:`sleap_infer.tracking.linking.link.link_tracks`) answers an id per detection
from compact arrays. Counted: detections whose final track differs (both keep
the earlier identity's track, so ids are compared directly).

    .venv/bin/python benchmarks/linking_parity.py --sleap-nn-src /work/sleap_nn_035_src --cases 60
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sleap_infer.tracking.linking.inputs import LinkInput  # noqa: E402
from sleap_infer.tracking.linking.link import link_tracks  # noqa: E402

SHAPE = np.array([[0.0, 0.0], [14.0, 3.0], [26.0, -2.0], [8.0, 9.0]])


def scene(rng: np.random.Generator, vectors: bool) -> tuple[list, int, int]:
    """``[(frame_idx, points, point_scores, scores, track_ids, vectors)]``, N, nodes.

    With ``vectors``: each animal has an identity vector (16-d), each detection a noisy
    copy (some missing), strays random ones; crossing animals swap track ids at times.
    """
    n_animals = int(rng.integers(2, 5))
    n_nodes = int(rng.choice([1, 4, 4]))
    # re-ID calibration needs 100 trials along unambiguous stretches 30 steps apart
    n_frames = int(rng.integers(300, 600) if vectors else rng.integers(60, 260))
    stride = int(rng.choice([1, 1, 1, 2, 3]))
    speed = rng.uniform(0.5, 5)
    arena = float(rng.choice([120.0, 250.0, 500.0]))  # small: crowded, animals cross
    if vectors:
        arena = float(rng.choice([250.0, 500.0, 800.0]))
    pos = rng.uniform(0, arena, (n_animals, 2))
    vel = rng.uniform(-speed, speed, (n_animals, 2))
    shape = SHAPE[:n_nodes] * rng.uniform(0.8, 2.5)
    cur = np.arange(n_animals)  # each animal's current track id
    next_id = n_animals
    p_break = rng.uniform(0.005, 0.08)
    p_miss = rng.uniform(0.0, 0.015) if vectors else rng.uniform(0.02, 0.3)
    gone_until = np.zeros(n_animals, int)
    dim = 16
    identity = rng.normal(0, 1, (n_animals, dim))
    noise = rng.uniform(0.2, 1.2)
    frames, f = [], 0
    for t in range(n_frames):
        f += stride * (1 if rng.random() > 0.05 else int(rng.integers(2, 5)))
        vel += rng.normal(0, 0.5, vel.shape)
        vel = np.clip(vel, -3 * speed, 3 * speed)
        pos = np.clip(pos + vel * stride, 0, arena)
        pts, ids, vecs = [], [], []
        if vectors:  # a tracker swapping two close animals' ids
            for a in range(n_animals):
                for b in range(a + 1, n_animals):
                    if np.hypot(*(pos[a] - pos[b])) < 25 and rng.random() < 0.2:
                        cur[a], cur[b] = cur[b], cur[a]
        for a in range(n_animals):
            if rng.random() < p_break * 0.3 and gone_until[a] <= t:
                gone_until[a] = t + int(rng.integers(2, 60))  # a long absence
            if gone_until[a] > t or rng.random() < p_miss:
                continue
            if rng.random() < p_break:
                cur[a], next_id = next_id, next_id + 1
            pts.append(shape + pos[a] + rng.normal(0, 1.0, shape.shape))
            ids.append(int(cur[a]))
            vecs.append(identity[a] + rng.normal(0, noise, dim))
            if rng.random() < 0.03:  # a double detection, tracked or not
                pts.append(shape + pos[a] + rng.normal(0, 2.0, shape.shape))
                ids.append(next_id if rng.random() < 0.5 else -1)
                next_id += int(ids[-1] >= 0)
                vecs.append(identity[a] + rng.normal(0, noise, dim))
        if rng.random() < (0.02 if vectors else 0.08):  # a stray with its own short track
            pts.append(shape + rng.uniform(0, arena, 2))
            ids.append(next_id if rng.random() < 0.6 else -1)
            next_id += int(ids[-1] >= 0)
            vecs.append(rng.normal(0, 1, dim))
        if rng.random() < 0.02 and t % 7 == 0:  # rare: an untracked, fully hidden pose
            pts.append(np.full_like(shape, np.nan))
            ids.append(-1)
            vecs.append(rng.normal(0, 1, dim))
        order = rng.permutation(len(pts))
        p = np.array([pts[i] for i in order]).reshape(-1, n_nodes, 2)
        if n_nodes > 1 and len(p):
            hide = rng.random(p.shape[:2]) < 0.1
            hide[:, 0] = False
            p[hide] = np.nan
        ps = rng.uniform(0.2, 1.0, p.shape[:2])
        v = np.array([vecs[i] for i in order]).reshape(-1, dim)
        v[rng.random(len(v)) < 0.1] = np.nan  # no vector
        frames.append(
            (
                f,
                p,
                ps,
                rng.uniform(0.1, 1.0, len(p)),
                np.array(ids, int)[order],
                v if vectors else None,
            )
        )
    return frames, n_animals, n_nodes


def theirs(frames: list, n_nodes: int, max_tracks: int | None, norm: bool) -> list[np.ndarray]:
    import sleap_io as sio
    from sleap_nn.tracking.mot.calibration import calibrate, score_normalizer
    from sleap_nn.tracking.mot.detections import extract_detections
    from sleap_nn.tracking.mot.linking import link_tracklets

    skeleton = sio.Skeleton([f"n{i}" for i in range(n_nodes)])
    tracks: dict[int, sio.Track] = {}
    objs = []
    for f, p, ps, s, ids, v in frames:
        row = []
        for k in range(len(p)):
            tid = int(ids[k])
            track = None if tid < 0 else tracks.setdefault(tid, sio.Track(name=f"track_{tid}"))
            emb = None
            if v is not None and np.isfinite(v[k]).all():
                emb = sio.Embedding(np.asarray(v[k], np.float32))
            row.append(
                sio.PredictedInstance.from_numpy(
                    p[k],
                    skeleton=skeleton,
                    point_scores=ps[k],
                    score=float(s[k]),
                    track=track,
                    identity_embedding=emb,
                )
            )
        objs.append((f, row))
    normalizer = None
    if norm:  # as after a MOT tracker's prepare() (animal preset: normalize_scores)
        dets = [extract_detections(row, f) for f, row in objs]
        normalizer = score_normalizer(calibrate(dets, appearance=False))
    link_tracklets(objs, max_tracks=max_tracks, score_normalizer=normalizer)
    return [
        np.array([-1 if o.track is None else int(o.track.name[6:]) for o in row], int)
        for _, row in objs
    ]


def ours(frames: list, max_tracks: int | None, norm: bool) -> list[np.ndarray]:
    inp = LinkInput()
    for f, p, ps, s, ids, v in frames:
        inp.add_frame(f, p, ps, s, ids, None if v is None else v.astype(np.float32))
    new, result = link_tracks(inp, max_tracks=max_tracks, normalize_scores=norm)
    cuts = np.cumsum([len(fr[1]) for fr in frames])[:-1]
    return np.split(new, cuts), result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sleap-nn-src", type=Path, default=ROOT / ".bench-venv" / "sleap-nn-src")
    ap.add_argument("--cases", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sys.path.insert(0, str(args.sleap_nn_src))
    import sleap_nn.tracking.mot.linking  # noqa: F401  (before silencing its logger)
    from loguru import logger

    logger.remove()
    rows = []
    for case in range(args.cases):
        rng = np.random.default_rng([args.seed, case])
        vectors = case % 4 >= 2
        frames, n_animals, n_nodes = scene(rng, vectors)
        known = case % 2 == 1
        n = n_animals if known else None
        norm = case % 3 == 0
        want = theirs(frames, n_nodes, n, norm)
        got, result = ours(frames, n, norm)
        dets = sum(len(w) for w in want)
        diff = sum(int((w != g).sum()) for w, g in zip(want, got, strict=True))
        before = len({int(i) for fr in frames for i in fr[4] if i >= 0})
        after = len({int(i) for w in want for i in w if i >= 0})
        label = ("N=" + str(n) if known else "open") + ("+app" if result.appearance else "")
        label += "+v" if vectors and not result.appearance else ""
        label += "+q" if norm else ""
        rows.append((case, n_nodes, label, dets, before, after, result.swaps, diff))
    head = ("case", "nodes", "set", "dets", "ids in", "ids out", "swaps", "diff")
    widths = (4, 5, 8, 6, 6, 7, 5, 5)
    for r in [head, *rows]:
        print(" ".join(f"{v:>{w}}" for v, w in zip(r, widths, strict=True)))
    total = sum(r[3] for r in rows)
    bad = sum(r[-1] for r in rows)
    print(f"{len(rows)} cases, {total} detections, {bad} with a different final track")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
