"""The tracking benchmarks pick up every tracker by name: a tracker added to
``tracking.registry.NAMES`` gets rows with no edit there; one we lack is "n/a", not a crash."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    sys.path.insert(0, str(BENCH))  # tracking_parity imports vs_sleap_nn from there
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_accuracy_rows_cover_ours_and_sleap_nns_trackers():
    acc = _load("tracking_accuracy")
    rows = {r.label: r for r in acc.rows(("classic", "sort", "newtracker"))}
    assert rows["ours newtracker"].na == ""  # ours, though sleap-nn has no such tracker
    assert rows["sleap-nn newtracker"].na == "not a sleap-nn 0.3.5 tracker"
    assert "TRACKERS" in rows["ours deepsort"].na  # sleap-nn's, not ours (yet)
    assert rows["sleap-nn deepsort"].na == "" and rows["sleap-nn deepsort"].reid
    for name in acc.SLEAP_NN_TRACKERS:
        assert f"ours {name}" in rows and f"sleap-nn {name}" in rows


def test_accuracy_rows_follow_our_tracker_list():
    from sleap_infer.tracking.registry import NAMES as TRACKERS

    labels = {r.label for r in _load("tracking_accuracy").rows() if r.side == "ours" and not r.na}
    assert {f"ours {name}" for name in TRACKERS} <= labels


def test_parity_cases_cover_every_mot_tracker(monkeypatch):
    parity = _load("tracking_parity")
    monkeypatch.setattr(parity, "TRACKERS", (*parity.TRACKERS, "newtracker"))
    cases = {c.name: c for c in parity.tracker_cases()}
    for name in (*parity.MOT_TRACKERS, "newtracker"):
        assert f"{name}: default" in cases and f"{name}: mot knobs" in cases
    assert "classic: mot knobs" not in cases
    assert parity.not_ours(cases["newtracker: default"]) == ""
    if "deepsort" not in parity.TRACKERS:
        assert "TRACKERS" in parity.not_ours(cases["deepsort: default"])


@pytest.mark.parametrize("field", ["no_such_option"])
def test_parity_case_with_an_unknown_option_is_na(field):
    parity = _load("tracking_parity")
    case = parity.Case("x", "synthetic", {"tracker": "classic", field: True})
    assert parity.not_ours(case) == f"no TrackingOptions.{field} yet"


def test_parity_counts_every_untracked_or_unpaired_detection_as_a_difference():
    """Issue 43: nothing is set aside. Untracked on one side only, or written by one side
    only, is a difference; untracked by both is the same (a track of its own)."""
    parity = _load("tracking_parity")
    pairs = [("a", "x"), ("a", "x"), ("b", "y"), (None, None), (None, "y"), ("a", None)]
    assert parity._renamed_same(pairs) == 4  # a->x twice, b->y, both untracked
    pose = np.zeros((2, 2))
    ours = [(("k1",), pose, "a"), (("k2",), pose + 50, None)]
    theirs = [(("k1",), pose + 0.5, "x"), (("k3",), pose + 100, "y")]
    assert parity._pair_frame(ours, theirs, None) == [(0, 0), (1, None), (None, 1)]
    # by position: within PAIR_PX only
    assert parity._pair_frame(ours, theirs, 1.0) == [(0, 0), (1, None), (None, 1)]
    assert parity._pair_frame(ours, theirs, 0.1) == [(0, None), (1, None), (None, 0), (None, 1)]


def test_parity_has_real_prediction_cases_for_every_mot_tracker():
    parity = _load("tracking_parity")
    names = {c.name for c in parity.real_cases()}
    for real in parity.REAL:
        for who in parity.PREDICTORS:
            for tracker in parity.MOT_TRACKERS:
                assert f"{real}:{who}: {tracker}: default" in names
            assert f"{real}:{who}: ocsort: link_tracklets" in names
        assert f"predict: {real}: bytetrack: default" in names
