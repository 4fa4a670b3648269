"""Append-only, crash-safe journal of the predictions made so far for one video.

Predictions go here batch by batch while a video runs (so memory stays flat
and a crash loses at most the batch in flight); the final output file is
built from the journal once the video is done, and the journal is deleted.

Layout: ``MAGIC``, then records. A record is ``<u32 length><u32 crc32><payload>``
with payload ``<u32 meta length><meta JSON><raw array bytes>``. Each record is
one ``write`` on an unbuffered file, so a killed process leaves whole records
(the OS keeps what was written) and a power cut leaves at most a torn last
record, which :func:`read_journal` detects (short read or bad CRC) and drops;
:class:`JournalWriter` truncates it away before appending again. Data is
``fsync``-ed at most every ``sync_interval`` seconds and on close.

Record types: ``header`` (first; what the predictions depend on),
``session`` (one per run that appended), ``batch`` (one per predicted batch;
a segmentation model's batch also holds its masks' arrays, named
``mask_<array>``, a box detector's batch its boxes' arrays, named ``box_<array>``, and
an embedding model's batch its ``(B, I, D)`` re-ID vectors, named ``embeddings``; a
journal written before masks, boxes or vectors existed simply has none),
``bad_frames`` (frames that could not be decoded) and ``failed`` (the run
stopped on an error, not an interruption; see :func:`mark_failed`).

A tracked run's batch record also carries the tracker's state *after* that
batch (meta key ``tracker``, arrays named ``tracker/<name>``), in the same
record as the tracks it produced: a kill can never separate the two, so
``--resume`` restarts the tracker exactly where the last whole batch left it.
Only the last record's state is kept when reading (it is bounded by the
tracker's window, not the video's length). A MOT tracker's labels for the
tentative frames of a track it confirmed in that batch ride in the same record
(arrays ``late/<name>``, :mod:`sleap_infer.core.late_tracks`): reading keeps
all of them (a few rows per track) and :meth:`Journal.batches` lays them over
the frames they name.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import struct
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from sleap_infer.core.boxes import BoxSet
from sleap_infer.core.errors import OutputError, ResumeError, SleapInferError
from sleap_infer.core.late_tracks import LateTracks, lay_over
from sleap_infer.core.masks import MaskSet
from sleap_infer.core.polygons import packaged
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.products import Counts, Product
from sleap_infer.sources.video import FrameError

MAGIC = b"SIJRNL1\n"
FORMAT_VERSION = 3  # 3: image folders in sleap-io's order (a v2 journal numbered them naturally)
# 2: the tracking package redesign (full options, current tracker states)
_FRAME = struct.Struct("<II")  # payload length, crc32
_META = struct.Struct("<I")
_BATCH_ARRAYS = (
    "frame_indices",
    "points",
    "point_scores",
    "instance_scores",
    "valid",
    "class_ids",
    "class_scores",
)
MASK_PREFIX = "mask_"  # MaskSet arrays in a batch record: mask_frame, mask_rle, ...
BOX_PREFIX = "box_"  # BoxSet arrays in a batch record: box_frame, box_xyxy, ...
EMBEDDINGS = "embeddings"  # (B, I, D) float32 re-ID vectors in a batch record, NaN = none
TRACKER_PREFIX = "tracker/"  # a tracked run's tracker state in a batch record
LATE_PREFIX = "late/"  # ... and its labels for earlier frames (core.late_tracks)
TrackerSnapshot = tuple[dict[str, Any], dict[str, np.ndarray]]  # (JSON meta, arrays)


class EmptyJournalError(ResumeError):
    """The journal was cut off before its header: it holds no predictions to protect."""


class JournalBusyError(ResumeError):
    """Another live process holds the journal's lock: it is predicting that video now
    (a batch leaves the video to it, rather than failing it)."""


def busy_error(path: Path) -> JournalBusyError:
    return JournalBusyError(f"{path}: another infer process is predicting this video right now")


def journal_path(output: Path) -> Path:
    """Where the journal for ``output`` lives: next to it, never ending in the output's suffix."""
    return output.with_name(output.name + ".partial")


def _encode(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> bytes:
    specs = []
    blobs = []
    for name, value in arrays.items():
        arr = np.ascontiguousarray(value)
        specs.append([name, arr.dtype.str, list(arr.shape)])
        blobs.append(arr.tobytes())
    head = json.dumps({**meta, "arrays": specs}, separators=(",", ":")).encode()
    payload = b"".join([_META.pack(len(head)), head, *blobs])
    return _FRAME.pack(len(payload), zlib.crc32(payload)) + payload


def _decode(payload: bytes) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    (n,) = _META.unpack_from(payload)
    meta = json.loads(payload[_META.size : _META.size + n])
    offset = _META.size + n
    arrays = {}
    for name, dtype_str, shape in meta.pop("arrays"):
        dtype = np.dtype(dtype_str)
        count = int(np.prod(shape)) if shape else 1
        arrays[name] = np.frombuffer(payload, dtype, count, offset).reshape(shape)
        offset += count * dtype.itemsize
    return meta, arrays


def _frame_errors_to_json(errors: Sequence[FrameError]) -> list[list[Any]]:
    return [[e.index, e.count, e.kind, e.reason] for e in errors]


def _frame_errors_from_json(rows: list[list[Any]]) -> list[FrameError]:
    return [FrameError(int(i), str(reason), str(kind), int(n)) for i, n, kind, reason in rows]


def _records(fh: BinaryIO) -> Iterator[tuple[int, dict[str, Any], dict[str, np.ndarray]]]:
    """``(end offset, meta, arrays)`` for each intact record; stops at the first torn one."""
    offset = len(MAGIC)
    fh.seek(offset)
    while True:
        frame = fh.read(_FRAME.size)
        if len(frame) < _FRAME.size:
            return
        length, crc = _FRAME.unpack(frame)
        payload = fh.read(length)
        if len(payload) < length or zlib.crc32(payload) != crc:
            return
        try:
            meta, arrays = _decode(payload)
        except (ValueError, KeyError, TypeError):
            return
        offset += _FRAME.size + length
        yield offset, meta, arrays


@dataclass
class Journal:
    """What an existing journal holds (everything but the predictions themselves)."""

    path: Path
    header: dict[str, Any]
    sessions: list[dict[str, Any]] = field(default_factory=list)
    bad_frames: list[FrameError] = field(default_factory=list)
    predicted: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    totals: Totals = field(default_factory=lambda: Totals())
    valid_bytes: int = 0
    torn_bytes: int = 0  # bytes after the last intact record (a crash mid-write)
    failed: str | None = None  # why the last run stopped, when it failed rather than being cut off
    tracker: TrackerSnapshot | None = None  # the tracker's state after the last batch (tracked)
    late: LateTracks | None = None  # every batch's labels for earlier frames (tracked, MOT)

    @property
    def n_tracks(self) -> int:
        """Track ids a tracked run handed out so far (0 when untracked)."""
        return int(self.tracker[0].get("n_tracks", 0)) if self.tracker else 0

    @property
    def n_predicted(self) -> int:
        return int(self.predicted.size)

    @property
    def counts(self) -> Counts:
        """What the journal's batches add up to (its predicted frames, its tracks)."""
        return self.totals.counts(self.n_predicted, self.n_tracks)

    def changes(self, fingerprint: dict[str, Any]) -> list[str]:
        """What differs between the run that wrote this journal and ``fingerprint``.

        Compared as the header stores it, through JSON: a tuple option (e.g.
        ``merge_thresholds``) reads back as a list and must not count as a change.
        """
        stored = json.loads(json.dumps(fingerprint))
        return fingerprint_changes(self.header.get("fingerprint", {}), stored)

    def done_mask(self, size: int) -> np.ndarray:
        """Bool mask over frame indices ``0..size-1``: predicted or known undecodable."""
        mask = np.zeros(size, bool)
        inside = self.predicted[self.predicted < size]
        mask[inside] = True
        for err in self.bad_frames:
            mask[err.index : min(err.last + 1, size)] = True
        return mask

    def batches(self) -> Iterator[BatchPredictions]:
        """Re-read the predictions, one batch at a time (bounded memory), with the late
        labels of later batches laid over them."""
        late = self.late.by_frame() if self.late is not None else {}
        with self.path.open("rb") as fh:
            for end, meta, arrays in _records(fh):
                if end > self.valid_bytes:
                    return
                if meta.get("type") == "batch":
                    preds = BatchPredictions(
                        points=arrays["points"],
                        point_scores=arrays["point_scores"],
                        instance_scores=arrays["instance_scores"],
                        valid=arrays["valid"],
                        class_ids=arrays.get("class_ids"),
                        class_scores=arrays.get("class_scores"),
                        frame_indices=arrays["frame_indices"],
                        masks=_masks(arrays),
                        boxes=_boxes(arrays),
                        embeddings=arrays.get(EMBEDDINGS),
                    )
                    lay_over(preds, late)
                    yield preds


def embeddings_of(preds: BatchPredictions) -> np.ndarray | None:
    """The batch's ``(B, I, D)`` re-ID vectors, or None (models without an embedding head)."""
    return preds.embeddings


def vector_slots(embeddings: np.ndarray | None, valid: np.ndarray) -> np.ndarray:
    """``(B, I)``: which instance slots carry a vector an output keeps: a valid
    instance whose vector is not all NaN (NaN is how a model says "none")."""
    valid = np.asarray(valid, bool)
    if embeddings is None:
        return np.zeros(valid.shape, bool)
    if embeddings.ndim != 3 or embeddings.shape[:2] != valid.shape:
        raise ValueError(
            f"embeddings of shape {embeddings.shape} do not match {valid.shape} instance slots"
        )
    return valid & ~np.isnan(embeddings).all(axis=-1)


def _masks(arrays: dict[str, np.ndarray]) -> MaskSet | None:
    """The batch's masks (rows relative to the batch, as written); None for pose batches."""
    if MASK_PREFIX + "frame" not in arrays:
        return None
    names = (*MaskSet.ARRAYS, *MaskSet.TRACK_ARRAYS)
    return MaskSet.from_arrays(
        {name: arrays[MASK_PREFIX + name] for name in names if MASK_PREFIX + name in arrays}
    )


def _boxes(arrays: dict[str, np.ndarray]) -> BoxSet | None:
    """The batch's boxes (rows relative to the batch); None for batches without a detector."""
    if BOX_PREFIX + "frame" not in arrays:
        return None
    return BoxSet.from_arrays({name: arrays[BOX_PREFIX + name] for name in BoxSet.ARRAYS})


@dataclass
class Totals:
    """Running totals of the batch records: the counts, and what sizes an output."""

    instances: int = 0
    frames_with_instances: int = 0  # with an instance, mask or box: "frames with detections"
    score_sum: float = 0.0  # of the valid instances' scores (the run summary's mean score)
    masks: int = 0  # masks with a set pixel (the ones an output holds)
    mask_score_sum: float = 0.0
    mask_rle_bytes: int = 0  # of those masks' run lengths as stored (uint32): sizes the output
    boxes: int = 0
    box_score_sum: float = 0.0
    embeddings: int = 0  # re-ID vectors on valid instances (the ones an output holds)
    embedding_bytes: int = 0  # of those vectors as float32: sizes the output

    def of(self, product: Product) -> int:
        return int(getattr(self, product.value))

    def counts(self, frames: int, tracks: int = 0) -> Counts:
        return Counts(
            frames=frames,
            instances=self.instances,
            masks=self.masks,
            boxes=self.boxes,
            embeddings=self.embeddings,
            tracks=tracks,
            frames_with_instances=self.frames_with_instances,
            mean_score=self.mean_score,
        )

    @property
    def mean_score(self) -> float | None:
        """Mean score of what the run is about: instances, else masks, else boxes."""
        for n, total in (
            (self.instances, self.score_sum),
            (self.masks, self.mask_score_sum),
            (self.boxes, self.box_score_sum),
        ):
            if n:
                return total / n
        return None

    def add(self, arrays: dict[str, np.ndarray]) -> None:
        found = arrays["valid"]
        self.instances += int(found.sum())
        self.score_sum += float(np.nansum(arrays["instance_scores"][found]))
        n_rows = len(arrays["frame_indices"])
        detected = found.any(axis=1) if found.ndim == 2 else np.zeros(n_rows, bool)
        masks = _masks(arrays)
        if masks is not None and len(masks):
            kept = packaged(masks)
            self.masks += len(kept)
            self.mask_score_sum += float(np.nansum(kept.score))
            self.mask_rle_bytes += 4 * int(kept.rle_len.sum())
            rows = kept.frame[(kept.frame >= 0) & (kept.frame < len(detected))]
            detected[rows] = True
        boxes = _boxes(arrays)
        if boxes is not None and len(boxes):
            self.boxes += len(boxes)
            self.box_score_sum += float(np.nansum(boxes.score))
            detected[boxes.frame[(boxes.frame >= 0) & (boxes.frame < len(detected))]] = True
        self.frames_with_instances += int(detected.sum())
        embeddings = arrays.get(EMBEDDINGS)
        if embeddings is not None:
            n = int(vector_slots(embeddings, found).sum())
            self.embeddings += n
            self.embedding_bytes += 4 * n * int(embeddings.shape[-1])


def read_journal(path: Path) -> Journal:
    """Scan a journal; a torn tail is reported in ``torn_bytes``, not raised."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise ResumeError(f"{path}: cannot read partial predictions ({exc.strerror})") from exc
    with fh:
        magic = fh.read(len(MAGIC))
        if len(magic) < len(MAGIC) and MAGIC.startswith(magic):
            raise EmptyJournalError(f"{path}: journal was cut off before its header")
        if magic != MAGIC:
            raise ResumeError(f"{path}: not a sleap_infer journal (delete it or use --overwrite)")
        header: dict[str, Any] | None = None
        sessions: list[dict[str, Any]] = []
        bad: list[FrameError] = []
        predicted: list[np.ndarray] = []
        totals = Totals()
        failed: str | None = None
        tracker: TrackerSnapshot | None = None
        late: list[LateTracks] = []
        valid = len(MAGIC)
        for end, meta, arrays in _records(fh):
            kind = meta.get("type")
            if header is None:
                if kind != "header":
                    break
                header = meta
            elif kind == "session":
                sessions.append(meta)
                failed = None  # a later run took over: only its own end counts
            elif kind == "failed":
                failed = str(meta.get("reason", "unknown error"))
            elif kind == "batch":
                predicted.append(arrays["frame_indices"].astype(np.int64))
                totals.add(arrays)
                if "tracker" in meta:
                    tracker = _tracker_snapshot(meta, arrays)
                rows = LateTracks.from_arrays(arrays, LATE_PREFIX)
                if rows is not None:
                    late.append(rows)
            if kind in ("batch", "bad_frames"):
                bad.extend(_frame_errors_from_json(meta.get("bad_frames", [])))
            valid = end
        size = fh.seek(0, os.SEEK_END)
    if header is None:
        raise EmptyJournalError(f"{path}: journal has no header (delete it or use --overwrite)")
    done = np.unique(np.concatenate(predicted)) if predicted else np.zeros(0, np.int64)
    bad = list(dict.fromkeys(bad))  # a resumed run may meet the same bad frames again
    return Journal(
        path=path,
        header=header,
        sessions=sessions,
        bad_frames=bad,
        predicted=done,
        totals=totals,
        valid_bytes=valid,
        torn_bytes=size - valid,
        failed=failed,
        tracker=tracker,
        late=LateTracks.concat(late) if late else None,
    )


def _tracker_snapshot(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> TrackerSnapshot:
    """The tracker state a batch record carries (arrays copied: the record's buffer goes)."""
    n = len(TRACKER_PREFIX)
    state = {k[n:]: v.copy() for k, v in arrays.items() if k.startswith(TRACKER_PREFIX)}
    return dict(meta["tracker"]), state


def check_compatible(journal: Journal, fingerprint: dict[str, Any]) -> None:
    """Raise unless the journal was written for the same video, model and options."""
    if journal.header.get("format") != FORMAT_VERSION:
        raise ResumeError(
            f"{journal.path}: journal format {journal.header.get('format')!r} "
            f"is not {FORMAT_VERSION}; delete it or use --overwrite"
        )
    changes = journal.changes(fingerprint)
    if changes:
        raise ResumeError(
            f"{journal.path}: cannot resume, the interrupted run differs: {'; '.join(changes)}; "
            "use --overwrite to start over"
        )


def fingerprint_changes(old: Any, new: Any, prefix: str = "") -> list[str]:
    """``"key: OLD then, NEW now"`` for every leaf that differs, nested keys dotted
    (``options.peak_threshold``), so the message names exactly what changed
    instead of printing two long JSON blobs cut off before the difference."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            name = f"{prefix}.{key}" if prefix else str(key)
            out += fingerprint_changes(old.get(key, _ABSENT), new.get(key, _ABSENT), name)
        return out
    if old == new:
        return []
    return [f"{prefix or 'value'}: {_shown(old)} then, {_shown(new)} now"]


_ABSENT = object()


def _shown(value: Any) -> str:
    if value is _ABSENT:
        return "unset"
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _write_error(path: Path, exc: OSError) -> OutputError:
    reason = "no space left on device" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
    return OutputError(f"{path}: cannot write partial predictions ({reason})")


def _try_lock(fh: BinaryIO) -> bool:
    """An exclusive advisory lock for as long as the file is open (POSIX; always True
    elsewhere). Released by the OS when the process dies, so crashes never leave it."""
    try:
        import fcntl
    except ImportError:
        return True
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def in_use(path: Path) -> bool:
    """Whether a live process holds the journal's lock."""
    try:
        with path.open("rb") as fh:
            if not _try_lock(fh):
                return True
    except OSError:
        return False
    return False


def fsync_path(path: Path, directory: bool = False) -> None:
    """fsync a file, or a folder (so that a rename or a new file in it is durable too)."""
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class JournalWriter:
    """Appends records to a journal; create a new one with ``header``, or continue ``existing``."""

    def __init__(
        self,
        path: Path,
        header: dict[str, Any] | None = None,
        existing: Journal | None = None,
        sync_interval: float = 1.0,
    ) -> None:
        if (header is None) == (existing is None):
            raise ValueError("give exactly one of header (new journal) or existing")
        self.path = path
        self.sync_interval = sync_interval
        self.batches_written = 0
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # no truncation before the lock
        except OSError as exc:
            raise _write_error(path, exc) from exc
        self._fh = os.fdopen(fd, "r+b", buffering=0)
        if not _try_lock(self._fh):
            self._fh.close()
            raise busy_error(path)
        try:
            if existing is not None:
                self._fh.truncate(existing.valid_bytes)  # drop a torn last record
                self._fh.seek(existing.valid_bytes)
            else:
                self._fh.truncate(0)
                self._write_all(MAGIC)
                self._write_all(_encode({"type": "header", "format": FORMAT_VERSION, **header}, {}))
                os.fsync(self._fh.fileno())
                with contextlib.suppress(OSError):
                    fsync_path(path.parent, directory=True)
        except OSError as exc:
            self._fh.close()
            raise _write_error(path, exc) from exc
        self._last_sync = time.monotonic()

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = self._fh.write(view)
            view = view[written:]

    def _append(self, meta: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> None:
        try:
            self._write_all(_encode(meta, arrays or {}))
            if time.monotonic() - self._last_sync >= self.sync_interval:
                os.fsync(self._fh.fileno())
                self._last_sync = time.monotonic()
        except OSError as exc:  # e.g. disk full: what is already written stays resumable
            raise _write_error(self.path, exc) from exc

    def write_session(self, info: dict[str, Any]) -> None:
        self._append({"type": "session", **info})

    def write_batch(
        self,
        preds: BatchPredictions,
        bad_frames: Sequence[FrameError] = (),
        tracker: TrackerSnapshot | None = None,
    ) -> None:
        """One predicted batch (plus any undecodable frames reported since the last record,
        and, tracking, the tracker's state after the batch)."""
        arrays = {
            name: getattr(preds, name) for name in _BATCH_ARRAYS if getattr(preds, name) is not None
        }
        if preds.masks is not None:
            arrays.update({MASK_PREFIX + k: v for k, v in preds.masks.arrays().items()})
        if preds.boxes is not None:
            arrays.update({BOX_PREFIX + k: v for k, v in preds.boxes.arrays().items()})
        embeddings = embeddings_of(preds)
        if embeddings is not None:
            arrays[EMBEDDINGS] = np.asarray(embeddings, np.float32)
            vector_slots(arrays[EMBEDDINGS], preds.valid)  # a wrong shape fails here, not later
        meta: dict[str, Any] = {"type": "batch", "bad_frames": _frame_errors_to_json(bad_frames)}
        if tracker is not None:
            meta["tracker"] = tracker[0]
            arrays.update({TRACKER_PREFIX + k: v for k, v in tracker[1].items()})
        if preds.late_tracks is not None and len(preds.late_tracks):
            arrays.update({LATE_PREFIX + k: v for k, v in preds.late_tracks.arrays().items()})
        self._append(meta, arrays)
        self.batches_written += 1

    def write_failed(self, reason: str) -> None:
        self._append({"type": "failed", "reason": reason})
        os.fsync(self._fh.fileno())

    def write_bad_frames(self, bad_frames: Sequence[FrameError]) -> None:
        if bad_frames:
            self._append({"type": "bad_frames", "bad_frames": _frame_errors_to_json(bad_frames)})

    def close(self) -> None:
        if self._fh.closed:
            return
        try:
            os.fsync(self._fh.fileno())
        finally:
            self._fh.close()

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def mark_failed(path: Path, reason: str) -> None:
    """Record that the run writing ``path`` stopped on an error (best effort, never raises).

    An interrupted run's journal makes the next plain run stop and ask for
    ``--resume`` or ``--overwrite``, so that a forgotten flag never throws
    predictions away. A run that *failed* (out of memory, a full disk while
    building the output, a bug) is different: the user reruns it after fixing
    the cause and expects it to just work, so such a journal is continued by a
    plain run. A kill or power cut cannot leave this mark; those journals stay
    "interrupted", which is what they are.
    """
    with contextlib.suppress(SleapInferError, OSError):
        journal = read_journal(path)
        with JournalWriter(path, existing=journal) as writer:
            writer.write_failed(reason)
