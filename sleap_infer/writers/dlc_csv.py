"""DeepLabCut-style CSV (``--format dlc-csv``), written by sleap-io's own DLC writer.

movement (``load_dataset(path, source_software="DeepLabCut")``) and DLC tools read this:
header rows ``scorer, [individuals,] bodyparts, coords`` (``x, y, likelihood``)
and one row per frame, where the row's *position* is its frame (movement times
row ``k`` at ``k / fps`` and ignores the index). sleap-io 0.9's writer
(``sio.save_csv(..., format="dlc")``) needs help to keep everything:

* it picks the multi-animal layout only with more than one track, writes every
  instance of a track-less frame into the same columns (the last one wins), and
  drops instances whose track it has no column for. So the instances go in as
  the slots of :mod:`sleap_infer.writers.slots` (identities, else per-frame score
  ranks ``untracked_<k>``, never presented as animals), each on its slot's track;
* it writes a row per frame it is given, so every frame of the video is given
  (empty ones become empty rows): row ``k`` is frame ``k``;
* it takes points from ``instance.numpy()``, which for predictions leaves out the
  scores, so its ``likelihood`` columns are empty even on sleap-io's own files:
  the instances here are :class:`ScoredInstance`\\ s, whose ``numpy()`` carries
  them.

* it indexes rows by image path (``labeled-data/<video>/img0000.png``, the
  convention of DLC's *training* files), and movement takes a 3-row header as
  single-animal only when the first data row's index is a number: the index is
  replaced by the frame number, as DLC's own video predictions are indexed.

The whole video is held as ``Labels`` while writing (sleap-io's writer takes
nothing else).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import sleap_io as sio

from sleap_infer.writers.slots import Source, slotted_batches, track_axis


class ScoredInstance(sio.PredictedInstance):
    """A prediction whose ``numpy()`` holds ``(x, y, score)`` per node by default."""

    def numpy(self, invisible_as_nan: bool = True, scores: bool = True) -> np.ndarray:
        return super().numpy(invisible_as_nan=invisible_as_nan, scores=scores)


def write_dlc_csv(path: Path, source: Source) -> None:
    axis = track_axis(source)
    tracks = [sio.Track(name=name) for name in axis.names]
    n_frames = max(source.video_frames, axis.last_frame + 1)
    frames = [sio.LabeledFrame(video=source.video, frame_idx=f) for f in range(n_frames)]
    for preds, slots in slotted_batches(source):
        indices = np.asarray(preds.frame_indices)
        for b, i in zip(*np.nonzero(slots >= 0)):
            points = np.column_stack([preds.points[b, i], preds.point_scores[b, i]])
            instance = ScoredInstance.from_numpy(
                points_data=points.astype(np.float64),
                score=float(preds.instance_scores[b, i]),
                skeleton=source.skeleton,
                track=tracks[slots[b, i]],
            )
            frames[int(indices[b])].instances.append(instance)
    labels = sio.Labels(frames, videos=[source.video], skeletons=[source.skeleton], tracks=tracks)
    scorer = ", ".join(source.provenance.get("model_types", [])) or "sleap_infer"
    written = path.with_name(path.name + ".sleap-io")
    try:
        sio.save_csv(labels, str(written), format="dlc", include_score=True, scorer=scorer)
        index_by_frame(written, path, header_rows=4 if len(tracks) > 1 else 3)
    finally:
        written.unlink(missing_ok=True)


def index_by_frame(written: Path, path: Path, header_rows: int) -> None:
    """``written`` with each data row's index (an image path) replaced by its frame
    number, DLC's index for video predictions; the rest is copied as sleap-io wrote it."""
    with written.open(newline="") as src, path.open("w", newline="") as dst:
        rows, out = csv.reader(src), csv.writer(dst, lineterminator="\n")
        for k, row in enumerate(rows):
            if k >= header_rows and row:
                row[0] = str(k - header_rows)
            out.writerow(row)
