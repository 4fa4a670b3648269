"""A lone embedding model through ``infer predict``: vectors for a project's detections."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import sleap_io as sio

from conftest import write_video
from model_factory import NODES, config_dict, write_model_dir


def infer(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sleap_infer", "predict", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _project(tmp_path: Path) -> Path:
    """Three frames of a real video, two user instances each, one carrying an old vector."""
    frames = np.random.default_rng(0).integers(0, 255, (3, 64, 64, 3), dtype=np.uint8)
    clip = write_video(tmp_path / "clip.mp4", frames)
    # Not opened here: sleap-io's FFMPEG fps probe leaves its file open (a ResourceWarning).
    meta = {"shape": [3, 64, 64, 3], "fps": 30.0, "grayscale": False}
    video = sio.Video(filename=str(clip), backend_metadata=meta, open_backend=False)
    skeleton = sio.Skeleton(list(NODES))  # sleap-io turns the list it is given into Nodes
    lfs = []
    for f in range(3):
        insts = [
            sio.Instance.from_numpy(np.array([[10 + 5 * f, 20], [15, 25], [20, 30]]), skeleton),
            sio.Instance.from_numpy(np.array([[40, 40], [45, 44], [np.nan, np.nan]]), skeleton),
        ]
        lfs.append(sio.LabeledFrame(video=video, frame_idx=f, instances=insts))
    lfs[0].instances[0].identity_embedding = sio.Embedding(np.ones(8, np.float32))
    labels = sio.Labels(labeled_frames=lfs, videos=[video], skeletons=[skeleton])
    path = tmp_path / "project.slp"
    sio.save_slp(labels, str(path), save_embedding_vectors=True)
    return path


def _model(tmp_path: Path) -> Path:
    raw = config_dict(
        "embedding",
        unet={"output_stride": 8},  # sleap-nn pins it to max_stride: no decoder
        preprocessing={"crop_size": 32},
    )
    return write_model_dir(tmp_path / "emb", raw)


def test_every_pose_gets_a_fresh_unit_vector(tmp_path: Path) -> None:
    model = write_model_dir(
        tmp_path / "emb", config_dict("embedding", preprocessing={"crop_size": 32})
    )
    project = _project(tmp_path)
    out = tmp_path / "out.slp"
    res = infer(str(project), "-m", str(model), "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert "6 embeddings" in res.stderr
    labels = sio.load_slp(str(out))
    vectors = [i.identity_embedding for lf in labels for i in lf.instances]
    assert len(vectors) == 6 and all(v is not None for v in vectors)
    stacked = np.stack([np.asarray(v.vector) for v in vectors])
    np.testing.assert_allclose(np.linalg.norm(stacked, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(stacked[0], np.ones(8) / np.sqrt(8))  # the old vector is gone
    # The input's poses come through unchanged.
    before = sio.load_slp(str(project))
    for a, b in zip(labels, before):
        for x, y in zip(a.instances, b.instances):
            np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_a_video_or_a_format_without_vectors_is_refused(tmp_path: Path) -> None:
    model = write_model_dir(
        tmp_path / "emb", config_dict("embedding", preprocessing={"crop_size": 32})
    )
    frames = np.zeros((2, 32, 32, 3), np.uint8)
    video = write_video(tmp_path / "clip.mp4", frames)
    res = infer(str(video), "-m", str(model), "-o", str(tmp_path / "o.slp"))
    assert res.returncode == 1
    assert "embeds the detections of a SLEAP project" in res.stderr
    res = infer(str(_project(tmp_path)), "-m", str(model), "--format", "csv")
    assert res.returncode == 2 and "cannot hold re-ID embedding vectors" in res.stderr


def test_lone_model_matches_sleap_nn_through_the_cli(shared: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.slp"
    res = infer(
        str(shared / "videos" / "synthetic_multi.pkg.slp"),
        "-m",
        str(shared / "models" / "synthetic_embedding"),
        "-o",
        str(out),
    )
    assert res.returncode == 0, res.stderr
    ours = sio.load_slp(str(out))
    theirs = sio.load_slp(str(shared / "reference" / "embedding.slp"))
    cos = []
    for a, b in zip(ours, theirs):
        assert len(a.masks) == len(b.masks)
        for x, y in zip(a.masks, b.masks):
            u, v = np.asarray(x.identity_embedding.vector), np.asarray(y.identity_embedding.vector)
            cos.append(float(u @ v / np.linalg.norm(u) / np.linalg.norm(v)))
        assert all(i.identity_embedding is None for i in a.instances)  # one carrier: masks
    assert len(cos) == 48 and min(cos) >= 0.999
