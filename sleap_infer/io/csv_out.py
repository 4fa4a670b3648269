"""SLEAP analysis CSV (``--format csv``), written batch by batch from the journal.

One row per predicted instance: ``track, frame_idx, instance.score``, then
``<node>.x, <node>.y, <node>.score`` in skeleton order (the layout SLEAP
documents, which ``sio.load_csv`` reads). ``track`` is the identity class of
multi-class models and empty otherwise: a row never claims an identity the
model did not predict. The header is written first, so a video where
nothing was found is still a readable CSV, where sleap-io's exporter wrote a
lone newline.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

from sleap_infer.io.slots import Source
from sleap_infer.vocab.predictions import BatchPredictions


def csv_columns(node_names: list[str]) -> list[str]:
    nodes = [f"{n}.{field}" for n in node_names for field in ("x", "y", "score")]
    return ["track", "frame_idx", "instance.score", *nodes]


FLUSH_ROWS = 4096  # rows gathered per pandas write: its per-call cost dominates small writes


def write_csv(path: Path, source: Source) -> None:
    columns = csv_columns(source.node_names)
    with path.open("w", newline="") as fh:
        fh.write(",".join(columns) + "\n")
        pending: list[pd.DataFrame] = []
        for preds in source.journal.batches():
            pending.append(_rows(preds, source.class_names, columns))
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
    table = pd.DataFrame(values.reshape(len(b), n_nodes * 3), columns=columns[3:])
    table.insert(0, "track", _track_names(preds, b, i, class_names))
    table.insert(1, "frame_idx", np.asarray(preds.frame_indices)[b].astype(np.int64))
    table.insert(2, "instance.score", preds.instance_scores[b, i].astype(np.float64))
    return table


def _track_names(
    preds: BatchPredictions, b: np.ndarray, i: np.ndarray, class_names: tuple[str, ...]
) -> list[str]:
    if not class_names or preds.class_ids is None:
        return [""] * len(b)
    names = [*class_names, ""]  # index -1 (no class) lands on ""
    ids = preds.class_ids[b, i].astype(np.int64)
    ids[(ids < 0) | (ids >= len(class_names))] = -1
    return [names[k] for k in ids.tolist()]
