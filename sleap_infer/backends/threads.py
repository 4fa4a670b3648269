"""How many CPU threads this process may really use, and torch set up for that.

``os.cpu_count()`` reports the host's cores, not what a container, a SLURM
allocation or ``taskset`` grants us. Oversubscribing (torch's default pool
sized to the host plus our decode thread) costs throughput on small
allocations, so the budget comes from CPU affinity and the cgroup quota.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_CONFIGURED = False
HOST_THREADS_BESIDE_POOL = 1
"""torch threads for host-side work beside another runtime's CPU pool (:func:`torch_threads`)."""


def cgroup_cpu_limit(path: Path = Path("/sys/fs/cgroup/cpu.max")) -> float | None:
    """The cgroup v2 CPU quota in cores (``"max"`` or an unreadable file: None)."""
    try:
        quota, period = path.read_text().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    try:
        cores = int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None
    return cores if cores > 0 else None


def cpu_budget() -> int:
    """Cores this process may use: affinity mask, capped by the cgroup quota (at least 1)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS / Windows have no affinity API
        cores = os.cpu_count() or 1
    limit = cgroup_cpu_limit()
    if limit is not None:
        cores = min(cores, math.ceil(limit))
    return max(1, cores)


def configure_torch_threads(threads: int | None = None) -> int:
    """Size torch's intra-op pool; returns the size in use.

    With ``threads`` (a device worker's share of the cores) the pool is set to
    exactly that. Without, it is lowered to the budget (never raised above
    what a user set), and only on the first call, so a later backend cannot
    undo an earlier choice such as a worker's share.
    """
    global _CONFIGURED
    import torch

    if _CONFIGURED and threads is None:
        return torch.get_num_threads()
    want = threads if threads is not None else cpu_budget()
    if threads is not None or want < torch.get_num_threads():
        torch.set_num_threads(max(1, want))
    _CONFIGURED = True
    return torch.get_num_threads()


@contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Run the block with torch's intra-op pool at ``threads``, then put it back.

    For the host-side work (preprocessing, peak decoding, grouping, crops) beside a
    network that runs in another runtime's CPU thread pool. ONNX Runtime's and
    OpenVINO's workers keep spinning for a while after each inference, holding the
    cores, so a torch op that splits itself over those same cores waits for them:
    on 2 cores a bottom-up batch's 0.8 ms of decoding took 21-46 ms (median) right
    after the network, and 1.4 ms on one thread. Those small tensors gain nothing
    from a second thread anyway. Switching costs about 30 us a batch.
    """
    import torch

    before = torch.get_num_threads()
    if before == threads:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
