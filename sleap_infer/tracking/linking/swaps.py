"""sleap-nn 0.3.5's swap correction at crossings (identity linking, step 1, appearance).

Where two or more identities' padded boxes overlap (an *ambiguity event*: a
maximal span of frames, chained crossings included), a tracker may swap them.
For each event over at most 4 identities, each identity's first gated vectors
after the event (query, up to 10, stopping at its next event) are scored
against every identity's last 30 gated vectors before it (gallery); the best
permutation is applied to the detections after the event when its total gain
reaches the calibrated margin per moved identity and each moved pair clears
the threshold and beats staying by the margin (the rule of its query length).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from scipy.optimize import linear_sum_assignment

from sleap_infer.tracking.common.appearance import s_link

if TYPE_CHECKING:
    from sleap_infer.tracking.linking.linker import Linker

GALLERY_SIZE = 30
SWAP_QUERY_SIZE = 10
MAX_EVENT_IDENTITIES = 4
EPS = 1e-9


@dataclass(eq=False)
class Event:
    start: int  # first processed-frame position
    end: int
    labels: set = field(default_factory=set)
    dets: list = field(default_factory=list)


def ambiguity_events(lk: Linker) -> list[Event]:
    """Per frame, overlapping identities form components; a component joins every live
    event sharing an identity that was active in this or the previous frame."""
    if len(lk.overlaps) == 0:
        return []
    frame_pos = lk.pos[lk.overlaps[:, 0]]
    order = np.argsort(frame_pos, kind="stable")
    frame_pos = frame_pos[order]
    edges_all = lk.overlaps[order].tolist()
    labels = lk.label.tolist()
    cuts = np.flatnonzero(np.diff(frame_pos)) + 1
    starts = np.concatenate([[0], cuts]).tolist()
    stops = np.concatenate([cuts, [len(frame_pos)]]).tolist()
    events: dict[int, Event] = {}
    active: list[Event] = []
    for s, e in zip(starts, stops, strict=True):
        p = int(frame_pos[s])
        edges = edges_all[s:e]
        parent: dict[int, int] = {}

        def find(x: int, parent: dict[int, int] = parent) -> int:
            while parent.setdefault(x, x) != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for a, b in edges:
            ra, rb = find(labels[a]), find(labels[b])
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        comps: dict[int, Event] = {}
        seen: dict[int, set] = {}
        for a, b in edges:
            for d in (a, b):
                lab = labels[d]
                root = find(lab)
                ev = comps.get(root)
                if ev is None:
                    ev = comps[root] = Event(p, p)
                    seen[root] = set()
                ev.labels.add(lab)
                if d not in seen[root]:
                    seen[root].add(d)
                    ev.dets.append(d)
        active = [ev for ev in active if ev.end == p - 1]
        current: list[Event] = []
        for root in sorted(comps):
            ev = comps[root]
            while True:
                other = next((x for x in active + current if x.labels & ev.labels), None)
                if other is None:
                    break
                other.start = min(other.start, ev.start)
                other.end = max(other.end, ev.end)
                other.labels |= ev.labels
                other.dets.extend(ev.dets)
                events.pop(id(ev), None)
                if any(x is other for x in active):
                    active = [x for x in active if x is not other]
                else:
                    current = [x for x in current if x is not other]
                ev = other
            current.append(ev)
            events[id(ev)] = ev
        active = current
    out = list(events.values())
    out.sort(key=lambda ev: (ev.start, ev.end, min(ev.dets)))
    return out


def _member_cache(lk: Linker, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cached = lk.mcache.get(k)
    if cached is None:
        m = lk.members[k]
        cached = (lk.pos[m], np.flatnonzero(lk.gated[m]), np.flatnonzero(lk.in_event[m]))
        lk.mcache[k] = cached
    return cached


def _pre_gallery(lk: Linker, k: int, start: int) -> np.ndarray:
    mpos, gidx, _ = _member_cache(lk, k)
    cut = int(np.searchsorted(mpos, start, side="left"))
    n_gated = int(np.searchsorted(gidx, cut, side="left"))
    return lk.app_vectors[lk.members[k][gidx[max(0, n_gated - GALLERY_SIZE) : n_gated]]]


def _post_query(lk: Linker, k: int, end: int) -> np.ndarray:
    mpos, gidx, busy = _member_cache(lk, k)
    cut = int(np.searchsorted(mpos, end, side="right"))
    nb = int(np.searchsorted(busy, cut, side="left"))
    stop = int(busy[nb]) if nb < len(busy) else len(mpos)
    lo = int(np.searchsorted(gidx, cut, side="left"))
    hi = int(np.searchsorted(gidx, stop, side="left"))
    return lk.app_vectors[lk.members[k][gidx[lo : min(hi, lo + SWAP_QUERY_SIZE)]]]


def _relabel_after(lk: Linker, perm: dict[int, int], end: int) -> None:
    heads, tails = {}, {}
    for lab in perm:
        m = lk.members[lab]
        cut = int(np.searchsorted(_member_cache(lk, lab)[0], end, side="right"))
        heads[lab], tails[lab] = m[:cut], m[cut:]
    for lab, dst in perm.items():
        lk.members[dst] = np.concatenate([heads[dst], tails[lab]])
        lk.label[tails[lab]] = dst
    for lab in perm:
        lk.mcache.pop(lab, None)


def correct_swaps(lk: Linker) -> int:
    """Swap correction over every ambiguity event, in time order; events corrected."""
    n_swaps = 0
    for ev in ambiguity_events(lk):
        ks = sorted({int(lk.label[d]) for d in ev.dets})
        if len(ks) > MAX_EVENT_IDENTITIES:
            continue
        pre = {k: _pre_gallery(lk, k, ev.start) for k in ks}
        post = {k: _post_query(lk, k, ev.end) for k in ks}
        ks = [k for k in ks if len(pre[k]) and len(post[k])]
        if len(ks) < 2:
            continue
        s = np.array([[s_link(post[lab], pre[k]) for k in ks] for lab in ks])
        rows, cols = linear_sum_assignment(-s)
        moved = [r for r, c in zip(rows, cols, strict=True) if r != c]
        if not moved:
            continue
        rules = {r: lk.rule(len(post[ks[r]])) for r in moved}
        if not all(np.isfinite(t) for t, _ in rules.values()):
            continue
        gain = float(s[rows, cols].sum() - np.trace(s))
        pair_ok = all(
            s[r, cols[r]] >= rules[r][0] and s[r, cols[r]] - s[r, r] >= rules[r][1] - EPS
            for r in moved
        )
        need = sum(rules[r][1] for r in moved)
        if gain < need - EPS or not pair_ok:
            continue
        _relabel_after(lk, {ks[r]: ks[cols[r]] for r in moved}, ev.end)
        n_swaps += 1
    return n_swaps
