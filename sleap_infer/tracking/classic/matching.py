"""Detections to tracks from a cost matrix, and which impossible pairs to undo.

Both matchers pair every detection they can, even at infinite cost (no usable
candidate): Hungarian first replaces non-finite costs by ten times the largest
finite magnitude plus one (1e6 when none is finite), as sleap-nn does, so the
solver never sees an infeasible matrix; greedy takes edges in ``np.argsort``
order (sleap-nn's tie order) and skips any whose detection or track is taken.
:func:`drop_infeasible` then undoes an infinite-cost pair, so the detection
starts a track of its own instead of stealing one, but only when it *could*
start one (enough visible points, a free id under ``max_tracks``); otherwise
the pair is kept, with a ``-inf`` score, exactly as sleap-nn decides.
"""

from __future__ import annotations

import numpy as np

from sleap_infer.ops.assignment import linear_sum_assignment

Pair = tuple[int, int]


def hungarian(cost: np.ndarray) -> list[Pair]:
    """Minimum-total-cost pairs, rows ascending."""
    invalid = ~np.isfinite(cost)
    if invalid.any():
        cost = np.copy(cost)
        finite = cost[~invalid]
        cost[invalid] = (np.abs(finite).max() * 10 + 1) if finite.size > 0 else 1e6
    rows, cols = linear_sum_assignment(cost)
    return [(int(r), int(c)) for r, c in zip(rows, cols)]


def greedy(cost: np.ndarray) -> list[Pair]:
    """Cheapest remaining edge first, in the order they are taken."""
    if cost.size == 0:
        return []
    rows, cols = np.unravel_index(np.argsort(cost, axis=None), cost.shape)
    used_rows: set[int] = set()
    used_cols: set[int] = set()
    pairs: list[Pair] = []
    limit = min(cost.shape)
    for r, c in zip(rows.tolist(), cols.tolist()):
        if r in used_rows or c in used_cols:
            continue
        pairs.append((r, c))
        used_rows.add(r)
        used_cols.add(c)
        if len(pairs) == limit:
            break
    return pairs


MATCHERS = {"hungarian": hungarian, "greedy": greedy}


def drop_infeasible(
    pairs: list[Pair], cost: np.ndarray, can_spawn: list[bool], free_ids: int | None
) -> list[Pair]:
    """``pairs`` without the infinite-cost ones whose detection can start a track.

    ``can_spawn[row]``: the detection has enough points for a new track;
    ``free_ids``: new ids left under ``max_tracks`` (``None``: unlimited). Rows
    left unpaired by the matcher claim their new ids first.
    """
    infeasible = [p for p in pairs if not np.isfinite(cost[p])]
    if not infeasible:
        return pairs
    if free_ids is not None:
        paired = {row for row, _ in pairs}
        waiting = sum(1 for row in range(len(can_spawn)) if row not in paired and can_spawn[row])
        free_ids = max(0, free_ids - waiting)
    forced: set[Pair] = set()
    spawned = 0
    for row, col in infeasible:
        if can_spawn[row] and (free_ids is None or spawned < free_ids):
            spawned += 1
        else:
            forced.add((row, col))
    return [p for p in pairs if np.isfinite(cost[p]) or p in forced]
