"""sleap-nn 0.3.5's closed-set step of identity linking (``--max-tracks N``), spatial rules.

With the number of animals known, the ``N`` best-supported identities that
are present together become anchors (present together, they are certainly
different animals), and every other tracklet -- a run of an identity's
detections with no gap over ``track_buffer`` steps -- joins the anchor it
fits: one it never shares a frame with, apart from frames where it merely
duplicates the anchor's detection (or a few conflicts: a false positive),
spatially gated, at the lowest junction cost. Most constrained first (no
choice, then decisive choices, then close calls), so ambiguous geometry is
decided late, across the short junctions earlier joins create. A tracklet
that fits no anchor is untracked. Without re-ID vectors every fit is of
sleap-nn's "no appearance" tier, which is all this port covers.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sleap_infer.tracking.common.appearance import s_link

if TYPE_CHECKING:
    from sleap_infer.tracking.linking.linker import Linker

GALLERY_SIZE = 30
LINK_QUERY_SIZE = 10
MAX_CONFLICT_FRACTION = 0.05  # shared non-duplicate frames a fit tolerates (false positives)
EPS = 1e-9


@dataclass(eq=False)
class Fit:
    """How a tracklet fits one anchor (sleap-nn's ``_Fit``; tier is always "none")."""

    anchor: int
    kind: str  # "ordered", "insertion" or "duplicate"
    rest: np.ndarray  # the tracklet's detections that would join the anchor
    shared_t: np.ndarray  # the tracklet's detections in frames the anchor holds one too
    shared_u: np.ndarray  # ... and the anchor's there
    n_far: int = 0  # conflicts over a body size apart: two animals at once
    gated: bool = True
    tier: int = 1  # 0: appearance agrees, 1: unavailable or undecidable, 2: disagrees
    cost: float = float("inf")
    gap: float = 0.0


class ClosedSet:
    """One run of sleap-nn's ``close_set`` over a :class:`Linker`'s live identities."""

    def __init__(self, linker: Linker) -> None:
        self.lk = linker
        self.anchor: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}

    def select_anchors(self, n_max: int) -> list[int]:
        """The top ``n_max`` identities (by detection count, a duplicate of a better
        supported identity not counting) of the frame where the most, then the best
        supported, are present together; the rest by support if fewer."""
        lk = self.lk
        alive = np.flatnonzero(lk.alive)
        support = lk.n_dets.astype(np.float64)
        tracked = np.flatnonzero(lk.label >= 0)
        lab = lk.label[tracked]
        present = np.ones(len(tracked), bool)
        if len(lk.dup_pairs):
            a, b = lk.dup_pairs[:, 0], lk.dup_pairs[:, 1]
            la, lb = lk.label[a], lk.label[b]
            ok = (la >= 0) & (lb >= 0) & (la != lb)
            a, b, la, lb = a[ok], b[ok], la[ok], lb[ok]
            a_wins = (support[la] > support[lb]) | (
                (support[la] == support[lb]) & (lk.name_rank[la] < lk.name_rank[lb])
            )
            present[np.searchsorted(tracked, np.where(a_wins, b, a))] = False
        t, lab = tracked[present], lab[present]
        p = lk.pos[t]
        order = np.lexsort((lk.name_rank[lab], -support[lab], p))
        p, lab = p[order], lab[order]
        take = (np.arange(len(p)) - np.searchsorted(p, p, side="left")) < n_max
        n_pos = int(lk.pos.max()) + 1 if len(lk.pos) else 1
        counts = np.bincount(p[take], minlength=n_pos)
        sums = np.bincount(p[take], weights=support[lab[take]], minlength=n_pos)
        anchors: list[int] = []
        if counts.any():
            best = int(np.lexsort((np.arange(n_pos), -sums, -counts))[0])
            for k in lab[take & (p == best)].tolist():
                if k not in anchors:
                    anchors.append(int(k))
        if len(anchors) < n_max:
            rest = [int(k) for k in alive if int(k) not in anchors]
            rest.sort(key=lambda k: (-support[k], lk.name_rank[k]))
            anchors += rest[: n_max - len(anchors)]
        return anchors

    def tracklets(self, k: int) -> list[np.ndarray]:
        mem = self.lk.members[k]
        if len(mem) == 0:
            return []
        cuts = np.flatnonzero(np.diff(self.lk.step[mem]) > max(self.lk.track_buffer, 0)) + 1
        return np.split(mem, cuts)

    def _cache(self, a: int) -> None:
        mem, ga = self.lk.members[a], self.lk.gated_members[a]
        self.anchor[a] = (self.lk.pos[mem], self.lk.step[mem], ga, self.lk.step[ga])

    def fit(self, t: np.ndarray, a: int) -> Fit | None:
        """How tracklet ``t`` fits anchor ``a`` (None: more than a few conflicts)."""
        lk = self.lk
        amem = lk.members[a]
        ap, ast, ga, gs = self.anchor[a]
        tp = lk.pos[t]
        none = np.zeros(0, np.int64)
        shared_t = shared_u = none
        shared = np.zeros(len(t), bool)
        n_far = 0
        if len(ap):
            at = np.minimum(np.searchsorted(ap, tp), len(ap) - 1)
            shared = ap[at] == tp
            shared_t, shared_u = t[shared], amem[at[shared]]
            if len(shared_t):
                conflict = ~lk.is_dup(shared_t, shared_u)
                if int(np.count_nonzero(conflict)) > MAX_CONFLICT_FRACTION * len(t):
                    return None
                gap = np.linalg.norm(
                    lk.centroids[shared_t[conflict]] - lk.centroids[shared_u[conflict]], axis=1
                )
                n_far = int(np.count_nonzero(~(gap < lk.body)))
        rest = t[~shared]
        if len(rest) == 0:
            return Fit(a, "duplicate", rest, shared_t, shared_u, n_far, cost=-np.inf)
        fit = Fit(a, "ordered", rest, shared_t, shared_u, n_far)
        lo = int(np.searchsorted(ast, lk.step[rest[0]], side="left")) - 1
        hi = int(np.searchsorted(ast, lk.step[rest[-1]], side="right"))
        if lo >= 0 and hi < len(amem):
            fit.kind = "insertion"
        local = amem[max(lo, 0) : min(hi + 1, len(amem))]
        seq = np.concatenate([local, rest])
        src = np.concatenate([np.zeros(len(local), bool), np.ones(len(rest), bool)])
        keep = lk.valid_c[seq]
        seq, src = seq[keep], src[keep]
        order = np.argsort(lk.step[seq], kind="stable")
        seq, src = seq[order], src[order]
        tr = np.flatnonzero(src[1:] != src[:-1])
        if len(tr):
            x, y = seq[tr], seq[tr + 1]
            gaps = lk.step[y] - lk.step[x]
            dists = np.linalg.norm(lk.centroids[y] - lk.centroids[x], axis=1)
            fit.gated = bool(lk.gate_ok(gaps, dists).all())
            fit.cost = float(lk.junction_cost(gaps, dists).max())
            fit.gap = float(gaps.max())
        if lk.use_app:
            fit.tier = self._tier(rest, ga, gs)
        return fit

    def _tier(self, rest: np.ndarray, ga: np.ndarray, gs: np.ndarray) -> int:
        """Appearance across the junctions: the tracklet's first gated vectors against the
        anchor's before it, the anchor's after it against the tracklet's last ones."""
        lk = self.lk
        rg = rest[lk.gated[rest]]
        scores, n_q = [], []
        if len(rg):
            before = ga[: np.searchsorted(gs, lk.step[rest[0]], side="left")]
            if len(before):
                q = rg[:LINK_QUERY_SIZE]
                scores.append(s_link(lk.app_vectors[q], lk.app_vectors[before[-GALLERY_SIZE:]]))
                n_q.append(len(q))
            after = ga[np.searchsorted(gs, lk.step[rest[-1]], side="right") :]
            if len(after):
                q = after[:LINK_QUERY_SIZE]
                scores.append(s_link(lk.app_vectors[q], lk.app_vectors[rg[-GALLERY_SIZE:]]))
                n_q.append(len(q))
        if scores:
            thresh, _ = lk.rule(min(n_q))
            if np.isfinite(thresh):
                return 0 if float(np.mean(scores)) >= thresh else 2
        return 1

    def key(self, f: Fit) -> tuple:
        return (f.tier, f.n_far > 0, f.cost, f.gap, self.lk.name_rank[f.anchor])

    def choose(self, fits: list[Fit], n_dets: int) -> Fit | None:
        """A duplicate first; then the best gated fit; past the gate only a tracklet
        longer than ``track_buffer`` (short far-away false positives stay untracked)."""
        if not fits:
            return None
        dups = [f for f in fits if f.kind == "duplicate"]
        if dups:
            return min(dups, key=self.key)
        gated = [f for f in fits if f.gated]
        if gated:
            return min(gated, key=self.key)
        agree = [f for f in fits if f.tier == 0]
        if agree:
            return min(agree, key=self.key)
        unknown = [f for f in fits if f.tier == 1]
        if n_dets > self.lk.track_buffer and unknown:
            return min(unknown, key=self.key)
        return None

    def decision(self, fits: list[Fit | None], n_dets: int) -> tuple[tuple, Fit | None]:
        """Priority (smaller first): untrack, a single viable anchor, then by how
        decisive the choice is over the runner-up; longer tracklets first."""
        viable = [f for f in fits if f is not None]
        choice = self.choose(viable, n_dets)
        if choice is None:
            return (0, 0.0, -n_dets), None
        runner = self.choose([f for f in viable if f is not choice], n_dets)
        if runner is None:
            return (1, 0.0, -n_dets), choice

        def cls(f: Fit) -> tuple:
            return (f.kind != "duplicate", not f.gated, f.tier, f.n_far > 0)

        if cls(choice) != cls(runner):
            return (2, -np.inf, -n_dets), choice
        return (2, -(runner.cost - choice.cost), -n_dets), choice

    def join(self, fit: Fit) -> int:
        """``rest`` joins the anchor; in shared frames the higher score stays (the
        anchor's on ties), the other is untracked. Returns the detections untracked."""
        lk = self.lk
        a = fit.anchor
        swap = lk.scores[fit.shared_t] > lk.scores[fit.shared_u] + EPS
        out_t, in_t, out_u = fit.shared_t[~swap], fit.shared_t[swap], fit.shared_u[swap]
        lk.label[out_t] = -1
        lk.label[out_u] = -1
        joined = np.concatenate([fit.rest, in_t])
        lk.label[joined] = a
        mem = lk.members[a]
        if len(out_u):
            mem = mem[~np.isin(mem, out_u)]
        lk.members[a] = np.sort(np.concatenate([mem, joined]), kind="stable")
        lk.gated_members[a] = lk.members[a][lk.gated[lk.members[a]]]
        self._cache(a)
        lk.n_dets[a] = len(lk.members[a])
        return len(out_t) + len(out_u)

    def run(self, n_max: int) -> tuple[int, int]:
        """Reduce the live identities to ``n_max``; ``(tracklets assigned, untracked)``."""
        lk = self.lk
        alive = np.flatnonzero(lk.alive)
        if len(alive) <= n_max:
            return 0, 0
        lk.owner = lk.label.copy()
        anchors = self.select_anchors(n_max)
        for a in anchors:
            self._cache(a)
        pieces = [t for k in alive.tolist() if k not in self.anchor for t in self.tracklets(k)]
        p_first = np.array([lk.step[t[0]] for t in pieces], np.float64)
        p_last = np.array([lk.step[t[-1]] for t in pieces], np.float64)
        version = np.zeros(len(anchors), np.int64)
        fits = [[self.fit(t, a) for a in anchors] for t in pieces]
        seen = np.zeros((len(pieces), len(anchors)), np.int64)
        stamp = np.zeros(len(pieces), np.int64)
        done = np.zeros(len(pieces), bool)
        heap: list[tuple] = []

        def push(u: int) -> None:
            stamp[u] += 1
            prio, _ = self.decision(fits[u], len(pieces[u]))
            heapq.heappush(heap, (prio, p_first[u], u, int(stamp[u])))

        for u in range(len(pieces)):
            push(u)
        n_assigned = n_untracked = 0
        while heap:
            prio, _, u, st = heapq.heappop(heap)
            if done[u] or st != stamp[u]:
                continue
            stale = np.flatnonzero(seen[u] != version)
            if len(stale):
                for ai in stale.tolist():
                    fits[u][ai] = self.fit(pieces[u], anchors[ai])
                    seen[u, ai] = version[ai]
                if self.decision(fits[u], len(pieces[u]))[0] > prio:
                    push(u)
                    continue
            done[u] = True
            t = pieces[u]
            _, fit = self.decision(fits[u], len(t))
            if fit is None:
                lk.label[t] = -1
                n_untracked += len(t)
                continue
            n_untracked += self.join(fit)
            if fit.kind != "duplicate":
                n_assigned += 1
            ai = anchors.index(fit.anchor)
            version[ai] += 1
            reach = max(lk.track_buffer, 1)
            near = np.flatnonzero(
                ~done & (p_last >= p_first[u] - reach) & (p_first <= p_last[u] + reach)
            )
            for v in near.tolist():
                fits[v][ai] = self.fit(pieces[v], fit.anchor)
                seen[v, ai] = version[ai]
                push(v)
        for k in alive.tolist():
            if k not in self.anchor:
                lk.alive[k] = False
                lk.members[k] = lk.members[k][:0]
        return n_assigned, n_untracked
