"""Read the small files of a model folder safely: regular files only, and a size bound.

A model folder's config and metadata are read whole. A name there that is not a
regular file made that read hang or eat memory: a FIFO (``mkfifo``) blocks
``open`` until a writer appears, so ``infer predict`` and ``infer info`` hung
forever; a symlink to ``/dev/zero`` was read until memory ran out. ``best.ckpt`` was
already refused in such cases (its ``is_file`` check); every other model file we read
is checked the same way here. The file is opened non-blocking and checked on the
open descriptor (``fstat``), so swapping the name between a check and the read
cannot slip a FIFO past it, and at most ``limit`` bytes are ever read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

CONFIG_MAX_BYTES = 64 << 20
"""Training configs and export metadata: a few KB in practice, and 64 MiB at most (a
legacy SLEAP 1.x JSON with its embedded skeleton is well under 1 MiB)."""
WEIGHTS_MAX_BYTES = 16 << 30
"""ONNX graphs and SLEAP 1.x HDF5 weights: hundreds of MB at most; 16 GiB is only a
bound against a device file or a runaway file, not a judgement of the model."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _what(path: Path, mode: int) -> str:
    target = f" (a link to {os.path.realpath(path)})" if path.is_symlink() else ""
    return f"{path}: is {_kind(mode)}{target}, not a regular file; replace it with the real file"


def file_problem(path: Path, limit: int) -> str | None:
    """Why ``path`` cannot be read as a model file (one line naming it), or None.

    Checks the name only (``stat``, which never blocks); :func:`read_bytes_bounded`
    checks the opened file again.
    """
    try:
        st = path.stat()
    except OSError as exc:
        return f"{path}: cannot read ({exc.strerror or exc})"
    if not stat.S_ISREG(st.st_mode):
        return _what(path, st.st_mode)
    if st.st_size > limit:
        return f"{path}: {st.st_size} bytes, more than the {limit} bytes such a file can be"
    return None


def check_file(path: Path, limit: int, error: type[Exception]) -> None:
    """Raise ``error`` with :func:`file_problem`'s line unless ``path`` is a regular file
    of at most ``limit`` bytes (for files a library opens itself: ONNX, HDF5)."""
    problem = file_problem(path, limit)
    if problem is not None:
        raise error(problem)


def read_bytes_bounded(path: Path, limit: int, error: type[Exception]) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes, else ``error``."""
    check_file(path, limit, error)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from exc
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):  # swapped for something else since the check
            raise error(_what(path, st.st_mode))
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise error(f"{path}: more than the {limit} bytes such a file can be")
    return data


def read_text_bounded(path: Path, limit: int, error: type[Exception]) -> str:
    """:func:`read_bytes_bounded` decoded as UTF-8 (undecodable bytes name the file)."""
    data = read_bytes_bounded(path, limit, error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not a text file ({exc.reason} at byte {exc.start})") from exc


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB chunks (weights and graphs run to GBs)."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
