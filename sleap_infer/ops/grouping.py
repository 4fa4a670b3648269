"""Bottom-up grouping: scored candidate connections -> instances, on the host.

Follows sleap-nn step by step so instance membership, order and scores match:

1. per frame and edge, Hungarian matching (``linear_sum_assignment``) of source vs
   destination peaks on negative line scores (NaN/missing = forbidden);
2. drop matches scoring below ``min_line_scores``;
3. walk the edges breadth-first from the skeleton's first root and grow instances
   (new pair -> new instance, src known -> dst joins it, both known -> dst moves to
   src's instance and the two merge if they share no node);
4. drop instances with fewer than ``min_instance_peaks`` peaks;
5. instance score = sum of its connections' line scores; node scores = peak values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sleap_infer.ops.assignment import linear_sum_assignment


def edge_order(edges: Sequence[tuple[int, int]]) -> list[int]:
    """Edge indices in breadth-first order from the first root node.

    Mirrors sleap-nn (networkx topological sort + ``bfs_edges``): nodes are ordered by first
    appearance in the edge list, the root is the first node nobody points to, and edges not
    reached by the search (other roots, second parents) are never used - deliberately, for
    identical grouping.
    """
    nodes: list[int] = []
    children: dict[int, list[int]] = {}
    indegree: dict[int, int] = {}
    for a, b in edges:
        for n in (a, b):
            if n not in children:
                nodes.append(n)
                children[n] = []
                indegree[n] = 0
        if b not in children[a]:
            children[a].append(b)
            indegree[b] += 1
    roots = [n for n in nodes if indegree[n] == 0]
    if not roots:  # a cycle; sleap-nn would fail, we start at the first node
        roots = nodes[:1]
    if not roots:
        return []
    order: list[int] = []
    seen = {roots[0]}
    queue = [roots[0]]
    while queue:
        parent = queue.pop(0)
        for child in children[parent]:
            if child not in seen:
                seen.add(child)
                queue.append(child)
                order.append(list(edges).index((parent, child)))
    return order


def match_edge(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hungarian matching on ``cost`` (``inf`` = forbidden); returns matched rows and columns.

    When the forbidden entries leave no complete matching, scipy refuses; we then solve with
    a finite stand-in cost and drop the forbidden pairs it had to use.
    """
    if cost.size == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty
    try:
        return linear_sum_assignment(cost)
    except ValueError:
        finite = np.isfinite(cost)
        big = 2.0 * (np.abs(cost[finite]).sum() + 1.0) if finite.any() else 1.0
        rows, cols = linear_sum_assignment(np.where(finite, cost, big))
        ok = finite[rows, cols]
        return rows[ok], cols[ok]


@dataclass
class Connection:
    src: int  # rank of the source peak among its node's peaks in the frame
    dst: int
    score: float


def assemble_instances(
    connections: dict[int, list[Connection]],
    edges: Sequence[tuple[int, int]],
    order: Sequence[int],
) -> dict[tuple[int, int], int]:
    """Map ``(node, peak rank)`` -> instance id by growing instances along ``order``."""
    owner: dict[tuple[int, int], int] = {}
    # sleap-nn numbers a new instance max(ids in use) + 1; a running counter gives ids in
    # the same relative order (both exceed every id in use), without an O(n) scan each.
    next_id = 0
    for k in order:
        src_node, dst_node = edges[k]
        for conn in connections.get(k, []):
            src_id, dst_id = (src_node, conn.src), (dst_node, conn.dst)
            src_inst, dst_inst = owner.get(src_id), owner.get(dst_id)
            if src_inst is None and dst_inst is None:
                owner[src_id] = owner[dst_id] = next_id
                next_id += 1
            elif src_inst is not None and dst_inst is None:
                owner[dst_id] = src_inst
            elif src_inst is not None and dst_inst is not None:
                # The dst peak moves first; node sets are compared afterwards (sleap-nn order).
                owner[dst_id] = src_inst
                src_nodes = {p[0] for p, i in owner.items() if i == src_inst}
                dst_nodes = {p[0] for p, i in owner.items() if i == dst_inst}
                if not src_nodes & dst_nodes:
                    for p, i in owner.items():
                        if i == dst_inst:
                            owner[p] = src_inst
            # Only dst assigned: sleap-nn does nothing, neither do we.
    return owner


def min_peaks_threshold(min_instance_peaks: float, n_nodes: int) -> int:
    """Values in (0, 1) are a fraction of the node count; larger values a peak count."""
    if 0 < min_instance_peaks < 1:
        return int(min_instance_peaks * n_nodes)
    return int(min_instance_peaks)


@dataclass
class FrameInstances:
    points: np.ndarray  # (I, N, 2) float32, NaN where missing
    peak_values: np.ndarray  # (I, N) float32, NaN where missing
    scores: np.ndarray  # (I,) float32


def group_frame(
    points: np.ndarray,
    values: np.ndarray,
    channel: np.ndarray,
    cand_edge: np.ndarray,
    cand_src: np.ndarray,
    cand_dst: np.ndarray,
    cand_score: np.ndarray,
    n_nodes: int,
    edges: Sequence[tuple[int, int]],
    order: Sequence[int],
    min_line_scores: float = 0.25,
    min_instance_peaks: float = 0.0,
) -> FrameInstances:
    """Group one frame's peaks into instances.

    Args:
        points, values, channel: the frame's peaks (``(P, 2)``, ``(P,)``, ``(P,)``), in
            raster order.
        cand_*: its candidate connections; ``src``/``dst`` index into the frame's peaks.
    """
    # Rank of each peak among the frame's peaks of the same node (raster order).
    rank = np.zeros(len(channel), np.int64)
    per_node: list[np.ndarray] = []
    for node in range(n_nodes):
        idx = np.flatnonzero(channel == node)
        rank[idx] = np.arange(len(idx))
        per_node.append(idx)

    connections: dict[int, list[Connection]] = {}
    for k, (src_node, dst_node) in enumerate(edges):
        sel = cand_edge == k
        cost = np.full((len(per_node[src_node]), len(per_node[dst_node])), np.inf, np.float32)
        cost[rank[cand_src[sel]], rank[cand_dst[sel]]] = -cand_score[sel]
        cost[np.isnan(cost)] = np.inf
        rows, cols = match_edge(cost)
        scores = -cost[rows, cols]
        keep = scores >= min_line_scores
        connections[k] = [
            Connection(int(r), int(c), s) for r, c, s in zip(rows[keep], cols[keep], scores[keep])
        ]

    owner = assemble_instances(connections, edges, order)
    threshold = min_peaks_threshold(min_instance_peaks, n_nodes)
    if threshold > 0 and owner:
        ids, counts = np.unique(list(owner.values()), return_counts=True)
        big_enough = set(ids[counts >= threshold].tolist())
        owner = {p: i for p, i in owner.items() if i in big_enough}

    ids = np.unique(list(owner.values())) if owner else np.zeros(0, np.int64)
    slot = {int(i): j for j, i in enumerate(ids)}
    n_inst = len(ids)
    scores = np.zeros(n_inst, np.float32)
    for k in order:
        src_node = edges[k][0]
        for conn in connections[k]:
            inst = owner.get((src_node, conn.src))
            if inst is not None:
                scores[slot[inst]] += conn.score
    out_points = np.full((n_inst, n_nodes, 2), np.nan, np.float32)
    out_values = np.full((n_inst, n_nodes), np.nan, np.float32)
    for (node, r), inst in owner.items():
        peak = per_node[node][r]
        out_points[slot[inst], node] = points[peak]
        out_values[slot[inst], node] = values[peak]
    return FrameInstances(points=out_points, peak_values=out_values, scores=scores)
