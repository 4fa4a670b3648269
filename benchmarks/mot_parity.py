#!/usr/bin/env python
"""MOT-tracker parity: ours vs sleap-nn 0.3.5's own tracker classes, on random scenes.

Each case is a random scene (animals wandering and crossing, missed animals,
hidden nodes, stray detections, scores from 0.05 to 1, and for some cases
dropped frames or a frame stride). sleap-nn's class (``sleap_nn.tracking.mot``,
e.g. ``SORTTracker``, its "animal" preset) tracks it frame by frame through
its ``track()``, as an online caller would (no ``prepare``/``finalize``: no
whole-video calibration), and ours through :func:`sleap_infer.tracking.make_tracker`.

Counted per case:

* **same online**: detections whose track id equals the one sleap-nn had
  given it when its ``track()`` returned for that frame (``track_k`` -> ``k``);
* **same with late**: detections whose id, once our late labels (a confirmed
  track's tentative frames, :mod:`sleap_infer.core.late_tracks`) are laid over,
  equals sleap-nn's after its retroactive labels;
* **states exact/close**: frames after which every live track's Kalman mean
  and appearance memory (EMA bits, gallery length, update count) are the same
  bit for bit / with the means within a relative 1e-9 (one-node poses: the
  pseudo box from the running body size rounds differently, ~1e-15);
* **retro**: detections sleap-nn labels only later, when the track confirms
  (its tentative frames), that our late labels leave untracked (0 expected).

With ``--max-tracks N`` both sides are given the animal count. sleap-nn's
tracker never caps with it (``MOTParams.link``): its ``finalize()`` runs identity
linking with the closed set of N. Ours tracks uncapped and links the same way
(:func:`sleap_infer.tracking.linking.link.link_tracks`, as ``pipeline.linked`` does at
a video's end; unnormalized scores, as after sleap-nn's tracker without
``prepare()``). Then **final same** compares the ids after that pass, **retro**
counts the detections sleap-nn tracks only thanks to its tentative-frame labels,
and **other** every other difference, which the retro labels cascade into (the
linker sees other tracklets). **linked on theirs** isolates the linking: our
linking fed sleap-nn's own ids before ``finalize()`` (retro labels included),
detections whose final id differs from sleap-nn's. Masks are linked as boxes
(:meth:`LinkInput.add_masks`).

sleap-nn is not installed into our environment: its wheel (pure-Python tracking
code; numpy, scipy, sleap-io, attrs, loguru, which our venv has) is downloaded
once with ``pip download sleap-nn==0.3.5 --no-deps`` and unpacked into
``.bench-venv/sleap-nn-src``; ``--sleap-nn-src DIR`` points at an unpacked copy.

    .venv/bin/python benchmarks/mot_parity.py [--trackers sort] [--cases 200]
        [--mot-param use_byte=true ...]
    .venv/bin/python benchmarks/mot_parity.py --trackers bytetrack sort --max-tracks 2 \
        --sleap-nn-src /work/sleap_nn_035_src

The appearance trackers (``botsort``, ``deepsort``, ``strongsort``, ``deepocsort``) run on the
same scenes with a re-ID vector per detection, once per ``--thresholds`` value
(default: ``auto``, sleap-nn's default, which online leaves appearance out of
association; and ``0.5``, which puts it in).

``--prepare``: both sides first measure the whole scene, as ``sleap-nn track``
and ``infer track`` do (sleap-nn's ``tracker.prepare(frames)``; ours
:func:`sleap_infer.tracking.common.prepare.calibrate_mot`).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sleap_infer.tracking import MASKS, POSES, Detections, MaskBitmap, make_tracker  # noqa: E402
from sleap_infer.tracking.common.boxes import raw_boxes  # noqa: E402
from sleap_infer.tracking.common.prepare import calibrate_mot, prepare_args  # noqa: E402
from sleap_infer.tracking.linking.inputs import LinkInput  # noqa: E402
from sleap_infer.tracking.linking.link import link_tracks  # noqa: E402
from sleap_infer.tracking.options import TrackingOptions  # noqa: E402
from sleap_infer.tracking.registry import appearance_names  # noqa: E402
from sleap_infer.tracking.resolve import resolve_options  # noqa: E402

SRC = ROOT / ".bench-venv" / "sleap-nn-src"
SHAPE = np.array([[0.0, 0.0], [14.0, 3.0], [26.0, -2.0], [8.0, 9.0]])


def sleap_nn_source(path: Path) -> Path:
    """An unpacked sleap-nn 0.3.5 wheel at ``path`` (downloaded once)."""
    if (path / "sleap_nn" / "tracking" / "mot").is_dir():
        return path
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "sleap-nn==0.3.5", "--no-deps"]
        subprocess.run([*cmd, "-d", tmp, "-q"], check=True)
        wheel = next(Path(tmp).glob("sleap_nn-0.3.5-*.whl"))
        path.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(path)
    return path


VECTOR_DIM = 16


def scene(
    rng: np.random.Generator,
    carrier: str,
    n_nodes: int,
    vec_rng: np.random.Generator | None = None,
) -> list[Detections]:
    """Random animals on noisy paths; misses, hidden nodes, strays, gaps and a stride.

    With ``vec_rng`` (its own generator, so the scenes themselves stay the same),
    every detection gets a re-ID vector: its animal's base vector plus noise (a
    stray: a random one), a tenth of them missing (NaN), as float32 values.
    """
    noise = 0.0 if vec_rng is None else float(vec_rng.uniform(0.2, 0.9))
    n_animals = int(rng.integers(2, 6))
    n_frames = int(rng.integers(30, 90))
    stride = int(rng.choice([1, 1, 1, 2, 3]))
    pos = rng.uniform(40, 300, (n_animals, 2))
    vel = rng.uniform(-4, 4, (n_animals, 2))
    shape = SHAPE[:n_nodes] * rng.uniform(0.6, 2.0)
    bases = None if vec_rng is None else vec_rng.normal(0, 1, (n_animals, VECTOR_DIM))
    frames, f = [], 0
    for _ in range(n_frames):
        f += stride * (1 if rng.random() > 0.1 else int(rng.integers(2, 4)))
        vel += rng.normal(0, 0.8, vel.shape)
        pos += vel * stride
        shown = [a for a in range(n_animals) if rng.random() > 0.12]
        pts = [shape + pos[a] + rng.normal(0, 1.5, shape.shape) for a in shown]
        if rng.random() < 0.25:
            pts.append(shape + rng.uniform(20, 320, 2))
        order = rng.permutation(len(pts))
        pts = np.array([pts[i] for i in order]).reshape(-1, n_nodes, 2)
        vectors = None
        if bases is not None and vec_rng is not None:
            who = [shown[i] if i < len(shown) else -1 for i in order]
            vectors = np.array(
                [
                    (bases[a] if a >= 0 else vec_rng.normal(0, 1, VECTOR_DIM))
                    + vec_rng.normal(0, noise, VECTOR_DIM)
                    for a in who
                ]
            ).reshape(-1, VECTOR_DIM)
            vectors[vec_rng.random(len(vectors)) < 0.1] = np.nan
            vectors = vectors.astype(np.float32).astype(np.float64)
        if n_nodes > 1:
            pts[rng.random(pts.shape[:2]) < 0.15] = np.nan
        scores = rng.uniform(0.05, 1.0, len(pts))
        masks = None
        if carrier == MASKS:
            masks = []
            for p in pts:
                bitmap = np.zeros((200, 200), bool)
                for x, y in p[np.isfinite(p).all(axis=1)] / 2:
                    y0, x0 = max(0, int(y) - 4), max(0, int(x) - 4)
                    bitmap[y0 : max(0, int(y) + 4), x0 : max(0, int(x) + 4)] = True
                masks.append(MaskBitmap(bitmap, (0.5, 0.5)))
            pts = np.zeros((len(pts), 0, 2))
        frames.append(Detections(f, pts, scores, masks=masks, embeddings=vectors))
    return frames


def _sleap_nn_objects(det: Detections, carrier: str, skeleton):
    import sleap_io as sio

    if carrier == MASKS:
        objs = [
            sio.PredictedSegmentationMask.from_numpy(
                m.bitmap, scale=m.scale, offset=m.offset, score=float(s)
            )
            for m, s in zip(det.masks or [], det.scores)
        ]
    else:  # no point scores: sleap-nn then scores a pose by its instance score, as we do
        objs = [
            sio.PredictedInstance.from_numpy(p, skeleton=skeleton, score=float(s))
            for p, s in zip(det.points, det.scores)
        ]
    if det.embeddings is not None:
        for obj, vec in zip(objs, det.embeddings):
            if np.isfinite(vec).all():
                obj.identity_embedding = sio.Embedding(np.asarray(vec, np.float32))
    return objs


def theirs(
    name: str,
    frames: list[Detections],
    carrier: str,
    n_nodes: int,
    threshold: str | None,
    mot_param=(),
    max_tracks: int | None = None,
    prepare: bool = False,
):
    """sleap-nn's ids per frame: as ``track()`` returned them, and at the end (after
    ``finalize()``: identity linking when ``max_tracks`` is given)."""
    import sleap_io as sio
    from sleap_nn.tracking.mot import MOTParams, build_mot_tracker

    skeleton = sio.Skeleton([f"n{i}" for i in range(max(n_nodes, 1))])
    tracker = build_mot_tracker(
        MOTParams.for_tracker(
            name,
            preset="animal",
            appearance_threshold=threshold,
            max_tracks=max_tracks,
            **dict(mot_param),
        ),
        carrier="mask" if carrier == MASKS else "pose",
        n_nodes=None if carrier == MASKS else n_nodes,
    )
    kept, online, states = [], [], []

    def ids(objs):
        return np.array([-1 if o.track is None else int(o.track.name[6:]) for o in objs])

    objects = [_sleap_nn_objects(det, carrier, skeleton) for det in frames]
    if prepare:  # sleap-nn's CLI: the whole-video pre-pass first
        tracker.prepare([(det.frame_idx, objs) for det, objs in zip(frames, objects)])
    for det, objs in zip(frames, objects):
        objs = tracker.track(objs, det.frame_idx)
        kept.append(objs)
        online.append(ids(objs))
        states.append([(t.mean.tobytes(), _memory(t.appearance)) for t in tracker.tracks])
    if max_tracks is not None:
        tracker.finalize()
    return online, [ids(objs) for objs in kept], states


def _close(a: list, b: list) -> bool:
    """Same tracks, memories bit for bit, Kalman means within 1e-9 of each other."""
    if len(a) != len(b) or [x[1] for x in a] != [y[1] for y in b]:
        return False
    return all(
        np.allclose(np.frombuffer(x[0]), np.frombuffer(y[0]), rtol=1e-9) for x, y in zip(a, b)
    )


def _memory(memory) -> tuple | None:
    """An appearance memory's EMA bits, gallery length and update count (None: empty)."""
    if memory is None or memory.ema is None:
        return None
    return (np.asarray(memory.ema, np.float64).tobytes(), len(memory.gallery), memory.n_updates)


def linked(
    name: str,
    frames: list[Detections],
    ids: list[np.ndarray],
    carrier: str,
    n_nodes: int,
    threshold,
    n: int,
) -> list[np.ndarray]:
    """Our end-of-video pass over our online ids: the closed set of ``n``."""
    options = TrackingOptions(tracker=name, appearance_threshold=threshold, max_tracks=n)
    resolved = resolve_options(options, carrier, n_nodes, threshold is not None)
    inp = LinkInput()
    for det, got in zip(frames, ids):
        vectors = None if det.embeddings is None else det.embeddings.astype(np.float32)
        if carrier == MASKS:
            inp.add_masks(det.frame_idx, raw_boxes(det, MASKS)[0], det.scores, got, vectors)
            continue
        ones = np.ones(det.points.shape[:2])  # sleap-io's point scores when none are given
        inp.add_frame(det.frame_idx, det.points, ones, det.scores, got, vectors)
    new, _ = link_tracks(inp, n, resolved.track_buffer, None, resolved.track_high_threshold)
    return np.split(new, np.cumsum([len(g) for g in ids])[:-1])


def ours(
    name: str,
    frames: list[Detections],
    carrier: str,
    n_nodes: int,
    threshold: str | None,
    mot_param=(),
    prepare: bool = False,
):
    options = TrackingOptions(tracker=name, appearance_threshold=threshold, mot_param=mot_param)
    tracker = make_tracker(options, carrier, n_nodes, has_embeddings=threshold is not None)
    if prepare:  # ``infer track``'s pre-pass
        tracker.prepare(calibrate_mot(frames, carrier, *prepare_args(tracker)))
    ids, states, late = [], [], []
    for det in frames:
        answer = tracker.step(det)
        ids.append(answer.track_ids)
        late += answer.late
        means = getattr(tracker, "mean", None)
        if means is None:  # our ByteTracker keeps its tracks as one table
            means = tracker._tracks["mean"]
        memories = getattr(tracker, "memories", [None] * len(means))
        states.append([(m.tobytes(), _memory(a)) for m, a in zip(means, memories)])
    final = [np.array(i, copy=True) for i in ids]  # with the late labels laid over
    at = {int(det.frame_idx): k for k, det in enumerate(frames)}
    for frame_idx, j, tid, _ in late:
        if final[at[frame_idx]][j] < 0:
            final[at[frame_idx]][j] = tid
    return ids, final, states


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trackers", nargs="+", default=["sort"])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sleap-nn-src", type=Path, default=SRC)
    parser.add_argument(
        "--mot-param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an override for both sides (as --mot_param; repeatable)",
    )
    parser.add_argument(
        "--thresholds",
        nargs="+",
        default=["auto", "0.5"],
        help="appearance trackers: --appearance-threshold values to compare (auto: the default)",
    )
    parser.add_argument(
        "--max-tracks",
        type=int,
        default=None,
        help="the animal count: compare the final ids after sleap-nn's finalize() linking",
    )
    parser.add_argument(
        "--prepare",
        action="store_true",
        help="both sides measure the whole video first (sleap-nn's prepare(); infer track)",
    )
    args = parser.parse_args()
    n = args.max_tracks
    pp = args.prepare
    sys.path.insert(0, str(sleap_nn_source(args.sleap_nn_src)))
    import sleap_nn.tracking.mot  # noqa: F401  (its import adds a log handler)
    from loguru import logger

    logger.remove()  # sleap-nn's once-per-tracker notices
    print(
        "| tracker | threshold | carrier | cases | frames same | states exact/close | detections"
        + (
            " | same online | same with late | retro | other |"
            if n is None
            else " | final same | retro | other | linked on theirs | most ids |"
        )
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if n else "---:|"))
    failed = False
    runs = [
        (name, threshold)
        for name in args.trackers
        for threshold in (args.thresholds if name in appearance_names() else [None])
    ]
    for name, threshold in runs:
        mot_param = TrackingOptions(tracker=name, mot_param=args.mot_param).mot_param
        kinds = ((POSES, 4), (POSES, 1), (MASKS, 0))
        for carrier, n_nodes in kinds:
            rng = np.random.default_rng(args.seed)
            vec_rng = np.random.default_rng(args.seed + 1) if threshold else None
            n_dets = same = retro = other = frames_same = n_frames = most = on_theirs = 0
            same_late = 0
            states_exact = states_close = 0
            for _ in range(args.cases):
                frames = scene(rng, carrier, n_nodes if carrier == POSES else 4, vec_rng)
                online, final, their_states = theirs(
                    name, frames, carrier, n_nodes, threshold, mot_param, n, prepare=pp
                )
                got, got_late, our_states = ours(
                    name, frames, carrier, n_nodes, threshold, mot_param, prepare=pp
                )
                end = got_late
                if n is not None:
                    end = linked(name, frames, got_late, carrier, n_nodes, threshold, n)
                if n is not None:
                    most = max(most, len({int(i) for e in end for i in e if i >= 0}))
                    pre = theirs(name, frames, carrier, n_nodes, threshold, mot_param, prepare=pp)[
                        1
                    ]
                    mine = linked(name, frames, pre, carrier, n_nodes, threshold, n)
                    on_theirs += sum(int((a != b).sum()) for a, b in zip(final, mine))
                rows = zip(online, final, got, got_late, end, their_states, our_states)
                for o, fin, g, gl, e, a, b in rows:
                    n_frames += 1
                    states_exact += a == b
                    states_close += _close(a, b)
                    frames_same += bool(np.array_equal(o, g))
                    n_dets += len(g)
                    if n is None:  # online ids, then with the late labels
                        same += int((o == g).sum())
                        same_late += int((fin == gl).sum())
                        is_retro = (o == -1) & (fin != -1) & (gl == -1)
                        retro += int(is_retro.sum())
                        other += int(((fin != gl) & ~is_retro).sum())
                    else:  # final ids, after linking
                        same += int((fin == e).sum())
                        is_retro = (o == -1) & (fin != -1) & (gl == -1) & (e == -1)
                        retro += int(is_retro.sum())
                        other += int(((fin != e) & ~is_retro).sum())
            failed |= (on_theirs if n else other) > 0 or states_close < n_frames
            row = [name, threshold or "-", carrier if n_nodes != 1 else "poses, 1 node"]
            row += [args.cases]
            row += [f"{frames_same}/{n_frames}", f"{states_exact}/{states_close}/{n_frames}"]
            row += [n_dets, same] + ([] if n else [same_late]) + [retro, other]
            row += [on_theirs, most] if n else []
            print("| " + " | ".join(map(str, row)) + " |", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
