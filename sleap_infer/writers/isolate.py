"""Run an output writer in a forked child, so that a crash costs one file, not the batch.

HDF5 cannot back out of a failed write: after ``ENOSPC`` h5py is left holding
file ids that can never be closed, and the interpreter segfaults when it
collects them (h5py#914, h5py#2160). That killed ``infer predict`` with exit
139 and no message, and every video after it went unpredicted. The writers
(``.slp``, analysis HDF5 and NWB through HDF5; CSV for uniformity) therefore
run in a child forked for the purpose: an exception comes back over a pipe as
a :class:`WriteFailure`, and a death by a signal is only an exit status here.

Forking is cheap (pages are shared copy-on-write) and the child needs nothing
another thread could be holding a lock on: it reads the journal, writes one
file and leaves with ``os._exit``, so it runs none of the parent's cleanup
(CUDA contexts, open videos, the progress display). ``gc.freeze`` keeps the
child's garbage collector away from the parent's objects. Where ``fork`` is
missing (Windows) or unsafe after GPU frameworks start (macOS), the writer
runs in this process instead.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import json
import os
import re
import signal
import sys
import warnings
from collections.abc import Callable
from typing import Any, NoReturn

# HDF5 reports the OS error only inside its message text (h5py raises RuntimeError).
_HDF5_ERRNO = re.compile(r"errno = (\d+)")
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
DEBUG_ENV = "SLEAP_INFER_DEBUG"  # set: the child's stderr is not silenced


class WriteFailure(Exception):
    """A writer failed; ``errno`` is the OS error behind it when one is known."""

    def __init__(self, reason: str, errno: int | None = None, signum: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.errno = errno
        self.signum = signum


def os_errno(exc: BaseException) -> int | None:
    """The OS error number behind ``exc`` or its causes, also when HDF5 hid it in text."""
    seen: BaseException | None = exc
    for _ in range(16):  # cause chains are short; never loop on a cycle
        if seen is None:
            return None
        if isinstance(seen, OSError) and seen.errno:
            return int(seen.errno)
        found = _HDF5_ERRNO.search(str(seen))
        if found:
            return int(found.group(1))
        seen = seen.__cause__ or seen.__context__
    return None


def describe(exc: BaseException) -> str:
    """One line: HDF5 messages span lines and repeat the file name."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def reason(exc: BaseException) -> str:
    """What to tell the user: the OS error's own words when there is one."""
    number = os_errno(exc)
    return os.strerror(number) if number else describe(exc)


def can_fork() -> bool:
    return hasattr(os, "fork") and sys.platform != "darwin"


def _fork() -> int:
    with warnings.catch_warnings():
        # Python 3.12+ warns on any fork of a threaded process; the child here takes no
        # lock another thread may hold (no torch, no decoding, no printing).
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def run_isolated(work: Callable[[], None]) -> None:
    """Run ``work()`` in a forked child (or here, where forking is not safe).

    Raises :class:`WriteFailure` if it raised or the child died;
    ``KeyboardInterrupt`` if Ctrl-C or SIGTERM stopped it.
    """
    if not can_fork():
        _run_here(work)
        return
    read_fd, write_fd = os.pipe()
    gc.freeze()
    try:
        pid = _fork()
    except OSError:  # e.g. no memory for the page tables: write here after all
        gc.unfreeze()
        os.close(read_fd)
        os.close(write_fd)
        _run_here(work)
        return
    if pid == 0:
        os.close(read_fd)
        _child(work, write_fd)
    gc.unfreeze()
    os.close(write_fd)
    report, status = _wait(pid, read_fd)
    _raise_for(report, status)


def _run_here(work: Callable[[], None]) -> None:
    try:
        work()
    except Exception as exc:
        raise WriteFailure(reason(exc), os_errno(exc)) from exc


def _child(work: Callable[[], None], fd: int) -> NoReturn:
    """Never returns: ``os._exit`` skips atexit handlers and the parent's finalizers."""
    code = 1
    try:
        for signum in _STOP_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)  # die with the parent's process group
        _no_core_dumps()
        _quiet()
        _report_dealloc_errors(fd)
        work()
        code = 0
    except BaseException as exc:
        with contextlib.suppress(BaseException):
            _report(fd, exc)
    finally:
        os._exit(code)


def _report(fd: int, exc: BaseException) -> None:
    """One JSON line per report (HDF5's own messages are a paragraph)."""
    line = json.dumps({"reason": reason(exc), "errno": os_errno(exc)})
    os.write(fd, line.encode() + b"\n")


def _report_dealloc_errors(fd: int) -> None:
    """h5py meets the OS error first while freeing file ids, as an "exception ignored"
    moments before the segfault; report it then, or the cause dies with the child."""

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        exc = unraisable.exc_value
        if exc is not None and os_errno(exc) is not None:
            sys.unraisablehook = sys.__unraisablehook__  # the first one says it all
            _report(fd, exc)

    sys.unraisablehook = hook


def _no_core_dumps() -> None:
    """A crashing child would otherwise dump the parent's whole address space to disk."""
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _quiet() -> None:
    """HDF5 and hdmf print a line per failed write (hundreds on a full disk); the
    failure comes back as one line through the pipe instead."""
    if os.environ.get(DEBUG_ENV):
        return
    faulthandler.disable()  # it may hold its own copy of stderr (pytest's does)
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)


def _wait(pid: int, fd: int) -> tuple[bytes, int]:
    """The child's report and exit status; on Ctrl-C here the child is killed first."""
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        _, status = os.waitpid(pid, 0)
    except BaseException:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        raise
    finally:
        os.close(fd)
    return b"".join(chunks), status


def _raise_for(report: bytes, status: int) -> None:
    """The child's last report explains a failure; after a crash, the first with an errno."""
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        return
    reports = _parse(report)
    if code < 0:
        signum = -code
        if signum in _STOP_SIGNALS:
            raise KeyboardInterrupt
        known = [r for r in reports if r.get("errno")]
        if known:
            raise WriteFailure(str(known[0]["reason"]), int(known[0]["errno"]), signum)
        name = signal.Signals(signum).name if signum in signal.valid_signals() else signum
        raise WriteFailure(f"the writer crashed with {name}", signum=signum)
    if reports:
        last = reports[-1]
        raise WriteFailure(str(last.get("reason")), last.get("errno"))
    raise WriteFailure(f"the writer exited with status {code}")


def _parse(report: bytes) -> list[dict[str, Any]]:
    out = []
    for line in report.splitlines():
        with contextlib.suppress(ValueError):
            item = json.loads(line)
            if isinstance(item, dict) and "reason" in item:
                out.append(item)
    return out
