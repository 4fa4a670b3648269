"""sleap-nn 0.3.5's identity linking (``--link_tracklets``), spatial rules, offline.

After a video is tracked (any tracker), sleap-nn's ``link_tracklets`` treats
every track as an identity and

1. links an identity that ends to one that starts later when they never share
   a frame, the later one starts within the spatial gate of the earlier one's
   end (radius ``body + 3 s f(gap)``, ``s`` the calibrated per-step motion),
   the gap is at most 4 track buffers, and the pair is *unique*: no other
   feasible predecessor or successor competes on that window's frontier, and
   no identity could take either end inside one of its own gaps;
2. with a known number of animals ``N`` (``--max-tracks``), keeps ``N``
   anchors (the best-supported identities present together) and gives every
   other tracklet to the anchor it fits (never co-occurring apart from
   duplicate detections; spatially gated; cheapest junction), most
   constrained first; a tracklet that fits none is untracked.

Merged identities keep the earlier identity's track id. This is the whole
algorithm for detections without re-ID vectors, ported rule for rule from
``sleap_nn/tracking/mot/linking.py``; sleap-nn's appearance rules (swap
correction at crossings, re-ID gap links and fits) need its appearance
calibration, which is not ported, so runs with re-ID vectors are refused
(:func:`check_linkable`). It works from :class:`LinkInput` (compact arrays,
see :mod:`sleap_infer.tracking.linking_input`) and answers one new track id
per detection: a pure function of the tracked detections, so a run killed
while linking simply links again on ``--resume``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sleap_infer.core.errors import UsageError
from sleap_infer.tracking.base import MASKS
from sleap_infer.tracking.linking_calibration import Geometry, calibrate_geometry, frame_steps
from sleap_infer.tracking.linking_closed import ClosedSet
from sleap_infer.tracking.linking_input import LinkInput

SPATIAL_ONLY_BUFFERS = 4  # spatial-only links up to this many track buffers
MAX_WINDOW_CANDIDATES = 256  # successors kept per identity inside that window
GATE_STEP_MULT = 3.0
GATE_LINEAR_STEPS = 10  # the gate grows linearly this long, then as sqrt (a random walk)
GATE_MIN_STEP_BODY = 0.05  # per-step motion floor, in body sizes
SPATIAL_GATE_FRAMES = 300  # no gate beyond this many steps (sleap-nn's default)
DUPLICATE_IOMIN = 0.5  # same-frame raw boxes overlapping this much of the smaller: one animal
DUPLICATE_CENTROID_BODY = 0.3  # ... or centroids closer than this many body sizes
TRACK_BUFFER = 30  # sleap-nn's MOTParams default: tracklet split and window scale


def check_linkable(carrier: str, has_vectors: bool) -> None:
    """One line for what the port does not cover (sleap-nn would link these)."""
    if carrier == MASKS:
        raise UsageError("--link-tracklets: linking tracked masks is not ported yet (poses only)")
    if has_vectors:
        raise UsageError(
            "--link-tracklets: linking with re-ID vectors (sleap-nn's appearance calibration,"
            " swap correction and re-ID links) is not ported yet; it links by position only"
        )


@dataclass
class LinkResult:
    """What linking did to one video (sleap-nn's ``LinkingResult`` counts)."""

    identities_before: int = 0
    identities: int = 0
    merges: int = 0
    forced: int = 0
    untracked: int = 0


def _gate_boxes(box: np.ndarray, n_visible: np.ndarray, floor: float | None) -> np.ndarray:
    """Raw boxes with sleap-nn's degenerate rule: one visible node, or under 1 px on an
    axis, becomes a square of side ``floor`` (the body size) or, with ``floor`` None, the
    extent floored at 1 px per axis, around the same centre."""
    out = np.asarray(box, np.float64).copy()
    wh = out[:, 2:] - out[:, :2]
    valid = np.isfinite(out).all(axis=1)
    bad = valid & ((n_visible == 1) | (wh < 1.0).any(axis=1))
    if bad.any():
        c = 0.5 * (out[bad, :2] + out[bad, 2:])
        half = (
            np.full_like(c, 0.5 * max(float(floor), 1.0))
            if floor is not None
            else 0.5 * np.maximum(wh[bad], 1.0)
        )
        out[bad] = np.concatenate([c - half, c + half], axis=1)
    return out


def link_tracks(
    inp: LinkInput,
    max_tracks: int | None = None,
    track_buffer: int = TRACK_BUFFER,
    body_size: float | None = None,
) -> tuple[np.ndarray, LinkResult]:
    """New track id of each detection of ``inp`` (-1: untracked), and the counts."""
    frame_idx, pos, track, box, score, n_visible = inp.arrays()
    result = LinkResult()
    if not (track >= 0).any():
        return track.copy(), result
    valid = np.isfinite(box).all(axis=1)
    floored = _gate_boxes(box, n_visible, None)
    geo = calibrate_geometry(
        frame_idx,
        pos[valid].astype(np.int64),
        0.5 * (floored[valid, :2] + floored[valid, 2:]),
        floored[valid],
        n_visible[valid] >= 2,
        body_size,
    )
    wh = floored[:, 2:] - floored[:, :2]
    degenerate = valid & ((n_visible == 1) | (wh <= 1.0 + 1e-9).any(axis=1))
    boxes = _gate_boxes(box, n_visible, geo.body_size) if degenerate.any() else floored
    linker = Linker(frame_idx, pos, track, boxes, score, n_visible, geo, track_buffer)
    result.identities_before = len(linker.names)
    while (best := linker.best_gap_link()) is not None:
        linker.merge(*best)
        result.merges += 1
    if max_tracks is not None and max_tracks >= 1 and linker.alive.sum() > max_tracks:
        result.forced, result.untracked = ClosedSet(linker).run(int(max_tracks))
    final = linker.final_tracks()
    out = track.copy()
    tracked = np.flatnonzero(track >= 0)
    lab = linker.label
    ids = np.array([linker.ids[final[k]] if k >= 0 and k in final else -1 for k in lab.tolist()])
    out[tracked] = ids.astype(np.int32)
    result.identities = len(final)
    return out, result


class Linker:
    """sleap-nn's ``_Linker`` without appearance: identities of the tracked detections
    (index order is time order), their extents, and the sparse candidate pairs
    (earlier identity ``i`` -> later ``j``) the open-set rules decide on."""

    def __init__(
        self,
        frame_idx: np.ndarray,
        pos: np.ndarray,
        track: np.ndarray,
        boxes: np.ndarray,
        score: np.ndarray,
        n_visible: np.ndarray,
        geo: Geometry,
        track_buffer: int,
    ) -> None:
        self.track_buffer = int(track_buffer)
        self.body = geo.body_size
        p95 = geo.step_p95
        self.step_scale = max(p95, GATE_MIN_STEP_BODY * self.body) if np.isfinite(p95) else p95
        self.frame_idx = frame_idx
        steps = frame_steps(frame_idx, geo.time_base, geo.frame_step).astype(np.float64)
        keep = np.flatnonzero(track >= 0)
        self.pos = pos[keep].astype(np.int64)
        self.step = steps[self.pos]
        raw = boxes[keep]
        self.centroids = 0.5 * (raw[:, :2] + raw[:, 2:])
        self.valid_c = np.isfinite(self.centroids).all(axis=1)
        c = self.centroids[self.valid_c]
        self.arena = max(float(np.hypot(*np.ptp(c, axis=0))) if len(c) else 0.0, self.body)
        self.scores = score[keep].astype(np.float64)
        # identities in order of first appearance (sleap-nn's track_index)
        ids, first = np.unique(track[keep], return_index=True)
        order = np.argsort(first, kind="stable")
        self.ids = ids[order].astype(np.int64)  # identity -> original track id
        index = np.empty(len(ids), np.int64)
        index[order] = np.arange(len(ids))
        self.label = index[np.searchsorted(ids, track[keep])]
        self.owner = self.label.copy()
        self.dup_pairs = self._duplicates(raw, n_visible[keep])
        n = len(keep)
        keys = self.dup_pairs.min(axis=1) * max(n, 1) + self.dup_pairs.max(axis=1)
        self._dup_keys = np.sort(keys)
        m = len(ids)
        self.names = [f"track_{t}" for t in self.ids.tolist()]
        rank = sorted(range(m), key=lambda k: (self.names[k], k))
        self.name_rank = np.empty(m, np.int64)
        self.name_rank[rank] = np.arange(m)
        srt = np.argsort(self.label, kind="stable")
        bounds = np.searchsorted(self.label[srt], np.arange(m + 1))
        self.members = [srt[bounds[k] : bounds[k + 1]] for k in range(m)]
        self.alive = np.ones(m, bool)
        self.first_step = np.full(m, np.inf)
        self.last_step = np.full(m, -np.inf)
        self.start_c = np.full((m, 2), np.nan)
        self.end_c = np.full((m, 2), np.nan)
        self.n_dets = np.zeros(m, np.int64)
        for k in range(m):
            if len(self.members[k]) == 0:
                self.alive[k] = False
                continue
            self._set_extent(k)
            self.n_dets[k] = len(self.members[k])
        self.pairs = _Pairs(m)
        self._init_pairs()

    # ------------------------------------------------------------- geometry
    def _duplicates(self, raw: np.ndarray, n_visible: np.ndarray) -> np.ndarray:
        """Same-frame pairs of tracked detections that are one animal detected twice."""
        out: list[tuple[int, int]] = []
        dist_max = DUPLICATE_CENTROID_BODY * self.body
        cuts = np.flatnonzero(np.diff(self.pos)) + 1
        starts = np.concatenate([[0], cuts]).astype(np.int64)
        stops = np.concatenate([cuts, [len(self.pos)]]).astype(np.int64)
        for s, e in zip(starts.tolist(), stops.tolist(), strict=True):
            if e - s < 2:
                continue
            box = raw[s:e]
            lo = np.maximum(box[:, None, :2], box[None, :, :2])
            hi = np.minimum(box[:, None, 2:], box[None, :, 2:])
            inter = np.clip(hi - lo, 0.0, None).prod(axis=-1)
            area = np.clip(box[:, 2:] - box[:, :2], 0.0, None).prod(axis=-1)
            small = np.minimum(area[:, None], area[None, :])
            sized = n_visible[s:e] >= 2
            cen = self.centroids[s:e]
            with np.errstate(invalid="ignore", divide="ignore"):
                iomin = np.where(small > 0, inter / small, 0.0)
                iomin = np.where(sized[:, None] & sized[None, :], iomin, 0.0)
                dist = np.linalg.norm(cen[:, None] - cen[None], axis=-1)
                dup = (np.nan_to_num(iomin) >= DUPLICATE_IOMIN) | (dist < dist_max)
            ok = self.valid_c[s:e]
            dup &= ok[:, None] & ok[None, :]
            for a, b in zip(*np.nonzero(np.triu(dup, k=1)), strict=True):
                out.append((s + int(a), s + int(b)))
        return np.asarray(out, np.int64).reshape(-1, 2)

    def is_dup(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if len(self._dup_keys) == 0 or len(a) == 0:
            return np.zeros(len(a), bool)
        n = max(len(self.pos), 1)
        key = np.minimum(a, b) * n + np.maximum(a, b)
        at = np.minimum(np.searchsorted(self._dup_keys, key), len(self._dup_keys) - 1)
        return self._dup_keys[at] == key

    def _set_extent(self, k: int) -> None:
        mem = self.members[k]
        self.first_step[k] = self.step[mem[0]]
        self.last_step[k] = self.step[mem[-1]]
        ok = mem[self.valid_c[mem]]
        if len(ok):
            self.start_c[k] = self.centroids[ok[0]]
            self.end_c[k] = self.centroids[ok[-1]]

    def radius(self, gap: np.ndarray) -> np.ndarray:
        gap = np.asarray(gap, np.float64)
        eff = np.where(
            gap <= GATE_LINEAR_STEPS, gap, np.sqrt(GATE_LINEAR_STEPS * np.maximum(gap, 0.0))
        )
        return self.body + GATE_STEP_MULT * self.step_scale * eff

    def gate_ok(self, gap: np.ndarray, dist: np.ndarray) -> np.ndarray:
        """A junction is feasible: ungated (long gap, no motion scale) or near enough."""
        gap = np.asarray(gap, np.float64)
        gated = (gap <= SPATIAL_GATE_FRAMES) & np.isfinite(self.step_scale)
        with np.errstate(invalid="ignore"):
            near = np.asarray(dist) <= self.radius(np.maximum(gap, 0.0))
        return ~gated | near

    def junction_cost(self, gap: np.ndarray, dist: np.ndarray) -> np.ndarray:
        """``4.5 z^2 + 2 ln r`` (``z = dist / r``, ``r`` the gate capped at the arena);
        without a motion scale ``4.5 (dist / body)^2 + ln gap``; non-finite -> inf."""
        gap = np.maximum(np.asarray(gap, np.float64), 1.0)
        dist = np.asarray(dist, np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            if np.isfinite(self.step_scale):
                r = np.minimum(self.radius(gap), self.arena)
                c = 4.5 * (dist / r) ** 2 + 2.0 * np.log(r)
            else:
                c = 4.5 * (dist / self.body) ** 2 + np.log(gap)
        return np.where(np.isfinite(c), c, np.inf)

    # ---------------------------------------------------------- candidates
    def _init_pairs(self) -> None:
        alive = np.flatnonzero(self.alive)
        if len(alive) < 2:
            return
        order = alive[np.argsort(self.first_step[alive], kind="stable")]
        firsts = self.first_step[order]
        window = SPATIAL_ONLY_BUFFERS * self.track_buffer
        lo = np.searchsorted(firsts, self.last_step[alive], side="right")
        hi = np.searchsorted(firsts, self.last_step[alive] + window, side="right")
        hi = np.minimum(hi, lo + MAX_WINDOW_CANDIDATES)
        counts = np.maximum(hi - lo, 0)
        owner = np.repeat(np.arange(len(counts)), counts)
        starts = np.cumsum(counts) - counts
        index = np.arange(int(counts.sum())) - np.repeat(starts, counts) + np.repeat(lo, counts)
        m = len(self.names)
        keys = np.unique(alive[owner] * m + order[index.astype(np.int64)])
        self._add_pairs(keys // m, keys % m)

    def _add_pairs(self, ii: np.ndarray, jj: np.ndarray) -> None:
        """Keep the ordered, spatially feasible pairs (without appearance nothing past the
        gate survives)."""
        ii, jj = np.asarray(ii, np.int64), np.asarray(jj, np.int64)
        if len(ii) == 0:
            return
        gap = self.first_step[jj] - self.last_step[ii]
        dist = np.linalg.norm(self.start_c[jj] - self.end_c[ii], axis=1)
        ok = self.alive[ii] & self.alive[jj] & (ii != jj) & (gap > 0) & self.gate_ok(gap, dist)
        self.pairs.add(ii[ok], jj[ok], gap[ok] <= SPATIAL_ONLY_BUFFERS * self.track_buffer)

    def best_gap_link(self) -> tuple[int, int] | None:
        """sleap-nn's ``best_gap_link`` for spatial candidates: unique on the window's
        frontier, ranked, frontier first (stage A), else one skipping only rejected
        candidates (stage B)."""
        p = self.pairs
        m = len(self.names)
        w = np.flatnonzero(p.live[: p.n] & p.win[: p.n])
        if len(w) == 0:
            return None
        wi, wj = p.i[w], p.j[w]
        end_first = np.full(m, np.inf)
        np.minimum.at(end_first, wi, self.last_step[wj])
        start_last = np.full(m, -np.inf)
        np.maximum.at(start_last, wj, self.first_step[wi])
        row_f = self.first_step[wj] <= end_first[wi]
        col_f = self.last_step[wi] >= start_last[wj]
        row_n = np.bincount(wi[row_f], minlength=m)
        col_n = np.bincount(wj[col_f], minlength=m)
        cp = w[row_f & col_f & (row_n[wi] == 1) & (col_n[wj] == 1)]
        if len(cp) == 0:
            return None
        ci, cj = p.i[cp], p.j[cp]

        def accepted(k: int) -> bool:
            q = int(cp[k])
            if p.verdict[q] < 0:
                p.verdict[q] = int(self._spatially_unique(int(ci[k]), int(cj[k])))
            return bool(p.verdict[q])

        def ranked(sel: np.ndarray) -> np.ndarray:
            k = np.flatnonzero(sel)
            keys = (
                self.name_rank[cj[k]],
                self.name_rank[ci[k]],
                self.first_step[cj[k]],
                p.gap(self, cp[k]),
                np.zeros(len(k)),
                np.ones(len(k), bool),
            )
            return k[np.lexsort(keys)]

        # the frontier among these candidates (sleap-nn computes it over the accepted
        # appearance and spatial ones; without appearance those are these)
        end_first = np.full(m, np.inf)
        np.minimum.at(end_first, ci, self.last_step[cj])
        start_last = np.full(m, -np.inf)
        np.maximum.at(start_last, cj, self.first_step[ci])
        frontier = (self.first_step[cj] <= end_first[ci]) & (self.last_step[ci] >= start_last[cj])
        for k in ranked(frontier):
            if accepted(int(k)):
                return int(ci[k]), int(cj[k])
        index = {int(q): k for k, q in enumerate(cp.tolist())}
        for k in ranked(~frontier):
            if not accepted(int(k)):
                continue
            i, j = int(ci[k]), int(cj[k])
            skipped = [
                index.get(int(q)) for q in p.row(i) if self.last_step[p.j[q]] < self.first_step[j]
            ] + [index.get(int(q)) for q in p.col(j) if self.first_step[p.i[q]] > self.last_step[i]]
            if any(s is not None and accepted(s) for s in skipped):
                continue
            return i, j
        return None

    def _spatially_unique(self, i: int, j: int) -> bool:
        """No host (an identity with ``j`` or ``i`` inside one of its gaps) could take
        ``j``'s start or ``i``'s end within the window."""
        window = SPATIAL_ONLY_BUFFERS * self.track_buffer
        for h, gap1, _, d1, _ in self.hosts(j):
            if h != i and gap1 <= window and self.gate_ok(gap1, d1):
                return False
        for h, _, gap2, _, d2 in self.hosts(i):
            if h != j and gap2 <= window and self.gate_ok(gap2, d2):
                return False
        return True

    def gap_fits(self, h: int, cand: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(guests, gap1, gap2, d1, d2)``: the ``cand`` lying wholly inside one gap of
        ``h``, the steps from ``h``'s detection before to the guest's start and from the
        guest's end to ``h``'s next one, and the matching centroid distances."""
        none = np.zeros(0, np.int64)
        empty = (none, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))
        mem = self.members[h]
        if not self.alive[h] or len(mem) < 2 or len(cand) == 0:
            return empty
        cand = np.asarray(cand, np.int64)
        inside = (
            self.alive[cand]
            & (self.first_step[cand] > self.first_step[h])
            & (self.last_step[cand] < self.last_step[h])
        )
        cand = cand[inside]
        st = self.step[mem]
        lo = np.searchsorted(st, self.first_step[cand], side="left")
        hi = np.searchsorted(st, self.last_step[cand], side="right")
        cand, lo = cand[lo == hi], lo[lo == hi]
        if len(cand) == 0:
            return empty
        gap1 = self.first_step[cand] - st[lo - 1]
        gap2 = st[lo] - self.last_step[cand]
        vm = mem[self.valid_c[mem]]
        if len(vm) == 0:
            nan = np.full(len(cand), np.nan)
            return cand, gap1, gap2, nan, nan.copy()
        vs = self.step[vm]
        a = np.searchsorted(vs, self.first_step[cand], side="left") - 1
        b = np.searchsorted(vs, self.last_step[cand], side="right")
        prev_c = np.where((a >= 0)[:, None], self.centroids[vm[np.clip(a, 0, len(vm) - 1)]], np.nan)
        next_c = np.where(
            (b < len(vm))[:, None], self.centroids[vm[np.clip(b, 0, len(vm) - 1)]], np.nan
        )
        d1 = np.linalg.norm(self.start_c[cand] - prev_c, axis=1)
        d2 = np.linalg.norm(next_c - self.end_c[cand], axis=1)
        return cand, gap1, gap2, d1, d2

    def hosts(self, k: int) -> list[tuple[int, float, float, float, float]]:
        hosts = np.flatnonzero(
            self.alive
            & (self.first_step < self.first_step[k])
            & (self.last_step > self.last_step[k])
        )
        out = []
        for h in hosts.tolist():
            fit = self.gap_fits(h, np.array([k]))
            if len(fit[0]):
                out.append((h, *(float(v[0]) for v in fit[1:])))
        return out

    def _neighborhood(self, k: int, mark: np.ndarray) -> None:
        mark[k] = True
        mark[self.pairs.i[self.pairs.col(k)]] = True
        mark[self.pairs.j[self.pairs.row(k)]] = True
        mark[self.gap_fits(k, np.flatnonzero(self.alive))[0]] = True

    def merge(self, i: int, j: int) -> None:
        """``j`` joins the earlier ``i``; the pairs of both are replaced by the merged
        identity's, and every verdict whose competitors may have changed is reset."""
        p = self.pairs
        dirty = np.zeros(len(self.names), bool)
        self._neighborhood(i, dirty)
        self._neighborhood(j, dirty)
        succ = np.concatenate([p.j[p.row(k)] for k in (i, j)])
        pred = np.concatenate([p.i[p.col(k)] for k in (i, j)])
        for k in (i, j):
            p.drop(k)
        self.alive[j] = False
        self.members[i] = np.concatenate([self.members[i], self.members[j]])
        self.members[j] = self.members[j][:0]
        self.label[self.members[i]] = i
        self.owner[self.members[i]] = i
        self._set_extent(i)
        self.n_dets[i] += self.n_dets[j]
        succ, pred = np.unique(succ), np.unique(pred)
        succ = succ[(succ != i) & (succ != j)]
        pred = pred[(pred != i) & (pred != j)]
        self._add_pairs(np.full(len(succ), i), succ)
        self._add_pairs(pred, np.full(len(pred), i))
        self._neighborhood(i, dirty)
        for k in np.flatnonzero(dirty).tolist():
            p.verdict[p.row(k)] = -1
            p.verdict[p.col(k)] = -1

    def final_tracks(self) -> dict[int, int]:
        """Identity -> the identity whose track it keeps: its earliest detection's owner
        before the closed set, unless an earlier-starting identity took that already."""
        out: dict[int, int] = {}
        used: set[int] = set()
        alive = [k for k in np.flatnonzero(self.alive).tolist() if len(self.members[k])]
        alive.sort(key=lambda k: int(self.members[k].min()))
        for k in alive:
            o = int(self.owner[int(self.members[k].min())])
            if o in used or o < 0:
                o = k
            out[k] = o
            used.add(o)
        return out


class _Pairs:
    """Candidate pairs in growable arrays, with per-identity row / column lists."""

    def __init__(self, m: int) -> None:
        self.n = 0
        self.i = np.zeros(0, np.int64)
        self.j = np.zeros(0, np.int64)
        self.win = np.zeros(0, bool)
        self.live = np.zeros(0, bool)
        self.verdict = np.zeros(0, np.int8)
        self.rows: list[list[int]] = [[] for _ in range(m)]
        self.cols: list[list[int]] = [[] for _ in range(m)]

    def add(self, ii: np.ndarray, jj: np.ndarray, win: np.ndarray) -> None:
        k = len(ii)
        if k == 0:
            return
        need = self.n + k
        if need > len(self.i):
            cap = max(need, 2 * len(self.i), 64)
            for name in ("i", "j", "win", "live", "verdict"):
                arr = getattr(self, name)
                grown = np.zeros(cap, arr.dtype)
                grown[: self.n] = arr[: self.n]
                setattr(self, name, grown)
        s = slice(self.n, need)
        self.i[s], self.j[s], self.win[s] = ii, jj, win
        self.live[s], self.verdict[s] = True, -1
        for q, (a, b) in enumerate(zip(ii.tolist(), jj.tolist(), strict=True), start=self.n):
            self.rows[a].append(q)
            self.cols[b].append(q)
        self.n = need

    def _live(self, lists: list[list[int]], k: int) -> np.ndarray:
        idx = np.asarray(lists[k], np.int64)
        if len(idx):
            idx = idx[self.live[idx]]
            lists[k] = idx.tolist()
        return idx

    def row(self, k: int) -> np.ndarray:
        return self._live(self.rows, k)

    def col(self, k: int) -> np.ndarray:
        return self._live(self.cols, k)

    def drop(self, k: int) -> None:
        for lst in (self.rows[k], self.cols[k]):
            self.live[np.asarray(lst, np.int64)] = False
        self.rows[k], self.cols[k] = [], []

    def gap(self, linker: Linker, q: np.ndarray) -> np.ndarray:
        return linker.first_step[self.j[q]] - linker.last_step[self.i[q]]
