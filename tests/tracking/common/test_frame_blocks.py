"""Frames stacked by detection count give identity linking's per-frame pair tests the
same bits as the frame-by-frame loops they replace (kept here as the reference)."""

from __future__ import annotations

import numpy as np
import pytest

from sleap_infer.tracking.common import frame_blocks as fb
from sleap_infer.tracking.common.calibration import (
    ANCHOR_RATIO,
    DUPLICATE_IOMIN,
    _links,
    _same_frame,
    _second_smallest,
    pair_iomin,
)
from sleap_infer.tracking.linking.link import (
    AMBIGUITY_IOU,
    ISOLATION_IOU,
    MIN_VISIBLE_FRACTION,
    _gating,
    iou_matrix,
)
from sleap_infer.tracking.linking.linker import DUPLICATE_CENTROID_BODY, Linker
from sleap_infer.tracking.linking.linker import DUPLICATE_IOMIN as LINKER_DUPLICATE_IOMIN


def _video(seed: int, frames: int = 120) -> dict[str, np.ndarray]:
    """Random frames of 0-7 detections: boxes that overlap, touch, repeat (duplicates),
    go missing (NaN) or shrink to nothing; some untracked."""
    rng = np.random.default_rng(seed)
    counts = rng.choice([0, 1, 2, 3, 3, 4, 5, 7], size=frames)
    n = int(counts.sum())
    lo = rng.uniform(0, 60, (n, 2)).round(1)
    size = rng.choice([0.0, 0.5, 4.0, 9.0, 20.0], (n, 2))
    box = np.concatenate([lo, lo + size], axis=1)
    copies = rng.random(n) < 0.1
    box[1:][copies[1:]] = box[:-1][copies[1:]] + rng.choice([0.0, 0.3], (int(copies[1:].sum()), 4))
    box[rng.random(n) < 0.05] = np.nan
    return {
        "counts": counts.astype(np.int64),
        "offsets": (np.cumsum(counts) - counts).astype(np.int64),
        "pos": np.repeat(np.arange(frames), counts).astype(np.int64),
        "box": box,
        "centroids": 0.5 * (box[:, :2] + box[:, 2:]),
        "track": np.where(rng.random(n) < 0.15, -1, rng.integers(0, 6, n)),
        "score": rng.uniform(0, 1, n),
        "n_visible": rng.integers(0, 5, n),
        "has": rng.random(n) < 0.8,
    }


def _frames(v: dict[str, np.ndarray]):
    for f in range(len(v["counts"])):
        s = int(v["offsets"][f])
        yield f, slice(s, s + int(v["counts"][f]))


# ------------------------------------------------ the frame-by-frame loops, as they were
def _same_frame_loop(v):
    nn = np.full(len(v["pos"]), np.inf)
    dup = np.zeros(len(v["pos"]), bool)
    for _, s in _frames(v):
        k = s.stop - s.start
        if k < 2:
            continue
        eye = np.eye(k, dtype=bool)
        pair = (pair_iomin(v["box"][s], v["box"][s]) > DUPLICATE_IOMIN) & ~eye
        dup[s] = pair.any(axis=1)
        c = v["centroids"][s]
        dist = np.linalg.norm(c[:, None] - c[None], axis=-1)
        nn[s] = np.where(np.isfinite(dist) & ~eye & ~pair, dist, np.inf).min(axis=1)
    return nn, dup


def _links_loop(v, dup, max_dist):
    nxt = np.full(len(v["pos"]), -1, np.int64)
    counts, offsets, c = v["counts"], v["offsets"], v["centroids"]
    for f in range(len(counts) - 1):
        ka, kb = int(counts[f]), int(counts[f + 1])
        if ka == 0 or kb == 0:
            continue
        a = np.arange(offsets[f], offsets[f] + ka)
        b = np.arange(offsets[f + 1], offsets[f + 1] + kb)
        dist = np.linalg.norm(c[a][:, None] - c[b][None], axis=-1)
        dist = np.where(np.isfinite(dist), dist, np.inf)
        best_col, best_row = dist.argmin(axis=1), dist.argmin(axis=0)
        d1 = dist[np.arange(ka), best_col]
        row_second = _second_smallest(dist, axis=1)
        col_second = _second_smallest(dist, axis=0)[best_col]
        ok = np.isfinite(d1) & (best_row[best_col] == np.arange(ka)) & (d1 < max_dist)
        ok &= (row_second >= ANCHOR_RATIO * d1) & (row_second > d1)
        ok &= (col_second >= ANCHOR_RATIO * d1) & (col_second > d1)
        ok &= ~dup[a] & ~dup[b[best_col]]
        nxt[a[ok]] = b[best_col[ok]]
    return nxt


def _gating_loop(v, n_nodes, high):
    track, padded = v["track"], v["box"]
    valid = np.isfinite(padded).all(axis=1)
    tracked_all = track >= 0
    gated = np.zeros(int(tracked_all.sum()), bool)
    overlaps = []
    first = 0
    for _, s in _frames(v):
        t = np.flatnonzero(tracked_all[s])
        if len(t) == 0:
            continue
        iou = iou_matrix(padded[s], padded[s])
        np.fill_diagonal(iou, 0.0)
        isolated = (iou < ISOLATION_IOU).all(axis=1)
        visible = v["n_visible"][s] / n_nodes >= MIN_VISIBLE_FRACTION
        ok = valid[s] & (v["score"][s] >= high) & visible & isolated & v["has"][s]
        gated[first : first + len(t)] = ok[t]
        if len(t) >= 2:
            sub = iou[np.ix_(t, t)]
            ids = track[s][t]
            for a, b in zip(*np.nonzero(np.triu(sub >= AMBIGUITY_IOU, k=1)), strict=True):
                if ids[a] != ids[b]:
                    overlaps.append((first + int(a), first + int(b)))
        first += len(t)
    return gated, np.asarray(overlaps, np.int64).reshape(-1, 2)


def _duplicates_loop(pos, raw, sized, centroids, valid_c, dist_max):
    out = []
    cuts = np.flatnonzero(np.diff(pos)) + 1
    starts = np.concatenate([[0], cuts]).astype(np.int64)
    stops = np.concatenate([cuts, [len(pos)]]).astype(np.int64)
    for s, e in zip(starts.tolist(), stops.tolist(), strict=True):
        if e - s < 2:
            continue
        box = raw[s:e]
        lo = np.maximum(box[:, None, :2], box[None, :, :2])
        hi = np.minimum(box[:, None, 2:], box[None, :, 2:])
        inter = np.clip(hi - lo, 0.0, None).prod(axis=-1)
        area = np.clip(box[:, 2:] - box[:, :2], 0.0, None).prod(axis=-1)
        small = np.minimum(area[:, None], area[None, :])
        both = sized[s:e]
        cen = centroids[s:e]
        with np.errstate(invalid="ignore", divide="ignore"):
            iomin = np.where(small > 0, inter / small, 0.0)
            iomin = np.where(both[:, None] & both[None, :], iomin, 0.0)
            dist = np.linalg.norm(cen[:, None] - cen[None], axis=-1)
            dup = (np.nan_to_num(iomin) >= LINKER_DUPLICATE_IOMIN) | (dist < dist_max)
        ok = valid_c[s:e]
        dup &= ok[:, None] & ok[None, :]
        for a, b in zip(*np.nonzero(np.triu(dup, k=1)), strict=True):
            out.append((s + int(a), s + int(b)))
    return np.asarray(out, np.int64).reshape(-1, 2)


# ------------------------------------------------------------------------------ tests
@pytest.mark.parametrize("seed", range(6))
def test_calibration_pairs_are_the_loop_s_bits(seed: int) -> None:
    v = _video(seed)
    nn, dup = _same_frame(v["offsets"], v["counts"], v["centroids"], v["box"])
    nn_ref, dup_ref = _same_frame_loop(v)
    assert nn.tobytes() == nn_ref.tobytes() and np.array_equal(dup, dup_ref)
    for max_dist in (np.inf, 6.0):
        got = _links(v["offsets"], v["counts"], v["centroids"], dup, max_dist)
        np.testing.assert_array_equal(got, _links_loop(v, dup_ref, max_dist))
    assert (_links(v["offsets"], v["counts"], v["centroids"], dup, np.inf) >= 0).any()


@pytest.mark.parametrize("seed", range(6))
def test_gating_and_ambiguity_pairs_are_the_loop_s(seed: int) -> None:
    v = _video(seed)
    valid = np.isfinite(v["box"]).all(axis=1)
    got = _gating(
        v["pos"], v["track"], v["box"], v["score"], v["n_visible"], v["has"], valid, 4, 0.4
    )
    ref = _gating_loop(v, 4, 0.4)
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])
    assert got[0].any() and len(got[1])


@pytest.mark.parametrize("seed", range(6))
def test_duplicate_pairs_are_the_loop_s(seed: int) -> None:
    v = _video(seed)
    keep = np.flatnonzero(v["track"] >= 0)
    pos, raw = v["pos"][keep], v["box"][keep]
    sized = v["n_visible"][keep] >= 2
    linker = Linker.__new__(Linker)  # only the fields ``_duplicates`` reads
    linker.body, linker.pos = 10.0, pos
    linker.centroids = 0.5 * (raw[:, :2] + raw[:, 2:])
    linker.valid_c = np.isfinite(linker.centroids).all(axis=1)
    got = linker._duplicates(raw, sized)
    ref = _duplicates_loop(
        pos, raw, sized, linker.centroids, linker.valid_c, DUPLICATE_CENTROID_BODY * 10.0
    )
    np.testing.assert_array_equal(got, ref)
    assert len(ref)


def test_blocks_cover_every_frame_once_and_stay_bounded(monkeypatch) -> None:
    monkeypatch.setattr(fb, "CHUNK", 40)
    v = _video(0, frames=300)
    seen = np.concatenate([r.ravel() for r in fb.frame_blocks(v["offsets"], v["counts"])])
    assert sorted(seen.tolist()) == list(range(len(v["pos"])))
    for rows in fb.frame_blocks(v["offsets"], v["counts"]):
        assert rows.size * rows.shape[1] <= 40 or len(rows) == 1
    pairs = list(fb.next_frame_blocks(v["offsets"], v["counts"]))
    firsts = sorted(int(v["pos"][a[i, 0]]) for a, _ in pairs for i in range(len(a)))
    expected = [f for f in range(len(v["counts"]) - 1) if v["counts"][f] and v["counts"][f + 1]]
    assert firsts == expected
