"""Output file names, and turning a finished journal into the output file.

Every format is written to a temporary sibling, fsync-ed and renamed, so the
output path only ever holds a complete file: that is also how
``--skip-existing`` can trust a file it finds. ``.slp`` is streamed from the
journal (flat memory); the other formats go through sleap-io's exporters,
which need the whole ``Labels`` in memory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import sleap_io as sio

from sleap_infer.io.formats import FORMATS, OutputFormat
from sleap_infer.io.journal import Journal
from sleap_infer.io.slp_stream import StreamingSlpWriter
from sleap_infer.io.writer import LabelsBuilder
from sleap_infer.vocab.errors import OutputError


def default_output_path(video: Path, fmt: OutputFormat = FORMATS["slp"]) -> Path:
    """``video.mp4`` -> ``video.mp4.predictions<suffix>`` (keeps the extension so that
    ``a.mp4`` and ``a.avi`` do not collide)."""
    return video.with_name(f"{video.name}.predictions{fmt.suffix}")


def is_complete(path: Path, fmt: OutputFormat) -> bool:
    """Whether ``path`` holds a finished output (outputs only appear by atomic rename,
    so this mostly guards against foreign or damaged files)."""
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return False
        if fmt.name == "csv":
            return True
        with h5py.File(path, "r") as f:
            return fmt.name != "slp" or ("frames" in f and "metadata" in f)
    except OSError:
        return False


def _tmp_path(path: Path) -> Path:
    """A hidden sibling that keeps the real suffix (some exporters check it)."""
    return path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")


def _discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Run ``write(tmp)``, fsync, rename onto ``path``; a failure leaves ``path`` untouched."""
    tmp = _tmp_path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _discard(tmp)
        reason = "disk full" if exc.errno == errno.ENOSPC else (exc.strerror or str(exc))
        raise OutputError(f"{path}: cannot write predictions ({reason})") from exc
    except OutputError:
        _discard(tmp)
        raise
    except Exception as exc:
        _discard(tmp)
        raise OutputError(
            f"{path}: cannot write predictions ({type(exc).__name__}: {exc})"
        ) from exc
    except BaseException:  # Ctrl-C mid-write: no stray temporary file either
        _discard(tmp)
        raise


def _in_memory_labels(
    journal: Journal,
    video: sio.Video,
    skeleton: sio.Skeleton,
    class_names: tuple[str, ...],
    provenance: dict[str, Any],
) -> sio.Labels:
    builder = LabelsBuilder(video, skeleton, class_names)
    for batch in journal.batches():
        builder.add(batch)
    return builder.labels(provenance)


def write_from_journal(
    journal: Journal,
    path: Path,
    fmt: OutputFormat,
    video: sio.Video,
    skeleton: sio.Skeleton,
    class_names: tuple[str, ...],
    provenance: dict[str, Any],
) -> None:
    """Build the output file for a finished video from its journal, atomically."""
    if fmt.name == "slp":

        def write(tmp: Path) -> None:
            tracks = [sio.Track(name=n) for n in class_names]
            with StreamingSlpWriter(tmp, video, skeleton, tracks, provenance) as writer:
                for batch in journal.batches():
                    writer.add(batch)

        atomic_write(path, write)
        return

    labels = _in_memory_labels(journal, video, skeleton, class_names, provenance)
    if not any(lf.instances for lf in labels.labeled_frames) and fmt.name == "nwb":
        raise OutputError(f"{path}: nothing was predicted, and an NWB file cannot be empty")

    def write_other(tmp: Path) -> None:
        if fmt.name == "analysis-h5":
            sio.save_analysis_h5(labels, str(tmp))
        elif fmt.name == "csv":
            sio.save_csv(labels, str(tmp))
        elif fmt.name == "nwb":
            _save_nwb(labels, tmp, video)

    atomic_write(path, write_other)


def _save_nwb(labels: sio.Labels, path: Path, video: sio.Video) -> None:
    """NWB predictions with explicit timestamps: sleap-io 0.9's default indexes its
    timestamps by row, which breaks on any frame without predictions."""
    from sleap_io.io.nwb_predictions import write_nwb

    n_frames = int(video.backend_metadata["shape"][0])
    last = max((lf.frame_idx for lf in labels.labeled_frames), default=0)
    fps = float(video.backend_metadata.get("fps") or 30.0)
    timestamps = np.arange(max(n_frames, last + 1)) / fps
    with warnings.catch_warnings():
        # pynwb 4 deprecates arguments that sleap-io 0.9.5's writer still passes
        # (Device(manufacturer=...), PoseEstimation(devices=...)): not ours to fix, and
        # nothing a user can act on.
        warnings.simplefilter("ignore", DeprecationWarning)
        write_nwb(labels, str(path), pose_estimation_metadata={"video_timestamps": timestamps})
