"""Hungarian matching, with SciPy imported on first use.

``scipy.optimize`` takes about half a second to import; single-instance and
centroid runs never match anything, so they should not pay for it at start-up.
"""

from __future__ import annotations

import numpy as np


def linear_sum_assignment(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimum-cost matching of rows to columns (``scipy.optimize.linear_sum_assignment``)."""
    from scipy.optimize import linear_sum_assignment as solve

    rows, cols = solve(cost)
    return rows, cols
