"""The streaming .slp writer produces exactly what ``sio.save_slp`` would."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.io.slp_stream import StreamingSlpWriter
from sleap_infer.io.video import VideoInfo
from sleap_infer.io.writer import LabelsBuilder, make_skeleton, make_video
from sleap_infer.model.config import parse_config
from sleap_infer.vocab.predictions import BatchPredictions

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


@pytest.mark.parametrize("model_type", ["single_instance", "multi_class_bottomup"])
def test_tables_match_sleap_io_field_by_field(tmp_path: Path, model_type: str) -> None:
    cfg = parse_config(config_dict(model_type))
    info = VideoInfo(tmp_path / "v.mp4", 20, 30.0, 64, 96, True, "h264")
    batches = _random_batches(5)
    if not cfg.class_names:
        for b in batches:
            b.class_ids = b.class_scores = None
    builder = LabelsBuilder(make_video(info), make_skeleton(cfg), cfg.class_names)
    for b in batches:
        builder.add(b)
    sio.save_slp(builder.labels({"run": 1}), str(tmp_path / "ref.slp"))
    tracks = [sio.Track(name=n) for n in cfg.class_names]
    with StreamingSlpWriter(
        tmp_path / "stream.slp", make_video(info), make_skeleton(cfg), tracks, {"run": 1}
    ) as writer:
        for b in batches:
            writer.add(b)
    ref, got = _tables(tmp_path / "ref.slp"), _tables(tmp_path / "stream.slp")
    assert sorted(ref) == sorted(got)
    assert len(ref["frames"]) > 0 and len(ref["frames"]) < 20
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
    with StreamingSlpWriter(
        tmp_path / "e.slp", make_video(info), make_skeleton(cfg), [], {}
    ) as writer:
        writer.add(empty)
    labels = sio.load_slp(str(tmp_path / "e.slp"))
    assert len(labels) == 0
    assert list(labels.videos[0].shape) == [20, 64, 96, 1]
