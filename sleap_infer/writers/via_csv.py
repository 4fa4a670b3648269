"""VIA-tracks CSV (``--format via-csv``): a box detector's boxes as movement reads them.

The layout of the VGG Image Annotator's video tracks export, which movement's
``load_dataset(path, source_software="VIA-tracks")`` reads: one row per box, ``filename,
file_size, file_attributes, region_count, region_id, region_shape_attributes,
region_attributes``, the last three small dicts. The box is a ``rect`` (top-left
``x, y``, ``width, height`` in frame pixels); ``region_attributes`` holds
``track``, ``confidence`` (the box score) and ``category`` (the class name,
empty for none); ``file_attributes`` holds the ``frame`` (so a reader need not
parse the made-up image name, ``<video>_frame_<zero-padded frame>.png``).

VIA-tracks needs a track id per box, and detectors track nothing: ``track`` is
the box's rank by score within its frame (0 = the best box), like the
``untracked_<k>`` slots of the pose formats; it is not an identity. Frames
without boxes have no rows: pass ``use_frame_numbers_from_file=True`` (and
``fps``) to movement to keep the video's own frame numbers.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from sleap_infer.writers.slots import Source
from sleap_infer.writers.slp_stream import box_category_names

HEADER = [
    "filename",
    "file_size",
    "file_attributes",
    "region_count",
    "region_id",
    "region_shape_attributes",
    "region_attributes",
]


def write_via_csv(path: Path, source: Source) -> None:
    stem = Path(source.video.filename).stem
    width = len(str(max(source.video_frames, 1))) + 1  # a leading zero, as VIA names frames
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(HEADER)
        for preds in source.journal.batches():
            boxes = preds.boxes
            if boxes is None or not len(boxes):
                continue
            frames = np.asarray(preds.frame_indices)[boxes.frame].astype(np.int64)
            order = np.lexsort((-boxes.score.astype(np.float64), frames))
            names = box_category_names(source.box_categories, boxes.category)
            _write_frames(
                out, stem, width, frames[order], boxes.xyxy[order], boxes.score[order], names[order]
            )


def _write_frames(
    out: csv.writer,  # type: ignore[valid-type]
    stem: str,
    width: int,
    frames: np.ndarray,
    xyxy: np.ndarray,
    scores: np.ndarray,
    names: np.ndarray,
) -> None:
    """Rows of boxes sorted by frame, then score: the rank in the frame is the track."""
    starts = np.flatnonzero(np.r_[True, frames[1:] != frames[:-1]])
    counts = np.diff(np.r_[starts, len(frames)])
    for start, count in zip(starts.tolist(), counts.tolist()):
        frame = int(frames[start])
        filename = f"{stem}_frame_{frame:0{width}d}.png"
        attributes = json.dumps({"frame": frame})
        for k in range(count):
            x1, y1, x2, y2 = (float(v) for v in xyxy[start + k])
            shape = {"name": "rect", "x": x1, "y": y1, "width": x2 - x1, "height": y2 - y1}
            region = {
                "track": k,
                "confidence": float(scores[start + k]),
                "category": str(names[start + k]),
            }
            out.writerow([filename, 0, attributes, count, k, json.dumps(shape), json.dumps(region)])
