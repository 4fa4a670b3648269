"""Reading .slp files (ours, sleap-nn's, SLEAP's) into dense per-video arrays."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import sleap_io as sio
from qc_scenes import write_project as _project

from sleap_infer.qc import load as qc_load
from sleap_infer.qc.load import QCInputError, load_videos


def test_dense_layout_of_a_tracked_file(tmp_path: Path) -> None:
    (data,) = load_videos(_project(tmp_path / "p.slp"))
    assert data.frames.tolist() == [0, 1, 2, 5]
    assert data.tracked and data.track_names == ["left", "right", "(untracked)#0"]
    assert data.node_names == ["a", "b", "c"] and data.edges == [(0, 1), (1, 2)]
    assert data.frame_size == (640, 480) and data.n_frames == 50
    assert data.present.tolist() == [[1, 1, 0], [1, 1, 0], [1, 1, 1], [1, 1, 0]]
    assert np.isnan(data.points[1, 1, 2]).all() and data.point_scores[1, 1, 2] == 0
    # the user instance replaced the prediction it was made from, with score 1
    assert data.points[2, 1, 0].tolist() == [113.0, 121.0]
    assert data.point_scores[2, 1].tolist() == [1.0, 1.0, 1.0]
    assert data.instance_scores[2, 1] == 1.0 and data.instance_scores[0, 0] == pytest.approx(0.8)


def test_table_path_matches_the_object_path(tmp_path: Path) -> None:
    """The vectorised reader and sleap-io's objects agree (the objects are the truth)."""
    path = _project(tmp_path / "p.slp")
    (fast,) = load_videos(path)
    labels = sio.load_slp(str(path), open_videos=False)
    slow = qc_load._dense(labels, labels.videos[0], 0, list(labels.labeled_frames), [], None, {})
    for name in ("frames", "points", "point_scores", "instance_scores", "present"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name))
    assert fast.track_names == slow.track_names


def test_provenance_bad_frames_and_max_tracks(tmp_path: Path) -> None:
    path = _project(tmp_path / "p.slp")
    with h5py.File(path, "r+") as f:
        meta = json.loads(f["metadata"].attrs["json"])
        meta["provenance"] = {
            "bad_frames": [{"frame_idx": 3, "count": 2, "kind": "decode", "reason": "x"}],
            "tracking": {"options": {"max_tracks": 2}},
        }
        f["metadata"].attrs["json"] = json.dumps(meta)
    (data,) = load_videos(path)
    assert data.bad_frames == [3, 4] and data.max_tracks == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file"), (b"", "empty file"), (b"not hdf5", "not an .slp file")],
)
def test_bad_inputs_are_one_line(tmp_path: Path, content: bytes | None, message: str) -> None:
    path = tmp_path / "x.slp"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(QCInputError, match=message) as info:
        load_videos(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_other_suffix_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.h5"
    path.write_bytes(b"x")
    with pytest.raises(QCInputError, match=r"not an \.slp file"):
        load_videos(path)


def test_sleap_nn_outputs_and_projects(shared: Path) -> None:
    ref = shared / "reference"
    (emb,) = load_videos(ref / "embedding_fused.slp")  # re-ID vectors, untracked
    assert emb.embeddings is not None and emb.embeddings.shape[:2] == emb.present.shape
    assert not emb.tracked
    (tracked,) = load_videos(ref / "embedding_tracked.slp")
    assert tracked.tracked and tracked.track_names == ["track_0", "track_1"]
    assert tracked.present.all()
    (project,) = load_videos(shared / "videos" / "minimal_instance.pkg.slp")  # user labels
    assert project.point_scores[project.present].min() == 1.0
