"""``--format csv``: the header quoted as the rows are, and no rows for empty frames
unless asked (``--csv-empty-frames``), as sleap-io's own CSV writer."""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import pytest
import sleap_io as sio

from sleap_infer.pipeline.spec import bind

import scene
from cli_runs import run_cli
from conftest import SYNTHETIC_MODEL
from output_cases import make_case, write

ODD = ["ear, left", 'say "hi"', "line\nbreak"]  # a comma, quotes, a newline


def odd_skeleton() -> sio.Skeleton:
    return sio.Skeleton(list(ODD))  # a copy: sio.Skeleton turns the list into Nodes


def test_odd_node_names_stay_one_column(tmp_path: Path) -> None:
    """Before: the header was joined with commas, unquoted: 12 header fields for 9
    values, ``sio.load_csv`` read the node as `` left``, and the newline made the file
    unreadable (``invalid literal for int() with base 10: 'line'``)."""
    case = make_case("untracked")
    out = write(tmp_path, case, "csv", skeleton=odd_skeleton())
    with out.open(newline="") as fh:
        rows = list(csv.reader(fh))
    nodes = [f"{n}.{f}" for n in ODD for f in ("x", "y", "score")]
    assert rows[0] == ["track", "frame_idx", "instance.score", *nodes]
    assert {len(row) for row in rows} == {3 + 3 * len(ODD)}
    labels = sio.load_csv(str(out))
    assert sorted(n.name for n in labels.skeleton.nodes) == sorted(ODD)  # sio sorts them
    assert sum(len(lf) for lf in labels) == len(case.instances)


def test_dlc_csv_keeps_odd_node_names(tmp_path: Path) -> None:
    out = write(tmp_path, make_case("untracked"), "dlc-csv", skeleton=odd_skeleton())
    with out.open(newline="") as fh:
        rows = list(csv.reader(fh))
    assert {len(row) for row in rows} == {1 + 3 * 3 * len(ODD)}  # 3 slots x 3 nodes x 3
    bodyparts = rows[2]
    assert bodyparts[0] == "bodyparts"
    assert sorted(set(bodyparts[1:])) == sorted(ODD)


@pytest.mark.parametrize("kind", ["untracked", "single"])
def test_empty_frames_have_no_rows_by_default(tmp_path: Path, kind: str) -> None:
    """Before: each empty frame was a row holding only its frame_idx, which sio.load_csv
    reads back as an instance without points (bottom-up, 100 frames: 118 "instances"
    for 55 predicted, 63 of them empty)."""
    case = make_case(kind)
    out = write(tmp_path, case, "csv")
    labels = sio.load_csv(str(out))
    assert sum(len(lf) for lf in labels) == len(case.instances)
    assert all(not inst.is_empty for lf in labels for inst in lf)
    assert sorted({lf.frame_idx for lf in labels}) == sorted(case.by_frame())


def test_csv_empty_frames_is_an_option_by_name() -> None:
    assert bind(["m"], csv_empty_frames=True).options.csv_empty_frames
    assert not bind(["m"]).options.csv_empty_frames


def test_predict_csv_empty_frames_end_to_end(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A peak threshold nothing reaches: every frame is empty."""
    video = tmp_path / "v.mp4"
    scene.write_video(video, n_frames=4)
    args = ["predict", video, "-m", SYNTHETIC_MODEL, "--device", "cpu", "--format", "csv"]
    rows = {}
    for extra in ([], ["--csv-empty-frames"]):
        out = tmp_path / f"out{len(extra)}.csv"
        code, err = run_cli(capsys, *args, "--peak-threshold", "1.0", "-o", out, "-q", *extra)
        assert code == 0, err
        with out.open(newline="") as fh:
            rows[len(extra)] = list(csv.reader(fh))
    assert rows[0][0][:3] == ["track", "frame_idx", "instance.score"]
    assert rows[0][1:] == []  # the header alone
    assert [row[1] for row in rows[1][1:]] == ["0", "1", "2", "3"]  # frame_idx-only rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert sum(len(lf) for lf in sio.load_csv(str(tmp_path / "out1.csv"))) == 4
