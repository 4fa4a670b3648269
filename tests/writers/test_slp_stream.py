"""The streaming .slp writer produces exactly what ``sio.save_slp`` would."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.model.config import parse_config
from sleap_infer.sources.video import VideoInfo
from sleap_infer.writers.labels import LabelsBuilder, make_skeleton, make_video
from sleap_infer.writers.slp_stream import (
    MAX_CHUNK_BYTES,
    MIN_CHUNK_ROWS,
    StreamingSlpWriter,
    chunk_rows,
)

from model_factory import config_dict


def _random_batches(n_batches: int, seed: int = 0) -> list[BatchPredictions]:
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n_batches):
        n, n_inst, n_nodes = 4, 3, 3
        points = rng.uniform(0, 50, (n, n_inst, n_nodes, 2)).astype(np.float32)
        points[rng.uniform(size=(n, n_inst, n_nodes)) < 0.2] = np.nan
        out.append(
            BatchPredictions(
                points=points,
                point_scores=rng.uniform(size=(n, n_inst, n_nodes)).astype(np.float32),
                instance_scores=rng.uniform(size=(n, n_inst)).astype(np.float32),
                valid=rng.uniform(size=(n, n_inst)) < 0.6,  # some frames end up empty
                class_ids=rng.integers(-1, 3, (n, n_inst)).astype(np.int32),  # 2 = unknown
                class_scores=rng.uniform(size=(n, n_inst)).astype(np.float32),
                frame_indices=np.arange(4 * k, 4 * k + n),
            )
        )
    return out


def _tables(path: Path) -> dict[str, np.ndarray]:
    with h5py.File(path, "r") as f:
        return {k: f[k][()] for k in f if isinstance(f[k], h5py.Dataset)}


@pytest.mark.parametrize("empty_frames", [True, False])
@pytest.mark.parametrize("model_type", ["single_instance", "multi_class_bottomup"])
def test_tables_match_sleap_io_field_by_field(
    tmp_path: Path, model_type: str, empty_frames: bool
) -> None:
    cfg = parse_config(config_dict(model_type))
    info = VideoInfo(tmp_path / "v.mp4", 20, 30.0, 64, 96, True, "h264")
    batches = _random_batches(5)
    if not cfg.class_names:
        for b in batches:
            b.class_ids = b.class_scores = None
    builder = LabelsBuilder(
        make_video(info), make_skeleton(cfg), cfg.class_names, empty_frames=empty_frames
    )
    for b in batches:
        builder.add(b)
    sio.save_slp(builder.labels({"run": 1}), str(tmp_path / "ref.slp"))
    tracks = [sio.Track(name=n) for n in cfg.class_names]
    with StreamingSlpWriter(
        tmp_path / "stream.slp",
        make_video(info),
        make_skeleton(cfg),
        tracks,
        {"run": 1},
        empty_frames=empty_frames,
    ) as writer:
        for b in batches:
            writer.add(b)
    ref, got = _tables(tmp_path / "ref.slp"), _tables(tmp_path / "stream.slp")
    assert sorted(ref) == sorted(got)
    # Every predicted frame is a row, the empty ones too (sleap-nn's default); without
    # them only the frames with an instance.
    with_instances = sum(int(b.valid.any(axis=1).sum()) for b in batches)
    assert 0 < with_instances < 20
    assert len(ref["frames"]) == (20 if empty_frames else with_instances)
    for name, table in ref.items():
        if table.dtype.names is None:
            assert np.array_equal(table, got[name]), name
            continue
        assert table.dtype == got[name].dtype, name
        for field in table.dtype.names:
            nan_ok = table[field].dtype.kind == "f"
            assert np.array_equal(table[field], got[name][field], equal_nan=nan_ok), (name, field)
    labels = sio.load_slp(str(tmp_path / "stream.slp"))
    assert labels.provenance["run"] == 1
    assert len(labels) == len(ref["frames"])


def test_no_predictions_is_a_valid_empty_file(tmp_path: Path) -> None:
    cfg = parse_config(config_dict("single_instance"))
    info = VideoInfo(tmp_path / "v.mp4", 20, 30.0, 64, 96, True, "h264")
    empty = _random_batches(1)[0]
    empty.valid[:] = False
    empty.class_ids = empty.class_scores = None
    for name, keep in (("e.slp", True), ("n.slp", False)):
        with StreamingSlpWriter(
            tmp_path / name, make_video(info), make_skeleton(cfg), [], {}, empty_frames=keep
        ) as writer:
            writer.add(empty)
        labels = sio.load_slp(str(tmp_path / name))
        # Nothing found: every predicted frame without instances, or no frame at all.
        assert [(lf.frame_idx, len(lf.instances)) for lf in labels] == (
            [(i, 0) for i in range(4)] if keep else []
        )
        assert list(labels.videos[0].shape) == [20, 64, 96, 1]


def _stream(path: Path, batches: list[BatchPredictions], hint: bool = True) -> None:
    cfg = parse_config(config_dict("single_instance"))
    info = VideoInfo(path.parent / "v.mp4", 4 * len(batches), 30.0, 64, 96, True, "h264")
    for b in batches:
        b.class_ids = b.class_scores = None
    valid = np.concatenate([b.valid for b in batches])
    expected = (int(valid.sum()), int(valid.any(axis=1).sum())) if hint else (None, None)
    with StreamingSlpWriter(
        path, make_video(info), make_skeleton(cfg), [], {"run": 1}, *expected
    ) as writer:
        for b in batches:
            writer.add(b)


def _same_labels(a: sio.Labels, b: sio.Labels) -> None:
    assert [lf.frame_idx for lf in a] == [lf.frame_idx for lf in b]
    for x, y in zip(a, b):
        for i, j in zip(x.instances, y.instances, strict=True):
            np.testing.assert_array_equal(i.numpy(), j.numpy())
            np.testing.assert_array_equal(i.points["score"], j.points["score"])
            assert i.score == j.score


@pytest.mark.parametrize("n_batches", [1, 250])
def test_output_is_about_as_small_as_sleap_ios_own_save(tmp_path: Path, n_batches: int) -> None:
    # Fixed 16384-row chunks made every file at least 2 MB (45x sleap-io's save of 4 frames).
    _stream(tmp_path / "ours.slp", _random_batches(n_batches))
    ours = sio.load_slp(str(tmp_path / "ours.slp"))
    sio.save_slp(ours, str(tmp_path / "sio.slp"))
    _same_labels(ours, sio.load_slp(str(tmp_path / "sio.slp")))
    size, theirs = (tmp_path / "ours.slp").stat().st_size, (tmp_path / "sio.slp").stat().st_size
    assert size < 2 * theirs, (size, theirs)
    if n_batches > 1:  # compressed: smaller than sleap-io's uncompressed tables
        assert size < theirs, (size, theirs)


def test_chunks_follow_the_expected_rows_within_bounds() -> None:
    assert chunk_rows(26, 40) == MIN_CHUNK_ROWS  # tiny tables: one small chunk
    assert chunk_rows(26, 5000) == 5000  # one chunk holds the whole table
    assert chunk_rows(26, 10**8) == MAX_CHUNK_BYTES // 26  # long videos: 256 KB chunks
    assert chunk_rows(26, None) == MAX_CHUNK_BYTES // 26


def test_more_rows_than_expected_and_no_hint_still_read_back(tmp_path: Path) -> None:
    batches = _random_batches(40, seed=3)
    _stream(tmp_path / "hinted.slp", batches)
    _stream(tmp_path / "plain.slp", batches, hint=False)
    hinted, plain = (
        sio.load_slp(str(tmp_path / "hinted.slp")),
        sio.load_slp(str(tmp_path / "plain.slp")),
    )
    _same_labels(hinted, plain)
    with h5py.File(tmp_path / "hinted.slp", "r") as f:
        table = f["pred_points"]
        assert table.compression == "gzip" and table.shuffle
        assert table.chunks[0] == max(MIN_CHUNK_ROWS, len(table))


def test_rows_are_written_before_close_so_memory_stays_bounded(tmp_path: Path) -> None:
    cfg = parse_config(config_dict("single_instance"))
    info = VideoInfo(tmp_path / "v.mp4", 10**6, 30.0, 64, 96, True, "h264")
    batch = _random_batches(1)[0]
    batch.class_ids = batch.class_scores = None
    batch.valid[:] = True
    per_batch = (
        int(batch.valid.sum())
        * 3
        * np.dtype(
            [("x", "f8"), ("y", "f8"), ("visible", "?"), ("complete", "?"), ("score", "f8")]
        ).itemsize
    )
    n = 4 * MAX_CHUNK_BYTES // per_batch  # about 1 MB of point rows
    with StreamingSlpWriter(tmp_path / "s.slp", make_video(info), make_skeleton(cfg), [], {}) as w:
        for k in range(n):
            batch.frame_indices = np.arange(4 * k, 4 * k + 4)
            w.add(batch)
            table = w._tables["pred_points"]
            assert w._pending_rows["pred_points"] * table.dtype.itemsize < MAX_CHUNK_BYTES
        assert table.shape[0] >= (n * per_batch - MAX_CHUNK_BYTES) // table.dtype.itemsize
    assert len(sio.load_slp(str(tmp_path / "s.slp"))) == 4 * n
