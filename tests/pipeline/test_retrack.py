"""Re-tracking prediction files without a model: the same tracks as sleap-nn's ``--tracking``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import UsageError, VideoError
from sleap_infer.pipeline.retrack import retrack_file, retrack_labels
from sleap_infer.tracking.options import TrackingOptions

from cli_runs import run_cli


def _video(name: str = "v.mp4", n_frames: int = 40) -> sio.Video:
    return sio.Video(
        filename=name,
        backend_metadata={"shape": [n_frames, 64, 64, 1], "fps": 30.0, "grayscale": True},
        open_backend=False,
    )


def _skeleton() -> sio.Skeleton:
    return sio.Skeleton(nodes=["a", "b"], edges=[], name="s")


def _labels(videos: list[sio.Video], n_frames: int = 12) -> sio.Labels:
    """Two animals moving apart in every video, listed in shuffled order, with stale tracks."""
    skeleton = _skeleton()
    stale = sio.Track(name="old")
    rng = np.random.default_rng(0)
    frames = []
    for video in videos:
        for f in rng.permutation(n_frames).tolist():
            insts = [
                sio.PredictedInstance.from_numpy(
                    np.array([[x + f, 10.0], [x + f + 4, 14.0]]),
                    skeleton=skeleton,
                    score=0.9,
                    track=stale,
                    tracking_score=0.5,
                )
                for x in (5.0, 40.0)
            ]
            frames.append(sio.LabeledFrame(video=video, frame_idx=f, instances=insts))
    return sio.Labels(labeled_frames=frames, videos=videos, skeletons=[skeleton], tracks=[stale])


def _names(lf: sio.LabeledFrame) -> list[str | None]:
    return [i.track.name if i.track is not None else None for i in lf.instances]


def test_retrack_labels_replaces_stale_tracks_and_names_on_across_videos() -> None:
    labels = _labels([_video("a.mp4"), _video("b.mp4")])
    stats = retrack_labels(labels, TrackingOptions())
    assert (stats.frames, stats.instances, stats.tracks) == (24, 48, 4)
    assert stats.options.features == "keypoints" and stats.carrier == "poses"
    assert [t.name for t in labels.tracks] == ["track_0", "track_1", "track_2", "track_3"]
    first, second = labels.labeled_frames[:12], labels.labeled_frames[12:]
    assert [lf.frame_idx for lf in first] == list(range(12))  # frames put in order
    assert all(_names(lf) == ["track_0", "track_1"] for lf in first)
    assert all(_names(lf) == ["track_2", "track_3"] for lf in second)
    assert labels.labeled_frames[0].instances[0].tracking_score == 1.0
    assert 0 < labels.labeled_frames[5].instances[0].tracking_score <= 1.0


def test_user_instances_are_tracked_where_a_frame_has_them() -> None:
    labels = _labels([_video()], 4)
    lf = labels.labeled_frames[0]
    user = sio.Instance.from_numpy(
        np.array([[1.0, 1.0], [5.0, 5.0]]), skeleton=lf.instances[0].skeleton
    )
    lf.instances.append(user)
    retrack_labels(labels, TrackingOptions())
    assert user.track is not None
    assert all(i.track is None for i in lf.predicted_instances)  # passed through, cleared


def test_vectors_in_the_file_track_by_appearance_only_when_asked() -> None:
    """sleap-nn's retrack mode never picks appearance on its own (its predictor does, for
    a re-ID model in the run): unset features track by geometry, ``--features embeddings``
    by the vectors."""
    labels = _labels([_video()], 6)
    for lf in labels.labeled_frames:
        for k, inst in enumerate(lf.instances):
            inst.identity_embedding = sio.Embedding(np.eye(4, dtype=np.float32)[k])
    stats = retrack_labels(labels, TrackingOptions())
    assert (stats.options.features, stats.options.scoring) == ("keypoints", "oks")
    stats = retrack_labels(labels, TrackingOptions(features="embeddings"))
    assert (stats.options.features, stats.options.scoring) == ("embeddings", "cosine_sim")
    assert stats.options.candidates == "local_queues" and stats.tracks == 2


def test_retrack_file_writes_atomically_with_provenance(tmp_path: Path) -> None:
    labels = _labels([_video()], 6)
    for lf in labels.labeled_frames:
        lf.instances[0].identity_embedding = sio.Embedding(np.ones(3, np.float32))
    src, dst = tmp_path / "in.slp", tmp_path / "out.slp"
    sio.save_slp(labels, str(src), save_embedding_vectors=True)
    stats = retrack_file(src, dst, TrackingOptions(features="keypoints"))
    out = sio.load_slp(str(dst))
    assert stats.tracks == 2 and stats.seconds > 0
    assert out.provenance["tracking"]["features"] == "keypoints"
    assert out.provenance["tracking"]["window_size"] == 5
    assert all(lf.instances[0].identity_embedding is not None for lf in out)  # kept
    assert {t.name for t in out.tracks} == {"track_0", "track_1"}
    assert not list(tmp_path.glob(".*tmp*"))


def test_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        retrack_file(tmp_path / "missing.slp", tmp_path / "o.slp", TrackingOptions())
    (tmp_path / "v.mp4").write_bytes(b"x")
    with pytest.raises(UsageError, match=r"not a \.slp"):
        retrack_file(tmp_path / "v.mp4", tmp_path / "o.slp", TrackingOptions())
    (tmp_path / "junk.slp").write_bytes(b"not hdf5")
    with pytest.raises(VideoError, match="junk.slp"):
        retrack_file(tmp_path / "junk.slp", tmp_path / "o.slp", TrackingOptions())
    labels = _labels([_video(str(tmp_path / "frames.slp"))], 3)
    sio.save_slp(labels, str(tmp_path / "p.slp"))
    with pytest.raises(UsageError, match="holds the frames"):
        retrack_file(tmp_path / "p.slp", tmp_path / "frames.slp", TrackingOptions())
    with pytest.raises(UsageError) as err:
        retrack_file(tmp_path / "p.slp", tmp_path / "o.slp", TrackingOptions(features="masks"))
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------- parity with sleap-nn


def _mask_key(m: Any) -> tuple[Any, ...]:
    return (tuple(m.bbox), m.area, tuple(m.scale))


def _mask_tracks(labels: sio.Labels) -> dict[tuple[int, tuple[Any, ...]], str | None]:
    """Per (frame, mask), its track name (sleap-nn may reorder a frame's masks)."""
    out = {}
    for lf in labels:
        for m in lf.masks:
            out[(lf.frame_idx, _mask_key(m))] = m.track.name if m.track is not None else None
    return out


@pytest.mark.parametrize(
    ("untracked", "tracked"),
    [
        ("bottomup_segmentation", "bottomup_segmentation_tracked"),
        ("embedding", "embedding_tracked"),
    ],
)
def test_retracking_a_reference_file_gives_sleap_nn_tracks(
    shared: Path, tmp_path: Path, untracked: str, tracked: str
) -> None:
    ours = tmp_path / "ours.slp"
    # sleap-nn's predictor tracks a re-ID model's output by appearance; its retrack mode
    # (and ours) only when asked: ``--features embeddings``
    options = TrackingOptions(features="embeddings" if untracked == "embedding" else None)
    stats = retrack_file(shared / "reference" / f"{untracked}.slp", ours, options)
    mine = sio.load_slp(str(ours))
    reference = sio.load_slp(str(shared / "reference" / f"{tracked}.slp"))
    theirs = _mask_tracks(reference)
    assert stats.carrier == "masks" and len(theirs) == stats.instances
    assert _mask_tracks(mine) == theirs  # same names, not just the same partition
    for a, b in zip(mine, reference):
        assert sorted(map(str, _names(a))) == sorted(map(str, _names(b)))  # inherited
        sa = {_mask_key(m): m.tracking_score for m in a.masks}
        for m in b.masks:
            assert sa[_mask_key(m)] == pytest.approx(m.tracking_score, rel=1e-6)
    if untracked == "embedding":
        assert stats.options.features == "embeddings"
        assert all(m.identity_embedding is not None for lf in mine for m in lf.masks)


def test_post_clean_untracks_extras_and_keeps_them_in_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``infer track --tracking-clean-instance-count 2``: a third, weaker pose in some
    frames is left untracked (sleap-nn drops it; we keep it) and the two animals keep
    their tracks; the options reach the provenance."""
    labels = _labels([_video()], 12)
    skeleton = labels.skeletons[0]
    for lf in labels.labeled_frames:
        if lf.frame_idx % 3 == 0:
            extra = sio.PredictedInstance.from_numpy(
                np.array([[30.0, 50.0], [34.0, 54.0]]), skeleton=skeleton, score=0.3
            )
            lf.instances.append(extra)
    src, dst = tmp_path / "in.slp", tmp_path / "out.slp"
    labels.save(str(src))
    code, err = run_cli(capsys, "track", src, "-o", dst, "--tracking-clean-instance-count", "2")
    assert code == 0, err
    out = sio.load_slp(str(dst))
    assert sum(len(lf.instances) for lf in out.labeled_frames) == 24 + 4  # nothing lost
    for lf in out.labeled_frames:
        names = _names(lf)
        assert names[:2] == ["track_0", "track_1"], lf.frame_idx
        assert names[2:] == [None] * (len(names) - 2)
    assert out.provenance["tracking"]["tracking_clean_instance_count"] == 2
    code, err = run_cli(
        capsys, "track", src, "-o", tmp_path / "x.slp", "--post-connect-single-breaks"
    )
    assert code == 2 and "--tracking-target-instance-count" in err


def test_an_appearance_blend_reads_the_files_vectors_and_keeps_geometry() -> None:
    labels = _labels([_video()], 6)
    for lf in labels.labeled_frames:
        for k, inst in enumerate(lf.instances):
            inst.identity_embedding = sio.Embedding(np.eye(4, dtype=np.float32)[k])
    stats = retrack_labels(labels, TrackingOptions(appearance_weight=0.3))
    assert (stats.options.features, stats.options.scoring) == ("keypoints", "oks")
    assert stats.tracks == 2


def test_an_appearance_blend_without_vectors_on_the_tracked_poses_is_refused() -> None:
    labels = _labels([_video()], 4)
    with pytest.raises(UsageError, match="no detection carries a re-ID vector"):
        retrack_labels(labels, TrackingOptions(appearance_weight=0.3))


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--link-tracklets", "--tracking-clean-instance-count", "1"], "--link-tracklets"),
        (["--tracker", "ocsort", "--mot_param", "foo=1"], "--mot_param 'foo=1': unknown"),
        (["--tracker", "ocsort", "--mot_param", "delta_t=x"], "delta_t expects an integer"),
        (["--mot-param", "delta_t=3"], "--mot_param only applies to the MOT trackers"),
        (["--tracker", "sort", "--mot_param", "delta_t=3"], "--tracker sort here does not"),
        (["--use-kalman"], "--use-kalman needs a known number of animals"),
        (["--use-kalman", "--max-tracks", "2", "--use-flow"], "mutually exclusive"),
        (
            ["--use_kalman", "--max-tracks", "2", "--kf_track_features", "x"],
            "centroid or keypoints",
        ),
        (["--kf-node-indices", "0,1"], "--kf-node-indices only apply with --use-kalman"),
        (  # #45.18: was dropped without a word while the provenance recorded [99]
            ["--use-kalman", "--tracking-target-instance-count", "2", "--kf-node-indices", "99"],
            "--kf-node-indices 99: node index 99 is out of range; the skeleton has 2 nodes",
        ),
        (
            ["--use_kalman", "--max-tracks", "2", "--kf_node_indices", "1,-3"],
            "node index -3 is out of range; the skeleton has 2 nodes (indices 0 to 1)",
        ),
        (["--kf-reset-gap-size", "3"], "--kf-reset-gap-size"),
        (["--appearance-threshold", "0.4"], "--appearance-threshold"),
        (["--appearance-weight", "0.5"], "--appearance-weight"),  # no vectors in the file
        (["--tracker", "deepsort"], "--tracker deepsort associates by appearance"),  # ditto
    ],
)
def test_track_refuses_what_it_cannot_do_by_name_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], named: str
) -> None:
    src, dst = tmp_path / "in.slp", tmp_path / "out.slp"
    sio.save_slp(_labels([_video()], 4), str(src))
    code, err = run_cli(capsys, "track", src, "-o", dst, *flags)
    assert code == 2 and named in err and len(err.strip().splitlines()) == 1, err
    assert not dst.exists()


def test_predict_binds_the_not_ported_names_and_refuses_them_when_set() -> None:
    from sleap_infer.pipeline.spec import bind

    spec = bind(["m"], tracking=True, link_tracklets=False, use_kalman=False, kf_node_indices=None)
    assert spec.tracking is not None
    linked = bind(["m"], tracking=True, link_tracklets=True)
    assert linked.tracking is not None and linked.tracking.link_tracklets
    with pytest.raises(UsageError, match="^--link-tracklets only matter with --tracking"):
        bind(["m"], link_tracklets=True)
    with pytest.raises(UsageError, match="^--kf-track-features"):
        bind(["m"], tracking=True, kf_track_features="centroid")
    weighted = bind(["m"], tracking=True, appearance_weight=0.3, euclidean_scale=5.0)
    assert weighted.tracking is not None and weighted.tracking.appearance_weight == 0.3


def test_track_takes_mot_params_and_records_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dst = tmp_path / "in.slp", tmp_path / "out.slp"
    sio.save_slp(_labels([_video()], 8), str(src))
    flags = ["--tracker", "ocsort", "--mot_param", "use_byte=true", "--mot-param", "delta_t=4"]
    code, err = run_cli(capsys, "track", src, "-o", dst, *flags, "--mot_param", "min_hits=1")
    assert code == 0, err
    tracking = sio.load_slp(str(dst)).provenance["tracking"]
    assert tracking["mot_param"] == {"delta_t": 4, "use_byte": True}
    assert tracking["min_hits"] == 1


def test_track_runs_the_kalman_shift_and_records_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dst = tmp_path / "in.slp", tmp_path / "out.slp"
    sio.save_slp(_labels([_video()], 12), str(src))
    flags = ["--use_kalman", "--tracking-target-instance-count", "2", "--kf-init-frame-count", "3"]
    code, err = run_cli(capsys, "track", src, "-o", dst, *flags, "--kf-node-indices", "0,1")
    assert code == 0, err
    tracking = sio.load_slp(str(dst)).provenance["tracking"]
    assert tracking["use_kalman"] is True and tracking["kf_init_frame_count"] == 3
    assert tracking["kf_node_indices"] == [0, 1] and tracking["kf_reset_gap_size"] == 5


def test_use_kalman_takes_its_count_from_max_instances_as_sleap_nn() -> None:
    from sleap_infer.pipeline.spec import bind

    spec = bind(["m"], tracking=True, use_kalman=True, max_instances=3)
    assert spec.tracking is not None and spec.tracking.tracking_target_instance_count == 3
    assert spec.tracking.max_tracks is None  # only break joining also caps the tracks
    with pytest.raises(UsageError, match="needs a known number of animals"):
        bind(["m"], tracking=True, use_kalman=True)


@pytest.mark.parametrize("name", ["deepsort", "strongsort", "deepocsort"])
def test_appearance_trackers_read_the_files_vectors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    labels = _labels([_video()], 8)
    for lf in labels.labeled_frames:
        for k, inst in enumerate(lf.instances):
            inst.identity_embedding = sio.Embedding(np.eye(4, dtype=np.float32)[k])
    src, dst = tmp_path / "in.slp", tmp_path / "out.slp"
    sio.save_slp(labels, str(src), save_embedding_vectors=True)
    code, err = run_cli(
        capsys, "track", src, "-o", dst, "--tracker", name, "--appearance-threshold", "0.5"
    )
    assert code == 0, err
    out = sio.load_slp(str(dst))
    assert {t.name for t in out.tracks} == {"track_0", "track_1"}
    assert out.provenance["tracking"]["tracker"] == name


def test_mot_trackers_measure_the_whole_video_first_and_record_it(tmp_path: Path) -> None:
    """Scores all under sort's new-track threshold (0.1) raw: sleap-nn's pre-pass divides
    them by the video's q95, so ``infer track`` tracks them; online (``predict -t``), with
    no pre-pass, they can never start a track."""
    from sleap_infer.pipeline.retrack import _detections, _targets
    from sleap_infer.tracking import make_tracker

    labels = _labels([_video()], 8)
    for lf in labels.labeled_frames:
        for inst in lf.instances:
            inst.score = 0.05
    options = TrackingOptions(tracker="sort")
    online = make_tracker(options, "poses", 2)
    ordered = sorted(labels.labeled_frames, key=lambda lf: lf.frame_idx)
    for lf in ordered:
        answer = online.step(_detections(lf, _targets(lf, "poses"), "poses", False, False))
        assert (answer.track_ids == -1).all()
    src, dst = tmp_path / "in.slp", tmp_path / "out.slp"
    sio.save_slp(labels, str(src))
    stats = retrack_file(src, dst, options)
    assert stats.tracks == 2
    out = sio.load_slp(str(dst))
    assert {i.track.name for lf in out for i in lf.instances if i.track} == {"track_0", "track_1"}
    (record,) = out.provenance["tracking"]["prepare"]
    assert record["score_normalizer"] == pytest.approx(0.05)
    assert (record["time_base"], record["frame_step"]) == ("frames", 1)


def test_the_classic_tracker_gets_no_pre_pass() -> None:
    stats = retrack_labels(_labels([_video()], 4), TrackingOptions())
    assert stats.calibrations == []


def test_negative_kalman_node_indices_count_from_the_end_as_in_sleap_nn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, dst = tmp_path / "in.slp", tmp_path / "out.slp"
    sio.save_slp(_labels([_video()], 12), str(src))
    flags = ["--use_kalman", "--tracking-target-instance-count", "2", "--kf-node-indices", "-1"]
    code, err = run_cli(capsys, "track", src, "-o", dst, *flags)
    assert code == 0, err


def test_predict_kalman_node_indices_are_checked_against_the_model_skeleton(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#45.18 on ``predict -t``: refused when the model is checked, before any frame."""
    import scene
    from conftest import SYNTHETIC_MODEL

    video = tmp_path / "clip.mp4"
    scene.write_video(video, n_frames=4, seed=3)
    flags = ["-t", "--use-kalman", "-n", "2", "--kf-node-indices", "0,99", "--device", "cpu"]
    code, err = run_cli(capsys, "predict", video, "-m", SYNTHETIC_MODEL, *flags)
    assert code == 2
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert "--kf-node-indices 0,99: node index 99 is out of range; the skeleton has" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4"]


@pytest.mark.parametrize(
    "flags",
    [
        ["--tracker", "bytetrack"],
        ["--tracking_window_size", "3", "--max-tracks", "2"],
    ],
)
def test_sleap_nn_predict_tracking_without_a_model_is_infer_track(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    """#44.4: sleap-nn's ``predict -i preds.slp -t ...`` (no model) re-tracks the file:
    the same output as ``infer track`` with the same tracker options."""
    src = tmp_path / "preds.slp"
    sio.save_slp(_labels([_video()], 12), str(src))
    theirs, ours = tmp_path / "theirs.slp", tmp_path / "ours.slp"
    code, err = run_cli(capsys, "predict", "-i", src, "-t", *flags, "-o", theirs)
    assert code == 0, err
    assert "re-tracking the predictions in the input file" in err
    assert run_cli(capsys, "track", src, *flags, "-o", ours)[0] == 0
    a, b = sio.load_slp(str(theirs)), sio.load_slp(str(ours))
    assert [lf.frame_idx for lf in a.labeled_frames] == [lf.frame_idx for lf in b.labeled_frames]
    for x, y in zip(a.labeled_frames, b.labeled_frames, strict=True):
        assert _names(x) == _names(y)
        assert np.array_equal(x.numpy(), y.numpy(), equal_nan=True)
    assert a.provenance["tracking"] == b.provenance["tracking"]
    assert len({i.track.name for lf in a.labeled_frames for i in lf.instances if i.track}) == 2
