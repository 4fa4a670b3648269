"""Start-up trace: where the time goes between process start and the first batch.

Set ``SLEAP_INFER_STARTUP_TRACE=1`` (one JSON line on stderr at exit) or
``SLEAP_INFER_STARTUP_TRACE=PATH`` (that JSON written to ``PATH``) and
``infer predict`` records:

* ``marks``: wall-clock times (``time.time()``) of points in the start-up, the
  first time each is reached (``package``: ``sleap_infer`` imported, ...);
* ``spans``: total seconds per named phase (summed over repeats: a top-down
  pair reads two checkpoints), and ``counts`` of how often each ran;
* ``process_start``: when the kernel started the process (``/proc``, 10 ms
  resolution; absent off Linux), so times are comparable with the launcher's.

``benchmarks/startup.py`` turns it into a phase table. Unset (the default),
:func:`mark` and :func:`span` cost one global lookup: nothing is recorded.

``PATH`` follows the rule every file we write follows (see
:mod:`sleap_infer.writers.side_files`): never over a file we did not create. The
trace carries ``"schema": "sleap_infer/startup-trace"``; an existing file at
``PATH`` without it (a typo naming the input video, a checkpoint, a report) is
kept, and one ``warning:`` line on stderr says the trace was not written. The
run's exit code is not changed: the trace is a diagnostic, and a prediction
that succeeded must not be reported as failed for it. The file is written to a
temporary sibling and renamed, so it is never half-written either.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

ENV = "SLEAP_INFER_STARTUP_TRACE"
SCHEMA = "sleap_infer/startup-trace"
_MAX_OURS_BYTES = 1 << 20  # a trace is a few KB; a bigger file is not read to find out

_DEST = os.environ.get(ENV) or None
_marks: dict[str, float] = {}
_spans: dict[str, float] = {}
_counts: dict[str, int] = {}
_registered = False


def enabled() -> bool:
    return _DEST is not None


def mark(name: str) -> None:
    """Record the first time ``name`` is reached (no-op unless tracing)."""
    if _DEST is None or name in _marks:
        return
    _marks[name] = time.time()
    _register()


@contextlib.contextmanager
def _timed(name: str) -> Iterator[None]:
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _spans[name] = _spans.get(name, 0.0) + time.perf_counter() - t0
        _counts[name] = _counts.get(name, 0) + 1
        _register()


def span(name: str) -> contextlib.AbstractContextManager[None]:
    """Add the enclosed block's seconds to phase ``name`` (no-op unless tracing)."""
    if _DEST is None:
        return contextlib.nullcontext()
    return _timed(name)


def process_start() -> float | None:
    """The process's start as a ``time.time()`` value (Linux: its age from ``/proc``, 10 ms
    resolution), else None."""
    try:
        with open("/proc/self/stat") as fh:
            # Field 22 (starttime, clock ticks since boot); the command name may hold spaces.
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
        return time.time() - age
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def report() -> dict[str, object]:
    """What has been recorded so far, with the ``exit`` mark set to now."""
    return {
        "schema": SCHEMA,
        "pid": os.getpid(),
        "process_start": process_start(),
        "marks": {**_marks, "exit": time.time()},
        "spans": dict(_spans),
        "counts": dict(_counts),
    }


def is_trace(path: str) -> bool:
    """Whether ``path`` holds a trace we wrote (JSON with our ``schema``)."""
    import json

    try:
        if os.path.getsize(path) > _MAX_OURS_BYTES:
            return False
        with open(path, "rb") as fh:
            data = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("schema") == SCHEMA


def write_trace(path: str, text: str) -> str | None:
    """Write ``text`` to ``path`` unless a file not ours is there; why not, or None."""
    if os.path.isdir(path):
        return "is a folder"
    if os.path.lexists(path) and not is_trace(path):
        return "exists and is not a start-up trace written by sleap_infer; kept it"
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "x") as fh:
            fh.write(text)
        if os.path.lexists(path) and not is_trace(path):  # appeared meanwhile
            os.unlink(tmp)
            return "a file that is not ours appeared there; kept it"
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return f"cannot write ({exc.strerror or exc})"
    return None


def _dump() -> None:
    import json
    import sys

    text = json.dumps(report())
    if _DEST == "1":
        print(f"{ENV} {text}", file=sys.stderr)
        return
    problem = write_trace(str(_DEST), text)
    if problem is not None:
        print(f"warning: {ENV}={_DEST}: {problem}; trace not written", file=sys.stderr)


def _register() -> None:
    global _registered
    if not _registered:
        import atexit

        atexit.register(_dump)
        _registered = True
