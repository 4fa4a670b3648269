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

Masks and polygons go the same way, into the tables sleap-io's
``write_masks``/``write_rois`` make (``masks`` + ``mask_rle`` bytes, ``rois`` +
``roi_wkb``, and their per-row name/category/source strings), created on the
first mask so that a pose file has none of them, exactly as ``sio.save_slp``
leaves them out. Their dtypes are copied from sleap-io (its writers build
them locally); the field-by-field test catches a change. A frame holding only
masks still gets its ``frames`` row (no instances), as sleap-io writes a
``LabeledFrame`` with only masks. sleap-io derives ``format_id`` from the
content (1.9 for predicted masks or ROIs, 2.1 once a mask has a scale or
offset), which the frame-less shell cannot know: :meth:`close` raises it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np
import sleap_io as sio

from sleap_infer.io.polygons import check_mask_output, mask_rois, packaged
from sleap_infer.vocab.masks import MaskSet
from sleap_infer.vocab.options import POLYGON_EPSILON
from sleap_infer.vocab.predictions import BatchPredictions

PREDICTED_INSTANCE = 1  # sleap-io InstanceType.PREDICTED
SEGMENTATION_ANNOTATION = 2  # what sleap-io writes in masks.annotation_type
_POSE_TABLES = ("frames", "instances", "pred_points")
MAX_CHUNK_BYTES = 256 * 1024  # also the most rows buffered per table
MIN_CHUNK_ROWS = 256  # a low guess must not make a long video thousands of tiny chunks
GZIP_LEVEL = 6  # zlib's default; measured, level 9 saves only 2% more on a 22000-frame file
FORMAT_PREDICTED_ANNOTATIONS = 1.9  # sleap-io: predicted masks / ROIs
FORMAT_SPATIAL_METADATA = 2.1  # sleap-io: a mask with a scale or an offset

# sleap-io 0.9.5 ``write_masks`` / ``write_rois`` row layouts.
MASK_DTYPE = np.dtype(
    [
        ("height", "u4"),
        ("width", "u4"),
        ("annotation_type", "u1"),
        ("video", "i4"),
        ("frame_idx", "i8"),
        ("track", "i4"),
        ("instance", "i4"),
        ("from_predicted", "i4"),
        ("is_predicted", "u1"),
        ("score", "f4"),
        ("tracking_score", "f4"),
        ("rle_start", "u8"),
        ("rle_end", "u8"),
        ("scale_x", "f4"),
        ("scale_y", "f4"),
        ("offset_x", "f4"),
        ("offset_y", "f4"),
    ]
)
ROI_DTYPE = np.dtype(
    [
        ("annotation_type", "u1"),
        ("video", "i4"),
        ("frame_idx", "i8"),
        ("track", "i4"),
        ("is_predicted", "u1"),
        ("score", "f4"),
        ("tracking_score", "f4"),
        ("wkb_start", "u8"),
        ("wkb_end", "u8"),
        ("instance", "i4"),
    ]
)
_STRINGS = ("categories", "names", "sources")  # one "" per row: predictions have none


def chunk_rows(itemsize: int, expected: int | None) -> int:
    """Rows per chunk: the expected row count when known (one chunk, no padding),
    between :data:`MIN_CHUNK_ROWS` and :data:`MAX_CHUNK_BYTES` worth."""
    cap = max(MIN_CHUNK_ROWS, MAX_CHUNK_BYTES // itemsize)
    if expected is None:
        return cap
    return max(MIN_CHUNK_ROWS, min(cap, expected))


class StreamingSlpWriter:
    """Append predictions to ``path`` (a new file); call :meth:`close` to finish.

    ``expected_instances`` and ``expected_frames`` (frames with an instance or
    a mask), ``expected_masks`` and ``expected_rle_bytes`` size the chunks;
    more rows than expected still fit, in further chunks. ``mask_output``:
    ``"mask"`` writes masks, ``"polygon"`` their simplified polygons as
    ``PredictedROI`` (see :mod:`sleap_infer.io.polygons`), ``"both"`` both.
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
        *,
        expected_masks: int | None = None,
        expected_rle_bytes: int | None = None,
        mask_output: str = "mask",
        polygon_epsilon: float = POLYGON_EPSILON,
    ) -> None:
        self.path = path
        self.n_nodes = len(skeleton.nodes)
        self.n_tracks = len(tracks)
        self.write_masks, self.write_rois = check_mask_output(mask_output)
        self.polygon_epsilon = polygon_epsilon
        shell = sio.Labels(
            videos=[video], skeletons=[skeleton], tracks=tracks, provenance=provenance
        )
        sio.save_slp(shell, str(path), verbose=False)
        points = None if expected_instances is None else expected_instances * self.n_nodes
        self._expected = {
            "frames": expected_frames,
            "instances": expected_instances,
            "pred_points": points,
            "masks": expected_masks,
            "mask_rle": expected_rle_bytes,
            "rois": expected_masks,
            **{f"mask_{s}": expected_masks for s in _STRINGS},
            **{f"roi_{s}": expected_masks for s in _STRINGS},
        }
        self._file = h5py.File(path, "a")
        self._tables: dict[str, h5py.Dataset] = {}
        self._pending: dict[str, list[np.ndarray]] = {}
        self._pending_rows: dict[str, int] = {}
        for name in _POSE_TABLES:
            self._create(name, self._file[name].dtype)
        self.n_frames = 0
        self.n_instances = 0
        self.n_points = 0
        self.n_masks = 0
        self.n_rle_bytes = 0
        self.n_rois = 0
        self.n_wkb_bytes = 0
        self._spatial = False  # a written mask has a scale or an offset

    def _create(self, name: str, dtype: np.dtype) -> None:
        """(Re)create ``name`` as an empty, resizable, compressed table."""
        if name in self._file:
            del self._file[name]
        self._tables[name] = self._file.create_dataset(
            name,
            shape=(0,),
            maxshape=(None,),
            dtype=dtype,
            chunks=(chunk_rows(dtype.itemsize, self._expected.get(name)),),
            shuffle=True,
            compression="gzip",
            compression_opts=GZIP_LEVEL,
        )
        self._pending[name] = []
        self._pending_rows[name] = 0

    def _create_group(self, prefix: str, rows: str, rows_dtype: np.dtype, data: str) -> None:
        """A mask or ROI table set (rows, packed bytes, strings), on its first row."""
        if rows in self._tables:
            return
        self._create(rows, rows_dtype)
        self._create(data, np.dtype(np.uint8))
        for s in _STRINGS:
            self._create(f"{prefix}_{s}", h5py.string_dtype())

    def _append(self, name: str, rows: np.ndarray) -> None:
        """Buffer ``rows``; write once :data:`MAX_CHUNK_BYTES` are waiting (bounded memory)."""
        self._pending[name].append(rows)
        self._pending_rows[name] += len(rows)
        table = self._tables[name]
        if self._pending_rows[name] * table.dtype.itemsize >= MAX_CHUNK_BYTES:
            self._flush(name)

    def _append_strings(self, prefix: str, n: int) -> None:
        empty = np.full(n, "", object)
        for s in _STRINGS:
            self._append(f"{prefix}_{s}", empty)

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
        """Frames with a valid instance, a mask or a polygon become rows, in the order given."""
        if preds.frame_indices is None:
            raise ValueError("BatchPredictions.frame_indices must be set before writing")
        frame_indices = np.asarray(preds.frame_indices)
        n_rows = len(frame_indices)
        valid = np.asarray(preds.valid, bool)
        per_frame = valid.sum(axis=1)
        masks = packaged(preds.masks)
        rois = mask_rois(masks, self.polygon_epsilon) if self.write_rois and len(masks) else []
        kept = per_frame > 0
        if self.write_masks:
            kept |= np.bincount(masks.frame, minlength=n_rows)[:n_rows] > 0
        for k, _ in rois:
            kept[masks.frame[k]] = True
        n_new_frames = int(kept.sum())
        if n_new_frames == 0:
            return

        frames = np.zeros(n_new_frames, self._tables["frames"].dtype)
        frames["frame_id"] = self.n_frames + np.arange(n_new_frames)
        frames["video"] = 0
        frames["frame_idx"] = frame_indices[kept]
        ends = self.n_instances + np.cumsum(per_frame[kept])
        frames["instance_id_start"] = ends - per_frame[kept]
        frames["instance_id_end"] = ends
        frame_id_of_b = self.n_frames + np.cumsum(kept) - 1
        self._append("frames", frames)
        self.n_frames += n_new_frames

        self._add_instances(preds, valid, frame_id_of_b)
        if self.write_masks and len(masks):
            self._add_masks(masks, frame_indices)
        if rois:
            self._add_rois(rois, masks, frame_indices)

    def _add_instances(
        self, preds: BatchPredictions, valid: np.ndarray, frame_id_of_b: np.ndarray
    ) -> None:
        b_idx, i_idx = np.nonzero(valid)  # row-major: frame by frame, instance order kept
        n_new = len(b_idx)
        if n_new == 0:
            return
        n_nodes = self.n_nodes
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

        self._append("instances", instances)
        self._append("pred_points", points)
        self.n_instances += n_new
        self.n_points += len(points)

    def _add_masks(self, masks: MaskSet, frame_indices: np.ndarray) -> None:
        """Rows as sleap-io's ``write_masks``: no track, instance or source link, and the
        RLE counts as raw uint32 bytes in ``mask_rle``."""
        self._create_group("mask", "masks", MASK_DTYPE, "mask_rle")
        n = len(masks)
        rows = np.zeros(n, MASK_DTYPE)
        rows["height"] = masks.size[:, 0]
        rows["width"] = masks.size[:, 1]
        rows["annotation_type"] = SEGMENTATION_ANNOTATION
        rows["video"] = 0
        rows["frame_idx"] = frame_indices[masks.frame]
        rows["track"] = -1
        rows["instance"] = -1
        rows["from_predicted"] = -1
        rows["is_predicted"] = 1
        rows["score"] = masks.score
        rows["tracking_score"] = np.nan
        nbytes = 4 * np.asarray(masks.rle_len, np.int64)
        ends = self.n_rle_bytes + np.cumsum(nbytes)
        rows["rle_start"] = ends - nbytes
        rows["rle_end"] = ends
        rows["scale_x"], rows["scale_y"] = masks.scale[:, 0], masks.scale[:, 1]
        rows["offset_x"], rows["offset_y"] = masks.offset[:, 0], masks.offset[:, 1]
        self._spatial = self._spatial or bool(
            (rows["scale_x"] != 1).any()
            or (rows["scale_y"] != 1).any()
            or (rows["offset_x"] != 0).any()
            or (rows["offset_y"] != 0).any()
        )
        data = np.ascontiguousarray(masks.rle, np.uint32).view(np.uint8)
        self._append("masks", rows)
        self._append("mask_rle", data)
        self._append_strings("mask", n)
        self.n_masks += n
        self.n_rle_bytes += len(data)

    def _add_rois(
        self,
        rois: list[tuple[int, sio.PredictedROI]],
        masks: MaskSet,
        frame_indices: np.ndarray,
    ) -> None:
        """Rows as sleap-io's ``write_rois``: ``shapely.to_wkb`` bytes, annotation type 0."""
        import shapely

        self._create_group("roi", "rois", ROI_DTYPE, "roi_wkb")
        wkb = [np.frombuffer(shapely.to_wkb(roi.geometry), np.uint8) for _, roi in rois]
        nbytes = np.array([len(w) for w in wkb], np.int64)
        ends = self.n_wkb_bytes + np.cumsum(nbytes)
        rows = np.zeros(len(rois), ROI_DTYPE)
        rows["annotation_type"] = 0
        rows["video"] = 0
        rows["frame_idx"] = frame_indices[masks.frame[[k for k, _ in rois]]]
        rows["track"] = -1
        rows["is_predicted"] = 1
        rows["score"] = [roi.score for _, roi in rois]
        rows["tracking_score"] = np.nan
        rows["wkb_start"] = ends - nbytes
        rows["wkb_end"] = ends
        rows["instance"] = -1
        self._append("rois", rows)
        self._append("roi_wkb", np.concatenate(wkb))
        self._append_strings("roi", len(rois))
        self.n_rois += len(rois)
        self.n_wkb_bytes += int(nbytes.sum())

    def _format_id(self) -> None:
        """Raise ``format_id`` to what sleap-io writes for the masks and ROIs written."""
        attrs = self._file["metadata"].attrs
        current = float(attrs["format_id"])
        wanted = current
        if self.n_masks or self.n_rois:
            wanted = max(wanted, FORMAT_PREDICTED_ANNOTATIONS)
        if self._spatial:
            wanted = max(wanted, FORMAT_SPATIAL_METADATA)
        if wanted != current:
            attrs["format_id"] = wanted

    def close(self) -> None:
        """Write what is buffered and close; the file is complete only after this."""
        if not self._file.id.valid:
            return
        try:
            for name in self._tables:
                self._flush(name)
            self._format_id()
        finally:
            self._file.close()

    def __enter__(self) -> StreamingSlpWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
