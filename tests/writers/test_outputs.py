"""Every output format x {untracked multi-animal, identities, single instance, nothing found}:
written from a journal, read back, compared with the predictions; completeness checks."""

from __future__ import annotations

import csv
import importlib.util
import json
import warnings
from pathlib import Path

import h5py
import numpy as np
import pytest
import sleap_io as sio

from sleap_infer.core.errors import UsageError
from sleap_infer.journal import read_journal
from sleap_infer.writers.outputs import is_complete, write_from_journal
from sleap_infer.writers.registry import FORMATS, get_format

from conftest import fixture_model
from output_cases import (
    CASES,
    HAS_NWB,
    N_FRAMES,
    expected_slots,
    journal_from_labels,
    make_case,
    needs_nwb,
    write,
)


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


@pytest.mark.parametrize(
    ("empty_frames", "csv_empty_frames"), [(True, False), (True, True), (False, True)]
)
@pytest.mark.parametrize("kind", CASES)
def test_csv_has_a_header_and_one_row_per_instance(
    tmp_path: Path, kind: str, empty_frames: bool, csv_empty_frames: bool
) -> None:
    case = make_case(kind)
    out = write(tmp_path, case, "csv", empty_frames, csv_empty_frames=csv_empty_frames)
    with out.open(newline="") as fh:
        rows = list(csv.reader(fh))
    nodes = [f"{n}.{f}" for n in ("head", "thorax", "tail") for f in ("x", "y", "score")]
    assert rows[0] == ["track", "frame_idx", "instance.score", *nodes]
    expected = case.instances
    # A predicted frame without instances has no row by default (sleap-io's CSV writer);
    # with --csv-empty-frames it is one row with only its frame_idx (sleap-io's CSV row for
    # an empty frame), in frame order, unless --no-empty-frames leaves it out.
    found = {exp.frame for exp in expected}
    kept = empty_frames and csv_empty_frames
    empty = [f for f in case.predicted if f not in found] if kept else []
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


@pytest.mark.parametrize("kind", CASES)
def test_analysis_h5_never_presents_ranks_as_identities(tmp_path: Path, kind: str) -> None:
    case = make_case(kind)
    out = write(tmp_path, case, "analysis-h5")
    data = _analysis(out)
    slots = expected_slots(case)
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
    # NWB series cover every frame of the video (NaN where a track has no instance), as
    # analysis HDF5 does: the time axis is the video's, with or without --no-empty-frames.
    with h5py.File(out, "r") as f:
        behavior = f["processing/behavior"]
        for track in behavior:
            if track == "Skeletons":
                continue
            for series in behavior[track].values():
                if isinstance(series, h5py.Group) and "data" in series:
                    assert series["data"].shape[0] == N_FRAMES
    with warnings.catch_warnings():
        # sleap-io 0.9.5's reader touches fields pynwb 4 deprecates: not ours.
        warnings.simplefilter("ignore", DeprecationWarning)
        labels = sio.load_nwb(str(out))
    expected = case.by_frame(placed_only=True)
    # Every frame is in the file (NaN where none), so sleap-io's rank is the frame index.
    assert [lf.frame_idx for lf in labels] == sorted(expected)
    for lf in labels:
        got = sorted(tuple(np.nan_to_num(i.numpy(), nan=-1).ravel()) for i in lf.instances)
        want = sorted(
            tuple(np.nan_to_num(i.points, nan=-1).ravel()) for i in expected[lf.frame_idx]
        )
        np.testing.assert_allclose(got, want, rtol=1e-6)
    # Identities stay identities in sleap-io (its reader names them track<k> whatever the file
    # says); score ranks stay untracked.
    names = [t.name for t in labels.tracks]
    assert names == (["track0", "track1"] if case.class_names else [])
    descriptions = _nwb_track_descriptions(out)
    if case.class_names:
        assert sorted(descriptions) == ["female", "male"]
        assert all("(identity)" in d for d in descriptions.values())
    elif kind == "untracked":
        assert sorted(descriptions) == ["untracked_0", "untracked_1", "untracked_2"]
    else:
        assert list(descriptions) == ["PoseEstimation"]  # one track: movement's default name
    if kind != "identities":
        assert all("(not an identity)" in d for d in descriptions.values())


def _nwb_track_descriptions(path: Path) -> dict[str, str]:
    with h5py.File(path, "r") as f:
        group = f["processing"]["behavior"]
        return {
            k: group[k]["description"][()].decode()  # a dataset in ndx-pose
            for k in group
            if group[k].attrs.get("neurodata_type") == "PoseEstimation"
        }


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

POSE_FORMATS = [f for f in FORMATS.values() if f.holds_poses]
REAL = {
    "bottomup": ("bottomup",),
    "topdown": ("centroid", "centered_instance"),
    "multiclass": ("multi_class_bottomup",),
}


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
        for fmt in POSE_FORMATS:
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
    for fmt in POSE_FORMATS:
        if fmt.name == "nwb" and not HAS_NWB:
            continue
        out = tmp_path / f"empty{fmt.suffix}"
        result = pipe.predict_to_file(video, output=out, frames="0-3", format=fmt)
        assert result.counts.instances == 0 and is_complete(out, fmt)
    assert (tmp_path / "empty.csv").read_text().splitlines()[0].startswith("track,frame_idx,")
    # Nothing found: no rows, as sleap-io's own CSV writer leaves empty frames out (#44)...
    assert (tmp_path / "empty.csv").read_text().splitlines()[1:] == []
    # ...and with csv_empty_frames every predicted frame is there, a row holding its index.
    keep = pipeline(
        [fixture_model(shared, "bottomup")],
        device="cpu",
        options=PredictOptions(peak_threshold=1.5, csv_empty_frames=True),
    )
    kept = tmp_path / "kept.csv"
    keep.predict_to_file(video, output=kept, frames="0-3", format=FORMATS["csv"])
    assert kept.read_text().splitlines()[1:] == [
        "," + str(i) + "," * (1 + 3 * 2)
        for i in range(4)  # 2 nodes
    ]
    assert [lf.frame_idx for lf in sio.load_slp(str(tmp_path / "empty.slp"))] == [0, 1, 2, 3]
    assert len(sio.load_analysis_h5(str(tmp_path / "empty.analysis.h5"))) == 0


def test_a_package_given_by_a_relative_path_is_found_from_anywhere(
    shared: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: the output named the package ``minimal_instance.pkg.slp`` (relative to the
    working folder), so from any other folder sio could not read its frames
    (FileNotFoundError: Video does not exist ...)."""
    from cli_runs import run_cli

    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    (work / "out").mkdir(parents=True)
    elsewhere.mkdir()
    pkg = shared / "videos" / "minimal_instance.pkg.slp"
    (work / pkg.name).write_bytes(pkg.read_bytes())
    monkeypatch.chdir(work)
    model = fixture_model(shared, "single_instance")
    for fmt in ("slp", "analysis-h5"):
        args = ["predict", pkg.name, "-m", model, "--device", "cpu", "-q", "--format", fmt]
        code, err = run_cli(capsys, *args, "-o", f"out/p{FORMATS[fmt].suffix}")
        assert code == 0, err
    monkeypatch.chdir(elsewhere)
    labels = sio.load_slp(str(work / "out" / "p.slp"))
    assert labels.videos[0].filename == str((work / pkg.name).resolve())
    assert labels[0].image.shape == (384, 384, 1)
    with h5py.File(work / "out" / "p.analysis.h5", "r") as f:
        assert f["video_path"][()].decode() == str((work / pkg.name).resolve())
    assert (work / pkg.name).read_bytes() == pkg.read_bytes()  # the input is untouched
