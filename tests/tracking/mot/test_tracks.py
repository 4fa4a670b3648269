"""The MOT trackers' per-track table: rows appended, kept and saved under the journal's
names, dtypes and order (a journal written before the table existed resumes)."""

from __future__ import annotations

import numpy as np
import pytest

from sleap_infer.tracking import POSES, Detections, make_tracker
from sleap_infer.tracking.mot.ocsort import OcSortTracks
from sleap_infer.tracking.mot.tracks import Members, TrackTable
from sleap_infer.tracking.options import TrackingOptions

CORE = ["tid", "public_id", "status", "hits", "hit_streak", "age", "tsu", "seen_step"]
MEMBERS = ["member_tid", "member_frame", "member_det", "member_score"]
EVIDENCE = ["diagonals", "spacings", "step_lengths"]  # the running body size, after cov
OWN = {
    "sort": [],
    "bytetrack": ["last_kp", "kf_centre", "start_frame", "match_frame"],
    "ocsort": [
        *("last_obs", "velocity", "obs_steps", "obs_boxes"),
        *("frozen_step", "frozen_mean", "frozen_cov"),
    ],
}


def row(tid: int) -> dict[str, object]:
    d = 4
    return dict(mean=np.full(d, float(tid)), cov=np.eye(d), tid=tid, public_id=-1, status=0)


def test_rows_append_with_fills_keep_and_round_trip() -> None:
    table = OcSortTracks.empty(d=4, history=3)
    for tid in range(3):
        table.append(**row(tid), hits=0, hit_streak=0, age=0, tsu=0, seen_step=tid)
    assert len(table) == 3 and table.obs_boxes.shape == (3, 3, 4)
    assert table.tid.dtype == np.int64 and table.frozen_step.dtype == np.float64
    assert (table.frozen_step == -1.0).all() and np.isnan(table.last_obs).all()
    table.keep(np.array([True, False, True]))
    assert table.tid.tolist() == [0, 2] and table.mean[:, 0].tolist() == [0.0, 2.0]
    saved = table.arrays()
    assert list(saved) == ["mean", "cov", *CORE, *OWN["ocsort"]]
    again = OcSortTracks.empty(d=4, history=3)
    again.load(saved)
    assert all(
        np.array_equal(a, b, equal_nan=True)
        for a, b in zip(saved.values(), again.arrays().values())
    )


def test_a_row_needs_every_column_without_a_fill() -> None:
    table = TrackTable.empty(d=4)
    with pytest.raises(TypeError, match="hits"):
        table.append(**row(0))
    with pytest.raises(TypeError, match="no column"):
        table.append(**row(0), hits=0, hit_streak=0, age=0, tsu=0, seen_step=0, extra=1)
    members = Members.empty()
    members.append(tid=3, frame=7, det=1, score=0.5)
    assert list(members.arrays()) == MEMBERS


@pytest.mark.parametrize("name", list(OWN))
def test_the_state_keeps_the_journals_names_order_and_dtypes(name: str) -> None:
    tracker = make_tracker(TrackingOptions(tracker=name), POSES, 4)
    pts = np.array([[[0.0, 0.0], [10.0, 2.0], [20.0, 0.0], [5.0, 8.0]]])
    for f in range(3):
        tracker.step(Detections(f, pts + f, np.array([0.9])))
    arrays = tracker.state().arrays
    assert list(arrays) == ["mean", "cov", *EVIDENCE, *CORE, *OWN[name], *MEMBERS]
    ints = {*CORE, *MEMBERS} - {"member_score"}
    assert all(a.dtype == (np.int64 if k in ints else np.float64) for k, a in arrays.items())
    if name == "ocsort":
        assert arrays["obs_boxes"].shape == (1, 7, 4) and arrays["frozen_cov"].shape == (1, 7, 7)
