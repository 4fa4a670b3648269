"""Turn ``infer predict``'s positional arguments into an ordered list of videos.

An argument may be a video file, a SLEAP project (``.slp`` / ``.pkg.slp``, whose
video is predicted, like sleap-nn does), a folder (its videos; all levels with
``recursive``), a glob (``'data/*.mp4'``, ``'data/**/*.avi'``), or a ``.txt``
file listing any of these, one per line (a line starting with ``#`` is a
comment; a ``#`` inside a path is part of the name, since file names may hold
one; relative entries are relative to the list's folder). Expansion only
lists names and checks that files exist and are readable: nothing is opened,
so it is cheap, and a mistyped path fails before the model loads (a named
project's first bytes are read, so a damaged one fails then too). A folder
yields its projects too, but not ``*.predictions.slp``: those are our (and
sleap-nn's) outputs, which the next run would otherwise predict again. Folder
and glob matches are sorted, so every SLURM array task sees the same list and
``--shard`` splits it the same way.

Image files (png, jpg, tif, bmp) are frames, not videos: a folder holding
images and no videos is ONE input, an image sequence (its frames in sleap-io's
order: see :mod:`sleap_infer.sources.images`); with ``recursive`` so is every
subfolder like it. A folder that holds videos contributes only its videos, as
before (stray snapshots or plots next to recordings must not become a task).
A glob's images form one
sequence per folder: the folder itself when the glob matched all of its
images, else ``folder/<the glob's last part>`` (``frames/cam1_*.png``), which
the video reader expands again to exactly those files.
"""

from __future__ import annotations

import errno
import glob
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sleap_infer.core.errors import UsageError
from sleap_infer.sources.remote import as_url, url_path, url_problem

T = TypeVar("T")

VIDEO_SUFFIXES = frozenset(
    {".mp4", ".m4v", ".mov", ".avi", ".mkv", ".webm", ".mpg", ".mpeg", ".h264", ".mj2", ".wmv"}
)
LABELS_SUFFIX = ".slp"  # also ends ``.pkg.slp``
LIST_SUFFIX = ".txt"
# What sleap-io's ImageVideo reads as frames of an image sequence.
IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp"})
# Where HDF5 looks for its signature: offset 0, or after a user block of 512 * 2**k bytes.
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_HDF5_MAX_USER_BLOCK = 1 << 20
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class VideoInput:
    """One video (or image sequence) to predict; ``root`` is the folder it was found in
    (keeps the layout under ``-o DIR``), ``problem`` a reason it cannot even be attempted."""

    path: Path
    root: Path | None = None
    problem: str | None = None
    matched: bool = False  # found by a glob, not named: our own outputs are passed over


def is_labels_path(path: str | Path) -> bool:
    """A SLEAP project by its name (``.slp``, including ``.pkg.slp``)."""
    return Path(path).name.lower().endswith(LABELS_SUFFIX)


def _is_video(path: Path) -> bool:
    """What a folder contributes: videos, never hidden files. SLEAP projects only count
    when named (a folder holding a project and its videos would otherwise predict every
    video twice: once as a file, once through the project)."""
    return not path.name.startswith(".") and path.suffix.lower() in VIDEO_SUFFIXES


def is_image(path: Path) -> bool:
    """A frame of an image sequence, by its name (hidden files never are)."""
    return not path.name.startswith(".") and path.suffix.lower() in IMAGE_SUFFIXES


def is_pattern(path: str | Path) -> bool:
    """A glob, not a name: has glob characters and names nothing that exists."""
    return bool(_GLOB_CHARS & set(str(path))) and not Path(path).exists()


def natural_key(path: Path) -> tuple[tuple[int, int | str], ...]:
    """Sort key putting ``frame2`` before ``frame10``, as file browsers (and people) do."""
    parts = re.split(r"(\d+)", path.name.lower())
    key = [(0, int(p)) if p.isdecimal() else (1, p) for p in parts]
    return (*key, (1, path.name))  # ties ("f01" and "f1") by the exact name


def folder_images(folder: Path) -> list[Path]:
    """The images directly in ``folder``, in natural name order."""
    return sorted((p for p in folder.iterdir() if p.is_file() and is_image(p)), key=natural_key)


def sequence_images(path: str | Path) -> list[Path]:
    """The frames of an image sequence: a folder's images, or a glob's, in natural order."""
    path = Path(path)
    if path.is_dir():
        return folder_images(path)
    matches = (Path(m) for m in glob.glob(str(path), recursive=True))
    return sorted((m for m in matches if m.is_file() and is_image(m)), key=natural_key)


def _folder_videos(folder: Path, recursive: bool) -> list[Path]:
    pattern = "**/*" if recursive else "*"
    return sorted(p for p in folder.glob(pattern) if p.is_file() and _is_video(p))


def _image_folders(folder: Path, recursive: bool, videos: Sequence[Path]) -> list[Path]:
    """Folders whose images form a sequence: those holding images and no videos."""
    with_videos = {v.parent for v in videos}
    candidates = [folder]
    if recursive:
        candidates += sorted(p for p in folder.glob("**/*") if p.is_dir())
    return [
        d
        for d in candidates
        if d not in with_videos and not d.name.startswith(".") and any(map(is_image, d.iterdir()))
    ]


def _is_broken_link(path: Path) -> bool:
    """A symbolic link that leads nowhere: a missing target, or a loop."""
    try:
        return path.is_symlink() and not path.exists()
    except OSError:
        return True


def _link_problem(path: Path) -> str:
    """Why a broken link cannot be read, in the words of the input's other failures."""
    try:
        path.stat()
    except RuntimeError:
        return "symbolic link loop"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop"
        return f"broken symbolic link (its target {os.readlink(path)} does not exist)"
    return "not readable"


def _broken_links(folder: Path, recursive: bool) -> list[Path]:
    """Links in ``folder`` named as a video or image would be, that lead nowhere: named as
    failed inputs, as a missing file named on the command line is, never passed over."""
    pattern = "**/*" if recursive else "*"
    return sorted(
        p for p in folder.glob(pattern) if (_is_video(p) or is_image(p)) and _is_broken_link(p)
    )


def _expand_folder(path: Path, recursive: bool) -> list[VideoInput]:
    videos = _folder_videos(path, recursive)
    items = [VideoInput(p, root=path) for p in videos]
    items += [
        VideoInput(p, root=path, problem=_link_problem(p)) for p in _broken_links(path, recursive)
    ]
    # The folder itself has no root: an output named after it goes next to it.
    items += [
        VideoInput(d, root=None if d == path else path)
        for d in _image_folders(path, recursive, videos)
    ]
    if not items:
        hint = "" if recursive else " (use --recursive to search subfolders)"
        return [VideoInput(path, problem=f"no videos in folder{hint}")]
    return sorted(items, key=lambda i: i.path)


def _expand_glob(pattern: Path) -> list[VideoInput]:
    matches = sorted(Path(m) for m in glob.glob(str(pattern), recursive=True))
    files = [m for m in matches if m.is_file()]
    if not files and not any(map(_is_broken_link, matches)):
        return [VideoInput(pattern, problem="no files match this pattern")]
    items = [VideoInput(m, matched=True) for m in files if not is_image(m)]
    by_folder: dict[Path, set[Path]] = {}
    for m in files:
        if is_image(m):
            by_folder.setdefault(m.parent, set()).add(m)
    for folder, images in by_folder.items():
        whole = images == set(folder_images(folder))
        items.append(VideoInput(folder if whole else folder / pattern.name))
    items += [VideoInput(m, problem=_link_problem(m)) for m in matches if _is_broken_link(m)]
    return sorted(items, key=lambda i: i.path)


def _expand_one(arg: str, recursive: bool, base: Path | None, in_list: bool) -> list[VideoInput]:
    url = as_url(arg)
    if url is not None:  # read over HTTP when predicted (sources/remote.py)
        return [VideoInput(url_path(url), problem=url_problem(url))]
    path = Path(arg).expanduser()
    if base is not None and not path.is_absolute():
        path = base / path
    if path.is_dir():
        return _expand_folder(path, recursive)
    if path.is_file() and path.suffix.lower() == LIST_SUFFIX and not in_list:
        return _expand_list(path, recursive)
    if not path.exists() and _GLOB_CHARS & set(arg):
        return _expand_glob(path)
    return [VideoInput(path, problem=_path_problem(path))]


def _path_problem(path: Path) -> str | None:
    """Why a named video cannot even be attempted (same words as the video reader's)."""
    if not path.exists():
        return _link_problem(path) if _is_broken_link(path) else "video not found"
    if not path.is_file():
        return "not a regular file"
    if not os.access(path, os.R_OK):
        return "permission denied"
    if is_labels_path(path):
        return _labels_problem(path)
    return None


def _labels_problem(path: Path) -> str | None:
    """A project that is not even HDF5 (random bytes, a renamed video), from a few bytes."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            offset = 0
            while offset + len(_HDF5_SIGNATURE) <= min(size, _HDF5_MAX_USER_BLOCK):
                fh.seek(offset)
                if fh.read(len(_HDF5_SIGNATURE)) == _HDF5_SIGNATURE:
                    return None
                offset = 512 if offset == 0 else offset * 2
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})"
    why = "empty file" if size == 0 else "not an HDF5 file"
    return f"not a readable SLEAP project ({why})"


def _expand_list(list_file: Path, recursive: bool) -> list[VideoInput]:
    try:
        lines = list_file.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return [VideoInput(list_file, problem=f"cannot read list of videos ({exc})")]
    out: list[VideoInput] = []
    for raw in lines:
        entry = raw.strip()
        if entry and not entry.startswith("#"):
            out.extend(_expand_one(entry, recursive, list_file.parent, in_list=True))
    if not out:
        return [VideoInput(list_file, problem="list of videos is empty")]
    return out


def expand_inputs(args: Iterable[str | Path], recursive: bool = False) -> list[VideoInput]:
    """Every video named by ``args``, in order, each once (by resolved path)."""
    seen: set[Path] = set()
    out: list[VideoInput] = []
    for arg in args:
        for item in _expand_one(str(arg), recursive, None, in_list=False):
            try:
                key = item.path.resolve()
            except (OSError, RuntimeError):  # a symbolic link loop: it stays a failed input
                key = item.path.absolute()
            if key not in seen:
                seen.add(key)
                out.append(item)
    return out


def parse_shard(spec: str | None) -> tuple[int, int] | None:
    """``"i/n"`` (0 <= i < n) -> ``(i, n)``."""
    if spec is None:
        return None
    try:
        i_text, n_text = spec.split("/")
        i, n = int(i_text), int(n_text)
    except ValueError as exc:
        raise UsageError(f"--shard {spec!r}: expected i/n, e.g. 0/4") from exc
    if n < 1 or not 0 <= i < n:
        raise UsageError(f"--shard {spec!r}: need 0 <= i < n")
    return i, n


def take_shard(items: Sequence[T], shard: tuple[int, int] | None) -> list[T]:
    """Every n-th item starting at i: deterministic, and balanced to within one video."""
    if shard is None:
        return list(items)
    i, n = shard
    return list(items[i::n])
