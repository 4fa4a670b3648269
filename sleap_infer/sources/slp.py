"""Reading SLEAP files (``.slp``, ``.pkg.slp``): one way to load one, one way to say it failed.

sleap-io reads whole files through h5py and json, and a damaged or foreign
file fails with whatever those raise (OSError, KeyError, ValueError, ...).
Every reader of the package goes through here, so each such failure is the
same one line naming the file: ``<path>: not a readable SLEAP project (<why>)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sleap_io as sio

from sleap_infer.core.errors import SleapInferError, VideoError

PROJECT = "SLEAP project"
FILE = "SLEAP file"


def error_reason(exc: BaseException) -> str:
    """The first line of what went wrong: the OS error's own words when there are some."""
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return str(text).splitlines()[0]


def read_slp(
    path: str | Path,
    what: str = PROJECT,
    error: type[SleapInferError] = VideoError,
    **load: Any,
) -> sio.Labels:
    """``sio.load_slp(path, **load)``; any failure one ``error`` line naming ``path``."""
    try:
        return sio.load_slp(str(path), **load)
    except Exception as exc:  # h5py, json and sleap-io all raise their own types
        raise error(f"{path}: not a readable {what} ({error_reason(exc)})") from exc


def read_slp_videos(path: str | Path, **load: Any) -> list[sio.Video]:
    """A project's video list alone (no instances: ~0.3 s for any size), as :func:`read_slp`."""
    from sleap_io.io.slp import read_videos  # sleap-io's readers: only for projects

    try:
        return read_videos(str(path), **load)
    except Exception as exc:  # h5py, json and sleap-io all raise their own types
        raise VideoError(f"{path}: not a readable {PROJECT} ({error_reason(exc)})") from exc
