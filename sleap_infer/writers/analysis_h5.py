"""SLEAP analysis HDF5 (``--format analysis-h5``), written batch by batch from the journal.

The layout is SLEAP's (sleap-io's ``"matlab"`` preset, which ``sio.load_analysis_h5``
and MATLAB scripts read): ``tracks`` is ``(track, xy, node, frame)``,
``track_occupancy`` ``(frame, track)``, scores ``(track, [node,] frame)``,
each with its ``dims`` attribute, over every frame of the video. sleap-io's
own exporter needs the whole video's ``Labels`` and fails when nothing was
found; here the arrays are compressed chunked datasets filled from the
journal :data:`FLUSH_FRAMES` frames at a time (bounded memory, 10x faster
than sleap-io's exporter on 1100 frames), and an empty result is a valid
file with no tracks. The frame axis is the whole video whatever was predicted
(a frame where nothing was found is NaN, as is one that was not predicted), so
``--no-empty-frames`` does not change this format.

``labels_path`` is the run's ``.slp`` predictions beside this file (absolute), as
sleap-nn 0.3.5 writes the ``.slp`` output path there (``save_analysis_h5_files``),
also when only analysis HDF5 was asked for: then no file is at that path, as with
sleap-nn. ``video_path`` is the video (absolute).

The track axis says what it is, in the file attribute ``track_axis`` (see
:mod:`sleap_infer.writers.slots`): class identities for multi-class models, else
``untracked_<k>`` slots that rank each frame's instances by score, so
untracked instances are never mistaken for identities.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import h5py
import numpy as np

import sleap_infer
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.writers.slots import Source, TrackAxis, slotted_batches, track_axis

CHUNK_BYTES = 256 * 1024
FLUSH_FRAMES = 1024  # frames gathered per write: h5py's per-call cost dominates small writes
_DIMS = {
    "tracks": ("track", "xy", "node", "frame"),
    "track_occupancy": ("frame", "track"),
    "point_scores": ("track", "node", "frame"),
    "instance_scores": ("track", "frame"),
    "tracking_scores": ("track", "frame"),
}


def write_analysis_h5(path: Path, source: Source) -> None:
    """Two passes over the journal: size the track axis, then fill the arrays."""
    axis = track_axis(source)
    n_frames = max(source.video_frames, axis.last_frame + 1)
    n_nodes = len(source.node_names)
    with h5py.File(path, "w") as f:
        arrays = _create_arrays(f, len(axis.names), n_nodes, n_frames)
        pending: list[tuple[np.ndarray, dict[str, np.ndarray]]] = []
        for preds, slots in slotted_batches(source):
            pending.append(_columns(preds, slots, len(axis.names), n_nodes))
            if sum(len(frames) for frames, _ in pending) >= FLUSH_FRAMES:
                _write(arrays, pending)
                pending = []
        _write(arrays, pending)
        _write_metadata(f, source, axis)


def _shapes(n_slots: int, n_nodes: int, n_frames: int) -> dict[str, tuple[int, ...]]:
    sizes = {"track": n_slots, "xy": 2, "node": n_nodes, "frame": n_frames}
    return {name: tuple(sizes[d] for d in dims) for name, dims in _DIMS.items()}


def _chunks(shape: tuple[int, ...], frame_axis: int, itemsize: int) -> tuple[int, ...]:
    """Whole tracks, cut along frames into about :data:`CHUNK_BYTES` pieces."""
    per_frame = itemsize * int(np.prod([n for i, n in enumerate(shape) if i != frame_axis]))
    frames = max(1, min(shape[frame_axis], CHUNK_BYTES // max(per_frame, 1)))
    return tuple(frames if i == frame_axis else n for i, n in enumerate(shape))


def _create_arrays(
    f: h5py.File, n_slots: int, n_nodes: int, n_frames: int
) -> dict[str, h5py.Dataset]:
    arrays = {}
    for name, shape in _shapes(n_slots, n_nodes, n_frames).items():
        dtype = np.dtype(np.uint8 if name == "track_occupancy" else np.float64)
        fill = 0 if name == "track_occupancy" else np.nan
        options: dict[str, Any] = {}
        if all(shape):  # HDF5 cannot chunk an axis of length 0
            frame_axis = _DIMS[name].index("frame")
            options = {
                "chunks": _chunks(shape, frame_axis, dtype.itemsize),
                "shuffle": True,
                "compression": "gzip",
                "compression_opts": 4,
            }
        arrays[name] = f.create_dataset(name, shape=shape, dtype=dtype, fillvalue=fill, **options)
        arrays[name].attrs["dims"] = json.dumps(_DIMS[name])
    return arrays


def _columns(
    preds: BatchPredictions, slots: np.ndarray, n_slots: int, n_nodes: int
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The batch's frames that have a placed instance, and their columns of each array
    (frame axis last; ``track_occupancy`` is transposed when written)."""
    rows = np.flatnonzero((slots >= 0).any(axis=1))
    frames = np.asarray(preds.frame_indices)[rows].astype(np.int64)
    k = len(rows)
    cols = {
        "tracks": np.full((n_slots, 2, n_nodes, k), np.nan),
        "point_scores": np.full((n_slots, n_nodes, k), np.nan),
        "instance_scores": np.full((n_slots, k), np.nan),
        "tracking_scores": np.full((n_slots, k), np.nan),
        "track_occupancy": np.zeros((n_slots, k), np.uint8),
    }
    col, inst = np.nonzero(slots[rows] >= 0)
    slot, at = slots[rows][col, inst], rows[col]
    cols["tracks"][slot, :, :, col] = np.swapaxes(preds.points[at, inst], 1, 2)
    cols["point_scores"][slot, :, col] = preds.point_scores[at, inst]
    cols["instance_scores"][slot, col] = preds.instance_scores[at, inst]
    if preds.class_scores is not None:
        cols["tracking_scores"][slot, col] = preds.class_scores[at, inst]
    cols["track_occupancy"][slot, col] = 1
    return frames, cols


def _write(
    arrays: dict[str, h5py.Dataset], pending: list[tuple[np.ndarray, dict[str, np.ndarray]]]
) -> None:
    """One write per array for the gathered frames (ascending, each once, as h5py needs)."""
    if not pending or not sum(len(frames) for frames, _ in pending):
        return
    frames = np.concatenate([f for f, _ in pending])
    order = np.argsort(frames, kind="stable")
    first = np.r_[True, frames[order][1:] != frames[order][:-1]]  # a frame met twice: first wins
    order = order[first]
    frames = frames[order]
    contiguous = frames[-1] - frames[0] + 1 == len(frames)
    where = slice(int(frames[0]), int(frames[-1]) + 1) if contiguous else frames.tolist()
    for name, dataset in arrays.items():
        block = np.concatenate([c[name] for _, c in pending], axis=-1)[..., order]
        if name == "track_occupancy":
            dataset[where, :] = block.T
        else:
            dataset[(slice(None),) * (block.ndim - 1) + (where,)] = block


def _strings(values: list[str]) -> np.ndarray:
    return np.array([v.encode("utf-8") for v in values], dtype="S") if values else np.zeros(0, "S1")


def _write_metadata(f: h5py.File, source: Source, axis: TrackAxis) -> None:
    skeleton = source.skeleton
    edges = [(e.source.name, e.destination.name) for e in skeleton.edges]
    f.create_dataset("track_names", data=_strings(axis.names))
    f.create_dataset("node_names", data=_strings(source.node_names))
    edge_names = np.array([[a.encode(), b.encode()] for a, b in edges], dtype="S")
    f.create_dataset("edge_names", data=edge_names.reshape(len(edges), 2))
    f.create_dataset("edge_inds", data=np.array(skeleton.edge_inds, np.int64).reshape(-1, 2))
    f.create_dataset("labels_path", data=source.labels_path)
    f.create_dataset("video_path", data=source.video.filename or "")
    f.create_dataset("video_ind", data=0)
    f.create_dataset("provenance", data=json.dumps(source.provenance))
    symmetries = [sorted(node.name for node in s.nodes) for s in skeleton.symmetries]
    f.attrs.update(
        {
            "format": "analysis",
            "preset": "matlab",
            "writer": f"sleap_infer {sleap_infer.__version__}",
            "track_axis": axis.meaning,
            "skeleton_name": skeleton.name or "",
            "skeleton_symmetries": json.dumps(symmetries),
            "video_backend_metadata": json.dumps(source.video.backend_metadata),
        }
    )
