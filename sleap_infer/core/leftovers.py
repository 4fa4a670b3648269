"""Temporary files of killed runs: named by their owner, removed once it is gone.

Every file or folder we build under a temporary name (an output's
``.<stem>.<owner>.tmp<suffix>``, a JSON report's ``.<name>.<owner>.tmp``, an
export's ``.<folder>.partial-<owner>``) carries its owner: a tag of the host
and the process id. A SIGKILL (the OOM killer, ``scancel``) leaves it behind;
the next run that writes the same file removes the leftovers of owners that
are dead, and only those: a live process's file is never touched, and on a
shared file system (a cluster) neither is another host's, whose processes
this one cannot see. Names from before the host tag was added are left alone
for the same reason.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from sleap_infer.core.errors import OutputError

_OWNER = re.compile(r"^([0-9a-f]{8})-([0-9]+)$")


def host_tag() -> str:
    """8 hex digits naming this host (short, so long file names still fit)."""
    return f"{zlib.crc32(socket.gethostname().encode()):08x}"


def owner_tag(pid: int | None = None) -> str:
    """``<host>-<pid>``: who a temporary name belongs to."""
    return f"{host_tag()}-{os.getpid() if pid is None else pid}"


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this host (another user's counts)."""
    if pid <= 0:
        return True  # never guess about these
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # e.g. EPERM: it exists, it is someone else's
    return True


def remove_stale(folder: Path, prefix: str, suffix: str = "") -> list[Path]:
    """Remove ``prefix<owner>suffix`` entries in ``folder`` whose owner is a dead process
    of this host; returns what was removed. Errors are ignored: this is tidying up."""
    removed: list[Path] = []
    here = host_tag()
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for entry in entries:
        name = entry.name
        if not name.startswith(prefix) or not name.endswith(suffix):
            continue
        middle = name[len(prefix) : len(name) - len(suffix)] if suffix else name[len(prefix) :]
        found = _OWNER.match(middle)
        if found is None or found.group(1) != here or pid_alive(int(found.group(2))):
            continue
        with contextlib.suppress(OSError):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
            removed.append(entry)
    return removed


def write_atomically(
    path: Path,
    write: Callable[[BinaryIO], None],
    failure: str,
    replaces: Callable[[Path], bool] | None = None,
) -> None:
    """Write a small side file whole or not at all: ``write`` fills an owner-tagged
    temporary sibling (leftovers of dead owners removed first), which is fsynced and
    renamed over ``path``. A reader never sees half a file and a failed write leaves an
    earlier file in place. ``replaces`` says whether a file that appeared at ``path``
    meanwhile may be replaced (a check done earlier cannot see one that came since); a
    file it refuses is kept. ``failure`` starts the one-line :class:`OutputError`.
    """
    tmp = path.with_name(f".{path.name}.{owner_tag()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale(path.parent, f".{path.name}.", ".tmp")  # left by killed runs
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if replaces is not None and path.exists() and not replaces(path):
            tmp.unlink()
            raise OutputError(f"{failure} (a file that is not ours appeared there; kept it)")
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputError(f"{failure} ({exc.strerror or exc})") from exc
