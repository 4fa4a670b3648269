"""SLEAP analysis CSV (``--format csv``), written batch by batch from the journal.

One row per predicted instance: ``track, frame_idx, instance.score``, then
``<node>.x, <node>.y, <node>.score`` in skeleton order (the layout SLEAP
documents, which ``sio.load_csv`` reads). ``track`` is the identity class of
multi-class models and empty otherwise: a row never claims an identity the
model did not predict. The header is written first, so a video where
nothing was found is still a readable CSV, where sleap-io's exporter wrote a
lone newline.

Box detectors add one row per box, with the columns ``x1, y1, x2, y2``
(corners in frame pixels), ``score`` and ``category`` (the class name, empty
for none, as in the ``.slp``). The columns follow from the model, not from
what a video happened to contain, so every video of a run has the same header:

* pose models (no box classes, no boxes): the pose columns above, unchanged;
* a box detector alone (classes given, no keypoint model): ``frame_idx, x1,
  y1, x2, y2, score, category``;
* a box detector with a pose stage: the pose columns, then the box columns;
  an instance's row leaves the box columns empty, a box's row leaves
  ``track``, ``instance.score`` and the node columns empty.

Rows go frame by frame in prediction order, a frame's instances before its boxes.
A predicted frame where nothing was found has no row, as sleap-io's CSV writer
(``sio.save_csv``, ``include_empty=False``) and SLEAP's analysis CSV do:
``sio.load_csv`` then reads back exactly the instances predicted. With
``--csv-empty-frames`` it is one row holding only its ``frame_idx`` (how sleap-io
writes an empty frame with ``include_empty=True``; it reads back as an instance
without points), unless ``--no-empty-frames`` leaves empty frames out everywhere.
The header is quoted as the rows are (the csv module's rules), so a node named
``ear, left`` or holding a newline stays one column.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.writers.slots import Source
from sleap_infer.writers.slp_stream import box_category_names

BOX_COLUMNS = ["x1", "y1", "x2", "y2", "score", "category"]
_ORDER = "_row"  # sort key: batch row, then instances before boxes


def csv_columns(node_names: list[str]) -> list[str]:
    nodes = [f"{n}.{field}" for n in node_names for field in ("x", "y", "score")]
    return ["track", "frame_idx", "instance.score", *nodes]


def csv_layout(source: Source) -> tuple[list[str], bool, bool]:
    """``(columns, poses, boxes)``: the header, and which kinds of rows it has room for."""
    boxes = bool(source.box_categories) or source.journal.totals.boxes > 0
    poses = not boxes or source.poses or source.journal.totals.instances > 0
    columns = csv_columns(source.node_names) if poses else ["frame_idx"]
    return columns + (BOX_COLUMNS if boxes else []), poses, boxes


FLUSH_ROWS = 4096  # rows gathered per pandas write: its per-call cost dominates small writes


def write_csv(path: Path, source: Source) -> None:
    columns, poses, boxes = csv_layout(source)
    with path.open("w", newline="") as fh:
        # Quoted as the rows are (pandas quotes like the csv module): a node named
        # ``ear, left`` or holding a newline stays one column.
        csv.writer(fh, lineterminator="\n").writerow(columns)
        pending: list[pd.DataFrame] = []
        for preds in source.journal.batches():
            rows = _batch_rows(preds, source, columns, poses, boxes)
            pending.append(rows)
            if sum(len(rows) for rows in pending) >= FLUSH_ROWS:
                _flush(fh, pending)
                pending = []
        _flush(fh, pending)


def _flush(fh: TextIO, pending: list[pd.DataFrame]) -> None:
    rows = [r for r in pending if len(r)]
    if rows:
        pd.concat(rows).to_csv(fh, header=False, index=False, na_rep="")


def _rows(
    preds: BatchPredictions, class_names: tuple[str, ...], columns: list[str]
) -> pd.DataFrame:
    """The batch's valid instances, frame by frame in model order (as in the ``.slp``)."""
    b, i = np.nonzero(np.asarray(preds.valid, bool))
    n_nodes = preds.points.shape[2]
    values = np.empty((len(b), n_nodes, 3), np.float64)
    values[:, :, :2] = preds.points[b, i]
    values[:, :, 2] = preds.point_scores[b, i]
    table = pd.DataFrame(values.reshape(len(b), n_nodes * 3), columns=columns[3 : 3 + n_nodes * 3])
    table.insert(0, "track", _track_names(preds, b, i, class_names))
    table.insert(1, "frame_idx", np.asarray(preds.frame_indices)[b].astype(np.int64))
    table.insert(2, "instance.score", preds.instance_scores[b, i].astype(np.float64))
    return table


def _batch_rows(
    preds: BatchPredictions, source: Source, columns: list[str], poses: bool, boxes: bool
) -> pd.DataFrame:
    """Instance rows (when the layout has pose columns), box rows (when it has box
    columns) and, unless left out, a row holding only ``frame_idx`` for each frame
    where nothing was found (sleap-io's CSV row for an empty frame), frame by frame."""
    parts = []
    found = np.zeros(len(preds.frame_indices), bool)
    if poses and preds.n_instances:
        table = _rows(preds, source.class_names, columns)
        rows = np.nonzero(np.asarray(preds.valid, bool))[0]
        table[_ORDER] = 2 * rows
        found[rows] = True
        parts.append(table)
    if boxes and preds.n_boxes:
        parts.append(_box_rows(preds, source.box_categories))
        found[preds.boxes.frame] = True  # type: ignore[union-attr]
    if source.empty_frames and source.csv_empty_frames and not found.all():
        parts.append(_empty_rows(preds, ~found))
    if not parts:
        return pd.DataFrame(columns=columns)
    table = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    order = np.argsort(table[_ORDER].to_numpy(), kind="stable")
    return table.iloc[order].reindex(columns=columns)


def _empty_rows(preds: BatchPredictions, empty: np.ndarray) -> pd.DataFrame:
    rows = np.flatnonzero(empty)
    return pd.DataFrame(
        {
            "frame_idx": np.asarray(preds.frame_indices)[rows].astype(np.int64),
            _ORDER: 2 * rows,
        }
    )


def _box_rows(preds: BatchPredictions, categories: tuple[str, ...]) -> pd.DataFrame:
    boxes = preds.boxes
    assert boxes is not None
    xyxy = np.asarray(boxes.xyxy, np.float64)
    return pd.DataFrame(
        {
            "frame_idx": np.asarray(preds.frame_indices)[boxes.frame].astype(np.int64),
            "x1": xyxy[:, 0],
            "y1": xyxy[:, 1],
            "x2": xyxy[:, 2],
            "y2": xyxy[:, 3],
            "score": boxes.score.astype(np.float64),
            "category": box_category_names(categories, boxes.category),
            _ORDER: 2 * boxes.frame.astype(np.int64) + 1,
        }
    )


def _track_names(
    preds: BatchPredictions, b: np.ndarray, i: np.ndarray, class_names: tuple[str, ...]
) -> list[str]:
    if not class_names or preds.class_ids is None:
        return [""] * len(b)
    names = [*class_names, ""]  # index -1 (no class) lands on ""
    ids = preds.class_ids[b, i].astype(np.int64)
    ids[(ids < 0) | (ids >= len(class_names))] = -1
    return [names[k] for k in ids.tolist()]
