"""Videos named by an ``http(s)://`` URL, read over HTTP without downloading them first.

sleap-nn 0.3.5 predicts ``-i https://host/v.mp4`` through sleap-io's fsspec loaders;
infer reads the same bytes with the standard library: :class:`RangeFile` is a
seekable file-like over HTTP ``Range`` requests with a bounded block cache, and
PyAV decodes from it exactly as from a local file (so the points are the same).
A long video is never held in memory: at most ``max_blocks`` blocks of
``block_size`` bytes are (sleap-io's ``blockcache`` defaults: 32 blocks of 1 MiB).

``--stream_mode`` takes sleap-io's values: ``auto`` and ``blockcache`` (the range
reads above), ``download`` (the whole file into memory, then read), ``cache`` and
``filecache`` (the whole file downloaded once into a temporary file for the run,
deleted at exit). ``--headers`` (a JSON object, e.g. an ``Authorization`` token)
goes with every request.

The input travels through the batch as a :class:`UrlPath`: a :class:`~pathlib.Path`
(every planning step takes one) whose ``str`` is the URL again, whose ``stat`` asks
the server for the size, and whose ``open`` is a :class:`RangeFile`. Its outputs
go to the current folder under the URL's file name, as sleap-nn's do (a URL has
no folder to write beside). Options reach reader processes through the
environment (:func:`configure`), so device workers see them too.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import re
import shutil
import stat as stat_module
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.client import HTTPException
from pathlib import Path, PosixPath
from typing import Any

from sleap_infer.core.errors import UsageError, VideoError

SCHEMES = ("http", "https")
STREAM_MODES = ("auto", "blockcache", "cache", "filecache", "download")
_ENV = "SLEAP_INFER_REMOTE_OPTIONS"  # JSON of RemoteOptions: inherited by worker processes
_COLLAPSED = re.compile(r"^(https?):/+(?=[^/])", re.IGNORECASE)  # Path("https://h") -> "https:/h"
TIMEOUT_S = 30.0
RETRIES = 3  # a dropped connection or a 5xx is tried again this many times (as sleap-io)


@dataclass(frozen=True)
class RemoteOptions:
    """How URLs are read: sleap-nn's ``--headers`` and ``--stream_mode``, and the cache."""

    headers: Mapping[str, str] = field(default_factory=dict)
    stream_mode: str = "auto"
    block_size: int = 1 << 20
    max_blocks: int = 32
    timeout_s: float = TIMEOUT_S


def parse_headers(text: str | None) -> dict[str, str]:
    """``--headers``' JSON object; one line (exit 2) for anything else, as sleap-nn says."""
    if not text:
        return {}
    try:
        parsed = json.loads(text)
    except ValueError as exc:
        raise UsageError(
            f"--headers must be a JSON object string, e.g. "
            f'\'{{"Authorization": "Bearer ..."}}\' (got {text!r}): {exc}'
        ) from exc
    if not isinstance(parsed, dict):
        raise UsageError("--headers JSON must be an object (key/value map)")
    return {str(k): str(v) for k, v in parsed.items()}


def check_stream_mode(mode: str | None) -> str:
    if mode is None:
        return "auto"
    if mode not in STREAM_MODES:
        raise UsageError(f"--stream-mode {mode!r}: expected one of {', '.join(STREAM_MODES)}")
    return mode


def configure(options: RemoteOptions) -> None:
    """Set how this process (and the worker processes it starts) reads URLs."""
    os.environ[_ENV] = json.dumps(
        {
            "headers": dict(options.headers),
            "stream_mode": options.stream_mode,
            "block_size": options.block_size,
            "max_blocks": options.max_blocks,
            "timeout_s": options.timeout_s,
        }
    )


def current_options() -> RemoteOptions:
    raw = os.environ.get(_ENV)
    if not raw:
        return RemoteOptions()
    return RemoteOptions(**json.loads(raw))


def as_url(path: str | os.PathLike[str]) -> str | None:
    """The ``http(s)://`` URL ``path`` names, or None for a local path. Also undoes what
    :class:`~pathlib.Path` does to one (``https:/host/v.mp4``)."""
    text = os.fspath(path) if not isinstance(path, str) else path
    if urllib.parse.urlsplit(text).scheme.lower() in SCHEMES and "://" in text:
        return text
    match = _COLLAPSED.match(text)
    if match is None or isinstance(path, str):
        return None
    return f"{match.group(1)}://{text[match.end() :]}"


def file_name(url: str) -> str:
    """The name an output of ``url`` is made from: its path's last part (no query), as
    sleap-nn names it (``predictions`` when the URL has none)."""
    name = Path(urllib.parse.unquote(urllib.parse.urlsplit(url).path)).name
    return name or "predictions"


def url_problem(url: str) -> str | None:
    """Why a URL input cannot even be attempted: a project (``.slp``) is read whole by
    HDF5, which infer does only from a local file."""
    if file_name(url).lower().endswith(".slp"):
        return "a SLEAP project URL is not read by infer: download it first (videos stream)"
    return None


def _redact(url: str) -> str:
    """The URL without its query (signed URLs carry their secret there)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class UrlPath(PosixPath):
    """A URL as a :class:`~pathlib.Path` for the batch's planning (see the module doc)."""

    def __str__(self) -> str:
        return as_url(PosixPath(*self.parts)) or super().__str__()

    def __fspath__(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"UrlPath({str(self)!r})"

    @property
    def url(self) -> str:
        return str(self)

    def absolute(self) -> UrlPath:
        return self

    def resolve(self, strict: bool = False) -> UrlPath:
        return self

    def exists(self) -> bool:
        return True  # asked of the server when the video is opened (a 404 is its line)

    def is_dir(self) -> bool:
        return False

    def is_file(self) -> bool:
        return True

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        size = _probe(self.url, current_options())
        return os.stat_result((stat_module.S_IFREG | 0o444, 0, 0, 1, 0, 0, size, 0, 0, 0))

    def open(self, mode: str = "rb", *args: Any, **kwargs: Any) -> io.BufferedReader:  # type: ignore[override]
        if mode not in ("r", "rb"):
            raise OSError(f"{self}: a URL input is read-only")
        return open_url(self.url, current_options())

    def av_source(self) -> io.BufferedReader:
        """What PyAV opens (see :func:`sleap_infer.sources.video._open`)."""
        return self.open("rb")


def url_path(url: str) -> UrlPath:
    return UrlPath(url)


def _request(url: str, options: RemoteOptions, headers: dict[str, str]) -> Any:
    """``urlopen`` with the run's headers; HTTP errors and timeouts as one
    :class:`VideoError` line naming the URL (its query left out)."""
    req = urllib.request.Request(url, headers={**options.headers, **headers})
    try:
        return urllib.request.urlopen(req, timeout=options.timeout_s)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise VideoError(f"{_redact(url)}: HTTP {exc.code} {exc.reason}") from exc
    except TimeoutError as exc:
        raise VideoError(f"{_redact(url)}: no answer in {options.timeout_s:g} s") from exc
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise VideoError(f"{_redact(url)}: no answer in {options.timeout_s:g} s") from exc
        raise VideoError(f"{_redact(url)}: cannot connect ({reason})") from exc


_TRANSIENT = (HTTPException, ConnectionError, TimeoutError, urllib.error.URLError)


def _fetch(url: str, options: RemoteOptions, start: int, end: int) -> bytes:
    """Bytes ``start`` to ``end`` (inclusive), retried after a dropped connection."""
    for attempt in range(RETRIES + 1):
        try:
            with _request(url, options, {"Range": f"bytes={start}-{end}"}) as resp:
                data = resp.read()
                if resp.status == 200:  # the server ignores ranges: take our part
                    data = data[start : end + 1]
            if len(data) == end - start + 1:
                return bytes(data)
            why = f"got {len(data)} of {end - start + 1} bytes"
        except VideoError as exc:
            cause = exc.__cause__
            if not isinstance(cause, urllib.error.HTTPError) or cause.code < 500:
                raise
            why = str(exc)
        except _TRANSIENT as exc:
            why = f"connection lost ({exc.__class__.__name__})"
        if attempt < RETRIES:
            time.sleep(0.2 * 2**attempt)
    raise VideoError(
        f"{_redact(url)}: bytes {start}-{end}: {why}, {RETRIES + 1} tries; rerun "
        "with --resume to go on from what was predicted"
    )


def _probe(url: str, options: RemoteOptions) -> int:
    """The file's size, from a one-byte range request (servers answer HEAD less often)."""
    with _request(url, options, {"Range": "bytes=0-0"}) as resp:
        if resp.status == 206:
            total = resp.headers.get("Content-Range", "").rpartition("/")[2]
            if total.isdigit():
                return int(total)
        length = resp.headers.get("Content-Length")
        if resp.status == 200 and length is not None and length.isdigit():
            return int(length)
    raise VideoError(f"{_redact(url)}: the server does not say the file's size")


class RangeFile(io.RawIOBase):
    """A read-only, seekable file over HTTP range requests; the LRU block cache holds at
    most ``options.max_blocks`` blocks, so memory stays bounded whatever the file's size."""

    def __init__(self, url: str, options: RemoteOptions) -> None:
        super().__init__()
        self.url = url
        self.name = url
        self.options = options
        self.size = _probe(url, options)
        self._pos = 0
        self._blocks: OrderedDict[int, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self.requests = 0  # range requests made (tests check the cache works)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def _block(self, index: int) -> bytes:
        block = self._blocks.get(index)
        if block is not None:
            self._blocks.move_to_end(index)
            return block
        start = index * self.options.block_size
        end = min(start + self.options.block_size, self.size) - 1
        block = _fetch(self.url, self.options, start, end)
        self.requests += 1
        self._blocks[index] = block
        while len(self._blocks) > self.options.max_blocks:
            self._blocks.popitem(last=False)
        return block

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        with self._lock:
            n = 0
            while n < len(view) and self._pos < self.size:
                index, offset = divmod(self._pos, self.options.block_size)
                block = self._block(index)
                take = min(len(view) - n, len(block) - offset)
                view[n : n + take] = block[offset : offset + take]
                n += take
                self._pos += take
            return n


_downloads: dict[str, str] = {}  # cache/filecache: URL -> its temporary copy, for the run
_downloads_lock = threading.Lock()


def _download(url: str, options: RemoteOptions, fh: Any) -> None:
    with _request(url, options, {}) as resp:
        try:
            shutil.copyfileobj(resp, fh, 1 << 20)
        except _TRANSIENT as exc:
            raise VideoError(
                f"{_redact(url)}: connection lost while downloading ({exc.__class__.__name__})"
            ) from exc


def _cached_copy(url: str, options: RemoteOptions) -> str:
    with _downloads_lock:
        if url not in _downloads:
            fd, name = tempfile.mkstemp(prefix="sleap_infer_", suffix="_" + file_name(url))
            try:
                with os.fdopen(fd, "wb") as fh:
                    _download(url, options, fh)
            except BaseException:
                os.unlink(name)
                raise
            if not _downloads:
                atexit.register(_remove_downloads)
            _downloads[url] = name
        return _downloads[url]


def _remove_downloads() -> None:
    for name in _downloads.values():
        with contextlib.suppress(OSError):
            os.unlink(name)
    _downloads.clear()


def open_url(url: str, options: RemoteOptions) -> io.BufferedReader:
    """``url`` as a binary file, read as ``options.stream_mode`` says (module doc)."""
    mode = check_stream_mode(options.stream_mode)
    if mode == "download":
        memory = io.BytesIO()
        _download(url, options, memory)
        memory.seek(0)
        return io.BufferedReader(memory)
    if mode in ("cache", "filecache"):
        return open(_cached_copy(url, options), "rb")  # the caller closes it
    return io.BufferedReader(RangeFile(url, options), buffer_size=64 << 10)
