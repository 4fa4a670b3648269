"""Bounding boxes as outputs: journal round trip (torn tail, resume), the streaming
``.slp`` against ``sio.save_slp`` dataset by dataset, categories, CSV rows, formats
that cannot hold boxes, and flat memory on a long run.

Run as a script
(``PYTHONPATH=tests python tests/writers/test_box_outputs.py memory FOLDER [FRAMES]``)
it prints the memory measurement as JSON; the test runs it in a subprocess.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest
import sleap_io as sio

from sleap_infer.core.boxes import BoxSet
from sleap_infer.core.errors import OutputError
from sleap_infer.core.masks import MaskSet
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import JournalWriter, read_journal
from sleap_infer.writers.csv_out import write_csv
from sleap_infer.writers.labels import LabelsBuilder
from sleap_infer.writers.outputs import estimate_bytes, write_from_journal
from sleap_infer.writers.registry import FORMATS
from sleap_infer.writers.slots import Source
from sleap_infer.writers.slp_stream import StreamingSlpWriter, box_category_names

from slp_tables import (
    assert_same_datasets,
    format_id,
    memory_numbers,
    rss_mb,
    run_memory_child,
    write_journal,
)

N_NODES = 2
CLASSES = ("mouse", "rat")


def _video(n_frames: int = 40) -> sio.Video:
    return sio.Video(
        filename="v.mp4",
        backend_metadata={"shape": [n_frames, 64, 64, 1], "fps": 30.0, "grayscale": True},
        open_backend=False,
    )


def _skeleton(nodes: bool = True) -> sio.Skeleton:
    return sio.Skeleton(nodes=["a", "b"] if nodes else [], edges=[], name="s")


def _batch(
    rng: np.random.Generator,
    first: int,
    n: int = 4,
    boxes: bool = True,
    poses: bool = False,
    masks: bool = False,
    shuffle: bool = False,
) -> BatchPredictions:
    """``n`` frames: 0-3 boxes each (category -1, 0 or 1), optionally instances and masks."""
    preds = BatchPredictions.empty(n, N_NODES)
    preds.frame_indices = np.arange(first, first + n, dtype=np.int64)
    if poses:
        valid = rng.uniform(size=(n, 2)) < 0.5
        preds.points = rng.uniform(0, 60, (n, 2, N_NODES, 2)).astype(np.float32)
        preds.point_scores = rng.uniform(size=(n, 2, N_NODES)).astype(np.float32)
        preds.instance_scores = rng.uniform(size=(n, 2)).astype(np.float32)
        preds.valid = valid
    if masks:
        rows = [b for b in range(n) if rng.uniform() < 0.5]
        grids = [rng.uniform(size=(6, 5)) < 0.5 for _ in rows]
        for g in grids:
            g[0, 0] = True  # never empty: an output drops empty masks
        k = len(rows)
        preds.masks = MaskSet.build(rows, grids, [0.7] * k, [(1, 1)] * k, [(0, 0)] * k)
    if boxes:
        frames = np.repeat(np.arange(n), rng.integers(0, 4, n))
        if shuffle:
            frames = rng.permutation(frames)
        m = len(frames)
        x1y1 = rng.uniform(0, 40, (m, 2))
        xyxy = np.concatenate([x1y1, x1y1 + rng.uniform(1, 20, (m, 2))], axis=1)
        preds.boxes = BoxSet.build(frames, xyxy, rng.uniform(size=m), rng.integers(-1, 2, m))
    return preds


def _mix(seed: int = 0) -> list[BatchPredictions]:
    """Frames with boxes only, poses only, masks and boxes, and poses and boxes."""
    rng = np.random.default_rng(seed)
    return [
        _batch(rng, 0),
        _batch(rng, 4, boxes=False, poses=True),
        _batch(rng, 8, masks=True),
        _batch(rng, 12, poses=True, shuffle=True),
        _batch(rng, 16, boxes=False),  # nothing found
    ]


def _stream(path: Path, batches: list[BatchPredictions], categories: tuple[str, ...]) -> None:
    with StreamingSlpWriter(
        path, _video(), _skeleton(), [], {"run": 1}, box_categories=categories
    ) as writer:
        for b in batches:
            writer.add(b)


def _reference(path: Path, batches: list[BatchPredictions], categories: tuple[str, ...]) -> None:
    builder = LabelsBuilder(_video(), _skeleton(), box_categories=categories)
    for b in batches:
        builder.add(b)
    sio.save_slp(builder.labels({"run": 1}), str(path))


def _expected_boxes(
    batches: list[BatchPredictions], categories: tuple[str, ...]
) -> dict[int, list[tuple[float, float, float, float, float, str | None]]]:
    """Per frame index: (x1, y1, x2, y2, score, category name or None), in batch order."""
    out: dict[int, list] = {}
    for preds in batches:
        if preds.boxes is None:
            continue
        box = preds.boxes
        names = box_category_names(categories, box.category)
        for k in range(len(box)):
            frame = int(preds.frame_indices[box.frame[k]])
            row = (*box.xyxy[k].tolist(), float(box.score[k]), names[k] or None)
            out.setdefault(frame, []).append(row)
    return out


# --- journal ----------------------------------------------------------------------------


def _same_boxes(a: BoxSet | None, b: BoxSet | None) -> None:
    assert (a is None) == (b is None)
    if a is not None and b is not None:
        for name in BoxSet.ARRAYS:
            got, want = getattr(b, name), getattr(a, name)
            assert got.dtype == want.dtype, name
            assert np.array_equal(got, want), name


def test_journal_keeps_boxes_and_counts_them(tmp_path: Path) -> None:
    batches = _mix(1)
    journal = read_journal(write_journal(tmp_path / "j.partial", batches))
    all_boxes = [b.boxes for b in batches if b.boxes is not None]
    assert journal.totals.boxes == sum(len(b) for b in all_boxes) > 0
    assert journal.totals.box_score_sum == pytest.approx(
        sum(float(b.score.sum()) for b in all_boxes)
    )
    with_any = 0
    for b in batches:
        found = b.valid.any(axis=1)
        if b.masks is not None:
            found[b.masks.frame] = True
        if b.boxes is not None:
            found[b.boxes.frame] = True
        with_any += int(found.sum())
    assert journal.totals.frames_with_instances == with_any
    assert journal.n_predicted == 20
    for want, got in zip(batches, journal.batches(), strict=True):
        _same_boxes(want.boxes, got.boxes)
        assert np.array_equal(got.frame_indices, want.frame_indices)


def test_a_journal_without_boxes_reads_boxes_as_none(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    batches = [_batch(rng, 0, boxes=False, poses=True)]
    journal = read_journal(write_journal(tmp_path / "j.partial", batches))
    assert journal.totals.boxes == 0 and journal.totals.box_score_sum == 0.0
    assert [b.boxes for b in journal.batches()] == [None]


def test_boxes_survive_a_torn_tail_and_the_resumed_run(tmp_path: Path) -> None:
    batches = _mix(3)
    path = write_journal(tmp_path / "j.partial", batches[:3])
    whole = path.stat().st_size
    rng = np.random.default_rng(9)
    lost = _batch(rng, 12)
    with JournalWriter(path, existing=read_journal(path)) as w:
        w.write_batch(lost)
    with path.open("r+b") as fh:  # a power cut in the middle of the last record
        fh.truncate(whole + (path.stat().st_size - whole) // 2)
    torn = read_journal(path)
    assert torn.torn_bytes > 0 and torn.valid_bytes == whole
    assert torn.totals.boxes == sum(b.n_boxes for b in batches[:3])
    with JournalWriter(path, existing=torn) as w:  # resume: redo the lost batch and go on
        for b in batches[3:]:
            w.write_batch(b)
    done = read_journal(path)
    assert done.torn_bytes == 0
    assert done.totals.boxes == sum(b.n_boxes for b in batches)
    assert done.totals.box_score_sum == pytest.approx(
        sum(float(np.sum(b.boxes.score)) for b in batches if b.boxes)
    )
    for want, got in zip(batches, done.batches(), strict=True):
        _same_boxes(want.boxes, got.boxes)


# --- .slp -------------------------------------------------------------------------------


@pytest.mark.parametrize("categories", [CLASSES, ("object",), ()])
def test_slp_matches_sleap_io_dataset_by_dataset(tmp_path: Path, categories: tuple) -> None:
    batches = _mix(4)
    ref, got = tmp_path / "ref.slp", tmp_path / "got.slp"
    _reference(ref, batches, categories)
    _stream(got, batches, categories)
    assert_same_datasets(ref, got)
    named = categories == CLASSES
    assert format_id(got) == (2.7 if named else 2.0)
    with h5py.File(got, "r") as f:
        assert ("categories" in f) == named
        if named:  # one catalog entry per class, however many boxes
            assert sorted(f["categories/name"][()].tolist()) == [b"mouse", b"rat"]

    expected = _expected_boxes(batches, categories)
    labels = sio.load_slp(str(got))
    seen = {}
    for lf in labels:
        assert all(isinstance(b, sio.PredictedBoundingBox) for b in lf.bboxes)
        rows = [
            (b.x1, b.y1, b.x2, b.y2, b.score, None if b.category is None else b.category.name)
            for b in lf.bboxes
        ]
        if rows:
            seen[lf.frame_idx] = rows
    assert sorted(seen) == sorted(expected)
    for frame, rows in expected.items():
        got_rows = sorted(seen[frame], key=lambda r: r[:4])
        want_rows = sorted(rows, key=lambda r: r[:4])
        for g, w in zip(got_rows, want_rows, strict=True):
            assert g[:4] == w[:4]  # float64 corners, exactly
            assert g[4] == pytest.approx(w[4], abs=1e-7)  # stored as float32
            assert g[5] == w[5]
    assert any(c is not None for rows in expected.values() for *_, c in rows) == named
    frames = {lf.frame_idx: lf for lf in labels}
    assert frames[0].instances == [] and frames[0].bboxes  # boxes only: still a frame
    assert any(lf.masks and lf.bboxes for lf in labels)


def test_a_frames_boxes_are_grouped_whatever_their_batch_order(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    batches = [_batch(rng, 4 * k, shuffle=True) for k in range(4)]
    ref, got = tmp_path / "ref.slp", tmp_path / "got.slp"
    _reference(ref, batches, CLASSES)
    _stream(got, batches, CLASSES)
    assert_same_datasets(ref, got)
    with h5py.File(got, "r") as f:
        assert np.all(np.diff(f["bboxes/frame_idx"][()]) >= 0)


def test_no_boxes_found_leaves_no_box_tables(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    batches = [_batch(rng, 0, boxes=False), _batch(rng, 4, boxes=False, poses=True)]
    batches[0].boxes = BoxSet.empty()
    ref, got = tmp_path / "ref.slp", tmp_path / "got.slp"
    _reference(ref, batches, CLASSES)
    _stream(got, batches, CLASSES)
    assert_same_datasets(ref, got)
    with h5py.File(got, "r") as f:
        assert "bboxes" not in f and "categories" not in f


def test_box_category_names() -> None:
    idx = np.array([0, 1, -1, 2, 5], np.int32)
    assert box_category_names(CLASSES, idx).tolist() == ["mouse", "rat", "", "", ""]
    assert box_category_names(("object",), idx).tolist() == [""] * 5
    assert box_category_names(("object", "x"), idx).tolist() == ["object", "x", "", "", ""]
    assert box_category_names((), idx).tolist() == [""] * 5


# --- write_from_journal, CSV, refusals --------------------------------------------------


def _from_journal(tmp_path: Path, batches: list[BatchPredictions], fmt: str, **kw) -> Path:
    journal = read_journal(write_journal(tmp_path / "j.partial", batches))
    out = tmp_path / f"out.{fmt}"
    write_from_journal(
        journal, out, FORMATS[fmt], _video(), kw.pop("skeleton", _skeleton()), (), {}, **kw
    )
    return out


def test_write_from_journal_passes_box_categories_on(tmp_path: Path) -> None:
    batches = _mix(7)
    out = _from_journal(tmp_path, batches, "slp", box_categories=CLASSES)
    ref = tmp_path / "ref.slp"
    _reference(ref, batches, CLASSES)
    with h5py.File(out, "r") as f, h5py.File(ref, "r") as r:
        assert f["bboxes/category"][()].tolist() == r["bboxes/category"][()].tolist()
        assert f["categories/name"][()].tolist() == r["categories/name"][()].tolist()
    assert format_id(out) == 2.7


def test_csv_of_a_box_detector_is_one_row_per_box(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    batches = [_batch(rng, 4 * k) for k in range(3)]
    out = _from_journal(
        tmp_path, batches, "csv", skeleton=_skeleton(), box_categories=CLASSES, poses=False,
        csv_empty_frames=True,
    )  # fmt: skip
    text = out.read_text()
    assert text.splitlines()[0] == "frame_idx,x1,y1,x2,y2,score,category"
    table = pd.read_csv(out, keep_default_na=False)
    want = [
        (frame, *row[:4], row[4], row[5] or "")
        for frame, rows in _expected_boxes(batches, CLASSES).items()
        for row in rows
    ]
    # With --csv-empty-frames a predicted frame without a box is one row holding only its
    # frame_idx, in frame order among the box rows.
    predicted = [int(f) for b in batches for f in b.frame_indices]
    empty = table["x1"] == ""
    assert sorted(set(table["frame_idx"])) == predicted
    assert table.loc[empty, "frame_idx"].tolist() == sorted(set(predicted) - {w[0] for w in want})
    assert (table.loc[empty, ["y1", "x2", "y2", "score", "category"]] == "").all().all()
    assert table["frame_idx"].is_monotonic_increasing
    boxes = table[~empty].astype({"x1": float, "y1": float, "x2": float, "y2": float})
    assert len(boxes) == len(want) > 0
    for got, w in zip(boxes.itertuples(index=False), want, strict=True):
        assert got.frame_idx == w[0]
        assert (got.x1, got.y1, got.x2, got.y2) == w[1:5]  # repr round trip: exact
        assert float(got.score) == pytest.approx(w[5], abs=1e-7)
        assert got.category == w[6]
    (tmp_path / "no_empty").mkdir()
    dropped = _from_journal(
        tmp_path / "no_empty", batches, "csv", box_categories=CLASSES, poses=False,
        empty_frames=False,
    )  # fmt: skip
    assert len(pd.read_csv(dropped)) == len(want)  # --no-empty-frames: one row per box only
    (tmp_path / "default").mkdir()
    default = _from_journal(
        tmp_path / "default", batches, "csv", box_categories=CLASSES, poses=False
    )
    assert len(pd.read_csv(default)) == len(want)  # by default too, as sleap-io's CSV writer


def test_csv_with_poses_and_boxes_has_both_row_kinds(tmp_path: Path) -> None:
    batches = _mix(9)
    out = _from_journal(tmp_path, batches, "csv", box_categories=CLASSES, csv_empty_frames=True)
    header = out.read_text().splitlines()[0].split(",")
    assert header == [
        "track", "frame_idx", "instance.score", "a.x", "a.y", "a.score", "b.x", "b.y",
        "b.score", "x1", "y1", "x2", "y2", "score", "category",
    ]  # fmt: skip
    table = pd.read_csv(out)
    is_box = table["x1"].notna()
    is_empty = table["x1"].isna() & table["instance.score"].isna()  # a frame_idx-only row
    n_instances = sum(b.n_instances for b in batches)
    assert int(is_box.sum()) == sum(b.n_boxes for b in batches)
    assert int((~is_box & ~is_empty).sum()) == n_instances
    found = {int(f) for f in table.loc[~is_empty, "frame_idx"]}
    predicted = {int(f) for b in batches for f in b.frame_indices}
    assert sorted(table.loc[is_empty, "frame_idx"]) == sorted(predicted - found)
    assert table.loc[is_empty].drop(columns="frame_idx").isna().all().all()
    table = table[~is_empty]
    is_box = is_box[~is_empty]
    assert table.loc[is_box, ["instance.score", "a.x", "b.score"]].isna().all().all()
    assert table.loc[~is_box, ["x1", "score", "category"]].isna().all().all()
    assert np.all(np.diff(table["frame_idx"].to_numpy()) >= 0)  # frame by frame
    inst = [
        (int(b.frame_indices[i]), float(b.instance_scores[i, j]))
        for b in batches
        for i, j in zip(*np.nonzero(b.valid), strict=True)
    ]
    got = table.loc[~is_box, ["frame_idx", "instance.score"]].itertuples(index=False)
    assert [(int(f), s) for f, s in got] == inst  # float32 -> float64 -> repr: exact
    names = set(table.loc[is_box, "category"].dropna())
    assert names <= set(CLASSES) and names


def test_pose_csv_is_unchanged_without_boxes(tmp_path: Path) -> None:
    rng = np.random.default_rng(10)
    batches = [_batch(rng, 0, boxes=False, poses=True)]
    out = _from_journal(tmp_path, batches, "csv")
    assert out.read_text().splitlines()[0] == (
        "track,frame_idx,instance.score,a.x,a.y,a.score,b.x,b.y,b.score"
    )


def test_csv_of_a_box_detector_that_found_nothing_has_the_box_header(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    out = _from_journal(
        tmp_path,
        [_batch(rng, 0, boxes=False)],
        "csv",
        skeleton=_skeleton(),
        box_categories=("object",),
        poses=False,
    )  # by default (as with --no-empty-frames) the header alone
    assert out.read_text() == "frame_idx,x1,y1,x2,y2,score,category\n"
    (tmp_path / "kept").mkdir()
    kept = _from_journal(
        tmp_path / "kept",
        [_batch(rng, 0, boxes=False)],
        "csv",
        skeleton=_skeleton(),
        box_categories=("object",),
        poses=False,
        csv_empty_frames=True,
    )  # --csv-empty-frames: each predicted frame is a row, empty here
    assert kept.read_text() == "frame_idx,x1,y1,x2,y2,score,category\n" + "".join(
        f"{i},,,,,,\n" for i in range(4)
    )


@pytest.mark.parametrize("fmt", ["analysis-h5", "nwb", "dlc-csv"])
def test_formats_without_boxes_refuse_a_journal_with_boxes(tmp_path: Path, fmt: str) -> None:
    rng = np.random.default_rng(12)
    batches = [_batch(rng, 0, poses=True), _batch(rng, 4)]
    n = sum(b.n_boxes for b in batches)
    with pytest.raises(OutputError) as err:
        _from_journal(tmp_path, batches, fmt, box_categories=CLASSES)
    message = str(err.value)
    assert "\n" not in message
    assert message == (
        f"{tmp_path / f'out.{fmt}'}: --format {fmt} has no place for bounding boxes "
        f"({n} predicted, kept in {tmp_path / 'j.partial'}); use --format slp, csv or via-csv"
    )
    assert not (tmp_path / f"out.{fmt}").exists()


@pytest.mark.parametrize("fmt", ["analysis-h5", "nwb", "dlc-csv"])
def test_the_per_track_formats_refuse_boxes_before_writing(tmp_path: Path, fmt: str) -> None:
    """The backstop every format goes through (the registry's ``holds``), not one per writer."""
    rng = np.random.default_rng(13)
    batches = [_batch(rng, 0), _batch(rng, 4, poses=True)]  # boxes, and poses with boxes
    journal = read_journal(write_journal(tmp_path / "j.partial", batches))
    out = tmp_path / f"x{FORMATS[fmt].suffix}"
    with pytest.raises(OutputError, match="has no place for bounding boxes .*slp, csv or via"):
        write_from_journal(journal, out, FORMATS[fmt], _video(), _skeleton(), (), {})
    assert not out.exists()


def test_formats_hold_boxes() -> None:
    assert {n for n, f in FORMATS.items() if f.holds_boxes} == {"slp", "csv", "via-csv"}
    assert {n for n, f in FORMATS.items() if f.holds_masks} == {"slp"}


def test_size_estimate_counts_boxes(tmp_path: Path) -> None:
    rng = np.random.default_rng(14)
    boxes = read_journal(
        write_journal(tmp_path / "j.partial", [_batch(rng, 4 * k) for k in range(5)])
    )
    none = read_journal(write_journal(tmp_path / "e.partial", [_batch(rng, 0, boxes=False)]))
    assert boxes.totals.boxes > 0 and boxes.totals.instances == none.totals.instances == 0
    for fmt in ("slp", "csv"):
        extra = estimate_bytes(boxes, N_NODES, FORMATS[fmt]) - estimate_bytes(
            none, N_NODES, FORMATS[fmt]
        )
        assert extra >= boxes.totals.boxes * 100
    out = _from_journal(tmp_path, [_batch(rng, 4 * k) for k in range(5)], "slp")
    assert out.stat().st_size <= estimate_bytes(
        read_journal(tmp_path / "j.partial"), N_NODES, FORMATS["slp"]
    )


# --- memory -----------------------------------------------------------------------------


def measure_memory(folder: Path, n_frames: int = 20000) -> dict[str, float]:
    """Journal, then stream to ``.slp`` and CSV, ``n_frames`` frames of 5 boxes each,
    sampling RSS after every batch; the baseline is taken after a warm-up of all steps."""
    per_batch = 16
    rng = np.random.default_rng(0)
    pool = [_batch(rng, 0, per_batch, boxes=False) for _ in range(8)]
    for preds in pool:
        m = 5 * per_batch
        x1y1 = rng.uniform(0, 900, (m, 2))
        xyxy = np.concatenate([x1y1, x1y1 + rng.uniform(5, 100, (m, 2))], axis=1)
        frames = np.repeat(np.arange(per_batch), 5)
        preds.boxes = BoxSet.build(frames, xyxy, rng.uniform(size=m), rng.integers(0, 2, m))

    def batch(k: int) -> BatchPredictions:
        preds = pool[k % len(pool)]
        preds.frame_indices = np.arange(k * per_batch, (k + 1) * per_batch, dtype=np.int64)
        return preds

    video = _video(n_frames)
    skeleton = _skeleton(nodes=False)

    def stream(path: Path, batches, journal=None, sample=None) -> None:
        hints = {} if journal is None else {"expected_boxes": journal.totals.boxes}
        with StreamingSlpWriter(
            path, video, skeleton, [], {}, box_categories=CLASSES, **hints
        ) as w:
            for preds in batches:
                w.add(preds)
                if sample is not None:
                    sample.append(rss_mb())

    warm = write_journal(folder / "warm.partial", [batch(k) for k in range(20)])
    stream(folder / "warm.slp", read_journal(warm).batches())
    write_csv(
        folder / "warm.csv",
        Source(read_journal(warm), video, skeleton, (), {}, box_categories=CLASSES, poses=False),
    )
    base = rss_mb()
    samples: list[float] = []
    start = time.perf_counter()
    n_batches = n_frames // per_batch
    with JournalWriter(folder / "run.partial", header={"fingerprint": {}}) as jw:
        for k in range(n_batches):
            jw.write_batch(batch(k))
            samples.append(rss_mb())
    journal = read_journal(folder / "run.partial")
    journal_peak = max(samples)
    stream(folder / "run.slp", journal.batches(), journal, samples)
    slp_peak = max(samples)
    write_csv(
        folder / "run.csv",
        Source(journal, video, skeleton, (), {}, box_categories=CLASSES, poses=False),
    )
    samples.append(rss_mb())
    seconds = time.perf_counter() - start
    with h5py.File(folder / "run.slp", "r") as f:
        assert len(f["bboxes/x1"]) == journal.totals.boxes == 5 * n_batches * per_batch
        assert f["bboxes/frame_idx"][-1] == n_batches * per_batch - 1
    with (folder / "run.csv").open() as fh:
        assert sum(1 for _ in fh) == journal.totals.boxes + 1
    return {
        **memory_numbers(folder, base, samples, journal_peak, seconds),
        "frames": n_batches * per_batch,
        "boxes": journal.totals.boxes,
        "csv_mb": (folder / "run.csv").stat().st_size / 2**20,
        "slp_peak_rss_mb": slp_peak,
    }


def test_memory_stays_flat_over_a_long_box_run(tmp_path: Path) -> None:
    numbers = run_memory_child(__file__, tmp_path, 20000)
    assert numbers["boxes"] == 100_000
    # 100 000 sio.PredictedBoundingBox objects would take ~100 MB; flat means the peak
    # stays within the writers' buffers (256 KB per column) and HDF5's chunk caches.
    assert numbers["growth_mb"] < 25.0, numbers


if __name__ == "__main__" and sys.argv[1:2] == ["memory"]:
    frames = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    print(json.dumps(measure_memory(Path(sys.argv[2]), frames)))
