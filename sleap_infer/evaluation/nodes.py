"""Which predicted node is scored against which ground-truth node: by name, never by position.

Two skeletons with the same nodes in another order are the same skeleton: comparing
node ``i`` with node ``i`` scored perfect predictions at mAP 0 (issue 29). Nodes
are therefore matched by name; names that differ (a renamed node, another
skeleton) are refused in one line unless the user says how they correspond
(``--node-map pred=gt,...``), because a silent guess would score the wrong points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from sleap_infer.core.errors import UsageError


def parse_node_map(text: str | None) -> dict[str, str]:
    """``"head=Head,tail=Tail"`` -> ``{"head": "Head", "tail": "Tail"}`` (predicted -> truth)."""
    if text is None:
        return {}
    mapping: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        pred, sep, truth = part.partition("=")
        if not sep or not pred.strip() or not truth.strip():
            raise UsageError(f"--node-map: cannot read {part.strip()!r} (use PRED=GT,PRED=GT)")
        if pred.strip() in mapping:
            raise UsageError(f"--node-map: predicted node {pred.strip()!r} is mapped twice")
        mapping[pred.strip()] = truth.strip()
    if not mapping:
        raise UsageError("--node-map: give at least one PRED=GT pair")
    return mapping


def _names(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def node_order(
    gt_nodes: Sequence[str], pred_nodes: Sequence[str], node_map: Mapping[str, str] | None = None
) -> np.ndarray:
    """Index into the predicted nodes for each ground-truth node, in ground-truth order.

    ``node_map`` renames predicted nodes (predicted name -> ground-truth name) first;
    every ground-truth node must then be predicted exactly once, and every predicted
    node must be a ground-truth node.
    """
    node_map = dict(node_map or {})
    unknown = [name for name in node_map if name not in pred_nodes]
    if unknown:
        raise UsageError(
            f"--node-map: {_names(unknown)} not in the predicted skeleton ({_names(pred_nodes)})"
        )
    absent = [name for name in node_map.values() if name not in gt_nodes]
    if absent:
        raise UsageError(
            f"--node-map: {_names(absent)} not in the ground-truth skeleton ({_names(gt_nodes)})"
        )
    renamed = [node_map.get(name, name) for name in pred_nodes]
    twice = sorted({name for name in renamed if renamed.count(name) > 1})
    if twice:
        raise UsageError(f"predicted nodes {_names(twice)} appear twice after --node-map")
    missing = [name for name in gt_nodes if name not in renamed]
    extra = [name for name in renamed if name not in gt_nodes]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"ground-truth nodes not predicted: {_names(missing)}")
        if extra:
            parts.append(f"predicted nodes not in the ground truth: {_names(extra)}")
        raise UsageError(
            f"skeletons differ ({'; '.join(parts)}): nodes are matched by name; "
            "say which correspond with --node-map PRED=GT,..."
        )
    return np.asarray([renamed.index(name) for name in gt_nodes], dtype=np.int64)
