"""Opt-in fragment merge (``merge_fragments``): re-join instances that split one animal.

Follows sleap-nn 0.3.5 (``inference/segmentation.py::merge_instances``) so merges match
it: a region-adjacency graph over the grid masks, one edge per pair whose one-step
dilations touch, then greedy (decreasing thresholds, mean affinity) or multicut
(summed log-odds) contraction. Ties go to the first edge in sleap-nn's dict order
(pairs in ``(i, j)`` order, contracted edges re-keyed by their roots in that order),
so the edge lists here are insertion-ordered dicts too.

Affinity = ``min(1, contact / 0.05) * (w_valley * ridge + w_offset * agree) / (w_valley
+ w_offset)``: ``ridge`` is how high the center heatmap stays between the two centers
(a valley means two animals), ``agree`` whether both masks' pixels predict one center.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import ndimage

from sleap_infer.ops.seg_group import GridInstance

CONTACT_FLOOR = 1e-3
CONTACT_SATURATION = 0.05
RIDGE_SAMPLES = 48
Pair = tuple[int, int]


def predicted_centers(mask: np.ndarray, offsets: np.ndarray, stride: int) -> np.ndarray:
    """``(M, 2)`` offset-predicted centers (input pixels, float64) of a mask's pixels."""
    ys, xs = np.nonzero(mask)
    px = xs.astype(np.float64) * stride + stride / 2.0
    py = ys.astype(np.float64) * stride + stride / 2.0
    return np.stack([px + offsets[0, ys, xs], py + offsets[1, ys, xs]], axis=1)


def contact_fraction(a: np.ndarray, b: np.ndarray, dilate: int = 1) -> float:
    """``(|dilate(A) & B| + |A & dilate(B)|) / min(|A|, |B|)``; at least one dilation.

    Grouped masks never overlap, so touching is only visible after dilating.
    """
    iters = max(1, int(dilate))
    touch = int((ndimage.binary_dilation(a, iterations=iters) & b).sum())
    touch += int((a & ndimage.binary_dilation(b, iterations=iters)).sum())
    if touch == 0:
        return 0.0
    return touch / max(1, min(int(a.sum()), int(b.sum())))


def valley_ridge(
    heatmap: np.ndarray,
    ca: tuple[float, float],
    cb: tuple[float, float],
    score_a: float,
    score_b: float,
) -> float:
    """Lowest heatmap value on the middle 70% of the center line / the weaker peak, in [0, 1]."""
    h, w = heatmap.shape
    t = np.linspace(0.0, 1.0, RIDGE_SAMPLES)
    xs = ca[0] + (cb[0] - ca[0]) * t
    ys = ca[1] + (cb[1] - ca[1]) * t
    lo, hi = int(0.15 * RIDGE_SAMPLES), int(0.85 * RIDGE_SAMPLES)
    xi = np.clip(np.round(xs[lo:hi]).astype(int), 0, w - 1)
    yi = np.clip(np.round(ys[lo:hi]).astype(int), 0, h - 1)
    lowest = heatmap[yi, xi].min()
    return float(np.clip(lowest / max(1e-6, min(score_a, score_b)), 0.0, 1.0))


def offset_agreement(pa: np.ndarray, pb: np.ndarray, stride: int) -> float:
    """``exp(-sep^2 / (2 (2 scale)^2))``: ~1 when both clouds of predicted centers coincide."""
    if len(pa) == 0 or len(pb) == 0:
        return 0.0
    sep = float(np.hypot(*(pa.mean(0) - pb.mean(0))))
    scale = max(float(0.5 * (pa.std(0).mean() + pb.std(0).mean())), float(stride))
    return float(np.exp(-(sep**2) / (2.0 * (2.0 * scale) ** 2)))


def merge_edges(
    instances: Sequence[GridInstance],
    heatmap: np.ndarray,
    offsets: np.ndarray,
    stride: int,
    dilate: int = 1,
    w_valley: float = 1.0,
    w_offset: float = 0.25,
) -> dict[Pair, float]:
    """Affinity of every touching pair ``(i, j)``, ``i < j``, in pair order."""
    centers = [predicted_centers(inst.mask, offsets, stride) for inst in instances]
    wsum = w_valley + w_offset
    half = stride / 2.0
    edges: dict[Pair, float] = {}
    for i, a in enumerate(instances):
        for j in range(i + 1, len(instances)):
            b = instances[j]
            contact = contact_fraction(a.mask, b.mask, dilate)
            if contact <= CONTACT_FLOOR:
                continue
            gate = min(1.0, contact / CONTACT_SATURATION)
            if wsum <= 0:
                edges[(i, j)] = gate
                continue
            ca = ((a.center[0] - half) / stride, (a.center[1] - half) / stride)
            cb = ((b.center[0] - half) / stride, (b.center[1] - half) / stride)
            ridge = valley_ridge(heatmap, ca, cb, a.score, b.score)
            agree = offset_agreement(centers[i], centers[j], stride)
            edges[(i, j)] = float(gate * ((w_valley * ridge + w_offset * agree) / wsum))
    return edges


class _Roots:
    """Union-find over instance indices (the contracted edge's first root stays the root)."""

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def groups(self) -> list[list[int]]:
        """Members of each group, groups ordered by their lowest member."""
        out: dict[int, list[int]] = {}
        for i in range(len(self.parent)):
            out.setdefault(self.find(i), []).append(i)
        return list(out.values())


def _best_edge(
    roots: _Roots, weights: dict[Pair, Any], value: Callable[[Any], float], floor: float
) -> tuple[Pair, float] | None:
    """First live edge of highest ``value(weight)`` strictly above ``floor`` (as root pair)."""
    best, best_v = None, floor
    for (a, b), wt in weights.items():
        ra, rb = roots.find(a), roots.find(b)
        if ra == rb:
            continue
        v = value(wt)
        if v > best_v:
            best, best_v = (ra, rb), v
    return None if best is None else (best, best_v)


def _rekey(
    roots: _Roots, weights: dict[Pair, Any], combine: Callable[[Any, Any], Any]
) -> dict[Pair, Any]:
    """Edges re-keyed by their current roots (ordered pair), parallel edges combined.

    A key keeps the position of its first occurrence (sleap-nn's ``setdefault``).
    """
    out: dict[Pair, Any] = {}
    for (a, b), wt in weights.items():
        ra, rb = roots.find(a), roots.find(b)
        if ra != rb:
            key = (ra, rb) if ra < rb else (rb, ra)
            out[key] = combine(out[key], wt) if key in out else combine(None, wt)
    return out


def greedy_groups(n: int, edges: dict[Pair, float], thresholds: Sequence[float]) -> list[list[int]]:
    """Per threshold, contract the highest mean-affinity edge while it is >= the threshold."""
    roots = _Roots(n)
    lists: dict[Pair, list[float]] = {k: [v] for k, v in edges.items()}

    def mean(vals: list[float]) -> float:
        return float(np.mean(vals))

    def concat(acc: list[float] | None, vals: list[float]) -> list[float]:
        return list(vals) if acc is None else acc + vals

    for thr in thresholds:
        while True:
            found = _best_edge(roots, lists, mean, -1.0)
            if found is None or found[1] < thr:
                break
            (ra, rb), _ = found
            roots.parent[rb] = ra
            lists = _rekey(roots, lists, concat)
    return roots.groups()


def multicut_groups(n: int, edges: dict[Pair, float], join_bias: float = 0.5) -> list[list[int]]:
    """Contract the most attractive edge (cost ``logit(a) - logit(bias) > 0``), parallels summed."""

    def logit(p: float) -> float:
        p = min(max(p, 1e-4), 1 - 1e-4)
        return math.log(p / (1 - p))

    def add(acc: float | None, c: float) -> float:
        return (0.0 if acc is None else acc) + c

    roots = _Roots(n)
    costs: dict[Pair, float] = {k: logit(v) - logit(join_bias) for k, v in edges.items()}
    while True:
        found = _best_edge(roots, costs, float, 0.0)
        if found is None:
            break
        (ra, rb), _ = found
        roots.parent[rb] = ra
        costs = _rekey(roots, costs, add)
    return roots.groups()


def union_instances(
    groups: Sequence[Sequence[int]], instances: Sequence[GridInstance]
) -> list[GridInstance]:
    """OR of each group's masks; center and score of its best-scoring (first on ties) member."""
    out = []
    for members in groups:
        best = max(sorted(members), key=lambda k: instances[k].score)
        mask = np.zeros_like(instances[members[0]].mask)
        for k in members:
            mask |= instances[k].mask
        out.append(GridInstance(mask, instances[best].center, instances[best].score))
    return out


def merge_instances(
    instances: Sequence[GridInstance],
    heatmap: np.ndarray,
    offsets: np.ndarray,
    stride: int,
    method: str = "greedy",
    dilate: int = 1,
    w_valley: float = 1.0,
    w_offset: float = 0.25,
    thresholds: Sequence[float] = (0.85, 0.6, 0.4),
) -> list[GridInstance]:
    """Fragments of one animal merged; ``heatmap`` ``(h, w)``, ``offsets`` ``(2, h, w)`` numpy."""
    if len(instances) <= 1:
        return list(instances)
    edges = merge_edges(instances, heatmap, offsets, stride, dilate, w_valley, w_offset)
    if method == "greedy":
        groups = greedy_groups(len(instances), edges, thresholds)
    elif method == "multicut":
        groups = multicut_groups(len(instances), edges)
    else:
        raise ValueError(f"unknown merge method {method!r}")
    return union_instances(groups, instances)
