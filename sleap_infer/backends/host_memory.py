"""Keep freed tensor memory inside the process (glibc), so CPU forward passes stop page-faulting.

A CPU forward pass allocates and frees the same activation blocks on every call. glibc
gives a block above its mmap threshold a mapping of its own and unmaps it on free, and it
hands the top of the heap back to the kernel once more than its trim threshold lies free
there. Either way the next call faults every page in again, zero-filled by the kernel.
The threshold also moves by itself (it rises to the size of the last unmapped block), so
how often this happens depends on the order and sizes of the frees: the pose UNets hit
it on every call (measured below); a thread's arena shrinks its heap even more eagerly.

Measured on the 2-vCPU development machine, 100 frames of the 512 px crowd scene at 30
animals, batch 4, our torch backend (``infer predict``, same run, alternated):

- top-down: 63-66 -> 46-48 ms/frame; kernel time 3.3-3.8 -> 0.55 s;
- bottom-up: 41 -> 30.5 ms/frame; realistic UNet (filters 32) at 384 px 154 -> 117 ms/frame;
- peak RSS +25-50 MB; OpenVINO and ONNX Runtime, which pool their own memory: unchanged.

Blocks above 32 MiB (glibc's largest mmap threshold) are always mapped, so at large
frames the same happened per layer: UNet filters 32, bottom-up, batch 1, 1024 px
1258 -> 840 ms/frame (peak RSS 0.87 -> 1.09-1.18 GB), 2048 px 5556 -> 3226 ms/frame
(2.32 -> 3.07 GB), kernel time 15.2 -> 2.4 s over 3 frames.

The fix is glibc's own: a fixed mmap threshold at its ceiling, no mapped blocks at all
(large blocks come from the heap too and are reused), and a trim threshold the heap does
not reach. The cost is memory: what is freed after a peak stays in the process until
exit, and at large frames the heap's fragmentation raises the peak by about a third.
Anyone who sets glibc's malloc knobs (``MALLOC_*_`` variables or
``GLIBC_TUNABLES=glibc.malloc...``) keeps their own settings, and ``SLEAP_INFER_SYSTEM_MALLOC=1``
keeps glibc's defaults. Other C libraries (musl, macOS, Windows) are left alone.
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Mapping

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_MMAP_MAX = -4
MMAP_THRESHOLD = 32 * 1024 * 1024
"""glibc's 64-bit ceiling (``HEAP_MAX_SIZE / 2``); a fixed one also stops it moving."""
TRIM_THRESHOLD = 2**31 - 1
"""``mallopt`` takes an int: the largest one, far above any heap top we free."""
USER_KNOBS = (
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
)

_applied: bool | None = None


OPT_OUT = "SLEAP_INFER_SYSTEM_MALLOC"


def user_set_malloc(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment tunes glibc malloc or opts out (then we leave it alone)."""
    if environ.get(OPT_OUT, "") not in ("", "0"):
        return True
    if any(k in environ for k in USER_KNOBS):
        return True
    return "glibc.malloc." in environ.get("GLIBC_TUNABLES", "")


def keep_freed_memory() -> bool:
    """Apply the two glibc settings once per process; returns whether they are in force."""
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    if user_set_malloc() or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    settings = (
        (M_MMAP_THRESHOLD, MMAP_THRESHOLD),
        (M_MMAP_MAX, 0),
        (M_TRIM_THRESHOLD, TRIM_THRESHOLD),
    )
    _applied = all(mallopt(param, value) == 1 for param, value in settings)
    return _applied
