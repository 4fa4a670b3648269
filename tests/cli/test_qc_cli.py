"""``infer qc`` and ``predict --report``: what is passed to the page writer and the
frame ranker (fakes in most tests, to see the calls), where files land, what is refused,
and one run end to end with the real page, ranker and project copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from qc_scenes import write_project

from sleap_infer.cli import qc as cli_qc
from sleap_infer.qc import html, suggest
from sleap_infer.qc.records import Suggestion

from cli_runs import error_lines, run_cli
from conftest import fixture_model


@pytest.fixture()
def fakes(monkeypatch: pytest.MonkeyPatch) -> dict[str, list]:
    """Fake write_html / suggest_frames / write_suggestions that record their calls and
    write a marker file where a real one would write."""
    calls: dict[str, list] = {"html": [], "suggest": [], "write": []}

    def write_html(result, data, path):  # type: ignore[no-untyped-def]
        calls["html"].append((result, data, Path(path)))
        Path(path).write_text("<html></html>")

    def suggest_frames(data, events, n):  # type: ignore[no-untyped-def]
        calls["suggest"].append((data.video, n))
        return [Suggestion(frame=int(f), reason="diversity", score=0.5) for f in data.frames[:n]]

    def write_suggestions(into, output, by_video, overwrite=False):  # type: ignore[no-untyped-def]
        calls["write"].append((Path(into), Path(output), by_video))
        Path(output).write_bytes(Path(into).read_bytes())
        return {"added": sum(map(len, by_video.values())), "already": 0, "videos_added": 0}

    monkeypatch.setattr(html, "write_html", write_html)
    monkeypatch.setattr(suggest, "suggest_frames", suggest_frames)
    monkeypatch.setattr(suggest, "write_suggestions", write_suggestions)
    return calls


def test_table_only_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pred = write_project(tmp_path / "pred.slp")
    code, _ = run_cli(capsys, "qc", pred)
    assert code == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["pred.slp"]


def test_a_file_without_frames_gets_a_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import sleap_io as sio

    empty = tmp_path / "none.slp"
    skeleton = sio.Skeleton(nodes=["a", "b"], edges=[("a", "b")])
    sio.save_slp(sio.Labels(skeletons=[skeleton]), str(empty))
    code, err = run_cli(capsys, "qc", empty)
    assert code == 0 and "no labelled frames" in err


def test_report_json_and_bad_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fakes: dict[str, list]
) -> None:
    a = write_project(tmp_path / "a.slp")
    b = write_project(tmp_path / "b.slp")
    (tmp_path / "empty.slp").write_bytes(b"")
    code, err = run_cli(
        capsys, "qc", a, tmp_path / "missing.slp", tmp_path / "empty.slp", b,
        "-o", tmp_path / "r.html", "--json", tmp_path / "qc.json",
    )  # fmt: skip
    assert code == 1
    assert [line.split(":")[1].strip() for line in error_lines(err)] == [
        str(tmp_path / "missing.slp"),
        str(tmp_path / "empty.slp"),
    ]
    ((result, data, page),) = fakes["html"]
    assert page == tmp_path / "r.html" and page.exists()
    assert [f.path for f in result.files] == [str(a), str(b)]
    assert len(data) == 2 and data[0][0].video == result.files[0].videos[0].video
    payload = json.loads((tmp_path / "qc.json").read_text())
    assert payload["schema"] == "sleap_infer.qc/1" and len(payload["files"]) == 2
    assert set(payload["files"][0]["videos"][0]["summary"]) >= {"verdict", "severity"}


def test_suggest_into_a_project_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fakes: dict[str, list]
) -> None:
    pred = write_project(tmp_path / "pred.slp")
    project = write_project(tmp_path / "labels.slp")
    before = project.read_bytes()
    code, err = run_cli(
        capsys, "qc", pred, "--suggest", "2", "--into", project, "--json", tmp_path / "q.json"
    )
    assert code == 0, err
    assert fakes["suggest"] == [("clip.mp4", 2)]
    ((into, out, by_video),) = fakes["write"]
    assert (into, out) == (project, tmp_path / "labels.suggested.slp")
    assert [s.frame for s in by_video["clip.mp4"]] == [0, 1]
    assert project.read_bytes() == before
    video = json.loads((tmp_path / "q.json").read_text())["files"][0]["videos"][0]
    assert video["suggestions"] == [
        {"frame": 0, "reason": "diversity", "score": 0.5},
        {"frame": 1, "reason": "diversity", "score": 0.5},
    ]
    # -o twice: the suffix says which is which
    code, err = run_cli(
        capsys, "qc", pred, "--suggest", "1", "--into", project,
        "-o", tmp_path / "copy.slp", "-o", tmp_path / "page.html",
    )  # fmt: skip
    assert code == 0, err
    assert fakes["write"][-1][1] == tmp_path / "copy.slp"
    assert fakes["html"][-1][2] == tmp_path / "page.html"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "{pred}"], "an .slp output is the suggested project copy"),
        (["-o", "{tmp}/x.txt"], "name the report .html"),
        (["--into", "{pred}"], "--into: give --suggest N"),
        (["--suggest", "1", "--into", "{tmp}/nope.slp"], "no such file"),
        (["-o", "{tmp}/old.html"], "exists; pass --overwrite"),
        (["--suggest", "1", "--into", "{pred}", "-o", "{pred}", "--overwrite"], "is an input"),
        (["--json", "{pred}", "--overwrite"], "is an input of this run"),
    ],
)
def test_refusals_touch_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fakes: dict[str, list],
    args: list[str],
    message: str,
) -> None:
    pred = write_project(tmp_path / "pred.slp")
    (tmp_path / "old.html").write_text("someone's page")
    before = pred.read_bytes()
    code, err = run_cli(capsys, "qc", pred, *[a.format(pred=pred, tmp=tmp_path) for a in args])
    assert code == 2 and message in err and len(error_lines(err)) == 1
    assert pred.read_bytes() == before and (tmp_path / "old.html").read_text() == "someone's page"
    assert fakes["html"] == [] and fakes["write"] == []


def test_report_needs_an_slp_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fakes: dict[str, list]
) -> None:
    csv = tmp_path / "x.csv"
    csv.write_text("frame_idx\n")
    assert cli_qc.reports_after_predict([csv], overwrite=False)
    assert "no .slp output" in capsys.readouterr().err and fakes["html"] == []
    assert not (tmp_path / "x.qc.html").exists()


def test_report_path_rule() -> None:
    assert cli_qc.report_path(Path("d/x.slp")) == Path("d/x.qc.html")
    assert cli_qc.report_path(Path("x.pkg.slp")) == Path("x.qc.html")
    assert cli_qc.default_project_copy(Path("p/l.pkg.slp")) == Path("p/l.suggested.pkg.slp")


def test_predict_report_beside_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fakes: dict[str, list], shared: Path
) -> None:
    model = fixture_model(shared, "single_instance")
    video = shared / "videos" / "small_robot.mp4"
    out = tmp_path / "robot.slp"
    code, err = run_cli(
        capsys, "predict", video, "-m", model, "--frames", "0-3", "-o", out,
        "--device", "cpu", "--report", "-q",
    )  # fmt: skip
    assert code == 0, err
    ((result, _, page),) = fakes["html"]
    assert page == tmp_path / "robot.qc.html" and page.exists()
    assert result.files[0].path == str(out) and result.files[0].videos[0].frames == 4
    # an existing page this run did not write is kept: one line, exit 1, output written
    (tmp_path / "r2.qc.html").write_text("someone's")
    args = ("predict", video, "-m", model, "--frames", "0-3", "-o", tmp_path / "r2.slp")
    code, err = run_cli(capsys, *args, "--device", "cpu", "--report", "-q")
    assert code == 1 and (tmp_path / "r2.slp").exists()
    assert error_lines(err) == [
        f"error: --report {tmp_path / 'r2.qc.html'}: exists; pass "
        "--overwrite to replace it, or give another name"
    ]
    assert (tmp_path / "r2.qc.html").read_text() == "someone's"
    code, err = run_cli(capsys, *args, "--device", "cpu", "--report", "-q", "--overwrite")
    assert code == 0 and (tmp_path / "r2.qc.html").read_text() == "<html></html>"


def test_qc_end_to_end_with_the_real_page_ranker_and_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No fakes: the JSON, the HTML page and the project copy a user gets from one line."""
    import sleap_io as sio

    pred = write_project(tmp_path / "pred.slp")
    project = write_project(tmp_path / "labels.slp")
    before = project.read_bytes()
    page, copy, q = tmp_path / "r.html", tmp_path / "copy.slp", tmp_path / "q.json"
    code, err = run_cli(
        capsys, "qc", pred, "--suggest", "3", "--into", project,
        "-o", copy, "-o", page, "--json", q,
    )  # fmt: skip
    assert code == 0, err
    assert project.read_bytes() == before
    video = json.loads(q.read_text())["files"][0]["videos"][0]
    frames = [s["frame"] for s in video["suggestions"]]
    assert 1 <= len(frames) <= 3 and len(set(frames)) == len(frames)
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") or text.lstrip().lower().startswith("<!doctype html")
    assert video["summary"]["verdict"] in text
    labels = sio.load_slp(str(copy))
    assert sorted(s.frame_idx for s in labels.suggestions) == sorted(frames)
