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
_CHUNK_ROWS = 16384


class StreamingSlpWriter:
    """Append predictions to ``path`` (a new file); call :meth:`close` to finish."""

    def __init__(
        self,
        path: Path,
        video: sio.Video,
        skeleton: sio.Skeleton,
        tracks: list[sio.Track],
        provenance: dict[str, Any],
    ) -> None:
        self.path = path
        self.n_nodes = len(skeleton.nodes)
        self.n_tracks = len(tracks)
        shell = sio.Labels(
            videos=[video], skeletons=[skeleton], tracks=tracks, provenance=provenance
        )
        sio.save_slp(shell, str(path), verbose=False)
        self._file = h5py.File(path, "a")
        self._tables: dict[str, h5py.Dataset] = {}
        for name in _TABLES:
            dtype = self._file[name].dtype
            del self._file[name]
            self._tables[name] = self._file.create_dataset(
                name, shape=(0,), maxshape=(None,), dtype=dtype, chunks=(_CHUNK_ROWS,)
            )
        self.n_frames = 0
        self.n_instances = 0
        self.n_points = 0

    def _append(self, name: str, rows: np.ndarray) -> None:
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
        if self._file.id.valid:
            self._file.close()

    def __enter__(self) -> StreamingSlpWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
