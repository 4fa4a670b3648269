"""Writing predictions: sleap-io round trip, atomic saves, default names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import OutputError
from sleap_infer.core.masks import MaskSet
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.model.config import parse_config
from sleap_infer.sources.video import VideoInfo
from sleap_infer.writers.labels import LabelsBuilder, make_skeleton, make_video
from sleap_infer.writers.outputs import atomic_write, default_output_path

from model_factory import config_dict


def atomic_save(labels: sio.Labels, path: Path) -> None:
    """A whole ``Labels`` saved the way every output is: temporary sibling, fsync, rename."""
    atomic_write(path, lambda tmp: sio.save_slp(labels, str(tmp)))


def _info(tmp_path: Path) -> VideoInfo:
    return VideoInfo(tmp_path / "v.mp4", 10, 30.0, 64, 96, True, "h264")


def _batch() -> BatchPredictions:
    points = np.array(
        [[[[1, 2], [3, 4], [np.nan, np.nan]]], [[[5, 6], [7, 8], [9, 10]]]], np.float32
    )
    return BatchPredictions(
        points=points,
        point_scores=np.array([[[0.5, 0.6, np.nan]], [[0.7, 0.8, 0.9]]], np.float32),
        instance_scores=np.array([[1.1], [2.4]], np.float32),
        valid=np.array([[True], [False]]),
        frame_indices=np.array([3, 4]),
    )


def test_labels_roundtrip_through_sleap_io(tmp_path: Path) -> None:
    cfg = parse_config(config_dict("single_instance"))
    builder = LabelsBuilder(make_video(_info(tmp_path)), make_skeleton(cfg))
    builder.add(_batch())
    out = tmp_path / "out.slp"
    atomic_save(builder.labels({"backend": "torch"}), out)
    labels = sio.load_slp(str(out))
    # Frame 4's only instance is invalid: an empty frame, kept (as sleap-nn keeps it).
    assert [(lf.frame_idx, len(lf.instances)) for lf in labels] == [(3, 1), (4, 0)]
    lf = labels[0]
    assert lf.frame_idx == 3
    inst = lf.instances[0]
    np.testing.assert_allclose(inst.numpy()[:2], [[1, 2], [3, 4]])
    assert np.isnan(inst.numpy()[2]).all()
    assert inst.score == pytest.approx(1.1)
    assert [n.name for n in labels.skeleton.nodes] == ["head", "thorax", "tail"]
    assert len(labels.skeleton.edges) == 2
    assert labels.provenance["backend"] == "torch"
    dropping = LabelsBuilder(make_video(_info(tmp_path)), make_skeleton(cfg), empty_frames=False)
    dropping.add(_batch())
    assert [lf.frame_idx for lf in dropping.labels({})] == [3]  # no_empty_frames
    assert labels.videos[0].filename == str(tmp_path / "v.mp4")
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_class_ids_become_named_tracks(tmp_path: Path) -> None:
    cfg = parse_config(config_dict("multi_class_bottomup"))
    batch = _batch()
    batch.class_ids = np.array([[1], [0]], np.int32)
    batch.class_scores = np.array([[0.75], [0.5]], np.float32)
    builder = LabelsBuilder(make_video(_info(tmp_path)), make_skeleton(cfg), cfg.class_names)
    builder.add(batch)
    atomic_save(builder.labels({}), tmp_path / "t.slp")
    labels = sio.load_slp(str(tmp_path / "t.slp"))
    inst = labels[0].instances[0]
    assert inst.track.name == "male"
    assert inst.tracking_score == pytest.approx(0.75)
    assert [t.name for t in labels.tracks] == ["female", "male"]


def test_unwritable_destination_is_one_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where the output folder should be")
    with pytest.raises(OutputError, match=r"not_a_dir/x\.slp: cannot write predictions"):
        atomic_save(sio.Labels(), blocker / "x.slp")


def test_failed_save_leaves_previous_file_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "p.slp"
    out.write_bytes(b"previous good file")

    def boom(labels: sio.Labels, filename: str, **kwargs: object) -> None:
        Path(filename).write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sio, "save_slp", boom)
    with pytest.raises(
        OutputError, match=r"p\.slp: no space left on device \([\d.]+ [KMG]B free\)"
    ):
        atomic_save(sio.Labels(), out)
    assert out.read_bytes() == b"previous good file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.slp"]


def test_default_output_path_keeps_extension() -> None:
    assert default_output_path(Path("/d/a.mp4")) == Path("/d/a.mp4.predictions.slp")


def test_unmatched_identity_gets_no_track(tmp_path: Path) -> None:
    # Top-down multi-class: a third animal when there are two classes has class_id -1.
    cfg = parse_config(config_dict("multi_class_topdown"))
    batch = _batch()
    batch.valid = np.array([[True], [True]])
    batch.class_ids = np.array([[-1], [0]], np.int32)
    batch.class_scores = np.array([[np.nan], [0.9]], np.float32)
    builder = LabelsBuilder(make_video(_info(tmp_path)), make_skeleton(cfg), cfg.class_names)
    builder.add(batch)
    atomic_save(builder.labels({}), tmp_path / "t.slp")
    labels = sio.load_slp(str(tmp_path / "t.slp"))
    assert labels[0].instances[0].track is None
    assert labels[1].instances[0].track.name == "female"
    assert labels[1].instances[0].tracking_score == pytest.approx(0.9)


@pytest.mark.parametrize("mask_output", ["mask", "polygon", "both"])
def test_masks_become_predicted_masks_and_polygons_on_their_frames(
    tmp_path: Path, mask_output: str
) -> None:
    cfg = parse_config(config_dict("single_instance"))
    square = np.zeros((6, 8), bool)
    square[1:4, 2:6] = True
    batch = BatchPredictions.empty(3, 3)
    batch.frame_indices = np.array([5, 6, 7])
    batch.masks = MaskSet.build(
        [2, 0, 1], [square, square, np.zeros((4, 4), bool)], [0.5, 0.7, 0.9],
        [(0.5, 0.5)] * 3, [(10.0, 20.0), (0.0, 0.0), (0.0, 0.0)],
    )  # fmt: skip
    builder = LabelsBuilder(
        make_video(_info(tmp_path)), make_skeleton(cfg), mask_output=mask_output
    )
    builder.add(batch)
    labels = builder.labels({})
    assert [lf.frame_idx for lf in labels] == [5, 6, 7]  # every frame given is kept ...
    assert not labels[1].masks and not labels[1].rois  # ... frame 6's empty mask is dropped
    assert builder.n_instances == 0
    if mask_output != "polygon":
        mask = labels[2].masks[0]
        assert isinstance(mask, sio.PredictedSegmentationMask)
        assert (mask.instance, mask.track) == (None, None)
        assert np.array_equal(mask.data, square)
        assert (mask.score, mask.scale, mask.offset) == (0.5, (0.5, 0.5), (10.0, 20.0))
    else:
        assert not any(lf.masks for lf in labels)
    if mask_output != "mask":
        roi = labels[2].rois[0]
        assert isinstance(roi, sio.PredictedROI) and roi.score == 0.5
        assert roi.geometry.bounds == (14.0, 22.0, 22.0, 28.0)  # mask / scale + offset
    else:
        assert not any(lf.rois for lf in labels)
