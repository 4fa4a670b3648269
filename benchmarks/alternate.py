"""Before/after rounds for benchmarks that compare two checkouts on a shared machine.

Each round runs one child process per tree, and the order flips every round, so load
from other work hits "before" and "after" alike (used by ``postprocess_growth.py`` and
``host_threads.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def alternated_rounds(
    against: Path | None,
    root: Path,
    rounds: int,
    run: Callable[[Path], dict[str, float]],
) -> dict[str, list[dict[str, float]]]:
    """``{tree label: [one result per round]}``: "before" (``against``) and "after"
    (``root``), or "this tree" alone; ``run(tree)`` measures one tree in a child."""
    trees = {"before": against.resolve()} if against else {}
    trees["after" if against else "this tree"] = root
    runs: dict[str, list[dict[str, float]]] = {t: [] for t in trees}
    for r in range(rounds):
        order = list(trees) if r % 2 == 0 else list(reversed(trees))
        for t in order:
            runs[t].append(run(trees[t]))
            print(f"round {r + 1} {t}: {runs[t][-1]}", file=sys.stderr)
    return runs
