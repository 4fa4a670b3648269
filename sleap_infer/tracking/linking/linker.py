"""The state of one identity-linking run: sleap-nn 0.3.5's ``_Linker``, open set.

Holds every tracked detection of the video in time order (index order is time
order) with its identity label, and per identity its members, extent, end
centroids and (with appearance) its head and tail galleries of gated
vectors. The open set works on sparse candidate pairs (earlier identity ``i``
-> later ``j``): all pairs inside the spatial-only window (4 track buffers),
plus, with appearance, each identity's best successors and predecessors by
a mean-vector proxy. A link is accepted by appearance (threshold for the later
identity's head length, margin over the candidates proven to be other
animals) or, without vectors on both sides, by spatial uniqueness.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from sleap_infer.tracking.common.appearance import s_link
from sleap_infer.tracking.common.calibration import (
    Geometry,
    frame_steps,
    pair_distances,
    pair_iomin,
)
from sleap_infer.tracking.common.frame_blocks import (
    frame_blocks,
    frame_layout,
    in_frame_order,
    upper_pairs,
)

SPATIAL_ONLY_BUFFERS = 4  # spatial-only links up to this many track buffers
MAX_WINDOW_CANDIDATES = 256  # successors kept per identity inside that window
GATE_STEP_MULT = 3.0
GATE_LINEAR_STEPS = 10  # the gate grows linearly this long, then as sqrt (a random walk)
GATE_MIN_STEP_BODY = 0.05  # per-step motion floor, in body sizes
SPATIAL_GATE_FRAMES = 300  # no gate beyond this many steps (sleap-nn's default)
DUPLICATE_IOMIN = 0.5  # same-frame raw boxes overlapping this much of the smaller: one animal
DUPLICATE_CENTROID_BODY = 0.3  # ... or centroids closer than this many body sizes
GALLERY_SIZE = 30  # gated vectors in an identity's end gallery
LINK_QUERY_SIZE = 10  # gated vectors in a query (an identity's head)
MIN_APPEARANCE_CANDIDATES = 8
MAX_APPEARANCE_CANDIDATES = 64
BLOCK_ELEMS = 1 << 20  # elements of one block of the appearance-proxy pass
EPS = 1e-9


class Linker:
    """Identities of the tracked detections and the open-set candidate pairs."""

    def __init__(
        self,
        frame_idx: np.ndarray,
        pos: np.ndarray,
        track: np.ndarray,
        boxes: np.ndarray,
        score: np.ndarray,
        sized: np.ndarray,
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
        self.keep = keep  # tracked rows among all detections
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
        self.dup_pairs = self._duplicates(raw, sized[keep])
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
        self.mcache: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self.gated = np.zeros(n, bool)
        self.vectors: np.ndarray | None = None
        self.overlaps = np.zeros((0, 2), np.int64)
        self.in_event = np.zeros(n, bool)
        self.thresh_n = np.full(LINK_QUERY_SIZE, np.nan)
        self.margin_n = np.full(LINK_QUERY_SIZE, np.nan)
        self.dim = 0

    @property
    def app_vectors(self) -> np.ndarray:
        """The gated vectors, read only where appearance is in use (so there are some)."""
        assert self.vectors is not None
        return self.vectors

    def add_appearance(
        self,
        gated: np.ndarray,
        vectors: np.ndarray | None,
        overlaps: np.ndarray,
        rules: tuple[np.ndarray, np.ndarray] | None,
    ) -> None:
        """Gated vectors of the tracked detections, ambiguity overlaps, calibrated rules."""
        self.gated = gated
        self.overlaps = overlaps
        self.in_event[overlaps.reshape(-1)] = True
        if vectors is not None:
            self.dim = vectors.shape[1]
            if gated.any():
                self.vectors = np.zeros((len(gated), self.dim), np.float32)
                self.vectors[gated] = vectors[self.keep][gated]
        if rules is not None:
            self.thresh_n, self.margin_n = rules

    def rule(self, n_query: int) -> tuple[float, float]:
        n = min(max(int(n_query), 1), len(self.thresh_n)) - 1
        return float(self.thresh_n[n]), float(self.margin_n[n])

    # ------------------------------------------------------------- geometry
    def _duplicates(self, raw: np.ndarray, sized: np.ndarray) -> np.ndarray:
        """Same-frame pairs of tracked detections that are one animal detected twice
        (``sized``: the detection has an extent whose overlap counts, see
        :meth:`LinkInput.single_and_sized`), in frame order."""
        dist_max = DUPLICATE_CENTROID_BODY * self.body
        offsets, counts = frame_layout(self.pos)
        parts = []
        for rows in frame_blocks(offsets, counts, min_count=2):
            box = raw[rows]
            both = sized[rows]
            iomin = np.where(both[:, :, None] & both[:, None, :], pair_iomin(box, box), 0.0)
            cen = self.centroids[rows]
            dist = pair_distances(cen, cen)
            dup = (np.nan_to_num(iomin) >= DUPLICATE_IOMIN) | (dist < dist_max)
            ok = self.valid_c[rows]
            dup &= ok[:, :, None] & ok[:, None, :]
            parts.append(upper_pairs(dup, rows))
        return in_frame_order(parts)

    def is_dup(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if len(self._dup_keys) == 0 or len(a) == 0:
            return np.zeros(len(a), bool)
        n = max(len(self.pos), 1)
        key = np.minimum(a, b) * n + np.maximum(a, b)
        at = np.minimum(np.searchsorted(self._dup_keys, key), len(self._dup_keys) - 1)
        return self._dup_keys[at] == key

    def radius(self, gap: np.ndarray) -> np.ndarray:
        gap = np.asarray(gap, np.float64)
        eff = np.where(
            gap <= GATE_LINEAR_STEPS, gap, np.sqrt(GATE_LINEAR_STEPS * np.maximum(gap, 0.0))
        )
        return self.body + GATE_STEP_MULT * self.step_scale * eff

    def gate_ok(self, gap: npt.ArrayLike, dist: npt.ArrayLike) -> np.ndarray:
        """A junction is feasible: ungated (long gap, no motion scale) or near enough."""
        gaps = np.asarray(gap, np.float64)
        gated = (gaps <= SPATIAL_GATE_FRAMES) & np.isfinite(self.step_scale)
        with np.errstate(invalid="ignore"):
            near = np.asarray(dist) <= self.radius(np.maximum(gaps, 0.0))
        return ~gated | near

    def ungated_by_appearance(self, gap: np.ndarray) -> np.ndarray:
        """Past ``track_buffer`` steps a calibrated appearance link may skip the gate."""
        gap = np.asarray(gap)
        return gap > self.track_buffer if self.use_app else np.zeros(gap.shape, bool)

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

    # ------------------------------------------------------------ open set
    def init_linking(self, use_appearance: bool) -> None:
        """Per-identity summaries (after swap correction) and the candidate pairs."""
        m = len(self.names)
        self.use_app = bool(use_appearance) and self.vectors is not None
        self.owner = self.label.copy()
        self.first_step = np.full(m, np.inf)
        self.last_step = np.full(m, -np.inf)
        self.start_c = np.full((m, 2), np.nan)
        self.end_c = np.full((m, 2), np.nan)
        self.n_dets = np.zeros(m, np.int64)
        self.gated_members: list[np.ndarray] = []
        empty = np.zeros((0, self.dim), np.float32)
        self.heads: list[np.ndarray] = [empty] * m
        self.tails: list[np.ndarray] = [empty] * m
        self.n_head = np.zeros(m, np.int64)
        self.n_tail = np.zeros(m, np.int64)
        for k in range(m):
            mem = self.members[k]
            self.gated_members.append(mem[self.gated[mem]])
            if len(mem) == 0:
                self.alive[k] = False
                continue
            self._set_extent(k)
            self.n_dets[k] = len(mem)
            if self.use_app:
                self._set_galleries(k)
        self.pairs = _Pairs(m)
        self._init_pairs()

    def _set_extent(self, k: int) -> None:
        mem = self.members[k]
        self.first_step[k] = self.step[mem[0]]
        self.last_step[k] = self.step[mem[-1]]
        ok = mem[self.valid_c[mem]]
        if len(ok):
            self.start_c[k] = self.centroids[ok[0]]
            self.end_c[k] = self.centroids[ok[-1]]

    def _set_galleries(self, k: int) -> None:
        g = self.gated_members[k]
        head, tail = g[:LINK_QUERY_SIZE], g[-GALLERY_SIZE:]
        self.heads[k], self.tails[k] = self.app_vectors[head], self.app_vectors[tail]
        self.n_head[k], self.n_tail[k] = len(head), len(tail)

    def _max_concurrent(self) -> int:
        live = self.label >= 0
        return int(np.bincount(self.pos[live]).max()) if live.any() else 1

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
        ii, jj = [alive[owner]], [order[index.astype(np.int64)]]
        if self.use_app:
            ai, aj = self._appearance_candidates()
            ii.append(ai)
            jj.append(aj)
        m = len(self.names)
        keys = np.unique(np.concatenate(ii) * m + np.concatenate(jj))
        self._add_pairs(keys // m, keys % m)

    def _appearance_candidates(self) -> tuple[np.ndarray, np.ndarray]:
        """Each identity's K best successors and predecessors by the cosine of mean end
        gallery and mean head (K = clip(2 x most identities in a frame, 8, 64))."""
        none = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        rows = np.flatnonzero(self.alive & (self.n_tail > 0))
        cols = np.flatnonzero(self.alive & (self.n_head > 0))
        if len(rows) == 0 or len(cols) == 0:
            return none

        def mean_unit(vs: list[np.ndarray]) -> np.ndarray:
            mu = np.stack([v.mean(axis=0) for v in vs]).astype(np.float32)
            return mu / np.maximum(np.linalg.norm(mu, axis=1, keepdims=True), 1e-12)

        tm = mean_unit([self.tails[k] for k in rows])
        hm = mean_unit([self.heads[k] for k in cols])
        k_app = int(
            np.clip(
                2 * self._max_concurrent(), MIN_APPEARANCE_CANDIDATES, MAX_APPEARANCE_CANDIDATES
            )
        )
        mc = len(cols)
        kr = min(k_app, mc)
        col_val = np.full((k_app, mc), -np.inf, np.float32)
        col_idx = np.full((k_app, mc), -1, np.int64)
        out_i: list[np.ndarray] = []
        out_j: list[np.ndarray] = []
        block = max(1, BLOCK_ELEMS // max(mc, 1))
        for b0 in range(0, len(rows), block):
            r = rows[b0 : b0 + block]
            sim = tm[b0 : b0 + block] @ hm.T
            gap = self.first_step[cols][None, :] - self.last_step[r][:, None]
            dist = np.linalg.norm(
                self.start_c[cols][None, :, :] - self.end_c[r][:, None, :], axis=-1
            )
            ok = (gap > 0) & (self.gate_ok(gap, dist) | self.ungated_by_appearance(gap))
            sim = np.where(ok, sim, -np.inf).astype(np.float32)
            top = np.argpartition(-sim, kr - 1, axis=1)[:, :kr]
            val = np.take_along_axis(sim, top, axis=1)
            keep = np.isfinite(val)
            out_i.append(np.repeat(r, kr).reshape(-1, kr)[keep])
            out_j.append(cols[top[keep]])
            if len(r) > k_app:
                ctop = np.argpartition(-sim, k_app - 1, axis=0)[:k_app]
            else:
                ctop = np.broadcast_to(np.arange(len(r))[:, None], (len(r), mc))
            cval = np.take_along_axis(sim, ctop, axis=0)
            all_val = np.concatenate([col_val, cval], axis=0)
            all_idx = np.concatenate([col_idx, r[ctop]], axis=0)
            best = np.argpartition(-all_val, k_app - 1, axis=0)[:k_app]
            col_val = np.take_along_axis(all_val, best, axis=0)
            col_idx = np.take_along_axis(all_idx, best, axis=0)
        keep = np.isfinite(col_val) & (col_idx >= 0)
        out_i.append(col_idx[keep])
        out_j.append(np.broadcast_to(cols[None, :], col_val.shape)[keep])
        return np.concatenate(out_i), np.concatenate(out_j)

    def _score_pairs(self, ii: np.ndarray, jj: np.ndarray) -> np.ndarray:
        """Linking statistic of ``j``'s head against ``i``'s end gallery (NaN: none)."""
        out = np.full(len(ii), np.nan)
        if not self.use_app or len(ii) == 0:
            return out
        ok = np.flatnonzero((self.n_tail[ii] > 0) & (self.n_head[jj] > 0))
        if len(ok) == 0:
            return out
        ok = ok[np.argsort(ii[ok], kind="stable")]
        cuts = np.flatnonzero(np.diff(ii[ok])) + 1
        for grp in np.split(ok, cuts):
            tail = self.tails[int(ii[grp[0]])].astype(np.float64)
            heads = [self.heads[int(j)] for j in jj[grp]]
            nq = np.array([len(h) for h in heads])
            cos = np.concatenate(heads).astype(np.float64) @ tail.T
            nt = cos.shape[1]
            kk = min(5, nt)
            per_q = np.partition(cos, nt - kk, axis=1)[:, nt - kk :].mean(axis=1)
            out[grp] = np.add.reduceat(per_q, np.cumsum(nq) - nq) / nq
        return out

    def _add_pairs(
        self, ii: np.ndarray, jj: np.ndarray, known: dict[int, float] | None = None, side: int = 1
    ) -> None:
        """Keep the ordered, feasible pairs: within the gate, or past it (long gaps) when
        appearance clears the threshold; ``known``: statistics still valid (by ``jj`` for
        ``side`` 1, by ``ii`` for 0)."""
        ii, jj = np.asarray(ii, np.int64), np.asarray(jj, np.int64)
        if len(ii) == 0:
            return
        gap = self.first_step[jj] - self.last_step[ii]
        dist = np.linalg.norm(self.start_c[jj] - self.end_c[ii], axis=1)
        gate_ok = self.gate_ok(gap, dist)
        ok = (
            self.alive[ii]
            & self.alive[jj]
            & (ii != jj)
            & (gap > 0)
            & (gate_ok | self.ungated_by_appearance(gap))
        )
        ii, jj, gap, gate_ok = ii[ok], jj[ok], gap[ok], gate_ok[ok]
        if not gate_ok.all():
            score = self._score_pairs(ii, jj)
            n_q = np.clip(self.n_head[jj], 1, len(self.thresh_n))
            with np.errstate(invalid="ignore"):
                passes = np.isfinite(score) & (score >= self.thresh_n[n_q - 1])
            keep = gate_ok | passes
            ii, jj, gap, score = ii[keep], jj[keep], gap[keep], score[keep]
        elif known:
            keys = (jj if side == 1 else ii).tolist()
            have = np.array([k in known for k in keys], bool)
            score = np.full(len(ii), np.nan)
            score[have] = [known[k] for k, h in zip(keys, have, strict=True) if h]
            score[~have] = self._score_pairs(ii[~have], jj[~have])
        else:
            score = self._score_pairs(ii, jj)
        if len(ii) == 0:
            return
        win = gap <= SPATIAL_ONLY_BUFFERS * self.track_buffer
        has_app = np.isfinite(score)
        n_q = np.clip(self.n_head[jj], 1, len(self.thresh_n))
        with np.errstate(invalid="ignore"):
            app = has_app & (score >= self.thresh_n[n_q - 1])
        self.pairs.add(ii, jj, score, app, win & ~has_app)

    def best_gap_link(self) -> tuple[int, int] | None:
        """sleap-nn's ``best_gap_link``: appearance candidates clearing their threshold
        and spatial ones unique on the window's frontier, ranked (appearance first, score,
        gap, start, names); the frontier first (stage A), else a link skipping only
        rejected candidates (stage B)."""
        p = self.pairs
        m = len(self.names)
        live = p.live[: p.n]
        app = np.flatnonzero(live & p.app[: p.n])
        w = np.flatnonzero(live & p.spat[: p.n])
        wi, wj = p.i[w], p.j[w]
        end_first = np.full(m, np.inf)
        np.minimum.at(end_first, wi, self.last_step[wj])
        start_last = np.full(m, -np.inf)
        np.maximum.at(start_last, wj, self.first_step[wi])
        row_f = self.first_step[wj] <= end_first[wi]
        col_f = self.last_step[wi] >= start_last[wj]
        row_n = np.bincount(wi[row_f], minlength=m)
        col_n = np.bincount(wj[col_f], minlength=m)
        spatial = w[row_f & col_f & (row_n[wi] == 1) & (col_n[wj] == 1)]
        cp = np.concatenate([app, spatial])
        if len(cp) == 0:
            return None
        ci, cj = p.i[cp], p.j[cp]
        c_spatial = np.concatenate([np.zeros(len(app), bool), np.ones(len(spatial), bool)])
        c_score = np.nan_to_num(p.score[cp], nan=0.0)

        def accepted(k: int) -> bool:
            q = int(cp[k])
            if p.verdict[q] < 0:
                i, j = int(ci[k]), int(cj[k])
                ok = (
                    self._spatially_unique(i, j)
                    if c_spatial[k]
                    else self._margin_ok(i, j, float(p.score[q]))
                )
                p.verdict[q] = int(ok)
            return bool(p.verdict[q])

        def ranked(sel: np.ndarray) -> np.ndarray:
            k = np.flatnonzero(sel)
            keys = (
                self.name_rank[cj[k]],
                self.name_rank[ci[k]],
                self.first_step[cj[k]],
                self.first_step[cj[k]] - self.last_step[ci[k]],
                -c_score[k],
                c_spatial[k],
            )
            return k[np.lexsort(keys)]

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

    def cooccur(self, ks: np.ndarray, k: int) -> np.ndarray:
        ks = np.asarray(ks, np.int64)
        return self.alive[ks] & ~(
            (self.last_step[ks] < self.first_step[k]) | (self.last_step[k] < self.first_step[ks])
        )

    def _margin_ok(self, i: int, j: int, score: float) -> bool:
        """The appearance margin of ``i -> j`` over its proven-different competitors:
        candidates of ``j`` co-occurring with ``i``, of ``i`` co-occurring with ``j``, and
        hosts that could take either end inside one of their gaps."""
        p = self.pairs
        others = [-np.inf]
        col = p.col(j)
        col = col[(p.i[col] != i) & np.isfinite(p.score[col])]
        col = col[self.cooccur(p.i[col], i)]
        if len(col):
            others.append(float(p.score[col].max()))
        row = p.row(i)
        row = row[(p.j[row] != j) & np.isfinite(p.score[row])]
        row = row[self.cooccur(p.j[row], j)]
        if len(row):
            others.append(float(p.score[row].max()))
        cl_i = self.cooccur(np.arange(len(self.names)), i)
        cl_j = self.cooccur(np.arange(len(self.names)), j)
        for h, gap1, _, d1, _ in self.hosts(j):
            if h != i and cl_i[h] and self.gate_ok(gap1, d1):
                others.append(self.junction_score(h, j, "start"))
        for h, _, gap2, _, d2 in self.hosts(i):
            if h != j and cl_j[h] and self.gate_ok(gap2, d2):
                others.append(self.junction_score(h, i, "end"))
        best_other = np.nanmax(np.asarray(others))
        if not np.isfinite(best_other):
            return True
        _, margin = self.rule(self.n_head[j])
        return bool(score - best_other >= margin - EPS)

    def junction_score(self, h: int, k: int, side: str) -> float:
        g = self.gated_members[h]
        gs = self.step[g]
        gk = self.gated_members[k]
        if side == "start":
            before = g[: np.searchsorted(gs, self.first_step[k], side="left")]
            vectors = self.app_vectors
            return s_link(vectors[gk[:LINK_QUERY_SIZE]], vectors[before[-GALLERY_SIZE:]])
        after = g[np.searchsorted(gs, self.last_step[k], side="right") :]
        vectors = self.app_vectors
        return s_link(vectors[after[:LINK_QUERY_SIZE]], vectors[gk[-GALLERY_SIZE:]])

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
            cand, gap1, gap2, d1, d2 = self.gap_fits(h, np.array([k]))
            if len(cand):
                out.append((h, float(gap1[0]), float(gap2[0]), float(d1[0]), float(d2[0])))
        return out

    def _neighborhood(self, k: int, mark: np.ndarray) -> None:
        mark[k] = True
        mark[self.pairs.i[self.pairs.col(k)]] = True
        mark[self.pairs.j[self.pairs.row(k)]] = True
        mark[self.gap_fits(k, np.flatnonzero(self.alive))[0]] = True

    def merge(self, i: int, j: int) -> None:
        """``j`` joins the earlier ``i``; the pairs of both are replaced by the merged
        identity's (statistics that survive are kept), and every verdict whose
        competitors may have changed is reset."""
        p = self.pairs
        dirty = np.zeros(len(self.names), bool)
        self._neighborhood(i, dirty)
        self._neighborhood(j, dirty)
        succ = np.concatenate([p.j[p.row(k)] for k in (i, j)])
        pred = np.concatenate([p.i[p.col(k)] for k in (i, j)])
        old_head = self.gated_members[i][:LINK_QUERY_SIZE]
        old_tail = self.gated_members[j][-GALLERY_SIZE:]
        col_i, row_j = p.col(i), p.row(j)
        head_scores = dict(zip(p.i[col_i].tolist(), p.score[col_i].tolist(), strict=True))
        tail_scores = dict(zip(p.j[row_j].tolist(), p.score[row_j].tolist(), strict=True))
        for k in (i, j):
            p.drop(k)
        self.alive[j] = False
        self.members[i] = np.concatenate([self.members[i], self.members[j]])
        self.members[j] = self.members[j][:0]
        self.label[self.members[i]] = i
        self.owner[self.members[i]] = i
        self.gated_members[i] = np.concatenate([self.gated_members[i], self.gated_members[j]])
        self._set_extent(i)
        self.n_dets[i] += self.n_dets[j]
        if self.use_app:
            self._set_galleries(i)
        self.mcache.pop(i, None)
        self.mcache.pop(j, None)
        succ, pred = np.unique(succ), np.unique(pred)
        succ = succ[(succ != i) & (succ != j)]
        pred = pred[(pred != i) & (pred != j)]
        g = self.gated_members[i]
        same_tail = np.array_equal(old_tail, g[-GALLERY_SIZE:])
        same_head = np.array_equal(old_head, g[:LINK_QUERY_SIZE])
        self._add_pairs(np.full(len(succ), i), succ, tail_scores if same_tail else None, 1)
        self._add_pairs(pred, np.full(len(pred), i), head_scores if same_head else None, 0)
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

    FIELDS = ("i", "j", "score", "app", "spat", "live", "verdict")

    def __init__(self, m: int) -> None:
        self.n = 0
        self.i = np.zeros(0, np.int64)
        self.j = np.zeros(0, np.int64)
        self.score = np.zeros(0)
        self.app = np.zeros(0, bool)
        self.spat = np.zeros(0, bool)
        self.live = np.zeros(0, bool)
        self.verdict = np.zeros(0, np.int8)
        self.rows: list[list[int]] = [[] for _ in range(m)]
        self.cols: list[list[int]] = [[] for _ in range(m)]

    def add(self, ii, jj, score, app, spat) -> None:
        k = len(ii)
        if k == 0:
            return
        need = self.n + k
        if need > len(self.i):
            cap = max(need, 2 * len(self.i), 64)
            for name in self.FIELDS:
                arr = getattr(self, name)
                grown = np.zeros(cap, arr.dtype)
                grown[: self.n] = arr[: self.n]
                setattr(self, name, grown)
        s = slice(self.n, need)
        self.i[s], self.j[s], self.score[s], self.app[s], self.spat[s] = ii, jj, score, app, spat
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
