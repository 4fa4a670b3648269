"""Write a ``.slp`` batch by batch, without building a sleap-io object per frame.

``sio.save_slp`` needs the whole ``Labels`` in memory (a Python object per
frame, instance and point, then lists of rows on top), which is what makes
long, crowded videos take tens of GB (sleap#1635). Here sleap-io writes
everything except predictions (videos, skeleton, tracks, provenance, format
id) from a frame-less ``Labels``; the three prediction tables it leaves empty
(``frames``, ``instances``, ``pred_points``) are then recreated as resizable
datasets with sleap-io's own dtypes and appended to from
:class:`BatchPredictions` arrays. ``tests/test_slp_stream.py`` checks the
tables against ``sio.save_slp`` field by field, so a sleap-io format change
shows up as a test failure.

Resizable datasets must be chunked, and HDF5 stores whole chunks: fixed
16384-row uncompressed chunks made every file at least 1.97 MB (a 4-frame
video, which ``sio.save_slp`` writes in 19 KB). Chunks are therefore sized
from the row counts the caller expects (the journal knows them), capped at
256 KB so a long video's tables stay in HDF5's 1 MB per-dataset chunk cache
while they grow, and compressed (shuffle + gzip, which every HDF5 reader has;
lzf is h5py-only). Rows are buffered, up to 256 KB per table, before they go
to h5py, whose per-call cost (about 0.6 ms for a compound-dtype write)
otherwise dominated: one write per batch took 3-7x longer than
``sio.save_slp`` on a 1100-frame video.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np
import sleap_io as sio

from sleap_infer.vocab.predictions import BatchPredictions

PREDICTED_INSTANCE = 1  # sleap-io InstanceType.PREDICTED
_TABLES = ("frames", "instances", "pred_points")
MAX_CHUNK_BYTES = 256 * 1024  # also the most rows buffered per table
MIN_CHUNK_ROWS = 256  # a low guess must not make a long video thousands of tiny chunks
GZIP_LEVEL = 6  # zlib's default; measured, level 9 saves only 2% more on a 22000-frame file


def chunk_rows(itemsize: int, expected: int | None) -> int:
    """Rows per chunk: the expected row count when known (one chunk, no padding),
    between :data:`MIN_CHUNK_ROWS` and :data:`MAX_CHUNK_BYTES` worth."""
    cap = max(MIN_CHUNK_ROWS, MAX_CHUNK_BYTES // itemsize)
    if expected is None:
        return cap
    return max(MIN_CHUNK_ROWS, min(cap, expected))


class StreamingSlpWriter:
    """Append predictions to ``path`` (a new file); call :meth:`close` to finish.

    ``expected_instances`` and ``expected_frames`` (frames with an instance)
    size the chunks; more rows than expected still fit, in further chunks.
    """

    def __init__(
        self,
        path: Path,
        video: sio.Video,
        skeleton: sio.Skeleton,
        tracks: list[sio.Track],
        provenance: dict[str, Any],
        expected_instances: int | None = None,
        expected_frames: int | None = None,
    ) -> None:
        self.path = path
        self.n_nodes = len(skeleton.nodes)
        self.n_tracks = len(tracks)
        shell = sio.Labels(
            videos=[video], skeletons=[skeleton], tracks=tracks, provenance=provenance
        )
        sio.save_slp(shell, str(path), verbose=False)
        points = None if expected_instances is None else expected_instances * self.n_nodes
        expected = {
            "frames": expected_frames,
            "instances": expected_instances,
            "pred_points": points,
        }
        self._file = h5py.File(path, "a")
        self._tables: dict[str, h5py.Dataset] = {}
        self._pending: dict[str, list[np.ndarray]] = {name: [] for name in _TABLES}
        self._pending_rows = dict.fromkeys(_TABLES, 0)
        for name in _TABLES:
            dtype = self._file[name].dtype
            del self._file[name]
            self._tables[name] = self._file.create_dataset(
                name,
                shape=(0,),
                maxshape=(None,),
                dtype=dtype,
                chunks=(chunk_rows(dtype.itemsize, expected[name]),),
                shuffle=True,
                compression="gzip",
                compression_opts=GZIP_LEVEL,
            )
        self.n_frames = 0
        self.n_instances = 0
        self.n_points = 0

    def _append(self, name: str, rows: np.ndarray) -> None:
        """Buffer ``rows``; write once :data:`MAX_CHUNK_BYTES` are waiting (bounded memory)."""
        self._pending[name].append(rows)
        self._pending_rows[name] += len(rows)
        table = self._tables[name]
        if self._pending_rows[name] * table.dtype.itemsize >= MAX_CHUNK_BYTES:
            self._flush(name)

    def _flush(self, name: str) -> None:
        if not self._pending[name]:
            return
        rows = np.concatenate(self._pending[name])
        self._pending[name] = []
        self._pending_rows[name] = 0
        table = self._tables[name]
        start = table.shape[0]
        table.resize((start + len(rows),))
        table[start:] = rows

    def add(self, preds: BatchPredictions) -> None:
        """Frames with at least one valid instance become rows, in the order given."""
        if preds.frame_indices is None:
            raise ValueError("BatchPredictions.frame_indices must be set before writing")
        valid = np.asarray(preds.valid, bool)
        per_frame = valid.sum(axis=1)
        kept = per_frame > 0
        b_idx, i_idx = np.nonzero(valid)  # row-major: frame by frame, instance order kept
        n_new_frames, n_new = int(kept.sum()), len(b_idx)
        if n_new == 0:
            return
        n_nodes = self.n_nodes

        frames = np.zeros(n_new_frames, self._tables["frames"].dtype)
        frames["frame_id"] = self.n_frames + np.arange(n_new_frames)
        frames["video"] = 0
        frames["frame_idx"] = np.asarray(preds.frame_indices)[kept]
        ends = self.n_instances + np.cumsum(per_frame[kept])
        frames["instance_id_start"] = ends - per_frame[kept]
        frames["instance_id_end"] = ends

        frame_id_of_b = self.n_frames + np.cumsum(kept) - 1
        instances = np.zeros(n_new, self._tables["instances"].dtype)
        instances["instance_id"] = self.n_instances + np.arange(n_new)
        instances["instance_type"] = PREDICTED_INSTANCE
        instances["frame_id"] = frame_id_of_b[b_idx]
        instances["skeleton"] = 0
        instances["from_predicted"] = -1
        instances["score"] = preds.instance_scores[b_idx, i_idx]
        starts = self.n_points + np.arange(n_new) * n_nodes
        instances["point_id_start"] = starts
        instances["point_id_end"] = starts + n_nodes
        track = np.full(n_new, -1, np.int64)
        tracking_score = np.full(n_new, np.nan, np.float32)
        if self.n_tracks and preds.class_ids is not None:
            ids = preds.class_ids[b_idx, i_idx].astype(np.int64)
            has_track = (ids >= 0) & (ids < self.n_tracks)
            track[has_track] = ids[has_track]
            if preds.class_scores is not None:
                scores = preds.class_scores[b_idx, i_idx]
                tracking_score[has_track] = scores[has_track]
        instances["track"] = track
        instances["tracking_score"] = tracking_score

        xy = preds.points[b_idx, i_idx].reshape(-1, 2).astype(np.float64)
        points = np.zeros(len(xy), self._tables["pred_points"].dtype)
        points["x"] = xy[:, 0]
        points["y"] = xy[:, 1]
        points["visible"] = ~np.isnan(xy).any(axis=1)
        points["complete"] = False
        points["score"] = preds.point_scores[b_idx, i_idx].reshape(-1)

        self._append("frames", frames)
        self._append("instances", instances)
        self._append("pred_points", points)
        self.n_frames += n_new_frames
        self.n_instances += n_new
        self.n_points += len(points)

    def close(self) -> None:
        """Write what is buffered and close; the file is complete only after this."""
        if not self._file.id.valid:
            return
        try:
            for name in _TABLES:
                self._flush(name)
        finally:
            self._file.close()

    def __enter__(self) -> StreamingSlpWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
