"""What sleap-nn 0.3.5's ``.slp`` saving flags make of the output: ``--embed true|auto``
(frame images in the file, as ``sio.save_slp(embed=True)``), ``--restore_source_videos``
(a ``.pkg.slp`` input's original video referenced), ``--save_embeddings none`` (no re-ID
vectors)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

from cli_runs import error_lines, run_cli
from conftest import fixture_model, predicted_poses


def _embedded(video: sio.Video) -> bool:
    return bool(getattr(video.backend, "has_embedded_images", False))


def test_embed_true_stores_each_predicted_frames_image(
    capsys: pytest.CaptureFixture[str], shared: Path, tmp_path: Path
) -> None:
    video = shared / "videos" / "small_robot.mp4"
    model = fixture_model(shared, "single_instance")
    args = ["predict", video, "-m", model, "--frames", "0-4"]
    assert run_cli(capsys, *args, "-o", tmp_path / "plain.slp")[0] == 0
    assert run_cli(capsys, *args, "--embed", "true", "-o", tmp_path / "e.slp")[0] == 0
    labels = sio.load_slp(str(tmp_path / "e.slp"))
    assert _embedded(labels.videos[0])
    assert labels.videos[0].source_video.filename == str(video)  # where the frames came from
    frames = sio.load_video(str(video))
    for lf in labels:
        np.testing.assert_array_equal(lf.image, frames[lf.frame_idx])
    plain, embedded = predicted_poses(tmp_path / "plain.slp"), predicted_poses(tmp_path / "e.slp")
    assert plain[0] == embedded[0] == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(plain[1], embedded[1])
    assert "request" in labels.provenance  # a rerun still knows it as ours: skipped
    code, err = run_cli(capsys, *args, "--embed", "true", "-o", tmp_path / "e.slp")
    assert code == 0 and "skipped" in err


def test_package_inputs_auto_embed_and_restore_the_source_video(
    capsys: pytest.CaptureFixture[str], shared: Path, tmp_path: Path
) -> None:
    package = shared / "videos" / "minimal_instance.pkg.slp"
    original = sio.load_slp(str(package)).videos[0].source_video.filename
    model = fixture_model(shared, "single_instance")
    runs = {
        "p.slp": [],
        "auto.slp": ["--embed", "auto"],
        "restored.slp": ["--restore_source_videos"],
        "off.slp": ["--restore_source_videos", "--no-restore_source_videos"],
    }
    for name, flags in runs.items():
        assert (
            run_cli(capsys, "predict", package, "-m", model, "-o", tmp_path / name, *flags)[0] == 0
        )
    videos = {name: sio.load_slp(str(tmp_path / name)).videos[0] for name in runs}
    assert videos["p.slp"].filename == str(package)  # the package's frames, as sleap-nn's default
    assert videos["off.slp"].filename == str(package)  # the last one counts
    assert videos["restored.slp"].filename == original
    assert _embedded(videos["auto.slp"]) and videos["auto.slp"].filename.endswith("auto.slp")
    video = shared / "videos" / "small_robot.mp4"  # not a package: auto embeds nothing
    run_cli(capsys, "predict", video, "-m", model, "--frames", "0", "-o", tmp_path / "v.slp",
            "--embed", "auto")  # fmt: skip
    assert sio.load_slp(str(tmp_path / "v.slp")).videos[0].filename == str(video)


def test_save_embeddings_none_leaves_the_vectors_out(
    capsys: pytest.CaptureFixture[str], shared: Path, tmp_path: Path
) -> None:
    video = shared / "videos" / "synthetic_multi.mp4"
    models = ["-m", shared / "models" / "synthetic_centroid"]
    models += ["-m", shared / "models" / "synthetic_embedding"]
    args = ["predict", video, *models, "--frames", "0-3"]
    assert run_cli(capsys, *args, "-o", tmp_path / "v.slp")[0] == 0
    assert run_cli(capsys, *args, "-o", tmp_path / "n.slp", "--save_embeddings", "none")[0] == 0
    kept, stripped = (sio.load_slp(str(tmp_path / n)) for n in ("v.slp", "n.slp"))
    vectors = [[i.identity_embedding is not None for lf in L for i in lf.instances]
               for L in (kept, stripped)]  # fmt: skip
    assert all(vectors[0]) and len(vectors[0]) == len(vectors[1]) and not any(vectors[1])
    np.testing.assert_array_equal(
        predicted_poses(tmp_path / "v.slp")[1], predicted_poses(tmp_path / "n.slp")[1]
    )
    # The lone embedding model without tracking would discard all it computes (sleap-nn too).
    package = shared / "videos" / "synthetic_multi.pkg.slp"
    lone = ["predict", package, "-m", shared / "models" / "synthetic_embedding"]
    code, err = run_cli(capsys, *lone, "-o", tmp_path / "l.slp", "--save_embeddings", "none")
    assert code != 0 and error_lines(err)[0].startswith("error: --save-embeddings none: ")
    assert not (tmp_path / "l.slp").exists()
    assert (
        run_cli(capsys, *lone, "-o", tmp_path / "t.slp", "--save_embeddings", "none", "-t")[0] == 0
    )
    tracked = sio.load_slp(str(tmp_path / "t.slp"))
    assert tracked.tracks and not any(
        getattr(d, "identity_embedding", None) is not None
        for lf in tracked
        for d in (*lf.instances, *lf.masks)
    )


def test_centroid_output_writes_sio_predicted_centroids_as_sleap_nn(
    capsys: pytest.CaptureFixture[str], shared: Path, tmp_path: Path
) -> None:
    video = shared / "videos" / "centered_pair_small.mp4"
    model = fixture_model(shared, "centroid")
    args = ["predict", video, "-m", model, "--frames", "0-4"]
    for mode in ("instance", "centroid", "both"):
        out = tmp_path / f"{mode}.slp"
        assert run_cli(capsys, *args, "--centroid_output", mode, "-o", out)[0] == 0
    labels = {m: sio.load_slp(str(tmp_path / f"{m}.slp")) for m in ("instance", "centroid", "both")}
    for lf, only, both in zip(labels["instance"], labels["centroid"], labels["both"]):
        want = [
            (p[~np.isnan(p).any(axis=1)][0], i.score) for i in lf.instances for p in [i.numpy()]
        ]
        for got in (only.centroids, both.centroids):
            assert [((c.x, c.y), c.score, c.source) for c in got] == [
                ((float(p[0]), float(p[1])), pytest.approx(s), "center_of_mass") for p, s in want
            ]
        assert not only.instances and len(both.instances) == len(lf.instances)
    # centroids alone: sleap-nn's one-node "centroid" skeleton; both: the model's
    assert [n.name for n in labels["centroid"].skeletons[0].nodes] == ["centroid"]
    assert labels["both"].skeletons[0].node_names == labels["instance"].skeletons[0].node_names
    # a top-down run writes instances whatever is asked, as sleap-nn; tracking is refused
    pair = ["-m", model, "-m", fixture_model(shared, "centered_instance")]
    top = tmp_path / "td.slp"
    assert run_cli(capsys, "predict", video, *pair, "--frames", "0", "-o", top,
                   "--centroid_output", "centroid")[0] == 0  # fmt: skip
    assert sio.load_slp(str(top))[0].instances and not sio.load_slp(str(top))[0].centroids
    code, err = run_cli(capsys, *args, "--centroid_output", "both", "-t", "-o", tmp_path / "t.slp")
    assert code == 2 and error_lines(err)[0].startswith("error: --centroid-output both: tracking")
