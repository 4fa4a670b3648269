"""Every output format opened by the tool a lab would use (movement, pynwb, nwbinspector,
sleap-io), asserting the numbers that come out: points, scores, tracks and times.

Synthetic predictions (:mod:`output_cases`) cover each kind of result; the real sleap-nn
models at the end cover each model type. Skipped where a client is not installed (they
are in the ``dev`` extra).
"""

from __future__ import annotations

import json
import re
import warnings
from datetime import datetime, timezone
from pathlib import Path

import h5py
import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import UsageError
from sleap_infer.core.nwb_metadata import NwbMetadata

from output_cases import CASES, N_FRAMES, Case, expected_slots, make_case, write

# movement's one entry point (load_poses.from_* are deprecated in 0.17): what the docs show.
movement_io = pytest.importorskip("movement.io", reason="movement not installed")


def load_dataset(path, source_software: str, **kwargs):  # type: ignore[no-untyped-def]
    return movement_io.load_dataset(path, source_software=source_software, **kwargs)


pynwb = pytest.importorskip("pynwb", reason="pynwb not installed")
nwbinspector = pytest.importorskip("nwbinspector", reason="nwbinspector not installed")

FPS = 25.0
LAB = NwbMetadata(
    nwb_subject="mouse-1",
    nwb_species="Mus musculus",
    nwb_sex="F",
    nwb_age="P90D",
    nwb_session_start_time="2024-05-01T09:30:00+02:00",
    nwb_experimenter="Doe, Jane; Roe, Richard",
    nwb_institution="Some Institute",
    nwb_lab="Some Lab",
    nwb_session_description="two flies in an arena",
)


def starting_late(case: Case, first: int) -> Case:
    """``case`` with nothing predicted before frame ``first``: a track that starts late."""
    for batch in case.batches:
        batch.valid[np.asarray(batch.frame_indices) < first] = False
    return case


def slot_arrays(case: Case, n_slots: int) -> tuple[np.ndarray, np.ndarray]:
    """``(frames, slots, nodes, 2)`` points and ``(frames, slots, nodes)`` scores, NaN-filled."""
    xy = np.full((N_FRAMES, n_slots, 3, 2), np.nan)
    scores = np.full((N_FRAMES, n_slots, 3), np.nan)
    for (frame, slot), inst in expected_slots(case).items():
        xy[frame, slot] = inst.points
        scores[frame, slot] = inst.point_scores
    return xy, scores


def n_slots(case: Case) -> int:
    if case.class_names:
        return len(case.class_names)
    return max((s + 1 for _, s in expected_slots(case)), default=1)


def slot_names(case: Case) -> list[str]:
    return list(case.class_names) or [f"untracked_{k}" for k in range(n_slots(case))]


def quiet(call, *args, **kwargs):  # type: ignore[no-untyped-def]
    """Third-party readers' own deprecation and runtime warnings are not ours."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call(*args, **kwargs)


def assert_movement_poses(ds, xy: np.ndarray, scores: np.ndarray, names: list[str]) -> None:  # type: ignore[no-untyped-def]
    """A movement poses dataset holds exactly ``xy`` / ``scores`` (frames, tracks, nodes)."""
    assert list(ds.individuals.values) == names
    # NWB readers list the series by name (HDF5 order), not in skeleton order.
    assert sorted(ds.keypoints.values) == ["head", "tail", "thorax"]
    ds = ds.sel(keypoints=["head", "thorax", "tail"])
    np.testing.assert_allclose(ds.time.values, np.arange(N_FRAMES) / FPS)
    position = ds.position.transpose("time", "individuals", "keypoints", "space").values
    confidence = ds.confidence.transpose("time", "individuals", "keypoints").values
    np.testing.assert_allclose(position, xy, rtol=1e-6)
    np.testing.assert_allclose(confidence, scores, rtol=1e-6)


# --- NWB --------------------------------------------------------------------------------


def nwb_tracks(path: Path) -> list[str]:
    with pynwb.NWBHDF5IO(str(path), "r") as io:
        behavior = io.read().processing["behavior"]
        return [k for k, v in behavior.data_interfaces.items() if type(v).__name__ != "Skeletons"]


def test_nwb_one_track_loads_in_movement_with_its_defaults(tmp_path: Path) -> None:
    case = starting_late(make_case("single"), 4)
    out = write(tmp_path, case, "nwb", fps=FPS)
    ds = quiet(load_dataset, out, "NWB")  # no keys: behavior/PoseEstimation
    xy, scores = slot_arrays(case, 1)
    (animal,) = ds.individuals.values  # the file's identifier: the track, then unique digits
    assert re.fullmatch(r"untracked_0-[0-9a-f]{12}", animal)
    assert_movement_poses(ds, xy, scores, [animal])
    assert ds.attrs["fps"] == FPS
    found = ~np.isnan(ds.position.values).all(axis=(1, 2, 3))
    assert float(ds.time[found][0]) == pytest.approx(4 / FPS)  # its true time, not 0


@pytest.mark.parametrize("kind", ["untracked", "identities"])
def test_nwb_every_track_loads_in_movement_by_its_name(tmp_path: Path, kind: str) -> None:
    """movement reads one animal per call (named after the file's identifier): a file with
    several tracks is read track by track, each key the track's name."""
    case = starting_late(make_case(kind), 1)
    out = write(tmp_path, case, "nwb", fps=FPS)
    names = slot_names(case)
    assert nwb_tracks(out) == sorted(names)
    with pytest.raises(KeyError, match="'PoseEstimation' not found"):
        quiet(load_dataset, out, "NWB")  # movement's limit, not a lost track
    xy, scores = slot_arrays(case, len(names))
    for k, name in enumerate(names):
        ds = quiet(load_dataset, out, "NWB", pose_estimation_key=name)
        assert_movement_poses(ds.assign_coords(individuals=[name]), xy[:, k : k + 1],
                              scores[:, k : k + 1], [name])  # fmt: skip


@pytest.mark.parametrize("kind", CASES)
def test_nwb_in_pynwb_is_rate_timed_with_its_session_and_subject(tmp_path: Path, kind: str) -> None:
    case = make_case(kind)
    out = write(tmp_path, case, "nwb", nwb=LAB, fps=FPS)
    with pynwb.NWBHDF5IO(str(out), "r") as io:
        nwb = io.read()
        assert nwb.session_start_time == datetime(2024, 5, 1, 7, 30, tzinfo=timezone.utc)
        assert nwb.experimenter == ("Doe, Jane", "Roe, Richard")
        assert (nwb.institution, nwb.lab) == ("Some Institute", "Some Lab")
        assert nwb.session_description == "two flies in an arena"
        subject = nwb.subject
        assert (subject.subject_id, subject.species, subject.sex, subject.age) == (
            "mouse-1", "Mus musculus", "F", "P90D",
        )  # fmt: skip
        assert json.loads(nwb.notes)["provenance"] == {"run": "test"}
        for name in nwb_tracks(out):
            for series in nwb.processing["behavior"][name].pose_estimation_series.values():
                assert series.timestamps is None and series.rate == FPS
                assert series.starting_time == 0.0
                assert series.data.shape == (N_FRAMES, 2)
    with h5py.File(out, "r") as f:  # the copy for sleap-io links the data, never copies it
        (module,) = [k for k in f["processing"] if k.startswith("SLEAP_VIDEO_")]
        behavior = f["processing"]["behavior"]
        for name, track in f["processing"][module].items():
            main = behavior[track["description"][()].decode().split(" of the behavior")[0]]
            assert name.startswith("track" if case.class_names else "untracked_")
            for node in ("head", "thorax", "tail"):
                assert track[node]["data"].id == main[node]["data"].id  # one dataset


def inspect(path: Path, config: str | None = None) -> list[tuple[str, str]]:
    kwargs = {"config": nwbinspector.load_config(config)} if config else {}
    messages = quiet(list, nwbinspector.inspect_nwbfile(nwbfile_path=str(path), **kwargs))
    return sorted((m.importance.name, m.check_function_name) for m in messages if m)


@pytest.mark.parametrize("kind", CASES)
def test_nwbinspector_finds_nothing_critical_once_the_lab_says_who(
    tmp_path: Path, kind: str
) -> None:
    out = write(tmp_path, make_case(kind), "nwb", nwb=LAB, fps=FPS)
    for config in (None, "dandi"):
        serious = [m for m in inspect(out, config) if m[0] != "BEST_PRACTICE_SUGGESTION"]
        assert serious == [], config


def test_nwbinspector_without_metadata_asks_only_what_the_lab_knows(tmp_path: Path) -> None:
    """A subject exists (id ``unknown``, sex ``U``) and the timestamps are a rate: what is
    left is the species and age, which only the lab can give."""
    out = write(tmp_path, make_case("untracked"), "nwb", fps=FPS)
    serious = [m for m in inspect(out) if m[0] != "BEST_PRACTICE_SUGGESTION"]
    assert serious == [
        ("BEST_PRACTICE_VIOLATION", "check_subject_species_exists"),
        ("CRITICAL", "check_subject_age"),
    ]


def test_session_start_is_the_videos_creation_time(tmp_path: Path) -> None:
    import av

    from sleap_infer.writers.nwb_out import video_creation_time

    video = tmp_path / "dated.mp4"
    with av.open(str(video), "w") as container:
        container.metadata["creation_time"] = "2023-02-03T04:05:06.000000Z"
        stream = container.add_stream("mpeg4", rate=25)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        frame = av.VideoFrame.from_ndarray(np.zeros((32, 32, 3), np.uint8), format="rgb24")
        for packet in [*stream.encode(frame), *stream.encode()]:
            container.mux(packet)
    assert video_creation_time(video) == datetime(2023, 2, 3, 4, 5, 6, tzinfo=timezone.utc)
    assert video_creation_time(tmp_path / "missing.mp4") is None


def test_session_start_without_a_recorded_time_says_so(tmp_path: Path) -> None:
    before = datetime.now(timezone.utc)
    out = write(tmp_path, make_case("single"), "nwb")  # v.mp4 does not exist: no time in it
    with pynwb.NWBHDF5IO(str(out), "r") as io:
        nwb = io.read()
        assert nwb.session_start_time >= before.replace(microsecond=0)
        assert "the video records no creation time" in json.loads(nwb.notes)["session_start_time"]


def test_nwb_metadata_file_and_options(tmp_path: Path) -> None:
    yaml_file = tmp_path / "session.yaml"
    yaml_file.write_text(
        "subject: m7\nspecies: Mus musculus\nsex: M\nage: P60D\n"
        "session_start_time: 2024-01-02T03:04:05Z\nexperimenter: [Doe, Jane]\n"
        "institution: X\n"
    )
    meta = NwbMetadata(nwb_metadata=str(yaml_file), nwb_subject="m8")  # an option wins
    assert (meta.nwb_subject, meta.nwb_species, meta.nwb_sex) == ("m8", "Mus musculus", "M")
    assert meta.session_start() == datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert meta.experimenters == ["Doe", "Jane"]
    (tmp_path / "bad.yaml").write_text("subjet: m7\n")
    with pytest.raises(UsageError, match=r"bad.yaml: unknown key 'subjet' \(known: subject,"):
        NwbMetadata(nwb_metadata=str(tmp_path / "bad.yaml"))
    with pytest.raises(UsageError, match="missing.yaml: cannot read"):
        NwbMetadata(nwb_metadata=str(tmp_path / "missing.yaml"))
    with pytest.raises(UsageError, match="--nwb-session-start-time 'yesterday': not an ISO"):
        NwbMetadata(nwb_session_start_time="yesterday")
    with pytest.raises(UsageError, match="--nwb-sex 'male': choose from M, F, U, O"):
        NwbMetadata(nwb_sex="male")
    with pytest.raises(UsageError, match=r"^--nwb-subject only matter with --format nwb \(not"):
        NwbMetadata(nwb_subject="m1").check_format("slp")
    NwbMetadata(nwb_subject="m1").check_format("nwb")


def test_nwb_options_reach_the_pipeline_by_their_names() -> None:
    from sleap_infer.pipeline.spec import bind, option_names

    assert {"nwb_subject", "nwb_metadata", "nwb_session_start_time"} <= set(option_names())
    spec = bind(["m"], nwb_subject="m1", nwb_age="P1D", peak_threshold=0.3)
    assert spec.nwb == NwbMetadata(nwb_subject="m1", nwb_age="P1D")
    assert spec.options.peak_threshold == 0.3


@pytest.mark.parametrize("kind", CASES)
def test_nwb_read_back_by_sleap_io_keeps_frames_and_point_scores(tmp_path: Path, kind: str) -> None:
    case = make_case(kind)
    labels = quiet(sio.load_nwb, str(write(tmp_path, case, "nwb")))
    slots = expected_slots(case)
    got = {
        (lf.frame_idx, int(inst.track.name[5:]) if inst.track else k): inst
        for lf in labels
        for k, inst in enumerate(lf.instances)
    }
    if case.class_names:
        assert set(got) == set(slots)
    else:  # untracked instances come back in slot order per frame
        assert {f for f, _ in got} == {f for f, _ in slots} and len(got) == len(slots)
    for key, inst in got.items():
        want = slots[key]
        np.testing.assert_allclose(inst.numpy(), want.points, rtol=1e-6)
        np.testing.assert_allclose(inst.points["score"], want.point_scores, rtol=1e-6)


# --- CSV --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CASES)
def test_dlc_csv_loads_in_movement(tmp_path: Path, kind: str) -> None:
    case = starting_late(make_case(kind), 1)
    out = write(tmp_path, case, "dlc-csv", fps=FPS)
    ds = quiet(load_dataset, out, "DeepLabCut", fps=FPS)
    names = slot_names(case)
    xy, scores = slot_arrays(case, len(names))
    if len(names) == 1:  # DLC's single-animal layout has no individuals row
        names = ["individual_0"]
    assert_movement_poses(ds, xy, scores, names)


def box_case(seed: int = 3):  # type: ignore[no-untyped-def]
    from sleap_infer.core.boxes import BoxSet
    from sleap_infer.core.predictions import BatchPredictions

    rng = np.random.default_rng(seed)
    batches = []
    for first in (0, 4, 8):
        preds = BatchPredictions.empty(4, 3)
        preds.frame_indices = np.arange(first, first + 4)
        frames = np.repeat(np.arange(4), [2, 0, 3, 1])  # frame 1 of each batch has none
        x1y1 = rng.uniform(0, 40, (6, 2))
        xyxy = np.concatenate([x1y1, x1y1 + rng.uniform(1, 20, (6, 2))], axis=1)
        score = rng.uniform(0.1, 1, 6).astype(np.float32)
        preds.boxes = BoxSet.build(frames, xyxy, score, rng.integers(-1, 2, 6))
        batches.append(preds)
    return batches


def test_via_csv_loads_in_movement_with_frame_numbers(tmp_path: Path) -> None:
    from sleap_infer.journal import read_journal
    from sleap_infer.writers.outputs import write_from_journal
    from sleap_infer.writers.registry import FORMATS

    from slp_tables import write_journal

    batches = box_case()
    journal = read_journal(write_journal(tmp_path / "j.partial", batches))
    out = tmp_path / "v.mp4.predictions.via.csv"
    sio_video = sio.Video(
        filename="v.mp4",
        backend_metadata={"shape": [N_FRAMES, 64, 64, 1], "fps": FPS},
        open_backend=False,
    )
    skeleton = sio.Skeleton(nodes=["head", "thorax", "tail"])
    write_from_journal(
        journal, out, FORMATS["via-csv"], sio_video, skeleton, (), {},
        box_categories=("mouse", "rat"), poses=False,
    )  # fmt: skip
    ds = quiet(load_dataset, out, "VIA-tracks", fps=FPS, use_frame_numbers_from_file=True)
    want: dict[int, list[tuple]] = {}
    for preds in batches:
        boxes = preds.boxes
        for k in range(len(boxes)):
            frame = int(preds.frame_indices[boxes.frame[k]])
            want.setdefault(frame, []).append((float(boxes.score[k]), *boxes.xyxy[k].tolist()))
    frames_with_boxes = sorted(want)
    np.testing.assert_allclose(ds.time.values, np.array(frames_with_boxes) / FPS)
    n_ids = max(len(v) for v in want.values())
    assert list(ds.individuals.values) == [f"id_{k}" for k in range(n_ids)]
    for t, frame in enumerate(frames_with_boxes):
        ranked = sorted(want[frame], key=lambda b: -b[0])  # track k: the k-th best box
        for k in range(n_ids):
            pos = ds.position.isel(time=t, individuals=k).values
            shape = ds.shape.isel(time=t, individuals=k).values
            conf = float(ds.confidence.isel(time=t, individuals=k))
            if k >= len(ranked):
                assert np.isnan(pos).all() and np.isnan(conf)
                continue
            score, x1, y1, x2, y2 = ranked[k]
            np.testing.assert_allclose(pos, [(x1 + x2) / 2, (y1 + y2) / 2], rtol=1e-9)
            np.testing.assert_allclose(shape, [x2 - x1, y2 - y1], rtol=1e-9)
            assert conf == pytest.approx(score, rel=1e-6)


@pytest.mark.parametrize("kind", CASES)
def test_analysis_h5_loads_in_movement(tmp_path: Path, kind: str) -> None:
    case = make_case(kind)
    out = write(tmp_path, case, "analysis-h5", fps=FPS)
    ds = quiet(load_dataset, out, "SLEAP", fps=FPS)
    if kind == "empty":
        assert ds.sizes["individuals"] == 0 or np.isnan(ds.position.values).all()
        return
    names = slot_names(case)
    xy, scores = slot_arrays(case, len(names))
    assert_movement_poses(ds, xy, scores, names)


# --- real sleap-nn models (skipped without ../shared/fixtures) -------------------------

# Every pose model type, with the formats that hold poses; box detectors below.
REAL_MODELS = {
    "single_instance": ("single_instance",),
    "topdown": ("centroid", "centered_instance"),
    "bottomup": ("bottomup",),
    "multi_class_bottomup": ("multi_class_bottomup",),
    "multi_class_topdown": ("centroid", "multi_class_topdown"),
}
REAL_FRAMES = 12
REAL_FPS = 15.0  # centered_pair_small.mp4's rate: its timestamps agree, so NWB is rate-timed


def slp_slots(labels: sio.Labels, class_names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The ``.slp``'s instances as ``(frames, slots, nodes, 2)`` points and scores: identities
    by class, else each frame's instances by descending score (the per-track formats' rule)."""
    n_nodes = len(labels.skeleton.nodes)
    per_frame = {lf.frame_idx: list(lf.instances) for lf in labels}
    width = len(class_names) or max((len(v) for v in per_frame.values()), default=1) or 1
    xy = np.full((REAL_FRAMES, width, n_nodes, 2), np.nan)
    scores = np.full((REAL_FRAMES, width, n_nodes), np.nan)
    for frame, instances in per_frame.items():
        if class_names:
            order = [(class_names.index(i.track.name), i) for i in instances if i.track]
        else:
            order = list(enumerate(sorted(instances, key=lambda i: -i.score)))
        for slot, inst in order:
            xy[frame, slot] = inst.numpy()
            scores[frame, slot] = inst.points["score"]
    return xy, scores


@pytest.fixture(scope="module")
def real_files(shared: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each model type's 12 frames of centered_pair_small as ``.slp`` (predicted), and every
    other pose format written from a journal of exactly those predictions."""
    from sleap_infer.journal import read_journal
    from sleap_infer.writers.outputs import write_from_journal
    from sleap_infer.writers.registry import FORMATS

    from conftest import FIXTURE_MODELS, pipeline
    from output_cases import journal_from_labels

    video = shared / "videos" / "centered_pair_small.mp4"
    out = tmp_path_factory.mktemp("clients")
    files = {}
    for name, types in REAL_MODELS.items():
        pipe = pipeline([shared / "models" / FIXTURE_MODELS[t] for t in types], device="cpu")
        slp = out / f"{name}.slp"
        pipe.predict_to_file(video, output=slp, frames=f"0-{REAL_FRAMES - 1}", format="slp")
        files[f"{name}/slp"] = slp
        labels = sio.load_slp(str(slp))
        classes = tuple(pipe.primary.config.class_names)
        journal = read_journal(journal_from_labels(labels, out / f"{name}.partial", classes))
        video_ref = sio.Video(
            filename=str(video),
            backend_metadata={"shape": [REAL_FRAMES, 384, 384, 1], "fps": REAL_FPS},
            open_backend=False,
        )
        for fmt in ("nwb", "analysis-h5", "csv", "dlc-csv"):
            path = out / f"{name}{FORMATS[fmt].suffix}"
            write_from_journal(
                journal, path, FORMATS[fmt], video_ref, labels.skeleton, classes,
                {"model_types": list(types)}, nwb=LAB,
            )  # fmt: skip
            files[f"{name}/{fmt}"] = path
    return files


def _real(real_files: dict[str, Path], name: str):  # type: ignore[no-untyped-def]
    labels = sio.load_slp(str(real_files[f"{name}/slp"]))
    classes = ("female", "male") if name.startswith("multi_class") else ()
    return labels, classes


@pytest.mark.parametrize("name", list(REAL_MODELS))
def test_real_nwb_in_movement_sleap_io_and_nwbinspector(
    real_files: dict[str, Path], name: str
) -> None:
    labels, classes = _real(real_files, name)
    xy, scores = slp_slots(labels, tuple(t.name for t in labels.tracks) if classes else ())
    out = real_files[f"{name}/nwb"]
    tracks = nwb_tracks(out)
    n = xy.shape[1]
    if n == 1:
        assert tracks == ["PoseEstimation"]
    for k, track in enumerate(tracks if n > 1 else ["PoseEstimation"]):
        slot = k if n == 1 else _slot_of(track, labels, classes)
        ds = quiet(load_dataset, out, "NWB", pose_estimation_key=track)
        ds = ds.sel(keypoints=[node.name for node in labels.skeleton.nodes])
        np.testing.assert_allclose(ds.time.values, np.arange(REAL_FRAMES) / REAL_FPS)
        position = ds.position.transpose("time", "individuals", "keypoints", "space").values
        np.testing.assert_allclose(position[:, 0], xy[:, slot], rtol=1e-6)
        confidence = ds.confidence.transpose("time", "individuals", "keypoints").values
        np.testing.assert_allclose(confidence[:, 0], scores[:, slot], rtol=1e-6)
    back = quiet(sio.load_nwb, str(out))
    assert [lf.frame_idx for lf in back] == [lf.frame_idx for lf in labels if len(lf)]
    assert sum(len(lf) for lf in back) == sum(len(lf) for lf in labels)
    serious = [m for m in inspect(out, "dandi") if m[0] != "BEST_PRACTICE_SUGGESTION"]
    assert serious == []


def _slot_of(track: str, labels: sio.Labels, classes: tuple[str, ...]) -> int:
    if classes:
        return [t.name for t in labels.tracks].index(track)
    return int(track.removeprefix("untracked_"))


@pytest.mark.parametrize("name", list(REAL_MODELS))
def test_real_dlc_csv_and_analysis_h5_in_movement(real_files: dict[str, Path], name: str) -> None:
    labels, classes = _real(real_files, name)
    track_names = tuple(t.name for t in labels.tracks) if classes else ()
    xy, scores = slp_slots(labels, track_names)
    nodes = [node.name for node in labels.skeleton.nodes]
    for fmt, software in (
        ("dlc-csv", "DeepLabCut"),
        ("analysis-h5", "SLEAP"),
    ):
        ds = quiet(load_dataset, real_files[f"{name}/{fmt}"], software, fps=FPS)
        ds = ds.sel(keypoints=nodes)
        names = list(track_names) or [f"untracked_{k}" for k in range(xy.shape[1])]
        if fmt == "dlc-csv" and len(names) == 1:
            names = ["individual_0"]  # DLC's single-animal layout names no individual
        assert list(ds.individuals.values) == names, fmt
        np.testing.assert_allclose(ds.time.values, np.arange(REAL_FRAMES) / FPS)
        position = ds.position.transpose("time", "individuals", "keypoints", "space").values
        confidence = ds.confidence.transpose("time", "individuals", "keypoints").values
        np.testing.assert_allclose(position, xy, rtol=1e-6, err_msg=fmt)
        np.testing.assert_allclose(confidence, scores, rtol=1e-6, err_msg=fmt)


@pytest.mark.parametrize("name", ["single_instance", "multi_class_bottomup"])
def test_real_slp_in_movement(real_files: dict[str, Path], name: str) -> None:
    """movement reads a ``.slp`` as tracks: models with one animal or with identities."""
    labels, classes = _real(real_files, name)
    track_names = tuple(t.name for t in labels.tracks) if classes else ()
    xy, scores = slp_slots(labels, track_names)
    ds = quiet(load_dataset, real_files[f"{name}/slp"], "SLEAP", fps=FPS)
    ds = ds.sel(keypoints=[node.name for node in labels.skeleton.nodes])
    if track_names:
        assert list(ds.individuals.values) == list(track_names)
    position = ds.position.transpose("time", "individuals", "keypoints", "space").values
    np.testing.assert_allclose(position[: xy.shape[0]], xy, rtol=1e-6)
    confidence = ds.confidence.transpose("time", "individuals", "keypoints").values
    np.testing.assert_allclose(confidence[: xy.shape[0]], scores, rtol=1e-6)


def test_real_box_detector_via_csv_in_movement(shared: Path, tmp_path: Path) -> None:
    """A box detector's VIA-tracks CSV holds the boxes of its CSV table, rank by score."""
    import pandas as pd

    from conftest import pipeline

    video = shared / "videos" / "synthetic_multi.mp4"
    pipe = pipeline([shared / "models" / "synthetic_bbox_centernet"], device="cpu")
    via, table = tmp_path / "b.via.csv", tmp_path / "b.csv"
    for path, fmt in ((via, "via-csv"), (table, "csv")):
        pipe.predict_to_file(video, output=path, frames="0-5", format=fmt)
    rows = pd.read_csv(table, keep_default_na=False)
    ds = quiet(load_dataset, via, "VIA-tracks", use_frame_numbers_from_file=True)
    assert len(rows) > 0
    assert ds.time.values.tolist() == sorted(set(rows["frame_idx"].tolist()))
    for frame, group in rows.groupby("frame_idx"):
        group = group.sort_values("score", ascending=False, kind="stable")
        got = ds.sel(time=frame)
        for k, box in enumerate(group.itertuples(index=False)):
            individual = f"id_{k}"
            centre = [(box.x1 + box.x2) / 2, (box.y1 + box.y2) / 2]
            np.testing.assert_allclose(got.position.sel(individuals=individual), centre)
            np.testing.assert_allclose(
                got.shape.sel(individuals=individual), [box.x2 - box.x1, box.y2 - box.y1]
            )
            assert float(got.confidence.sel(individuals=individual)) == pytest.approx(box.score)
    assert int(np.isfinite(ds.confidence.values).sum()) == len(rows)


def test_nwb_of_a_variable_frame_rate_video_keeps_its_timestamps(tmp_path: Path) -> None:
    """A pause in the video is a pause in the NWB file: frame k is timed by the video's own
    timestamp (relative to the first frame) where those are not a constant rate."""
    from stamped_videos import write_stamped

    pts = [0, 33, 67, 100, 250, 283, 317, 350, 383, 417, 450, 483]  # ms: a pause after frame 3
    write_stamped(tmp_path / "v.mp4", pts)
    case = make_case("identities")
    out = write(tmp_path, case, "nwb", nwb=LAB, fps=FPS)
    with pynwb.NWBHDF5IO(str(out), "r") as io:
        nwb = io.read()
        for name in nwb_tracks(out):
            for series in nwb.processing["behavior"][name].pose_estimation_series.values():
                assert series.rate is None
                np.testing.assert_allclose(series.timestamps[:], np.array(pts) / 1000)
    serious = [m for m in inspect(out, "dandi") if m[0] != "BEST_PRACTICE_SUGGESTION"]
    assert serious == []
    labels = quiet(sio.load_nwb, str(out))  # frames still by rank: every frame is there
    assert [lf.frame_idx for lf in labels] == sorted(case.by_frame(placed_only=True))


def test_nwb_of_a_constant_rate_video_is_rate_timed(tmp_path: Path) -> None:
    from stamped_videos import write_stamped

    write_stamped(tmp_path / "v.mp4", [40 * k for k in range(N_FRAMES)])  # 25 fps exactly
    out = write(tmp_path, make_case("single"), "nwb", fps=FPS)
    with pynwb.NWBHDF5IO(str(out), "r") as io:
        series = io.read().processing["behavior"]["PoseEstimation"].pose_estimation_series
        assert all(s.timestamps is None and s.rate == FPS for s in series.values())
