"""Segmentation masks (and polygon ROIs) as outputs: journal round trip, the streaming
``.slp`` against ``sio.save_slp`` table by table, polygons against sleap-nn's own file,
formats that cannot hold masks, and flat memory on a long full-resolution run.

Run as a script
(``PYTHONPATH=tests python tests/writers/test_mask_outputs.py memory FOLDER [FRAMES]``)
it prints the memory measurement as JSON; the test runs it in a subprocess.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import OutputError
from sleap_infer.core.masks import MaskSet
from sleap_infer.core.polygons import has_pixels, mask_rois, packaged, simplified
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import JournalWriter, read_journal
from sleap_infer.writers.labels import LabelsBuilder
from sleap_infer.writers.outputs import estimate_bytes, write_from_journal
from sleap_infer.writers.registry import FORMATS
from sleap_infer.writers.slp_stream import StreamingSlpWriter

from slp_tables import memory_numbers, rss_mb, run_memory_child

N_NODES = 2
REFERENCE = "reference/bottomup_segmentation_both.slp"  # sleap-nn 0.3.5, --mask_output both


def _video(n_frames: int = 40, height: int = 64, width: int = 64) -> sio.Video:
    return sio.Video(
        filename="v.mp4",
        backend_metadata={"shape": [n_frames, height, width, 1], "fps": 30.0, "grayscale": True},
        open_backend=False,
    )


def _skeleton() -> sio.Skeleton:
    return sio.Skeleton(nodes=["a", "b"], edges=[("a", "b")], name="seg")


def _blob(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A filled ellipse, sometimes with a second part (a MultiPolygon) or a hole."""
    yy, xx = np.mgrid[:height, :width]
    cy, cx = rng.uniform(0.3, 0.7) * height, rng.uniform(0.3, 0.7) * width
    ry, rx = rng.uniform(0.15, 0.35) * height, rng.uniform(0.15, 0.35) * width
    mask = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
    if rng.uniform() < 0.3:
        mask[: height // 5, : width // 5] = True  # a separate corner piece
    if rng.uniform() < 0.3:
        mask[int(cy) - 1 : int(cy) + 1, int(cx) - 1 : int(cx) + 1] = False  # a hole
    return mask


def _mask_batch(
    rng: np.random.Generator, first: int, n: int = 4, spatial: bool = True, poses: bool = False
) -> tuple[BatchPredictions, list[tuple[int, np.ndarray]]]:
    """A batch of ``n`` frames with 0-3 masks each (one empty, which outputs drop);
    also returns the non-empty ``(frame index, mask)`` pairs, in output order."""
    frames, masks, scores, scales, offsets = [], [], [], [], []
    expected = []
    for b in range(n):
        for _ in range(int(rng.integers(0, 4))):
            h, w = (int(v) for v in rng.integers(6, 24, 2))
            mask = _blob(rng, h, w)
            scale = (0.5, 0.5) if spatial and rng.uniform() < 0.7 else (1.0, 1.0)
            offset = (
                (float(rng.integers(-3, 20)), 7.0) if spatial and rng.uniform() < 0.3 else (0, 0)
            )
            frames.append(b)
            masks.append(mask)
            scores.append(float(rng.uniform(0.2, 3)))
            scales.append(scale)
            offsets.append(offset)
            expected.append((first + b, mask))
    frames.append(n - 1)  # a mask with no set pixel: never written, never counted
    masks.append(np.zeros((5, 5), bool))
    scores.append(0.9)
    scales.append((1.0, 1.0))
    offsets.append((0.0, 0.0))
    n_inst = 2 if poses else 0
    preds = BatchPredictions(
        points=rng.uniform(0, 60, (n, n_inst, N_NODES, 2)).astype(np.float32),
        point_scores=rng.uniform(size=(n, n_inst, N_NODES)).astype(np.float32),
        instance_scores=rng.uniform(size=(n, n_inst)).astype(np.float32),
        valid=rng.uniform(size=(n, n_inst)) < 0.5,
        frame_indices=np.arange(first, first + n, dtype=np.int64),
        masks=MaskSet.build(frames, masks, scores, scales, offsets),
    )
    expected.sort(key=lambda item: item[0])  # stable: each frame keeps its masks' order
    return preds, expected


def _batches(
    n_batches: int = 5, seed: int = 0, spatial: bool = True, poses: bool = False
) -> tuple[list[BatchPredictions], list[tuple[int, np.ndarray]]]:
    rng = np.random.default_rng(seed)
    batches, expected = [], []
    for k in range(n_batches):
        preds, masks = _mask_batch(rng, 4 * k, spatial=spatial, poses=poses)
        batches.append(preds)
        expected += masks
    return batches, expected


def _tables(path: Path) -> dict[str, np.ndarray]:
    with h5py.File(path, "r") as f:
        return {k: f[k][()] for k in f if isinstance(f[k], h5py.Dataset)}


def _format_id(path: Path) -> float:
    with h5py.File(path, "r") as f:
        return float(f["metadata"].attrs["format_id"])


def _assert_same_tables(ref: Path, got: Path, names: list[str] | None = None) -> None:
    a, b = _tables(ref), _tables(got)
    if names is None:
        assert sorted(a) == sorted(b)
        names = sorted(a)
    for name in names:
        table = a[name]
        assert table.shape == b[name].shape, name
        if table.dtype.names is None:
            assert np.array_equal(table, b[name]), name
            continue
        assert table.dtype == b[name].dtype, name
        for field in table.dtype.names:
            nan_ok = table[field].dtype.kind == "f"
            assert np.array_equal(table[field], b[name][field], equal_nan=nan_ok), (name, field)


def _stream(
    path: Path, batches: list[BatchPredictions], mask_output: str = "mask", **hints: int | bool
) -> None:
    with StreamingSlpWriter(
        path, _video(), _skeleton(), [], {"run": 1}, mask_output=mask_output, **hints
    ) as writer:
        for b in batches:
            writer.add(b)


def _reference(path: Path, batches: list[BatchPredictions], mask_output: str = "mask") -> None:
    builder = LabelsBuilder(_video(), _skeleton(), mask_output=mask_output)
    for b in batches:
        builder.add(b)
    sio.save_slp(builder.labels({"run": 1}), str(path))


def _journal(path: Path, batches: list[BatchPredictions]) -> Path:
    with JournalWriter(path, header={"fingerprint": {}}) as w:
        for b in batches:
            w.write_batch(b)
    return path


# --- journal ----------------------------------------------------------------------------


def test_journal_keeps_masks_and_counts_frames_with_masks(tmp_path: Path) -> None:
    batches, expected = _batches(4, seed=1, poses=True)
    journal = read_journal(_journal(tmp_path / "j.partial", batches))
    assert journal.totals.masks == len(expected)  # the empty masks are not counted
    kept = [packaged(b.masks) for b in batches]
    assert journal.totals.mask_score_sum == pytest.approx(sum(float(m.score.sum()) for m in kept))
    assert journal.totals.mask_rle_bytes == sum(4 * int(m.rle_len.sum()) for m in kept)
    detected = sum(
        int((b.valid.any(axis=1) | np.isin(np.arange(4), m.frame)).sum())
        for b, m in zip(batches, kept)
    )
    assert journal.totals.frames_with_instances == detected
    assert journal.totals.instances == sum(int(b.valid.sum()) for b in batches)
    for a, b in zip(batches, journal.batches()):
        assert b.masks is not None
        for name, array in a.masks.arrays().items():
            back = getattr(b.masks, name)
            assert back.dtype == array.dtype and np.array_equal(back, array), name


def test_a_journal_without_masks_reads_as_before(tmp_path: Path) -> None:
    batches, _ = _batches(2, poses=True)
    for b in batches:
        b.masks = None
    journal = read_journal(_journal(tmp_path / "j.partial", batches))
    totals = journal.totals
    assert (totals.masks, totals.mask_score_sum, totals.mask_rle_bytes) == (0, 0.0, 0)
    assert totals.frames_with_instances == sum(int(b.valid.any(axis=1).sum()) for b in batches)
    assert all(b.masks is None for b in journal.batches())


def test_masks_survive_an_interrupted_run_and_its_resume(tmp_path: Path) -> None:
    batches, _ = _batches(6, seed=2)
    clean = tmp_path / "clean.partial"
    _journal(clean, batches)
    torn = tmp_path / "torn.partial"
    _journal(torn, batches[:3])
    with torn.open("ab") as fh:  # a crash in the middle of the fourth record
        fh.write(clean.read_bytes()[torn.stat().st_size :][:50])
    partial = read_journal(torn)
    assert partial.torn_bytes == 50 and partial.n_predicted == 12
    with JournalWriter(torn, existing=partial) as w:
        for b in batches[3:]:
            w.write_batch(b)
    resumed, whole = read_journal(torn), read_journal(clean)
    assert (resumed.totals.masks, resumed.totals.mask_rle_bytes) == (
        whole.totals.masks,
        whole.totals.mask_rle_bytes,
    )
    for name, journal in (("clean", whole), ("resumed", resumed)):
        write_from_journal(
            journal, tmp_path / f"{name}.slp", FORMATS["slp"], _video(), _skeleton(), (), {}
        )
    _assert_same_tables(tmp_path / "clean.slp", tmp_path / "resumed.slp")


# --- streaming .slp against sio.save_slp ------------------------------------------------


@pytest.mark.parametrize(
    ("mask_output", "spatial", "poses", "format_id"),
    [
        ("mask", True, False, 2.1),
        ("mask", False, False, 1.9),
        ("polygon", True, False, 1.9),  # only ROIs: sleap-io checks masks for scale/offset
        ("both", True, False, 2.1),
        ("both", True, True, 2.1),  # instances and masks in the same frames
    ],
)
def test_tables_match_sleap_io_field_by_field(
    tmp_path: Path, mask_output: str, spatial: bool, poses: bool, format_id: float
) -> None:
    batches, expected = _batches(5, seed=3, spatial=spatial, poses=poses)
    _reference(tmp_path / "ref.slp", batches, mask_output)
    _stream(tmp_path / "stream.slp", batches, mask_output)
    _assert_same_tables(tmp_path / "ref.slp", tmp_path / "stream.slp")
    assert _format_id(tmp_path / "ref.slp") == _format_id(tmp_path / "stream.slp") == format_id

    labels = sio.load_slp(str(tmp_path / "stream.slp"))
    masks = [(lf.frame_idx, m) for lf in labels for m in lf.masks]
    rois = [(lf.frame_idx, r) for lf in labels for r in lf.rois]
    assert len(masks) == (len(expected) if mask_output != "polygon" else 0)
    assert len(rois) == (len(expected) if mask_output != "mask" else 0)
    ref = sio.load_slp(str(tmp_path / "ref.slp"))
    assert [lf.frame_idx for lf in labels] == [lf.frame_idx for lf in ref]
    for (frame, got), (want_frame, want) in zip(masks, expected):
        assert frame == want_frame
        assert isinstance(got, sio.PredictedSegmentationMask)
        assert got.instance is None and got.track is None
        assert np.array_equal(got.data, want)
    kept = MaskSet.concat([packaged(b.masks) for b in batches])
    for k, (_, got) in enumerate(masks):
        assert got.score == float(kept.score[k])
        assert got.scale == tuple(float(v) for v in kept.scale[k])
        assert got.offset == tuple(float(v) for v in kept.offset[k])
    ref_rois = [(lf.frame_idx, r) for lf in ref for r in lf.rois]
    assert len(rois) == len(ref_rois)
    for (frame, got), (want_frame, want) in zip(rois, ref_rois):
        assert frame == want_frame and isinstance(got, sio.PredictedROI)
        assert got.geometry.wkt == want.geometry.wkt and got.score == want.score


def test_frames_with_masks_only_get_a_row_and_nothing_found_has_no_mask_tables(
    tmp_path: Path,
) -> None:
    batches, expected = _batches(3, seed=4)
    predicted = [int(f) for b in batches for f in b.frame_indices]
    with_masks = sorted({f for f, _ in expected})
    assert with_masks != predicted  # some frames have no mask
    for keep, frames in ((False, with_masks), (True, predicted)):
        _stream(tmp_path / "s.slp", batches, empty_frames=keep)
        tables = _tables(tmp_path / "s.slp")
        assert len(tables["instances"]) == 0
        assert tables["frames"]["frame_idx"].tolist() == frames  # empty frames kept by default
        starts, ends = tables["frames"]["instance_id_start"], tables["frames"]["instance_id_end"]
        assert (starts == ends).all()

    for b in batches:  # only empty masks left: a file like sio.save_slp of nothing
        b.masks = b.masks.select(~has_pixels(b.masks))
    nothing = sio.Labels(videos=[_video()], skeletons=[_skeleton()], provenance={"run": 1})
    sio.save_slp(nothing, str(tmp_path / "r.slp"))
    for keep, frames in ((False, []), (True, predicted)):
        _stream(tmp_path / "e.slp", batches, empty_frames=keep)
        assert sorted(_tables(tmp_path / "e.slp")) == sorted(_tables(tmp_path / "r.slp"))
        assert _format_id(tmp_path / "e.slp") == _format_id(tmp_path / "r.slp")
        labels = sio.load_slp(str(tmp_path / "e.slp"))
        assert [lf.frame_idx for lf in labels] == frames
        assert not any(lf.masks or lf.instances for lf in labels)


def test_masks_of_a_batch_out_of_frame_order_are_grouped_by_frame(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    shapes = [_blob(rng, 10, 12) for _ in range(4)]
    masks = MaskSet.build([2, 0, 2, 1], shapes, [0.1, 0.2, 0.3, 0.4], [(1, 1)] * 4, [(0, 0)] * 4)
    preds = BatchPredictions.empty(3, N_NODES)
    preds.frame_indices = np.array([10, 11, 12])
    preds.masks = masks
    _stream(tmp_path / "s.slp", [preds])
    _reference(tmp_path / "r.slp", [preds])
    _assert_same_tables(tmp_path / "r.slp", tmp_path / "s.slp")
    labels = sio.load_slp(str(tmp_path / "s.slp"))
    scores = [[round(m.score, 6) for m in lf.masks] for lf in labels]
    assert scores == [[0.2], [0.4], [0.1, 0.3]]
    assert np.array_equal(labels[2].masks[1].data, shapes[2])


def test_chunks_follow_the_hints_and_buffers_stay_bounded(tmp_path: Path) -> None:
    batches, expected = _batches(30, seed=6)
    rle_bytes = sum(4 * int(packaged(b.masks).rle_len.sum()) for b in batches)
    _stream(
        tmp_path / "s.slp",
        batches,
        "both",
        expected_masks=len(expected),
        expected_rle_bytes=rle_bytes,
    )
    with h5py.File(tmp_path / "s.slp", "r") as f:
        for name in ("masks", "mask_rle", "mask_names", "rois", "roi_wkb", "roi_sources"):
            assert f[name].compression == "gzip" and f[name].maxshape == (None,), name
        assert f["masks"].chunks == (max(256, len(expected)),)
        assert f["mask_rle"].chunks == (max(256, rle_bytes),) and len(f["mask_rle"]) == rle_bytes
    _stream(tmp_path / "plain.slp", batches, "both")
    _assert_same_tables(tmp_path / "s.slp", tmp_path / "plain.slp")


def test_unknown_mask_output_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="mask_output 'outline'"):
        StreamingSlpWriter(tmp_path / "s.slp", _video(), _skeleton(), [], {}, mask_output="outline")
    with pytest.raises(ValueError, match="mask_output 'outline'"):
        LabelsBuilder(_video(), _skeleton(), mask_output="outline")


# --- write_from_journal -----------------------------------------------------------------


@pytest.mark.parametrize("mask_output", ["mask", "polygon", "both"])
def test_write_from_journal_passes_the_mask_output_on(tmp_path: Path, mask_output: str) -> None:
    batches, expected = _batches(3, seed=7)
    journal = read_journal(_journal(tmp_path / "j.partial", batches))
    out = tmp_path / "out.slp"
    write_from_journal(
        journal, out, FORMATS["slp"], _video(), _skeleton(), (), {"run": 1},
        mask_output=mask_output, polygon_epsilon=0.05,
    )  # fmt: skip
    labels = sio.load_slp(str(out))
    n_masks = sum(len(lf.masks) for lf in labels)
    n_rois = sum(len(lf.rois) for lf in labels)
    assert n_masks == (0 if mask_output == "polygon" else len(expected))
    assert n_rois == (0 if mask_output == "mask" else len(expected))
    if n_rois:
        kept = MaskSet.concat([packaged(b.masks) for b in batches])
        coarse = [roi.geometry.wkt for _, roi in mask_rois(kept, 0.05)]
        assert [r.geometry.wkt for lf in labels for r in lf.rois] == coarse


@pytest.mark.parametrize("fmt", ["csv", "analysis-h5", "nwb", "dlc-csv", "via-csv"])
def test_formats_without_masks_refuse_a_journal_with_masks(tmp_path: Path, fmt: str) -> None:
    assert [f.name for f in FORMATS.values() if f.holds_masks] == ["slp"]
    batches, expected = _batches(2, seed=8)
    journal = read_journal(_journal(tmp_path / "j.partial", batches))
    out = tmp_path / f"out{FORMATS[fmt].suffix}"
    with pytest.raises(OutputError) as err:
        write_from_journal(journal, out, FORMATS[fmt], _video(), _skeleton(), (), {})
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{out}: --format {fmt} has no place")
    assert f"({len(expected)} predicted, kept in {journal.path})" in message
    assert not out.exists()


def test_size_estimate_counts_masks_and_polygons(tmp_path: Path) -> None:
    batches, _ = _batches(3, seed=9)
    journal = read_journal(_journal(tmp_path / "j.partial", batches))
    slp = FORMATS["slp"]
    plain = estimate_bytes(journal, N_NODES, slp)
    assert plain > estimate_bytes(read_journal(_journal(tmp_path / "e.partial", [])), 2, slp)
    assert plain >= 32_000 + journal.totals.mask_rle_bytes
    assert estimate_bytes(journal, N_NODES, slp, "both") > plain
    _stream(tmp_path / "s.slp", batches, "both")
    assert (tmp_path / "s.slp").stat().st_size < estimate_bytes(journal, N_NODES, slp, "both")


# --- polygons: sleap-nn's own output ----------------------------------------------------


def _reference_batches(labels: sio.Labels) -> list[BatchPredictions]:
    """sleap-nn's masks as our batches (4 frames each); the ROIs are what to rebuild."""
    frames = list(labels)
    out = []
    for start in range(0, len(frames), 4):
        group = frames[start : start + 4]
        rows, runs, items = [], [], []
        for b, lf in enumerate(group):
            for m in lf.masks:
                rows.append(b)
                runs.append(np.asarray(m.rle_counts, np.uint32))
                items.append(m)
        preds = BatchPredictions.empty(len(group), len(labels.skeleton.nodes))
        preds.frame_indices = np.array([lf.frame_idx for lf in group], np.int64)
        preds.masks = MaskSet(
            frame=np.asarray(rows, np.int32),
            score=np.asarray([m.score for m in items], np.float32),
            size=np.asarray([(m.height, m.width) for m in items], np.int32).reshape(-1, 2),
            scale=np.asarray([m.scale for m in items], np.float32).reshape(-1, 2),
            offset=np.asarray([m.offset for m in items], np.float32).reshape(-1, 2),
            rle=np.concatenate(runs) if runs else np.zeros(0, np.uint32),
            rle_len=np.asarray([len(r) for r in runs], np.int64),
        )
        out.append(preds)
    return out


def test_polygons_are_sleap_nns_to_the_coordinate(shared: Path, tmp_path: Path) -> None:
    path = shared / REFERENCE
    if not path.is_file():
        pytest.skip(f"{path} not found")
    labels = sio.load_slp(str(path), open_videos=False)
    want = [(lf.frame_idx, roi) for lf in labels for roi in lf.rois]
    assert len(want) == 98
    got = []
    for preds in _reference_batches(labels):
        for k, roi in mask_rois(preds.masks, 0.01):
            got.append((int(preds.frame_indices[preds.masks.frame[k]]), roi))
    assert len(got) == len(want)
    kinds = set()
    for (frame, a), (want_frame, b) in zip(got, want):
        assert frame == want_frame
        assert a.geometry.wkt == b.geometry.wkt
        assert a.score == b.score
        kinds.add(a.geometry.geom_type)
    assert kinds == {"Polygon", "MultiPolygon"}  # the per-part simplification is exercised

    journal = read_journal(_journal(tmp_path / "j.partial", _reference_batches(labels)))
    out = tmp_path / "ours.slp"
    write_from_journal(
        journal, out, FORMATS["slp"], labels.video, labels.skeleton, (), {}, mask_output="both"
    )
    tables = ["frames", "instances", "masks", "mask_rle", "rois", "roi_wkb"]
    tables += [
        f"{kind}_{s}" for kind in ("mask", "roi") for s in ("categories", "names", "sources")
    ]
    _assert_same_tables(path, out, tables)
    assert _format_id(out) == _format_id(path) == 2.1


def test_a_segmentation_run_resumes_to_the_clean_result(
    shared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sleap_infer.core.options import PredictOptions
    from sleap_infer.journal import journal_path

    from conftest import interrupt_after_batches, pipeline

    model = shared / "models" / "synthetic_bottomup_segmentation"
    video = shared / "videos" / "synthetic_multi.mp4"
    pipe = pipeline([model], device="cpu", batch_size=4, options=PredictOptions(mask_output="both"))
    pipe.predict_to_file(video, output=tmp_path / "clean.slp")
    out = tmp_path / "resumed.slp"
    with monkeypatch.context() as m:
        interrupt_after_batches(m, 2)
        with pytest.raises(KeyboardInterrupt):
            pipe.predict_to_file(video, output=out)
    partial = read_journal(journal_path(out))
    assert partial.n_predicted == 8 and partial.totals.masks > 0
    resumed = pipe.predict_to_file(video, output=out, resume=True)
    assert (resumed.counts.frames, resumed.resumed_frames) == (24, 8)
    assert resumed.counts.frames_with_instances == 24
    tables = ["frames", "instances", "masks", "mask_rle", "rois", "roi_wkb"]
    _assert_same_tables(tmp_path / "clean.slp", out, tables)
    assert _format_id(out) == 2.1


def test_simplification_edge_cases() -> None:
    from shapely.geometry import MultiPolygon, Polygon

    square = Polygon([(0, 0), (4, 0), (4, 4), (0, 4)])
    assert simplified(square, 0) is square
    parts = MultiPolygon([square, Polygon([(10, 10), (11, 10), (11, 11)])])
    assert simplified(parts, 0.01).equals(parts)
    mask = MaskSet.build([0], [np.zeros((3, 3), bool)], [1.0], [(1, 1)], [(0, 0)])
    assert mask_rois(mask, 0.01) == []  # no silhouette, no ROI


# --- memory -----------------------------------------------------------------------------


def _full_res_pool(n: int, size: int, per_batch: int) -> list[MaskSet]:
    """``n`` distinct batches of two ``size`` x ``size`` masks per frame, encoded once."""
    rng = np.random.default_rng(0)
    pool = []
    for _ in range(n):
        frames, masks = [], []
        for b in range(per_batch):
            for _ in range(2):
                frames.append(b)
                masks.append(_blob(rng, size, size))
        pool.append(
            MaskSet.build(
                frames, masks, [1.0] * len(masks), [(1, 1)] * len(masks), [(0, 0)] * len(masks)
            )
        )
    return pool


def measure_memory(folder: Path, n_frames: int = 5000, size: int = 1024) -> dict[str, float]:
    """Journal, then stream to ``.slp``, ``n_frames`` frames of two full-resolution masks,
    sampling RSS after every batch; the baseline is taken after a warm-up of both steps."""
    per_batch = 8
    pool = _full_res_pool(8, size, per_batch)

    def batch(k: int) -> BatchPredictions:
        preds = BatchPredictions.empty(per_batch, N_NODES)
        preds.frame_indices = np.arange(k * per_batch, (k + 1) * per_batch, dtype=np.int64)
        preds.masks = pool[k % len(pool)]
        return preds

    video = _video(n_frames, size, size)
    with StreamingSlpWriter(folder / "warm.slp", video, _skeleton(), [], {}) as w:
        for k in range(20):
            w.add(batch(k))
    with JournalWriter(folder / "warm.partial", header={"fingerprint": {}}) as jw:
        for k in range(20):
            jw.write_batch(batch(k))
    base = rss_mb()
    samples = []
    start = time.perf_counter()
    n_batches = n_frames // per_batch
    with JournalWriter(folder / "run.partial", header={"fingerprint": {}}) as jw:
        for k in range(n_batches):
            jw.write_batch(batch(k))
            samples.append(rss_mb())
    journal = read_journal(folder / "run.partial")
    journal_peak = max(samples)
    with StreamingSlpWriter(
        folder / "run.slp",
        video,
        _skeleton(),
        [],
        {},
        expected_frames=journal.totals.frames_with_instances,
        expected_masks=journal.totals.masks,
        expected_rle_bytes=journal.totals.mask_rle_bytes,
    ) as w:
        for preds in journal.batches():
            w.add(preds)
            samples.append(rss_mb())
    samples.append(rss_mb())
    seconds = time.perf_counter() - start
    with h5py.File(folder / "run.slp", "r") as f:
        assert len(f["masks"]) == journal.totals.masks == 2 * n_batches * per_batch
    return {
        **memory_numbers(folder, base, samples, journal_peak, seconds),
        "frames": n_batches * per_batch,
        "masks": journal.totals.masks,
        "rle_mb": journal.totals.mask_rle_bytes / 2**20,
        "bitmaps_mb": journal.totals.masks * size * size / 2**20,
    }


def test_memory_stays_flat_over_a_long_full_resolution_run(tmp_path: Path) -> None:
    numbers = run_memory_child(__file__, tmp_path, 5000)
    assert numbers["masks"] == 10_000
    # Holding the run would take its RLE (tens of MB) or bitmaps (10 GB); flat means the
    # peak stays within buffers and caches of the baseline.
    assert numbers["growth_mb"] < min(40.0, numbers["rle_mb"] / 2), numbers


if __name__ == "__main__" and sys.argv[1:2] == ["memory"]:
    frames = int(sys.argv[3]) if len(sys.argv) > 3 else 5000
    print(json.dumps(measure_memory(Path(sys.argv[2]), frames)))
