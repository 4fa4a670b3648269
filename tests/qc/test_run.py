"""run_qc: every file, its events and summary; sleap_infer.qc; the JSON layout."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from qc_scenes import smooth_scene
from qc_scenes import write_project as _project

import sleap_infer
from sleap_infer.qc.load import QCInputError
from sleap_infer.qc.records import EVENT_KINDS
from sleap_infer.qc.run import check_video, find_events, run_qc, summarise

SUMMARY_KEYS = {
    "verdict",
    "severity",
    "counts",
    "flags_per_1000",
    "tracks",
    "mean_score",
    "missing_points",
    "frames_with_instances",
}


def test_summary_of_a_clean_and_a_faulty_video() -> None:
    clean = summarise(smooth_scene(), [])
    assert set(clean) == SUMMARY_KEYS and clean["verdict"] == "no events"
    assert clean["severity"] == 0 and clean["tracks"] == 2
    assert clean["mean_score"] == pytest.approx(0.9, abs=0.01)
    data = smooth_scene()
    data.points[50:, [0, 1]] = data.points[50:, [1, 0]]  # a swap
    data.points[100, 0] += 50  # a jump
    data.point_scores[200:230, 1] *= 0.3  # 30 of 300 frames
    report = check_video(data)
    s = report.summary
    assert s["counts"]["identity_swap"] == 1 and s["counts"]["jump"] == 1
    assert s["counts"]["low_confidence"] == 1 and set(s["counts"]) == set(EVENT_KINDS)
    assert s["verdict"].startswith("1 likely identity swap, 1 jump; 1")
    assert "% of frames low confidence" in s["verdict"]
    assert s["severity"] > clean["severity"] and s["flags_per_1000"] == pytest.approx(10.0)
    json.dumps(report.to_json(), allow_nan=False)  # plain JSON, no NaN


def test_events_are_sorted_by_frame() -> None:
    data = smooth_scene()
    data.points[200, 0] += 50
    data.points[20, 1] += 50
    assert [e.frame_start for e in find_events(data)] == [20, 200]


def test_run_qc_goes_on_after_a_bad_file(tmp_path: Path) -> None:
    good = _project(tmp_path / "good.slp")
    seen: list[Path] = []
    result, data = run_qc([tmp_path / "missing.slp", good], on_error=lambda p, e: seen.append(p))
    assert seen == [tmp_path / "missing.slp"]
    assert [f.path for f in result.files] == [str(good)] and len(data[0]) == 1
    layout = result.to_json()
    assert set(layout["files"][0]["videos"][0]) == {
        "video",
        "frames",
        "summary",
        "events",
        "suggestions",
    }
    with pytest.raises(QCInputError, match="no such file"):
        run_qc([tmp_path / "missing.slp"])


def test_a_file_named_twice_is_checked_once(tmp_path: Path) -> None:
    """`infer qc a.slp *.slp` names a.slp twice: one report for it, in first-named order."""
    a = _project(tmp_path / "a.slp")
    b = _project(tmp_path / "b.slp")
    result, data = run_qc([a, b, tmp_path / "." / "a.slp"])
    assert [f.path for f in result.files] == [str(a), str(b)] and len(data) == 2


def test_python_entry_point(tmp_path: Path) -> None:
    path = _project(tmp_path / "p.slp")
    result = sleap_infer.qc(path)
    assert result.files[0].videos[0].frames == 4
    assert [f.path for f in sleap_infer.qc([path, path]).files] == [str(path)]
    run_module = importlib.import_module("sleap_infer.qc.run")  # still the package
    assert callable(sleap_infer.qc) and sleap_infer.qc.run is run_module


def test_fresh_import_resolves_the_callable_package(tmp_path: Path) -> None:
    """``import sleap_infer; sleap_infer.qc(path)`` with nothing of qc imported yet."""
    path = _project(tmp_path / "p.slp")
    code = (
        "import sys, sleap_infer; r = sleap_infer.qc(sys.argv[1]); "
        "import sleap_infer.qc.load; print(r.files[0].videos[0].frames, callable(sleap_infer.qc))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["4", "True"]


def test_suggest_calls_the_ranker(monkeypatch: pytest.MonkeyPatch) -> None:
    from sleap_infer.qc import suggest
    from sleap_infer.qc.records import Suggestion

    calls = []

    def fake(data, events, n):  # type: ignore[no-untyped-def]
        calls.append((data.video, len(events), n))
        return [Suggestion(frame=int(f), reason="low_confidence", score=1.0) for f in range(n)]

    monkeypatch.setattr(suggest, "suggest_frames", fake)
    data = smooth_scene()
    data.points[100, 0] += np.array([50.0, 0.0])
    report = check_video(data, suggest=3)
    assert calls == [("scene.mp4", 1, 3)] and [s.frame for s in report.suggestions] == [0, 1, 2]
    assert check_video(data).suggestions == [] and len(calls) == 1


def test_sleap_nn_tracker_swaps_in_the_fixture(shared: Path) -> None:
    """sleap-nn 0.3.5's tracker exchanges the two animals of synthetic_multi at frames 4
    (and back at 5), 11 and 17 (checked against the project's true tracks): qc names
    exactly those, and the swap-and-back is one event, not also two jumps."""
    result = sleap_infer.qc(shared / "reference" / "embedding_tracked.slp")
    events = result.files[0].videos[0].events
    assert [(e.kind, e.frame_start) for e in events] == [
        ("identity_swap", 4),
        ("identity_swap", 11),
        ("identity_swap", 17),
    ]
