"""Output file names, and turning a finished journal into the output file.

Every format is written to a temporary sibling by a forked child
(:mod:`sleap_infer.writers.isolate`: HDF5 segfaults the process that hits a full
disk), fsync-ed and renamed, so the output path only ever holds a complete
file: that is also how a rerun can trust (and skip) a file it finds. A
failure is one :class:`OutputError` line naming the file; the journal stays,
so ``--resume`` can build the output once the cause is fixed. Every format is
built from the journal batch by batch: ``.slp`` straight into sleap-io's
tables, CSV row by row, analysis HDF5 into chunked arrays; NWB gathers each
track's arrays (not per-point objects) before pynwb writes them. Only ``.slp``
has a place for segmentation masks, and only ``.slp`` and CSV for bounding
boxes, and only ``.slp`` for an embedding model's re-ID vectors: any other
format refuses a journal that holds some (one line) rather than writing a file
without them.
"""

from __future__ import annotations

import contextlib
import copy
import errno
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import h5py
import numpy as np

if TYPE_CHECKING:
    import sleap_io as sio

from sleap_infer.core.errors import OutputError, OutputExistsError
from sleap_infer.core.leftovers import owner_tag, remove_stale
from sleap_infer.core.nwb_metadata import NwbMetadata
from sleap_infer.core.options import POLYGON_EPSILON
from sleap_infer.core.polygons import check_mask_output
from sleap_infer.core.products import Product
from sleap_infer.journal import Journal, fsync_path, journal_path
from sleap_infer.writers.isolate import WriteFailure, reason, run_isolated
from sleap_infer.writers.registry import FORMATS, OutputFormat, Writer, missing_product, use_instead
from sleap_infer.writers.slots import SlpSaving, Source

# Sizes per format are in the registry (``OutputFormat.sizes``); these are the products
# only .slp holds. Masks and polygons: each a set of 5 tables (about 22 KB with one row,
# measured), a ``masks`` / ``rois`` row plus its three string entries, and the polygon's WKB before
# simplification, at most 2 vertices (32 bytes) per RLE run (4 bytes), plus its header.
_MASK_TABLES_BYTES = 24_000
_MASK_ROW_BYTES = 74 + 48
_ROI_ROW_BYTES = 46 + 48 + 64
_WKB_PER_RLE_BYTE = 8
# .slp re-ID vectors: the ``embeddings/`` group's 3 datasets (about 9 KB with one vector,
# measured), then per vector its ``owner_type`` and ``owner_id`` (the float32 values
# themselves are ``Totals.embedding_bytes``).
_EMBEDDING_TABLES_BYTES = 12_000
_EMBEDDING_ROW_BYTES = 1 + 8


def default_output_path(video: Path, fmt: OutputFormat = FORMATS["slp"]) -> Path:
    """``video.mp4`` -> ``video.mp4.predictions<suffix>`` (keeps the extension so that
    ``a.mp4`` and ``a.avi`` do not collide)."""
    return video.with_name(f"{video.name}.predictions{fmt.suffix}")


SLP_STEMS = (".predictions.slp", ".slp")
"""What sleap-nn 0.3.5 strips from its ``.slp`` name to name the analysis HDF5 beside it
(``save_analysis_h5_files``): ``bu.predictions.slp`` and ``bu.slp`` -> ``bu.analysis.h5``."""


def sibling_output(path: Path, main: OutputFormat, fmt: OutputFormat) -> Path:
    """Where ``fmt``'s output goes beside ``main``'s at ``path``: the same name with the
    other suffix (``a.mp4.predictions.slp`` -> ``a.mp4.predictions.csv``).

    The analysis HDF5 beside a ``.slp`` is named as sleap-nn 0.3.5 names it, so a
    script written for sleap-nn finds it: the ``.slp`` name without ``.predictions.slp``
    (or ``.slp``), plus ``.analysis.h5`` (``bu.predictions.slp`` -> ``bu.analysis.h5``;
    infer used to write ``bu.predictions.analysis.h5``).
    """
    if fmt == main:
        return path
    name = path.name
    if main.name == "slp" and fmt.name == "analysis-h5":
        stem = next((name[: -len(s)] for s in SLP_STEMS if name.endswith(s)), path.stem)
        return path.with_name(stem + fmt.suffix)
    for suffix in main.suffixes:
        if name.endswith(suffix):
            return path.with_name(name[: -len(suffix)] + fmt.suffix)
    return path.with_name(name + fmt.suffix)


def output_paths(path: Path, formats: tuple[OutputFormat, ...]) -> list[tuple[OutputFormat, Path]]:
    """Each format of a run with its output path; ``path`` is the first (main) format's."""
    return [(fmt, sibling_output(path, formats[0], fmt)) for fmt in formats]


def labels_output(path: Path, formats: tuple[OutputFormat, ...]) -> Path:
    """The run's ``.slp`` (``path`` is the main format's output): what an analysis HDF5
    records as its ``labels_path``. When no ``.slp`` is written, the name one would have
    (sleap-nn records its ``.slp`` output path there even when it writes none)."""
    return sibling_output(path, formats[0], FORMATS["slp"])


def is_complete(path: Path, fmt: OutputFormat) -> bool:
    """Whether ``path`` holds a finished output (outputs only appear by atomic rename,
    so this mostly guards against foreign or damaged files)."""
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return False
        if fmt.hdf5_keys is None:
            return True
        with h5py.File(path, "r") as f:
            return all(key in f for key in fmt.hdf5_keys)
    except OSError:
        return False


COMPLETE = "complete"  # a finished output of the format: skipped, or replaced with overwrite
FOREIGN = "foreign"  # something else (another tool's file, a damaged copy): refused


def existing_output(path: Path, fmt: OutputFormat) -> str | None:
    """What is at ``path`` already: :data:`COMPLETE`, :data:`FOREIGN`, or None (nothing)."""
    if not path.exists():
        return None
    return COMPLETE if is_complete(path, fmt) else FOREIGN


def _json_text(value: Any) -> Any:
    text = value.decode() if isinstance(value, bytes) else value
    return json.loads(text) if isinstance(text, str) else None


def stored_provenance(path: Path) -> dict[str, Any] | None:
    """The provenance record an output of ours holds (``.slp`` metadata, analysis HDF5's
    ``provenance`` dataset, NWB's notes), or None where there is none (CSV) or it is
    unreadable."""
    try:
        with h5py.File(path, "r") as f:
            return _provenance_in(f)
    except OSError:
        return None


def _provenance_in(f: h5py.File) -> dict[str, Any] | None:
    """:func:`stored_provenance` of a file already open."""
    try:
        if "metadata" in f and "json" in f["metadata"].attrs:
            found = _json_text(f["metadata"].attrs["json"]).get("provenance")
        elif "provenance" in f:
            found = _json_text(f["provenance"][()])
        elif "general/notes" in f:
            found = _json_text(f["general/notes"][()]).get("provenance")
        else:
            found = None
    except (OSError, ValueError, AttributeError, KeyError):
        return None
    return found if isinstance(found, dict) else None


def judge_output(path: Path, fmt: OutputFormat) -> tuple[str | None, dict[str, Any] | None]:
    """:func:`existing_output` and, for a complete output, :func:`stored_provenance`, from
    one opening of the file: a rerun judges every finished output before any model loads,
    and opening an HDF5 file twice doubled that (1000 outputs: 2.5 s, issue 32)."""
    if not path.exists():
        return None, None
    if fmt.hdf5_keys is None:  # not HDF5: whatever the file holds, as the two calls say
        if not is_complete(path, fmt):
            return FOREIGN, None
        return COMPLETE, stored_provenance(path)
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return FOREIGN, None
        # h5py's low-level handles: its File object costs as much again in bookkeeping
        # (property lists, closing every open object) as the HDF5 work itself.
        fid = h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY)
        try:
            if not all(fid.links.exists(key.encode()) for key in fmt.hdf5_keys):
                return FOREIGN, None
            return COMPLETE, _quick_provenance(fid)
        finally:
            fid.close()
    except OSError:
        return FOREIGN, None


def _quick_provenance(fid: h5py.h5f.FileID) -> dict[str, Any] | None:
    """``.slp``'s ``metadata`` attribute read directly; other layouts the usual way."""
    try:
        if fid.links.exists(b"metadata") and h5py.h5a.exists(fid, b"json", obj_name=b"metadata"):
            attr = h5py.h5a.open(fid, b"json", obj_name=b"metadata")
            value = np.empty(attr.shape, dtype=attr.dtype)
            attr.read(value)
            found = _json_text(value[()]).get("provenance")
            return found if isinstance(found, dict) else None
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return None
    return _provenance_in(h5py.File(fid))


def refuse_existing(path: Path, fmt: OutputFormat, overwrite: bool) -> None:
    """Never replace a file unasked: one :class:`OutputExistsError` line unless ``overwrite``.

    Finished outputs are protected by default, as DeepLabCut does: a rerun of the
    same command (after a crash, or with more videos added to the folder) skips
    them, and never replaces hours of predictions by accident, say with a 10-frame
    ``--frames`` test. A file at the output path that is not a complete output of
    this format (someone else's file, a damaged copy) is refused, not replaced.
    """
    found = None if overwrite else existing_output(path, fmt)
    if found is not None:
        raise OutputExistsError(existing_message(path, fmt, found))


def existing_message(path: Path, fmt: OutputFormat, found: str) -> str:
    """The one line for what :func:`existing_output` found at ``path``."""
    if found == COMPLETE:
        return f"{path} exists (--overwrite replaces it)"
    return (
        f"{path}: exists but is not a complete {fmt.name} output; "
        "move it away or pass --overwrite to replace it"
    )


_NAME_MAX = 255  # bytes per file name on every common file system (ext4, XFS, APFS, NTFS)
_PID_WIDTH = 7  # Linux pids reach 4194304


def _name_limit(folder: Path) -> int:
    """The longest file name (bytes) the file system under ``folder`` takes."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return _NAME_MAX


def name_problem(path: Path) -> str | None:
    """Why ``path`` cannot be an output here: its name, or its journal's or temporary
    sibling's, is longer than the file system allows (a 234-character video name plus
    ``.predictions.slp.partial``). None when it fits."""
    siblings = (journal_path(path).name, _tmp_path(path, pid=10**_PID_WIDTH - 1).name)
    longest = max(len(name.encode("utf-8", "surrogateescape")) for name in siblings)
    limit = _name_limit(path.parent)
    if longest <= limit:
        return None
    return (
        f"its output name is too long for the file system ({longest} bytes with the "
        f"journal's or temporary file's additions, at most {limit}); rename the video, "
        "or give -o a shorter file name"
    )


def _tmp_path(path: Path, pid: int | None = None) -> Path:
    """A hidden sibling that keeps the real suffix (some exporters check it), named by its
    owner so a later run can remove it once that process is dead (SIGKILL)."""
    return path.with_name(f".{path.stem}.{owner_tag(pid)}.tmp{path.suffix}")


def remove_stale_tmp(path: Path) -> list[Path]:
    """Remove temporary siblings of ``path`` left by killed runs (dead owners only)."""
    return remove_stale(path.parent, f".{path.stem}.", f".tmp{path.suffix}")


def _discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


def _size(n: int) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.1f} GB"
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.0f} KB"


def _free_bytes(folder: Path) -> int | None:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def failure_message(path: Path, why: str, code: int | None, needs: int | None) -> str:
    """One line naming ``path``; a full disk says how much room there is and was needed."""
    free = _free_bytes(path.parent)
    full = code in (errno.ENOSPC, errno.EDQUOT)
    if not full and free is not None and needs is not None and free < needs:
        full = True  # a writer that crashed, not one that said why: the disk is the suspect
    if not full:
        return f"{path}: cannot write predictions ({why})"
    room = [] if needs is None else [f"needs up to about {_size(needs)}"]
    room += [] if free is None else [f"{_size(free)} free"]
    what = "no space left on device" if code != errno.EDQUOT else "disk quota exceeded"
    return f"{path}: {what}" + (f" ({', '.join(room)})" if room else "")


# Filesystems without hard links say so with these; there the no-replace rename falls back
# to a check just before an ordinary rename.
_NO_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV})


def _rename_no_replace(tmp: Path, path: Path) -> bool:
    """Move ``tmp`` to ``path`` only if nothing is there, in one step (a hard link fails
    when the name exists, however close two runs finish); False when something is."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        if path.exists():
            return False
        os.replace(tmp, path)
        return True
    tmp.unlink()
    return True


def appeared_message(path: Path, kept: Path | None) -> str:
    """The line for an output another run finished while this one predicted."""
    where = f"; this run's predictions are kept in {kept}" if kept is not None else ""
    return (
        f"{path}: another run wrote this output while this one was predicting; kept it"
        f"{where} (--overwrite replaces it)"
    )


def atomic_write(
    path: Path,
    write: Callable[[Path], None],
    needs: int | None = None,
    kept: Path | None = None,
    replace: bool = True,
) -> None:
    """Run ``write(tmp)`` in a child process, fsync, rename onto ``path``; a failure
    leaves ``path`` untouched and no temporary file, and is one :class:`OutputError`.

    ``replace=False`` holds a "nothing is there" decision until the rename itself:
    if another run finished ``path`` meanwhile, it is kept and this is an
    :class:`OutputExistsError`. ``needs`` (an estimate in bytes) and ``kept`` (where
    the predictions are safe, e.g. the journal) only go into the message.
    """
    tmp = _tmp_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_tmp(path)
        run_isolated(lambda: write(tmp))
        fsync_path(tmp)
        if not replace:
            if not _rename_no_replace(tmp, path):
                _discard(tmp)
                raise OutputExistsError(appeared_message(path, kept))
        else:
            os.replace(tmp, path)
        with contextlib.suppress(OSError):
            fsync_path(path.parent, directory=True)
    except WriteFailure as exc:
        _discard(tmp)
        message = failure_message(path, exc.reason, exc.errno, needs)
        raise OutputError(_with_hint(message, kept)) from exc
    except OSError as exc:
        _discard(tmp)
        message = failure_message(path, reason(exc), exc.errno, needs)
        raise OutputError(_with_hint(message, kept)) from exc
    except BaseException:  # Ctrl-C mid-write: no stray temporary file either
        _discard(tmp)
        raise


def _with_hint(message: str, kept: Path | None) -> str:
    if kept is None:
        return message
    return f"{message}; the predictions are kept in {kept} (rerun with --resume once fixed)"


def estimate_bytes(
    journal: Journal,
    n_nodes: int,
    fmt: OutputFormat,
    mask_output: str = "mask",
    empty_frames: bool = True,
) -> int:
    """An upper bound of the output's size (before compression) from the journal's counts."""
    sizes = fmt.sizes
    totals = journal.totals
    size = sizes.fixed + totals.instances * (sizes.instance + n_nodes * sizes.point)
    if empty_frames:
        empty = max(0, journal.n_predicted - totals.frames_with_instances)
        size += empty * (sizes.empty_frame + n_nodes * sizes.empty_frame_node)
    if fmt.holds_boxes and totals.boxes:
        size += sizes.box_tables + totals.boxes * sizes.box_row
    if fmt.holds_embeddings and totals.embeddings:
        size += _EMBEDDING_TABLES_BYTES + totals.embedding_bytes
        size += totals.embeddings * _EMBEDDING_ROW_BYTES
    if not fmt.holds_masks:
        return size
    masks, rois = check_mask_output(mask_output)
    if masks and totals.masks:
        size += _MASK_TABLES_BYTES + totals.masks * _MASK_ROW_BYTES + totals.mask_rle_bytes
    if rois and totals.masks:
        size += _MASK_TABLES_BYTES + totals.masks * _ROI_ROW_BYTES
        size += totals.mask_rle_bytes * _WKB_PER_RLE_BYTE
    return size


def resolvable(video: sio.Video) -> sio.Video:
    """``video`` named by its absolute path when it was opened by a relative one (a
    ``.pkg.slp`` given as ``project.pkg.slp``: its frames are the package's), as video
    files are, so the output finds its frames from any folder; a copy, the caller's
    video unchanged. Names that do not resolve here (a project's media elsewhere, an
    image list) are left as the project wrote them."""
    name = video.filename
    if not isinstance(name, str) or Path(name).is_absolute() or not Path(name).exists():
        return video
    absolute = Path(name).resolve().as_posix()
    copied = copy.copy(video)
    copied.filename = absolute
    copied.backend_metadata = dict(video.backend_metadata)
    if copied.backend_metadata.get("filename") == name:
        copied.backend_metadata["filename"] = absolute
    return copied


def _writer(fmt: OutputFormat) -> Writer:
    """The format's writer, imported here in the parent so each forked child reuses
    the import (pynwb takes seconds). sleap-io imports its own modules on first use,
    and nothing before the first batch needs them: its writing half is imported here."""
    import sleap_io.io.main
    import sleap_io.io.slp  # noqa: F401

    return fmt.load_writer()


def write_from_journal(
    journal: Journal,
    path: Path,
    fmt: OutputFormat,
    video: sio.Video,
    skeleton: sio.Skeleton,
    class_names: tuple[str, ...],
    provenance: dict[str, Any],
    *,
    mask_output: str = "mask",
    polygon_epsilon: float = POLYGON_EPSILON,
    box_categories: tuple[str, ...] = (),
    poses: bool = True,
    nwb: NwbMetadata | None = None,
    empty_frames: bool = True,
    csv_empty_frames: bool = False,
    slp_saving: SlpSaving | None = None,
    replace: bool = True,
    labels_path: Path | None = None,
) -> None:
    """Build the output file for a finished video from its journal, atomically
    (``replace=False``: never over a file that appeared meanwhile, see :func:`atomic_write`).

    Raises :class:`OutputError` (one line naming ``path``) if it cannot be
    written, or if ``fmt`` cannot hold the masks the journal has (the
    predictor refuses such a format before predicting; this is the backstop
    that never drops masks silently), and likewise for boxes and re-ID vectors;
    the journal is left as it is. ``mask_output`` (``mask``, ``polygon``, ``both``) and
    ``polygon_epsilon`` only matter for ``.slp``; ``box_categories`` (the box
    detector's class names, which ``BoxSet.category`` indexes) for ``.slp`` and CSV;
    ``nwb`` (the session and subject) for NWB. ``labels_path``: the run's ``.slp``
    (:func:`labels_output`), which analysis HDF5 records; by default the ``.slp`` name
    beside ``path``.
    ``empty_frames``: every predicted frame is in the output, those where nothing was
    found too (sleap-nn's default); False leaves them out (``--no-empty-frames``).
    CSV writes them (a row holding only ``frame_idx``) only with ``csv_empty_frames``
    (``--csv-empty-frames``), as sleap-io's CSV writer leaves them out by default.
    """
    check_mask_output(mask_output)
    product = missing_product(fmt, (p for p in Product if journal.totals.of(p)))
    if product is not None:
        raise OutputError(
            f"{path}: --format {fmt.name} has no place for {product.noun} "
            f"({journal.totals.of(product)} predicted, kept in {journal.path}); "
            f"{use_instead(product)}"
        )
    source = Source(
        journal,
        resolvable(video),
        skeleton,
        class_names,
        provenance,
        mask_output,
        polygon_epsilon,
        tuple(box_categories),
        poses,
        nwb or NwbMetadata(),
        empty_frames,
        csv_empty_frames,
        labels_path=str(
            labels_path.resolve()
            if labels_path is not None
            else sibling_output(path.resolve(), fmt, FORMATS["slp"])
        ),
        saving=slp_saving or SlpSaving(),
    )
    write = _writer(fmt)
    needs = estimate_bytes(journal, len(skeleton.nodes), fmt, mask_output, empty_frames)
    atomic_write(
        path, lambda tmp: write(tmp, source), needs=needs, kept=journal.path, replace=replace
    )
