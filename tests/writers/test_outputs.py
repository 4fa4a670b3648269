"""Every output format x {untracked multi-animal, identities, single instance, nothing found}:
written from a journal, read back, compared with the predictions; completeness checks."""

from __future__ import annotations

import csv
import importlib.util
import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import UsageError
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.journal import JournalWriter, read_journal
from sleap_infer.model.config import parse_config
from sleap_infer.sources.video import VideoInfo
from sleap_infer.writers.labels import make_skeleton, make_video
from sleap_infer.writers.outputs import is_complete, write_from_journal
from sleap_infer.writers.registry import FORMATS, get_format

from conftest import fixture_model
from model_factory import config_dict

N_FRAMES = 12  # the video's length; frames 3 and 7 are never predicted (sparse on purpose)
CASES = ("untracked", "identities", "single", "empty")
HAS_NWB = importlib.util.find_spec("pynwb") is not None
needs_nwb = pytest.mark.skipif(not HAS_NWB, reason="pynwb not installed")


@dataclass
class Expected:
    """One predicted instance, as the test built it (independent of the writers)."""

    frame: int
    points: np.ndarray  # (nodes, 2)
    point_scores: np.ndarray
    score: float
    track: str | None


@dataclass
class Case:
    batches: list[BatchPredictions]
    model_type: str
    class_names: tuple[str, ...]

    @property
    def instances(self) -> list[Expected]:
        """Every valid instance, frame by frame in model order (the .slp's order)."""
        out = []
        for b in self.batches:
            for f, i in zip(*np.nonzero(b.valid)):
                cid = -1 if b.class_ids is None else int(b.class_ids[f, i])
                track = self.class_names[cid] if 0 <= cid < len(self.class_names) else None
                out.append(
                    Expected(
                        int(b.frame_indices[f]),
                        b.points[f, i],
                        b.point_scores[f, i],
                        float(b.instance_scores[f, i]),
                        track,
                    )
                )
        return out

    @property
    def predicted(self) -> list[int]:
        """Every frame the batches hold, those where nothing was found too."""
        return [int(f) for b in self.batches for f in b.frame_indices]

    def by_frame(self, placed_only: bool = False) -> dict[int, list[Expected]]:
        """Instances per frame; ``placed_only`` drops those an identity model gave no class."""
        frames: dict[int, list[Expected]] = {}
        for inst in self.instances:
            if placed_only and self.class_names and inst.track is None:
                continue
            frames.setdefault(inst.frame, []).append(inst)
        return frames


def make_case(kind: str, seed: int = 0) -> Case:
    rng = np.random.default_rng(seed)
    model_type = {"identities": "multi_class_bottomup", "single": "single_instance"}.get(
        kind, "bottomup"
    )
    n_inst = 1 if kind == "single" else 3
    frames = [f for f in range(N_FRAMES) if f not in (3, 7)]
    batches = []
    for start in range(0, len(frames), 4):
        idx = np.array(frames[start : start + 4])
        n = len(idx)
        points = rng.uniform(0, 90, (n, n_inst, 3, 2)).astype(np.float32)
        points[rng.uniform(size=(n, n_inst, 3)) < 0.15] = np.nan  # nodes not found
        valid = rng.uniform(size=(n, n_inst)) < 0.75
        valid[0, : min(2, n_inst)] = True  # at least one frame with two animals
        if start == 4:
            valid[1] = False  # and frame 6 where nothing was found, in every case
        if kind == "empty":
            valid[:] = False
        batch = BatchPredictions(
            points=points,
            point_scores=rng.uniform(0.2, 1, (n, n_inst, 3)).astype(np.float32),
            instance_scores=rng.uniform(0.5, 3, (n, n_inst)).astype(np.float32),
            valid=valid,
            frame_indices=idx,
        )
        if kind == "identities":
            ids = np.stack([rng.permutation(3) for _ in range(n)]).astype(np.int32) - 1
            batch.class_ids = ids  # -1, 0, 1 in a random order: one animal per frame has no class
            batch.class_scores = rng.uniform(0.5, 1, (n, n_inst)).astype(np.float32)
        batches.append(batch)
    class_names = ("female", "male") if kind == "identities" else ()
    return Case(batches, model_type, class_names)


def write(tmp_path: Path, case: Case, fmt_name: str, empty_frames: bool = True) -> Path:
    journal_file = tmp_path / "j.partial"
    with JournalWriter(journal_file, header={"fingerprint": {}}) as w:
        for batch in case.batches:
            w.write_batch(batch)
    cfg = parse_config(config_dict(case.model_type))
    info = VideoInfo(tmp_path / "v.mp4", N_FRAMES, 30.0, 64, 96, True, "h264")
    fmt = get_format(fmt_name)
    out = tmp_path / f"v.mp4.predictions{fmt.suffix}"
    write_from_journal(
        read_journal(journal_file),
        out,
        fmt,
        make_video(info),
        make_skeleton(cfg),
        case.class_names,
        {"run": "test"},
        empty_frames=empty_frames,
    )
    assert is_complete(out, fmt)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.partial", out.name]  # no temp
    return out


@pytest.mark.parametrize("empty_frames", [True, False])
@pytest.mark.parametrize("kind", CASES)
def test_slp(tmp_path: Path, kind: str, empty_frames: bool) -> None:
    case = make_case(kind)
    labels = sio.load_slp(str(write(tmp_path, case, "slp", empty_frames)))
    expected = case.by_frame()
    # Every predicted frame, as sleap-nn writes them; --no-empty-frames: those with instances.
    assert [lf.frame_idx for lf in labels] == (case.predicted if empty_frames else sorted(expected))
    assert len(case.predicted) > len(expected)  # the cases do have empty frames
    for lf in labels:
        want = expected.get(lf.frame_idx, [])
        assert len(lf.instances) == len(want)
        for inst, exp in zip(lf.instances, want):
            np.testing.assert_array_equal(inst.numpy(), exp.points)
            assert inst.score == pytest.approx(exp.score)
            assert (inst.track.name if inst.track else None) == exp.track
    assert [t.name for t in labels.tracks] == list(case.class_names)
    assert labels.provenance["run"] == "test"


def _cell(text: str) -> float:
    return float(text) if text else float("nan")


@pytest.mark.parametrize("empty_frames", [True, False])
@pytest.mark.parametrize("kind", CASES)
def test_csv_has_a_header_and_one_row_per_instance(
    tmp_path: Path, kind: str, empty_frames: bool
) -> None:
    case = make_case(kind)
    out = write(tmp_path, case, "csv", empty_frames)
    with out.open(newline="") as fh:
        rows = list(csv.reader(fh))
    nodes = [f"{n}.{f}" for n in ("head", "thorax", "tail") for f in ("x", "y", "score")]
    assert rows[0] == ["track", "frame_idx", "instance.score", *nodes]
    expected = case.instances
    # A predicted frame without instances is one row with only its frame_idx (sleap-io's
    # CSV row for an empty frame), in frame order; --no-empty-frames leaves it out.
    found = {exp.frame for exp in expected}
    empty = [f for f in case.predicted if f not in found] if empty_frames else []
    order = sorted([(exp.frame, 0) for exp in expected] + [(f, 1) for f in empty])
    assert [int(row[1]) for row in rows[1:]] == [f for f, _ in order]
    blank = [row for row in rows[1:] if not row[2]]
    assert [int(row[1]) for row in blank] == empty
    assert all(set(row[:1] + row[2:]) == {""} for row in blank)
    rows = [row for row in rows if row[2]]  # header and instance rows
    assert len(rows) - 1 == len(expected)
    for row, exp in zip(rows[1:], expected):
        assert row[0] == (exp.track or "")  # no identity unless the model gave one
        assert int(row[1]) == exp.frame
        assert float(row[2]) == np.float64(np.float32(exp.score))
        values = np.array([_cell(c) for c in row[3:]]).reshape(3, 3)
        np.testing.assert_array_equal(values[:, :2], exp.points.astype(np.float64))
        np.testing.assert_array_equal(values[:, 2], exp.point_scores.astype(np.float64))
    if expected:
        labels = sio.load_csv(str(out))
        # sleap-io reads its own empty-frame row back as an instance without points.
        assert sum(len(lf.instances) for lf in labels) == len(expected) + len(empty)


def _analysis(path: Path) -> dict[str, object]:
    with h5py.File(path, "r") as f:
        data = {k: f[k][()] for k in f}
        data["attrs"] = dict(f.attrs)
        data["dims"] = json.loads(f["tracks"].attrs["dims"])
    return data


def _expected_slots(case: Case) -> dict[tuple[int, int], Expected]:
    """(frame, slot) -> instance: identities by class, else by descending score."""
    slots = {}
    names = list(case.class_names)
    for frame, instances in case.by_frame(placed_only=True).items():
        if names:
            for inst in instances:
                slots[(frame, names.index(inst.track))] = inst
        else:
            ranked = sorted(instances, key=lambda inst: -inst.score)
            slots.update({(frame, k): inst for k, inst in enumerate(ranked)})
    return slots


@pytest.mark.parametrize("kind", CASES)
def test_analysis_h5_never_presents_ranks_as_identities(tmp_path: Path, kind: str) -> None:
    case = make_case(kind)
    out = write(tmp_path, case, "analysis-h5")
    data = _analysis(out)
    slots = _expected_slots(case)
    n_slots = max((s for _, s in slots), default=-1) + 1
    names = [n.decode() for n in data["track_names"]]
    axis = data["attrs"]["track_axis"]
    if case.class_names:
        assert names == list(case.class_names)
        assert axis.startswith("identities")
        left_out = len(case.instances) - len(slots)
        assert left_out > 0 and f"{left_out} instances without one are left out" in axis
    else:
        assert names == [f"untracked_{k}" for k in range(n_slots)]
        assert axis.startswith("no identities") and "highest-scoring" in axis
    assert data["dims"] == ["track", "xy", "node", "frame"]
    tracks, occupancy = data["tracks"], data["track_occupancy"]
    assert tracks.shape == (len(names), 2, 3, N_FRAMES)
    assert occupancy.sum() == len(slots)
    for (frame, slot), inst in slots.items():
        np.testing.assert_array_equal(tracks[slot, :, :, frame], inst.points.T)
        np.testing.assert_array_equal(data["point_scores"][slot, :, frame], inst.point_scores)
        assert data["instance_scores"][slot, frame] == np.float32(inst.score)
        assert occupancy[frame, slot] == 1
    labels = sio.load_analysis_h5(str(out))
    assert sum(len(lf.instances) for lf in labels) == len(slots)
    assert labels.provenance["run"] == "test"


@needs_nwb
@pytest.mark.parametrize("empty_frames", [True, False])
@pytest.mark.parametrize("kind", CASES)
def test_nwb_loads_back_every_instance(tmp_path: Path, kind: str, empty_frames: bool) -> None:
    case = make_case(kind)
    out = write(tmp_path, case, "nwb", empty_frames)
    # Every track's series spans every predicted frame (NaN where it has no instance), so
    # a reader's time axis is the predicted frames; --no-empty-frames: its own frames only.
    stamps = _nwb_timestamps(out)
    assert stamps
    placed = case.by_frame(placed_only=True)
    for times in stamps.values():
        frames = np.rint(times * 30.0).astype(int).tolist()
        if empty_frames:
            assert frames == case.predicted
        else:
            assert set(frames) <= set(placed)
    if not empty_frames:
        assert set().union(*(np.rint(t * 30.0).astype(int) for t in stamps.values())) == set(placed)
    with warnings.catch_warnings():
        # sleap-io 0.9.5's reader touches fields pynwb 4 deprecates: not ours.
        warnings.simplefilter("ignore", DeprecationWarning)
        labels = sio.load_nwb(str(out))
    expected = case.by_frame(placed_only=True)
    # sleap-io's reader renumbers frames by timestamp rank, so compare frame by frame in order.
    assert [len(lf.instances) for lf in labels] == [len(expected[f]) for f in sorted(expected)]
    for lf, frame in zip(labels, sorted(expected)):
        got = sorted(tuple(np.nan_to_num(i.numpy(), nan=-1).ravel()) for i in lf.instances)
        want = sorted(tuple(np.nan_to_num(i.points, nan=-1).ravel()) for i in expected[frame])
        np.testing.assert_allclose(got, want, rtol=1e-6)
    descriptions = _nwb_track_descriptions(out)
    if case.class_names:
        assert sorted(descriptions) == ["track=female", "track=male"]
    else:
        assert descriptions and all("(not an identity)" in d for d in descriptions.values())


def _nwb_timestamps(path: Path) -> dict[str, np.ndarray]:
    """Each track's timestamps (seconds), read from the file."""
    with h5py.File(path, "r") as f:
        (module,) = [k for k in f["processing"] if k.startswith("SLEAP_VIDEO_")]
        group = f["processing"][module]
        out = {}
        for track in group:
            items = group[track]
            series = [k for k in items if isinstance(items[k], h5py.Group) and "data" in items[k]]
            stamps = [items[k]["timestamps"][()] for k in series if "timestamps" in items[k]]
            assert stamps and all(np.array_equal(t, stamps[0]) for t in stamps)
            out[track] = stamps[0]
        return out


def _nwb_track_descriptions(path: Path) -> dict[str, str]:
    with h5py.File(path, "r") as f:
        (module,) = [k for k in f["processing"] if k.startswith("SLEAP_VIDEO_")]
        group = f["processing"][module]
        return {k: group[k]["description"][()].decode() for k in group}  # a dataset in ndx-pose


def test_format_names_and_missing_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    assert get_format("analysis-h5") is get_format("analysis_h5") is FORMATS["analysis-h5"]
    with pytest.raises(UsageError, match="unknown --format 'mat'"):
        get_format("mat")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "pynwb" else real(name)
    )
    with pytest.raises(UsageError, match=r"--format nwb needs pynwb \(pip install pynwb\)"):
        get_format("nwb")


def test_damaged_outputs_are_not_complete(tmp_path: Path) -> None:
    out = write(tmp_path, make_case("untracked"), "slp")
    data = out.read_bytes()
    out.write_bytes(data[: len(data) // 3])
    assert not is_complete(out, FORMATS["slp"])
    assert not is_complete(tmp_path / "missing.slp", FORMATS["slp"])
    (tmp_path / "zero.csv").write_text("")
    assert not is_complete(tmp_path / "zero.csv", FORMATS["csv"])


# --- real sleap-nn models on a real video (skipped without ../shared/fixtures) -------------

REAL = {
    "bottomup": ("bottomup",),
    "topdown": ("centroid", "centered_instance"),
    "multiclass": ("multi_class_bottomup",),
}


def journal_from_labels(labels: sio.Labels, path: Path, class_names: tuple[str, ...]) -> Path:
    """A journal holding exactly the predictions of a ``.slp`` (float32 values survive)."""
    frames = list(labels)
    n_nodes = len(labels.skeleton.nodes)
    with JournalWriter(path, header={"fingerprint": {}}) as w:
        for start in range(0, len(frames), 4):
            group = frames[start : start + 4]
            n, n_inst = len(group), max(len(lf.instances) for lf in group)
            batch = BatchPredictions(
                points=np.full((n, n_inst, n_nodes, 2), np.nan, np.float32),
                point_scores=np.zeros((n, n_inst, n_nodes), np.float32),
                instance_scores=np.zeros((n, n_inst), np.float32),
                valid=np.zeros((n, n_inst), bool),
                class_ids=np.full((n, n_inst), -1, np.int32),
                class_scores=np.zeros((n, n_inst), np.float32),
                frame_indices=np.array([lf.frame_idx for lf in group]),
            )
            for b, lf in enumerate(group):
                for i, inst in enumerate(lf.instances):
                    batch.points[b, i] = inst.numpy()
                    batch.point_scores[b, i] = inst.points["score"]
                    batch.instance_scores[b, i] = inst.score
                    batch.valid[b, i] = True
                    if inst.track is not None:
                        batch.class_ids[b, i] = class_names.index(inst.track.name)
            w.write_batch(batch)
    return path


@pytest.fixture(scope="module")
def real_outputs(shared: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each real model's predictions on 12 frames as ``.slp`` (and, for bottom-up, the NWB
    that failed in the report) through ``predict_video``; the other formats are built from
    a journal of the same predictions."""
    from conftest import pipeline

    video = shared / "videos" / "centered_pair_small.mp4"
    out = tmp_path_factory.mktemp("real")
    paths = {}
    for case, types in REAL.items():
        pipe = pipeline([fixture_model(shared, t) for t in types], device="cpu")
        wanted = ["slp", "nwb"] if case == "bottomup" and HAS_NWB else ["slp"]
        for name in wanted:
            path = out / f"{case}{FORMATS[name].suffix}"
            pipe.predict_to_file(video, output=path, frames="0-11", format=name)
            paths[f"{case}/{name}"] = path
        labels = sio.load_slp(str(paths[f"{case}/slp"]))
        class_names = pipe.primary.config.class_names
        journal = read_journal(journal_from_labels(labels, out / f"{case}.partial", class_names))
        for fmt in FORMATS.values():
            if f"{case}/{fmt.name}" in paths or (fmt.name == "nwb" and not HAS_NWB):
                continue
            path = out / f"{case}.from_journal{fmt.suffix}"
            write_from_journal(journal, path, fmt, labels.video, labels.skeleton, class_names, {})
            paths[f"{case}/{fmt.name}"] = path
    return paths


@pytest.mark.parametrize("case", list(REAL))
def test_real_models_every_format_matches_the_slp(real_outputs: dict[str, Path], case: str) -> None:
    slp = sio.load_slp(str(real_outputs[f"{case}/slp"]))
    per_frame = [len(lf.instances) for lf in slp]
    assert max(per_frame) == 2  # two flies: the case that broke NWB
    tracked = case == "multiclass"
    assert all((i.track is not None) == tracked for lf in slp for i in lf.instances)
    with real_outputs[f"{case}/csv"].open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    # The .slp keeps every predicted frame, empty ones too, and the CSV has a row for each.
    assert [lf.frame_idx for lf in slp] == list(range(12))
    assert {int(r["frame_idx"]) for r in rows} == set(range(12))
    empty = [int(r["frame_idx"]) for r in rows if not r["instance.score"]]
    assert empty == [lf.frame_idx for lf in slp if not lf.instances]
    rows = [r for r in rows if r["instance.score"]]
    assert len(rows) == sum(per_frame)
    assert [r["frame_idx"] for r in rows] == [str(lf.frame_idx) for lf in slp for _ in lf.instances]
    assert [r["A.x"] for r in rows] == [
        repr(float(i.numpy()[0, 0])) if not np.isnan(i.numpy()[0, 0]) else ""
        for lf in slp
        for i in lf.instances
    ]
    analysis = _analysis(real_outputs[f"{case}/analysis-h5"])
    assert analysis["track_occupancy"].sum() == sum(per_frame)
    assert analysis["attrs"]["track_axis"].startswith("identities" if tracked else "no identities")
    if f"{case}/nwb" in real_outputs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            nwb = sio.load_nwb(str(real_outputs[f"{case}/nwb"]))
        assert [len(lf.instances) for lf in nwb] == [n for n in per_frame if n]


def test_real_model_with_nothing_found_writes_every_format(shared: Path, tmp_path: Path) -> None:
    from sleap_infer.core.options import PredictOptions

    from conftest import pipeline

    video = shared / "videos" / "centered_pair_small.mp4"
    pipe = pipeline(
        [fixture_model(shared, "bottomup")],
        device="cpu",
        options=PredictOptions(peak_threshold=1.5),
    )
    for fmt in FORMATS.values():
        if fmt.name == "nwb" and not HAS_NWB:
            continue
        out = tmp_path / f"empty{fmt.suffix}"
        result = pipe.predict_to_file(video, output=out, frames="0-3", format=fmt)
        assert result.counts.instances == 0 and is_complete(out, fmt)
    assert (tmp_path / "empty.csv").read_text().splitlines()[0].startswith("track,frame_idx,")
    # Nothing found, yet every predicted frame is there (as sleap-nn writes it).
    assert (tmp_path / "empty.csv").read_text().splitlines()[1:] == [
        "," + str(i) + "," * (1 + 3 * 2)
        for i in range(4)  # 2 nodes
    ]
    assert [lf.frame_idx for lf in sio.load_slp(str(tmp_path / "empty.slp"))] == [0, 1, 2, 3]
    assert len(sio.load_analysis_h5(str(tmp_path / "empty.analysis.h5"))) == 0
