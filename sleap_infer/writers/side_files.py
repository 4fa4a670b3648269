"""May this run write that side file? One rule for every JSON report we write.

``predict --summary-json``, ``eval --json``, ``info --json``, ``system --json`` and
``bench --json`` each take a path from the user, and a typo there (the input
video, a ``best.ckpt``, last night's ``.slp``, the run's own ``-o``) must never
cost a file. The rule, checked before any work starts:

* never an input of the run, even with ``--overwrite``;
* never one of the run's own outputs (or their journals), even with ``--overwrite``;
* an existing file is replaced only when it is one of ours of the same kind (a
  JSON object whose ``"schema"`` key names the kind, as every report we write
  carries), or when ``--overwrite`` is given.

The file is then written atomically (temporary sibling, fsync, rename), and the
"ours or --overwrite" part is checked once more just before the rename, so a
file that appeared meanwhile is not replaced either.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

from sleap_infer.core.errors import OutputError, UsageError
from sleap_infer.core.leftovers import write_atomically

SCHEMA_KEY = "schema"
# A report of ours is small; a bigger file is not read to find out (it is not ours).
_MAX_OURS_BYTES = 256 * 1024 * 1024


def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file (links, ``..`` and relative paths included)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        pass
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):
        return a.absolute() == b.absolute()


def is_ours(path: Path, schema: str) -> bool:
    """Whether ``path`` holds a JSON report we wrote of the kind ``schema``."""
    try:
        if path.stat().st_size > _MAX_OURS_BYTES:
            return False
        with open(path, "rb") as fh:
            if not fh.read(64).lstrip().startswith(b"{"):
                return False  # a video, a checkpoint: not read any further
            fh.seek(0)
            data = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get(SCHEMA_KEY) == schema


def check_side_file(
    path: Path,
    option: str,
    schema: str,
    *,
    overwrite: bool = False,
    inputs: Iterable[Path] = (),
    outputs: Iterable[Path] = (),
) -> None:
    """Refuse (one :class:`UsageError` line, exit 2) a side-file path the rule forbids.

    ``option`` names the flag in the message (``--summary-json``), ``schema`` the kind
    of report. A folder, or a folder that cannot be created or written, is an
    :class:`OutputError` (exit 1), as before.
    """
    where = f"{option} {path}"
    if path.is_dir():
        raise OutputError(f"{where}: is a folder; give a file name")
    for given in inputs:
        if same_file(path, Path(given)):
            raise UsageError(f"{where}: is an input of this run; give another name")
    for made in outputs:
        if same_file(path, Path(made)):
            raise UsageError(f"{where}: is one of this run's outputs; give another name")
    if path.exists() and not overwrite and not is_ours(path, schema):
        raise UsageError(
            f"{where}: exists and is not a report of this kind written by sleap_infer; "
            "pass --overwrite to replace it, or give another name"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{where}: cannot create its folder ({exc.strerror or exc})") from exc
    if not os.access(path.parent, os.W_OK):
        raise OutputError(f"{where}: folder {path.parent} is not writable")


def model_inputs(model_paths: Iterable[str | Path]) -> list[Path]:
    """The files a run reads from its models: each path given, and the files in each
    model directory (``best.ckpt``, ``training_config.yaml``, ...)."""
    found: list[Path] = []
    for given in model_paths:
        p = Path(given).expanduser()
        found.append(p)
        folder = p if p.is_dir() else p.parent
        with contextlib.suppress(OSError):
            found += [f for f in folder.iterdir() if f.is_file()]
    return found


def write_json(
    path: Path,
    data: Any,
    failure: str,
    indent: int | None = 2,
    *,
    schema: str | None = None,
    overwrite: bool = True,
    allow_nan: bool = False,
) -> None:
    """Write ``data`` as JSON atomically (temporary file, fsync, rename): a reader never
    sees half a file, and a failed write leaves an earlier file in place; ``failure``
    starts the one-line error.

    With ``schema`` and not ``overwrite``, a file at ``path`` that is not ours of that
    kind (one that appeared after :func:`check_side_file` looked) is left alone.
    """

    def dump(f: BinaryIO) -> None:
        text = json.dumps(data, indent=indent, allow_nan=allow_nan)
        f.write((text + "\n").encode("utf-8"))

    keeps_foreign = schema is not None and not overwrite
    replaces = partial(is_ours, schema=schema) if keeps_foreign else None
    write_atomically(path, dump, failure, replaces)
