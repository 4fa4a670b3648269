"""Write a ``.slp`` batch by batch, without building a sleap-io object per frame.

``sio.save_slp`` needs the whole ``Labels`` in memory (a Python object per
frame, instance and point, then lists of rows on top), which is what makes
long, crowded videos take tens of GB (sleap#1635). Here sleap-io writes
everything except predictions (videos, skeleton, tracks, provenance, format
id) from a frame-less ``Labels``; the three prediction tables it leaves empty
(``frames``, ``instances``, ``pred_points``) are then recreated as resizable
datasets with sleap-io's own dtypes and appended to from
:class:`BatchPredictions` arrays. ``tests/writers/test_slp_stream.py`` checks the
tables against ``sio.save_slp`` field by field, so a sleap-io format change
shows up as a test failure.

Resizable datasets must be chunked, and HDF5 stores whole chunks: fixed
16384-row uncompressed chunks made every file at least 1.97 MB (a 4-frame
video, which ``sio.save_slp`` writes in 19 KB). Chunks are therefore sized
from the row counts the caller expects (the journal knows them), capped at
256 KB, and compressed (shuffle + gzip, which every HDF5 reader has; lzf is
h5py-only). Rows are buffered, up to 256 KB per table, before they go to
h5py, whose per-call cost (about 0.6 ms for a compound-dtype write)
otherwise dominated: one write per batch took 3-7x longer than
``sio.save_slp`` on a 1100-frame video. Buffered rows are written in whole
chunks (the rest waits for the next flush or :meth:`close`), so no chunk is
ever read back, and the file is opened without a chunk cache: HDF5 2.0's
default 1 MB cache kept about 6 MB per growing table (80 MB for the 15 box
columns, measured), where none is needed.

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

Every predicted frame gets its ``frames`` row, those where nothing was found
too (a ``LabeledFrame`` without instances, as sleap-nn 0.3.5 writes them);
``empty_frames=False`` leaves them out (sleap-nn's ``--no_empty_frames``).

Boxes go into sleap-io's ``bboxes/`` group (one column dataset per field, as
``write_bboxes`` makes it), created at the first box; a frame with only boxes
gets its ``frames`` row too. A named category also goes into sleap-io's
``/categories`` catalog (``name``, one entry per class used, in first-use
order, as ``save_slp`` lists one shared ``sio.Category`` per class) and a
``links`` row per box. ``format_id`` is raised to 2.0 for boxes and 2.7 once a
box has a category, as ``save_slp`` does.

Re-ID vectors (an embedding model's, one per instance) go into sleap-io's
``embeddings/`` group as ``save_slp(..., save_embedding_vectors=True)`` writes
it: ``vectors`` (N, D) float32, ``owner_type`` (instance) and ``owner_id`` (the
instance's row in ``instances``), created at the first vector so a file
without any has no group. An instance whose vector is all NaN (the model found
none) gets no row, as sleap-io skips an instance without ``identity_embedding``.
``format_id`` is raised to 2.5, sleap-io's for an instance with a vector.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np
import sleap_io as sio

from sleap_infer.core.boxes import BoxSet
from sleap_infer.core.masks import MaskSet
from sleap_infer.core.options import POLYGON_EPSILON
from sleap_infer.core.polygons import check_mask_output, mask_rois, packaged
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import embeddings_of, vector_slots
from sleap_infer.writers.slots import Source
from sleap_infer.writers.slp_resave import needs_resave, resave

PREDICTED_INSTANCE = 1  # sleap-io InstanceType.PREDICTED
SEGMENTATION_ANNOTATION = 2  # what sleap-io writes in masks.annotation_type
_POSE_TABLES = ("frames", "instances", "pred_points")
MAX_CHUNK_BYTES = 256 * 1024  # also the most rows buffered per table
MIN_CHUNK_ROWS = 256  # a low guess must not make a long video thousands of tiny chunks
GZIP_LEVEL = 6  # zlib's default; measured, level 9 saves only 2% more on a 22000-frame file
FORMAT_PREDICTED_ANNOTATIONS = 1.9  # sleap-io: predicted masks / ROIs
FORMAT_SPATIAL_METADATA = 2.1  # sleap-io: a mask with a scale or an offset
FORMAT_BOXES = 2.0  # sleap-io: any bounding box
FORMAT_CATEGORIES = 2.7  # sleap-io: a detection with a category
FORMAT_IDENTITY = 2.5  # sleap-io: an instance with an identity embedding
OWNER_INSTANCE = 0  # sleap-io: ``embeddings/owner_type`` of an instance
OWNER_BBOX = 4  # sleap-io: ``categories/links`` owner_type of a bounding box
SINGLE_CLASS = ("object",)  # sleap-nn writes no category for a one-class "object" detector

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

# sleap-io 0.9.5 ``write_bboxes`` columns (``bboxes/<name>``) and ``categories/links`` rows.
BOX_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("x1", np.float64),
    ("y1", np.float64),
    ("x2", np.float64),
    ("y2", np.float64),
    ("angle", np.float64),
    ("video", np.int32),
    ("frame_idx", np.int64),
    ("track", np.int32),
    ("instance", np.int32),
    ("is_predicted", np.uint8),
    ("score", np.float32),
    ("tracking_score", np.float32),
    ("category", h5py.string_dtype()),
    ("name", h5py.string_dtype()),
    ("source", h5py.string_dtype()),
)
CATEGORY_LINK_DTYPE = np.dtype(
    [("owner_type", "u1"), ("owner_id", "i8"), ("category_idx", "i4"), ("category_score", "f4")]
)
# sleap-io 0.9.5 ``_write_embedding_groups``: ``embeddings/<name>`` and its dtype.
EMBEDDING_TABLES: tuple[tuple[str, Any], ...] = (
    ("vectors", np.float32),
    ("owner_type", np.uint8),
    ("owner_id", np.int64),
)


def box_category_names(box_categories: tuple[str, ...], category: np.ndarray) -> np.ndarray:
    """Each box's class name, ``""`` for none (sleap-io's "unset"): no class index, one
    out of range, or a single-class ``("object",)`` detector, as sleap-nn writes them."""
    classes = () if tuple(box_categories) == SINGLE_CLASS else tuple(box_categories)
    names = np.array([*classes, ""], object)
    idx = np.asarray(category, np.int64).copy()
    idx[(idx < 0) | (idx >= len(classes))] = -1
    return names[idx]


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
    ``PredictedROI`` (see :mod:`sleap_infer.core.polygons`), ``"both"`` both.
    ``box_categories`` names a box's category index (the model's classes);
    ``expected_boxes`` sizes the box columns' chunks, ``expected_embeddings``
    the re-ID vectors' (see the module docstring). ``empty_frames``: a frame where
    nothing was found is a row too (False: only frames with something in them).
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
        box_categories: tuple[str, ...] = (),
        expected_boxes: int | None = None,
        expected_embeddings: int | None = None,
        empty_frames: bool = True,
        restore_source_videos: bool = False,
        vectors: bool = True,
    ) -> None:
        self.path = path
        self.vectors = vectors  # False: an embedding model's re-ID vectors are left out
        self.empty_frames = empty_frames
        self.box_categories = tuple(box_categories)
        self.n_nodes = len(skeleton.nodes)
        self.n_tracks = len(tracks)
        self.write_masks, self.write_rois = check_mask_output(mask_output)
        self.polygon_epsilon = polygon_epsilon
        shell = sio.Labels(
            videos=[video], skeletons=[skeleton], tracks=tracks, provenance=provenance
        )
        # A package's frames stay read from the package (sleap-nn's default too), not from
        # its source video, which rarely exists where predictions are made; unless asked.
        sio.save_slp(shell, str(path), verbose=False, restore_original_videos=restore_source_videos)
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
            **{f"bboxes/{name}": expected_boxes for name, _ in BOX_COLUMNS},
            "categories/links": expected_boxes,
            **{f"embeddings/{name}": expected_embeddings for name, _ in EMBEDDING_TABLES},
        }
        self._file = h5py.File(path, "a", rdcc_nbytes=0)  # whole-chunk writes: no cache needed
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
        self.n_boxes = 0
        self._categories: dict[str, int] = {}  # catalog index of each class name, first use first
        self.n_embeddings = 0
        self.embedding_dim: int | None = None  # D, fixed by the first vector

    def _create(self, name: str, dtype: np.dtype, width: int | None = None) -> None:
        """(Re)create ``name`` as an empty, resizable, compressed table; ``width``
        makes it 2-D (rows of ``width`` values, whole rows per chunk)."""
        if name in self._file:
            del self._file[name]
        row = () if width is None else (width,)
        self._tables[name] = self._file.create_dataset(
            name,
            shape=(0, *row),
            maxshape=(None, *row),
            dtype=dtype,
            chunks=(chunk_rows(dtype.itemsize * (width or 1), self._expected.get(name)), *row),
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
        row_bytes = table.dtype.itemsize * int(np.prod(table.shape[1:]))
        if self._pending_rows[name] * row_bytes >= MAX_CHUNK_BYTES:
            self._flush(name)

    def _append_strings(self, prefix: str, n: int) -> None:
        empty = np.full(n, "", object)
        for s in _STRINGS:
            self._append(f"{prefix}_{s}", empty)

    def _flush(self, name: str, final: bool = False) -> None:
        """Write the buffered rows that fill whole chunks (all of them when ``final``)."""
        if not self._pending[name]:
            return
        rows = np.concatenate(self._pending[name])
        table = self._tables[name]
        start = table.shape[0]
        if not final:
            step = table.chunks[0]
            count = (start + len(rows)) // step * step - start
            rest = rows[max(count, 0) :]
            rows = rows[: max(count, 0)]
            self._pending[name] = [rest] if len(rest) else []
            self._pending_rows[name] = len(rest)
            if not len(rows):
                return
        else:
            self._pending[name] = []
            self._pending_rows[name] = 0
        table.resize((start + len(rows), *table.shape[1:]))
        table[start:] = rows

    def add(self, preds: BatchPredictions) -> None:
        """Every frame becomes a row, in the order given (without ``empty_frames``: only
        frames with a valid instance, a mask, a polygon or a box)."""
        if preds.frame_indices is None:
            raise ValueError("BatchPredictions.frame_indices must be set before writing")
        frame_indices = np.asarray(preds.frame_indices)
        n_rows = len(frame_indices)
        valid = np.asarray(preds.valid, bool)
        per_frame = valid.sum(axis=1)
        masks = packaged(preds.masks)
        rois = mask_rois(masks, self.polygon_epsilon) if self.write_rois and len(masks) else []
        kept = (per_frame > 0) | self.empty_frames
        if self.write_masks:
            kept |= np.bincount(masks.frame, minlength=n_rows)[:n_rows] > 0
        for k, _ in rois:
            kept[masks.frame[k]] = True
        boxes = preds.boxes if preds.boxes is not None else BoxSet.empty()
        kept |= np.bincount(boxes.frame, minlength=n_rows)[:n_rows] > 0
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
        if len(boxes):
            self._add_boxes(boxes, frame_indices)

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
        if self.vectors:
            self._add_embeddings(preds, valid, b_idx, i_idx)

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

    def _add_embeddings(
        self, preds: BatchPredictions, valid: np.ndarray, b_idx: np.ndarray, i_idx: np.ndarray
    ) -> None:
        """The vectors of this batch's instances (rows ``b_idx, i_idx``, about to be
        written from row ``n_instances`` on), owned by their instance's row."""
        embeddings = embeddings_of(preds)
        has = vector_slots(embeddings, valid)[b_idx, i_idx]
        if embeddings is None or not has.any():
            return
        vectors = np.asarray(embeddings[b_idx[has], i_idx[has]], np.float32)
        dim = int(vectors.shape[1])
        if self.embedding_dim is None:
            self.embedding_dim = dim
            for name, dtype in EMBEDDING_TABLES:
                width = dim if name == "vectors" else None
                self._create(f"embeddings/{name}", np.dtype(dtype), width)
        elif dim != self.embedding_dim:
            raise ValueError(f"embedding vectors of {dim} values after {self.embedding_dim}")
        self._append("embeddings/vectors", vectors)
        self._append("embeddings/owner_type", np.full(len(vectors), OWNER_INSTANCE, np.uint8))
        owner_id = self.n_instances + np.flatnonzero(has).astype(np.int64)
        self._append("embeddings/owner_id", owner_id)
        self.n_embeddings += len(vectors)

    def _add_masks(self, masks: MaskSet, frame_indices: np.ndarray) -> None:
        """Rows as sleap-io's ``write_masks``: no instance or source link (a track only in a
        tracked run), and the RLE counts as raw uint32 bytes in ``mask_rle``."""
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
        if self.n_tracks and masks.track is not None:  # a tracked run's masks
            ids = np.asarray(masks.track, np.int64)
            has_track = (ids >= 0) & (ids < self.n_tracks)
            rows["track"][has_track] = ids[has_track]
            if masks.tracking_score is not None:
                rows["tracking_score"][has_track] = masks.tracking_score[has_track]
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

    def _add_boxes(self, boxes: BoxSet, frame_indices: np.ndarray) -> None:
        """Columns as sleap-io's ``write_bboxes`` (no track, instance, name or source),
        grouped by frame as ``save_slp`` lists a frame's boxes; a named box gets its link."""
        if "bboxes/x1" not in self._tables:
            for name, dtype in BOX_COLUMNS:
                self._create(f"bboxes/{name}", np.dtype(dtype))
        order = np.argsort(boxes.frame, kind="stable")
        n = len(order)
        xyxy = np.asarray(boxes.xyxy, np.float64)[order]
        names = box_category_names(self.box_categories, boxes.category[order])
        empty = np.full(n, "", object)
        columns = {
            "x1": xyxy[:, 0],
            "y1": xyxy[:, 1],
            "x2": xyxy[:, 2],
            "y2": xyxy[:, 3],
            "angle": np.zeros(n),
            "video": np.zeros(n),
            "frame_idx": frame_indices[boxes.frame[order]],
            "track": np.full(n, -1),
            "instance": np.full(n, -1),
            "is_predicted": np.ones(n),
            "score": boxes.score[order],
            "tracking_score": np.full(n, np.nan),
            "category": names,
            "name": empty,
            "source": empty,
        }
        for name, dtype in BOX_COLUMNS:
            self._append(f"bboxes/{name}", np.asarray(columns[name], np.dtype(dtype)))
        named = np.flatnonzero(names != "")
        if len(named):
            self._add_category_links(self.n_boxes + named, names[named])
        self.n_boxes += n

    def _add_category_links(self, owner_ids: np.ndarray, names: np.ndarray) -> None:
        if "categories/links" not in self._tables:
            self._create("categories/links", CATEGORY_LINK_DTYPE)
        for name in names.tolist():
            self._categories.setdefault(name, len(self._categories))
        rows = np.zeros(len(owner_ids), CATEGORY_LINK_DTYPE)
        rows["owner_type"] = OWNER_BBOX
        rows["owner_id"] = owner_ids
        rows["category_idx"] = [self._categories[name] for name in names.tolist()]
        rows["category_score"] = np.nan
        self._append("categories/links", rows)

    def _write_catalog(self) -> None:
        """The ``categories/name`` catalog (a few names: written whole, at the end)."""
        if not self._categories:
            return
        self._file.create_dataset(
            "categories/name",
            data=np.array(list(self._categories), object),
            dtype=h5py.string_dtype(encoding="utf-8"),
            maxshape=(None,),
        )

    def _format_id(self) -> None:
        """Raise ``format_id`` to what sleap-io writes for the masks, ROIs and boxes written."""
        attrs = self._file["metadata"].attrs
        current = float(attrs["format_id"])
        wanted = current
        if self.n_masks or self.n_rois:
            wanted = max(wanted, FORMAT_PREDICTED_ANNOTATIONS)
        if self._spatial:
            wanted = max(wanted, FORMAT_SPATIAL_METADATA)
        if self.n_boxes:
            wanted = max(wanted, FORMAT_BOXES)
        if self._categories:
            wanted = max(wanted, FORMAT_CATEGORIES)
        if self.n_embeddings:
            wanted = max(wanted, FORMAT_IDENTITY)
        if wanted != current:
            attrs["format_id"] = wanted

    def close(self) -> None:
        """Write what is buffered and close; the file is complete only after this."""
        if not self._file.id.valid:
            return
        try:
            for name in self._tables:
                self._flush(name, final=True)
            self._write_catalog()
            self._format_id()
        finally:
            self._file.close()

    def __enter__(self) -> StreamingSlpWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_slp(path: Path, source: Source) -> None:
    """The ``slp`` format's writer (see :mod:`sleap_infer.writers.registry`): the finished
    journal, batch by batch, into sleap-io's tables."""
    tracks = [sio.Track(name=n) for n in source.class_names]
    journal = source.journal
    totals = journal.totals
    frames = journal.n_predicted if source.empty_frames else totals.frames_with_instances
    with StreamingSlpWriter(
        path,
        source.video,
        source.skeleton,
        tracks,
        source.provenance,
        expected_instances=totals.instances,
        expected_frames=frames,
        expected_masks=totals.masks,
        expected_rle_bytes=totals.mask_rle_bytes,
        mask_output=source.mask_output,
        polygon_epsilon=source.polygon_epsilon,
        box_categories=source.box_categories,
        expected_boxes=totals.boxes,
        expected_embeddings=totals.embeddings,
        empty_frames=source.empty_frames,
        restore_source_videos=source.saving.restore_source_videos,
        vectors=source.saving.vectors,
    ) as writer:
        for batch in journal.batches():
            writer.add(batch)
    if needs_resave(source.saving):
        resave(path, source.saving)
