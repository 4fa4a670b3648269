"""Late labels (a MOT track's tentative frames) laid over batches: poses and masks."""

from __future__ import annotations

import numpy as np

from sleap_infer.core.late_tracks import LateTracks, lay_over
from sleap_infer.core.masks import MaskSet
from sleap_infer.core.predictions import BatchPredictions


def test_rows_round_trip_through_arrays_and_group_by_frame() -> None:
    rows = LateTracks.of([(5, 1, 2, 0.5), (3, 0, 2, 1.0), (5, 0, 4, 0.25)])
    back = LateTracks.from_arrays({"x/" + k: v for k, v in rows.arrays().items()}, "x/")
    assert back is not None and len(back) == 3
    assert back.by_frame() == {5: [(1, 2, 0.5), (0, 4, 0.25)], 3: [(0, 2, 1.0)]}
    assert LateTracks.from_arrays({}, "x/") is None
    buffer = np.arange(8, dtype=np.int64)  # a record's buffer: the rows must not view it
    viewed = LateTracks.from_arrays({n: buffer[:2] for n in LateTracks.ARRAYS})
    assert viewed is not None and not np.shares_memory(viewed.frame_indices, buffer)
    assert len(LateTracks.concat([rows, rows])) == 6 and len(LateTracks.concat([])) == 0


def test_masks_take_them_by_their_order_in_the_frame() -> None:
    """A mask is named by its place among its frame's masks (output order), not its index
    in the batch: frame row 1's second mask is the batch's fourth."""
    bitmaps = [np.ones((2, 2), bool)] * 4
    masks = MaskSet.build([0, 0, 1, 1], bitmaps, [0.9] * 4, [(1.0, 1.0)] * 4, [(0.0, 0.0)] * 4)
    masks.track = np.array([0, -1, -1, -1], np.int32)
    masks.tracking_score = np.full(4, np.nan, np.float32)
    masks.track.setflags(write=False)  # as read back from a journal record
    preds = BatchPredictions.empty(2, 0)
    preds.frame_indices = np.array([10, 11], np.int64)
    preds.masks = masks
    late = LateTracks.of([(11, 1, 5, 0.5), (10, 0, 5, 0.5), (10, 1, 6, 0.75)])
    assert lay_over(preds, late.by_frame())
    assert preds.masks.track is not None and preds.masks.tracking_score is not None
    assert preds.masks.track.tolist() == [0, 6, -1, 5]  # mask 0 was tracked already
    assert preds.masks.tracking_score[[1, 3]].tolist() == [0.75, 0.5]
