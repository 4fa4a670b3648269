"""``infer predict --tracking``: tracks made online, written to every format, and a
killed run resumed to exactly the tracks of an uninterrupted one."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.journal import journal_path, read_journal
from sleap_infer.pipeline.retrack import retrack_file
from sleap_infer.tracking.options import TrackingOptions
from sleap_infer.tracking.registry import appearance_names

from cli_runs import error_lines, infer_stopping, run_cli
from conftest import fixture_model, pipeline


def tracked_poses(path: Path) -> list[tuple[int, list[str | None], np.ndarray, list[float]]]:
    """Per frame: index, track names, points and tracking scores, in file order."""
    out = []
    for lf in sio.load_slp(str(path)):
        names = [i.track.name if i.track is not None else None for i in lf.instances]
        points = np.stack([i.numpy() for i in lf.instances]) if lf.instances else np.zeros(0)
        scores = [float(i.tracking_score) for i in lf.instances]
        out.append((lf.frame_idx, names, points, scores))
    return out


def mask_tracks(path: Path) -> dict[tuple[int, bytes], str | None]:
    """Each mask's track name, keyed by frame and pixels: sleap-nn's local queues reorder a
    frame's masks in its output, ours keep the model's order."""
    return {
        (lf.frame_idx, np.asarray(m.rle_counts, np.uint32).tobytes()): (
            m.track.name if m.track is not None else None
        )
        for lf in sio.load_slp(str(path))
        for m in lf.masks
    }


# Two animals, cleaned down to one a frame: the weaker is untracked every frame and the
# joiner renames one track onto the other whenever the stronger animal changes.
CLEANUP = [
    *("--tracking-target-instance-count", "2", "--tracking-pre-cull-to-target", "1"),
    *("--tracking-clean-instance-count", "1", "--post-connect-single-breaks"),
]


# The Kalman shift fitted after 4 frames: the kill (after 20) lands with filters live.
KALMAN = ["--use-kalman", "--tracking-target-instance-count", "2", "--kf-init-frame-count", "4"]


LOWER = ["--track-high-threshold", "0.3", "--new-track-threshold", "0.3"]


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--use-flow"],
        *(["--tracker", n] for n in ("bytetrack", "infer_bytetrack", "sort")),
        # The fixture model's mean point scores (what sleap-nn's MOT trackers read) stay
        # below OC-SORT's and BoT-SORT's 0.6 / 0.7 online, where no per-video normalizer
        # lifts them.
        *(["--tracker", n, *LOWER] for n in ("ocsort", "botsort")),
        CLEANUP,
        KALMAN,
    ],
    ids=[
        "classic",
        "optical-flow",
        "bytetrack",
        "infer_bytetrack",
        "sort",
        "ocsort",
        "botsort",
        "cull-clean-connect",
        "kalman",
    ],
)
def test_killed_tracked_run_resumes_to_identical_tracks(
    shared: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: list[str]
) -> None:
    """SIGKILL after 5 batches, then --resume: the tracker restarts from the journal's
    last snapshot (with flow, from frames decoded again) and every track matches."""
    if "--use-flow" in extra:
        pytest.importorskip("cv2")
    video = shared / "videos" / "centered_pair_small.mp4"
    model = fixture_model(shared, "bottomup")
    args = ["predict", video, "-m", model, "--device", "cpu", "-b", "4", "-q", "--frames", "0-47"]
    args += ["--tracking", "--peak-threshold", "0.1", *extra]
    resumed = tmp_path / "resumed.slp"
    killed = infer_stopping("SIGKILL", 5, *args, "-o", resumed)
    assert killed.returncode == -9, killed.stderr
    journal = read_journal(journal_path(resumed))
    assert journal.predicted.tolist() == list(range(20))
    assert journal.tracker is not None and journal.n_tracks >= 2  # state is in the journal
    if extra is KALMAN:  # the fitted filters are in the journaled state
        meta, arrays = journal.tracker
        assert '"initialized": true' in json.dumps(meta)
        assert any(k.endswith("kf_track") and len(v) for k, v in arrays.items())

    code, err = run_cli(capsys, *args, "-o", resumed, "--resume")
    assert code == 0, err
    code, err = run_cli(capsys, *args, "-o", tmp_path / "clean.slp")
    assert code == 0, err
    clean, again = tracked_poses(tmp_path / "clean.slp"), tracked_poses(resumed)
    assert [f[0] for f in clean] == [f[0] for f in again]
    for (frame, names_a, pts_a, sc_a), (_, names_b, pts_b, sc_b) in zip(clean, again):
        assert names_a == names_b, frame
        np.testing.assert_array_equal(pts_a, pts_b)
        np.testing.assert_array_equal(sc_a, sc_b)  # NaN where untracked, on both sides
    names = {n for f in clean for n in f[1]} - {None}
    if extra is CLEANUP:
        assert all(len([n for n in f[1] if n is not None]) <= 1 for f in clean)
    else:
        assert len(names) >= 2
    labels = sio.load_slp(str(resumed))
    assert [t.name for t in labels.tracks] == [f"track_{i}" for i in range(len(labels.tracks))]
    assert labels.provenance["tracking"]["options"]["use_flow"] == ("--use-flow" in extra)


def test_online_mask_tracking_matches_sleap_nn(shared: Path, tmp_path: Path) -> None:
    """The same tracks as ``sleap-nn predict --tracking`` wrote for the same model and frames."""
    pipe = pipeline(
        [shared / "models" / "synthetic_bottomup_segmentation"],
        device="cpu",
        tracking=TrackingOptions(),
    )
    assert pipe.tracking is not None
    assert (pipe.tracking.features, pipe.tracking.scoring) == ("masks", "mask_iou")
    out = tmp_path / "tracked.slp"
    result = pipe.predict_to_file(shared / "videos" / "synthetic_multi.pkg.slp", output=out)
    reference = shared / "reference" / "bottomup_segmentation_tracked.slp"
    ours, theirs = mask_tracks(out), mask_tracks(reference)
    assert ours == theirs
    assert result.counts.tracks == len(sio.load_slp(str(reference)).tracks)


def test_masks_are_linked_at_the_video_s_end_from_the_journal(shared: Path, tmp_path: Path) -> None:
    """``--tracker sort --max-tracks 3`` on a segmentation model: the journal's masks are
    linked into 3 identities, exactly as linking the same tracks read from the unlinked
    output file does."""
    from sleap_infer.pipeline.linked import high_threshold, track_buffer
    from sleap_infer.tracking.linking.inputs import LinkInput
    from sleap_infer.tracking.linking.link import link_tracks

    video = shared / "videos" / "synthetic_multi.pkg.slp"
    model = shared / "models" / "synthetic_bottomup_segmentation"
    online = pipeline([model], device="cpu", tracking=TrackingOptions(tracker="sort"))
    online.predict_to_file(video, output=tmp_path / "online.slp")
    options = TrackingOptions(tracker="sort", max_tracks=3)
    linked = pipeline([model], device="cpu", tracking=options)
    linked.predict_to_file(video, output=tmp_path / "linked.slp")

    inp, keys = LinkInput(), []
    for lf in sio.load_slp(str(tmp_path / "online.slp")):
        x, y, w, h = (np.array([m.bbox[i] for m in lf.masks]) for i in range(4))
        boxes = np.stack([x, y, x + w, y + h], axis=1) if lf.masks else np.zeros((0, 4))
        ids = [int(m.track.name[6:]) if m.track is not None else -1 for m in lf.masks]
        inp.add_masks(lf.frame_idx, boxes, np.array([m.score for m in lf.masks]), np.array(ids))
        keys += [(lf.frame_idx, np.asarray(m.rle_counts, np.uint32).tobytes()) for m in lf.masks]
    new, result = link_tracks(
        inp, 3, track_buffer(options), None, high_threshold(options), normalize_scores=True
    )
    expected = {k: (f"track_{t}" if t >= 0 else None) for k, t in zip(keys, new.tolist())}
    got = mask_tracks(tmp_path / "linked.slp")
    assert got == expected
    assert (
        len(set(got.values()) - {None})
        == 3
        < len(set(mask_tracks(tmp_path / "online.slp").values()) - {None})
    )
    listed = [t.name for t in sio.load_slp(str(tmp_path / "linked.slp")).tracks]
    assert listed == sorted(set(got.values()) - {None})  # only the kept identities, as sleap-nn
    provenance = sio.load_slp(str(tmp_path / "linked.slp")).provenance["tracking"]["linking"]
    assert provenance["identities"] == 3 and provenance["forced"] == result.forced


def test_tracks_reach_csv_and_analysis_h5(shared: Path, tmp_path: Path) -> None:
    pipe = pipeline(
        [fixture_model(shared, "bottomup")],
        device="cpu",
        options=None,
        tracking=TrackingOptions(max_tracks=2),
    )
    video = shared / "videos" / "centered_pair_small.mp4"
    slp = tmp_path / "t.slp"
    pipe.predict_to_file(video, output=slp, frames="0-19")
    by_frame = {f[0]: f[1] for f in tracked_poses(slp)}
    pipe.predict_to_file(video, output=tmp_path / "t.csv", frames="0-19", format="csv")
    with (tmp_path / "t.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert rows and {r["track"] for r in rows} <= {"track_0", "track_1"}
    for r in rows:
        assert r["track"] in by_frame[int(r["frame_idx"])]
    h5 = tmp_path / "t.h5"
    pipe.predict_to_file(video, output=h5, frames="0-19", format="analysis-h5")
    with h5py.File(h5) as f:
        names = [n.decode() for n in f["track_names"][()]]
        occupancy = f["track_occupancy"][()]  # (frame, track)
        assert "identities" in f.attrs["track_axis"]
    assert names == ["track_0", "track_1"]
    for frame, tracks in by_frame.items():
        expected = [int(f"track_{k}" in tracks) for k in range(2)]
        assert occupancy[frame].tolist() == expected, frame


def test_tracking_refusals_are_one_line(shared: Path, capsys: pytest.CaptureFixture[str]) -> None:
    video = shared / "videos" / "centered_pair_small.mp4"
    multiclass = fixture_model(shared, "multi_class_bottomup")
    code, err = run_cli(capsys, "predict", video, "-m", multiclass, "--device", "cpu", "-t")
    assert code == 2 and "already assigns identities" in error_lines(err)[0]
    model = fixture_model(shared, "bottomup")
    code, err = run_cli(capsys, "predict", video, "-m", model, "--window-size", "3")
    assert code == 2 and "--window-size only matter with --tracking" in error_lines(err)[0]
    code, err = run_cli(capsys, "predict", video, "-m", model, "-t", "--features", "masks")
    assert code == 2 and len(error_lines(err)) == 1


def test_infer_track_retracks_a_file(
    shared: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    source = shared / "reference" / "bottomup_segmentation.slp"
    out = tmp_path / "retracked.slp"
    code, err = run_cli(capsys, "track", source, "-o", out)
    assert code == 0, err
    reference = shared / "reference" / "bottomup_segmentation_tracked.slp"
    assert mask_tracks(out) == mask_tracks(reference)
    code, err = run_cli(capsys, "track", source, "-o", out)
    assert code == 2 and "--overwrite" in error_lines(err)[0]
    code, err = run_cli(capsys, "track", tmp_path / "missing.slp", "-o", tmp_path / "x.slp")
    assert code != 0 and "missing.slp" in error_lines(err)[0]


def detection_tracks(path: Path) -> dict[tuple[int, str, bytes], str | None]:
    """Track name of every instance and mask, keyed by frame and geometry."""
    out: dict[tuple[int, str, bytes], str | None] = {}
    for lf in sio.load_slp(str(path)):
        for inst in lf.instances:
            key = (lf.frame_idx, "pose", np.asarray(inst.numpy(), np.float32).tobytes())
            out[key] = inst.track.name if inst.track is not None else None
        for m in lf.masks:
            key = (lf.frame_idx, "mask", np.asarray(m.rle_counts, np.uint32).tobytes())
            out[key] = m.track.name if m.track is not None else None
    return out


def test_embedding_model_tracks_by_its_vectors_as_sleap_nn(shared: Path, tmp_path: Path) -> None:
    """A lone re-ID model with --tracking embeds the project's detections, then tracks them
    by cosine similarity: sleap-nn's ``embedding_tracked.slp``, track for track."""
    pipe = pipeline(
        [shared / "models" / "synthetic_embedding"], device="cpu", tracking=TrackingOptions()
    )
    out = tmp_path / "embedded.slp"
    result = pipe.predict_to_file(shared / "videos" / "synthetic_multi.pkg.slp", output=out)
    ours = detection_tracks(out)
    theirs = detection_tracks(shared / "reference" / "embedding_tracked.slp")
    assert ours == theirs
    assert result.counts.tracks == 2
    tracking = sio.load_slp(str(out)).provenance["tracking"]
    assert tracking["options"]["features"] == "embeddings"


BLEND = ["--appearance-weight", "0.5", "--euclidean-scale", "8"]


@pytest.mark.parametrize(
    "extra",
    [
        BLEND,
        *(["--tracker", n, "--appearance-threshold", "0.5"] for n in appearance_names()),
    ],
    ids=["blend", *appearance_names()],
)
def test_killed_appearance_run_resumes_to_identical_tracks(
    shared: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: list[str]
) -> None:
    """Centroids plus the re-ID model on a video, tracked by the classic blend
    (--appearance-weight over euclidean_dist) or an appearance MOT tracker: the vectors
    the tracker remembers are journaled with it, so a run killed after 3 batches
    resumes track for track."""
    models = [shared / "models" / "synthetic_centroid", shared / "models" / "synthetic_embedding"]
    video = shared / "videos" / "synthetic_multi.mp4"
    args = ["predict", video, "-m", models[0], "-m", models[1], "--device", "cpu", "-b", "4"]
    args += ["-q", "--tracking", *extra]
    resumed = tmp_path / "resumed.slp"
    killed = infer_stopping("SIGKILL", 3, *args, "-o", resumed)
    assert killed.returncode == -9, killed.stderr
    journal = read_journal(journal_path(resumed))
    assert journal.tracker is not None
    meta, arrays = journal.tracker
    if extra is BLEND:
        assert '"blend": true' in json.dumps(meta) and any(k.endswith("vectors") for k in arrays)
    else:
        assert arrays["app_ema"].shape[1] > 0  # the memories hold the model's vectors
    code, err = run_cli(capsys, *args, "-o", resumed, "--resume")
    assert code == 0, err
    code, err = run_cli(capsys, *args, "-o", tmp_path / "clean.slp")
    assert code == 0, err
    clean, again = tracked_poses(tmp_path / "clean.slp"), tracked_poses(resumed)
    assert [f[0] for f in clean] == [f[0] for f in again]
    for (frame, names_a, _, sc_a), (_, names_b, _, sc_b) in zip(clean, again):
        assert names_a == names_b, frame
        np.testing.assert_array_equal(sc_a, sc_b)
    assert len({n for f in clean for n in f[1]} - {None}) >= 2
    options = sio.load_slp(str(resumed)).provenance["tracking"]["options"]
    if extra is BLEND:
        assert (options["scoring"], options["appearance_weight"]) == ("euclidean_dist", 0.5)
    else:
        assert (options["tracker"], options["appearance_threshold"]) == (extra[1], "0.5")


@pytest.mark.parametrize("name", ["sort", "bytetrack", "infer_bytetrack"])
def test_a_mot_tracks_tentative_frames_get_its_id_in_memory_files_and_retracking(
    shared: Path, tmp_path: Path, name: str
) -> None:
    """A MOT track confirms frames after it starts; like sleap-nn, its tentative frames then
    take its id, including those of batches already journaled (batch 1 here): the file, the
    in-memory result and ``infer track`` on the same detections agree, and the first frame
    is tracked."""
    video = shared / "videos" / "centered_pair_small.mp4"
    model = fixture_model(shared, "bottomup")
    pipe = pipeline([model], device="cpu", tracking=TrackingOptions(tracker=name), batch_size=1)
    out = tmp_path / "tracked.slp"
    pipe.predict_to_file(video, output=out, frames="0-11")
    in_file = {f[0]: f[1] for f in tracked_poses(out)}
    assert all(n is not None for n in in_file[0]) and len(in_file[0]) == 2
    memory = pipe.predict(video, frames="0-11")
    names = list(memory.track_names)
    for row, frame in enumerate(memory.frame_indices.tolist()):
        slots = np.flatnonzero(memory.valid[row])
        got = [names[t] if t >= 0 else None for t in memory.tracks[row, slots]]
        assert got == in_file[frame], frame

    untracked = tmp_path / "untracked.slp"
    pipeline([model], device="cpu").predict_to_file(video, output=untracked, frames="0-11")
    retracked = tmp_path / "retracked.slp"
    retrack_file(untracked, retracked, TrackingOptions(tracker=name))
    again = {f[0]: f[1] for f in tracked_poses(retracked)}
    assert all(n is not None for n in again[0])


def test_linking_in_memory_gives_the_file_s_tracks(shared: Path, tmp_path: Path) -> None:
    """``predict`` in memory links at the end as a file's run does: the same ids per
    pose, and only the identities linking kept in ``track_names``."""
    video = shared / "videos" / "centered_pair_small.mp4"
    model = fixture_model(shared, "bottomup")
    options = TrackingOptions(tracker="sort", max_tracks=1, track_buffer=3)
    pipe = pipeline([model], device="cpu", tracking=options, batch_size=4)
    out = tmp_path / "linked.slp"
    pipe.predict_to_file(video, output=out, frames="0-39")
    in_file = {f[0]: f[1] for f in tracked_poses(out)}
    memory = pipe.predict(video, frames="0-39")
    names = list(memory.track_names)
    assert names == [t.name for t in sio.load_slp(str(out)).tracks]
    for row, frame in enumerate(memory.frame_indices.tolist()):
        slots = np.flatnonzero(memory.valid[row])
        got = [names[t] if t >= 0 else None for t in memory.tracks[row, slots]]
        assert got == in_file[frame], frame
    assert memory.provenance["tracking"]["linking"]["identities"] == len(names) == 1
    unlinked = pipeline([model], device="cpu", tracking=TrackingOptions(tracker="sort"))
    assert len(unlinked.predict(video, frames="0-39").track_names) > 1


@pytest.mark.parametrize("name", ["bytetrack", "ocsort"])
def test_predict_t_with_a_mot_tracker_tracks_as_infer_track_after_the_pre_pass(
    shared: Path, tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sleap-nn's predictor tracks with a MOT tracker once the video is predicted, after
    the whole-video pre-pass (scores divided by their q95: 0.67 for this model, so online
    tracks differ). ``predict -t`` does the same at the video's end: its file and its
    in-memory result hold exactly the tracks ``infer track`` gives the untracked file,
    and the pre-pass is recorded."""
    video = shared / "videos" / "centered_pair_small.mp4"
    model = fixture_model(shared, "bottomup")
    options = TrackingOptions(tracker=name)
    untracked = tmp_path / "untracked.slp"
    pipeline([model], device="cpu").predict_to_file(video, output=untracked, frames="0-59")
    retracked = tmp_path / "retracked.slp"
    retrack_file(untracked, retracked, options)
    pipe = pipeline([model], device="cpu", tracking=options, batch_size=4)
    tracked = tmp_path / "tracked.slp"
    pipe.predict_to_file(video, output=tracked, frames="0-59")
    want, got = tracked_poses(retracked), tracked_poses(tracked)
    assert [f[0] for f in want] == [f[0] for f in got]
    for (frame, names_a, pts_a, sc_a), (_, names_b, pts_b, sc_b) in zip(want, got):
        assert names_a == names_b, frame
        np.testing.assert_array_equal(pts_a, pts_b)
        np.testing.assert_array_equal(sc_a, sc_b)
    prepare = sio.load_slp(str(tracked)).provenance["tracking"]["prepare"]
    assert prepare == sio.load_slp(str(retracked)).provenance["tracking"]["prepare"]
    assert 0.5 < prepare[0]["score_normalizer"] < 0.9
    memory = pipe.predict(video, frames="0-59")
    names = list(memory.track_names)
    in_file = {f[0]: f[1] for f in got}
    for row, frame in enumerate(memory.frame_indices.tolist()):
        slots = np.flatnonzero(memory.valid[row])
        assert [names[t] if t >= 0 else None for t in memory.tracks[row, slots]] == in_file[frame]
    # Online alone (no pre-pass), this model's tracks are not sleap-nn's: the step matters.
    monkeypatch.setattr("sleap_infer.pipeline.frames_job.prepares", lambda options: False)
    online = pipe.predict(video, frames="0-59")
    assert not np.array_equal(online.tracks, memory.tracks)
