"""The crash-safe journal: round trip, torn tails, corruption, compatibility checks."""

from __future__ import annotations

import errno
from pathlib import Path

import numpy as np
import pytest

from sleap_infer.core.errors import OutputError, ResumeError
from sleap_infer.core.late_tracks import LateTracks, lay_over
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import (
    MAGIC,
    JournalWriter,
    check_compatible,
    fingerprint_changes,
    in_use,
    journal_path,
    read_journal,
)
from sleap_infer.sources.video import MISSING_AT_END, FrameError


def _batch(first: int, n: int = 4, classes: bool = False) -> BatchPredictions:
    rng = np.random.default_rng(first)
    preds = BatchPredictions(
        points=rng.uniform(0, 99, (n, 2, 3, 2)).astype(np.float32),
        point_scores=rng.uniform(size=(n, 2, 3)).astype(np.float32),
        instance_scores=rng.uniform(size=(n, 2)).astype(np.float32),
        valid=np.array([[True, i % 2 == 0] for i in range(n)]),
        frame_indices=np.arange(first, first + n, dtype=np.int64),
    )
    if classes:
        preds.class_ids = np.zeros((n, 2), np.int32)
        preds.class_scores = np.ones((n, 2), np.float32)
    return preds


def _write(path: Path, batches: list[BatchPredictions], tail: bool = True) -> None:
    with JournalWriter(path, header={"fingerprint": {"k": 1}}) as w:
        w.write_session({"started": "now"})
        for i, b in enumerate(batches):
            w.write_batch(b, [FrameError(100 + i, "decode error: bad")] if i == 1 else [])
        if tail:
            w.write_bad_frames([FrameError(50, "stream ended", MISSING_AT_END, 10)])


def test_roundtrip_keeps_every_array_and_bad_frame(tmp_path: Path) -> None:
    path = journal_path(tmp_path / "v.mp4.predictions.slp")
    assert path.name == "v.mp4.predictions.slp.partial"
    batches = [_batch(0), _batch(4, classes=True), _batch(8, n=2)]
    _write(path, batches)
    journal = read_journal(path)
    assert journal.header["fingerprint"] == {"k": 1}
    assert journal.sessions == [{"type": "session", "started": "now"}]
    assert journal.predicted.tolist() == list(range(10))
    assert journal.totals.instances == sum(int(b.valid.sum()) for b in batches)
    assert journal.bad_frames == [
        FrameError(101, "decode error: bad"),
        FrameError(50, "stream ended", MISSING_AT_END, 10),
    ]
    assert journal.torn_bytes == 0
    back = list(journal.batches())
    assert len(back) == 3
    for a, b in zip(batches, back):
        np.testing.assert_array_equal(a.points, b.points)
        np.testing.assert_array_equal(a.valid, b.valid)
        np.testing.assert_array_equal(a.frame_indices, b.frame_indices)
        assert (a.class_ids is None) == (b.class_ids is None)
    mask = journal.done_mask(70)
    assert mask[:10].all() and not mask[10:50].any() and mask[50:60].all() and not mask[60]


@pytest.mark.parametrize("cut", [1, 7, 20, -1])
def test_a_torn_last_record_is_dropped_and_then_truncated_away(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "j.partial"
    _write(path, [_batch(0), _batch(4)], tail=False)
    full = read_journal(path)
    data = path.read_bytes()
    # Append part of a third batch record, as a crash in the middle of a write would.
    third = tmp_path / "third.partial"
    _write(third, [_batch(0), _batch(4), _batch(8)], tail=False)
    extra = third.read_bytes()[len(data) :]
    cut_at = len(extra) + cut if cut < 0 else cut
    path.write_bytes(data + extra[:cut_at])
    torn = read_journal(path)
    assert torn.predicted.tolist() == full.predicted.tolist()
    assert torn.torn_bytes == cut_at
    with JournalWriter(path, existing=torn) as w:
        w.write_batch(_batch(8))
    again = read_journal(path)
    assert again.torn_bytes == 0
    assert again.predicted.tolist() == list(range(12))


def test_corrupted_bytes_stop_reading_at_the_damaged_record(tmp_path: Path) -> None:
    path = tmp_path / "j.partial"
    _write(path, [_batch(0), _batch(4), _batch(8)])
    data = bytearray(path.read_bytes())
    data[-40] ^= 0xFF  # inside the last record (the bad-frames one)
    path.write_bytes(bytes(data))
    journal = read_journal(path)
    assert journal.predicted.tolist() == list(range(12))
    assert all(e.kind != MISSING_AT_END for e in journal.bad_frames)
    assert journal.torn_bytes > 0


def test_not_a_journal_and_header_checks(tmp_path: Path) -> None:
    path = tmp_path / "j.partial"
    path.write_bytes(b"garbage!" * 10)
    with pytest.raises(ResumeError, match="not a sleap_infer journal"):
        read_journal(path)
    path.write_bytes(MAGIC)
    with pytest.raises(ResumeError, match="no header"):
        read_journal(path)
    _write(path, [_batch(0)])
    journal = read_journal(path)
    check_compatible(journal, {"k": 1})
    with pytest.raises(ResumeError, match=r"cannot resume, .* differs: k: 1 then, 2 now; use"):
        check_compatible(journal, {"k": 2})


def test_mismatch_names_each_nested_key_with_both_values() -> None:
    old = {"options": {"peak_threshold": 0.2, "refine": True, "n_points": 10}, "frames": "all"}
    new = {"options": {"peak_threshold": 0.5, "refine": True}, "frames": "0-9", "extra": [1]}
    assert fingerprint_changes(old, new) == [
        "extra: unset then, [1] now",
        'frames: "all" then, "0-9" now',
        "options.n_points: 10 then, unset now",
        "options.peak_threshold: 0.2 then, 0.5 now",
    ]
    assert fingerprint_changes(old, old) == []


def test_a_tuple_option_read_back_as_a_list_is_no_change(tmp_path: Path) -> None:
    # The header goes through JSON; comparing a tuple with the list it reads back as
    # made every resume fail once an option was a tuple (merge_thresholds).
    path = tmp_path / "j.partial"
    with JournalWriter(path, header={"fingerprint": {"options": {"t": (0.85, 0.6)}}}):
        pass
    journal = read_journal(path)
    assert journal.changes({"options": {"t": (0.85, 0.6)}}) == []
    check_compatible(journal, {"options": {"t": (0.85, 0.6)}})
    assert journal.changes({"options": {"t": (0.85, 0.5)}}) == [
        "options.t: [0.85, 0.6] then, [0.85, 0.5] now"
    ]


def test_one_writer_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "j.partial"
    with JournalWriter(path, header={"fingerprint": {}}) as first:
        first.write_batch(_batch(0))
        assert in_use(path)
        with pytest.raises(ResumeError, match="another infer process is predicting"):
            JournalWriter(path, existing=read_journal(path))
    assert not in_use(path)
    assert read_journal(path).n_predicted == 4  # the refused writer truncated nothing


class _FullDisk:
    def __init__(self, fh) -> None:
        self.fh = fh

    def write(self, data) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str):
        return getattr(self.fh, name)


def test_disk_full_is_one_error_and_keeps_what_was_written(tmp_path: Path) -> None:
    path = tmp_path / "j.partial"
    writer = JournalWriter(path, header={"fingerprint": {}})
    writer.write_batch(_batch(0))
    writer._fh = _FullDisk(writer._fh)
    with pytest.raises(
        OutputError,
        match=r"j\.partial: cannot write partial predictions \(no space left on device\)",
    ):
        writer.write_batch(_batch(4))
    writer.close()
    assert read_journal(path).predicted.tolist() == [0, 1, 2, 3]
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OutputError, match="cannot write partial predictions"):
        JournalWriter(blocker / "j.partial", header={})


def _tracked(first: int) -> BatchPredictions:
    preds = _batch(first, classes=True)
    assert preds.class_ids is not None
    preds.class_ids[:] = -1  # untracked, as a MOT track's tentative frames are
    return preds


def test_late_labels_of_a_later_batch_reach_the_frames_they_name(tmp_path: Path) -> None:
    """A track confirmed in batch 2 labels detections of batch 1 (frame 1: its one valid
    pose; frame 2: its second slot, the second valid pose): they come back in place."""
    path = tmp_path / "j.partial"
    first, second = _tracked(0), _tracked(4)
    second.late_tracks = LateTracks.of([(1, 0, 7, 0.5), (2, 1, 7, 0.25), (3, 5, 7, 0.1)])
    _write(path, [first, second], tail=False)
    journal = read_journal(path)
    assert journal.late is not None and len(journal.late) == 3
    back = list(journal.batches())
    ids, scores = back[0].class_ids, back[0].class_scores
    assert ids is not None and scores is not None
    assert ids.tolist() == [[-1, -1], [7, -1], [-1, 7], [-1, -1]]
    assert scores[1, 0] == 0.5 and scores[2, 1] == 0.25
    assert (back[1].class_ids == -1).all()  # no late label names frames 4-7


def test_a_torn_record_takes_its_late_labels_with_it(tmp_path: Path) -> None:
    """Late labels live in the record of the batch that made them: a kill before that
    record is whole leaves the earlier frames untracked, and the resumed run (its tracker
    restored to before that batch) makes them again."""
    path = tmp_path / "j.partial"
    first, second = _tracked(0), _tracked(4)
    second.late_tracks = LateTracks.of([(1, 0, 7, 0.5)])
    _write(path, [first, second], tail=False)
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    torn = read_journal(path)
    assert torn.late is None and torn.predicted.tolist() == [0, 1, 2, 3]
    (back,) = torn.batches()
    assert back.class_ids is not None and (back.class_ids == -1).all()


def test_a_detection_already_tracked_keeps_its_track() -> None:
    preds = _tracked(0)
    assert preds.class_ids is not None
    preds.class_ids[1, 0] = 3
    assert lay_over(preds, LateTracks.of([(1, 0, 7, 0.5), (0, 0, 7, 0.5)]).by_frame())
    assert preds.class_ids[:2].tolist() == [[7, -1], [3, -1]]
    assert not lay_over(preds, LateTracks.of([(9, 0, 7, 0.5)]).by_frame())
