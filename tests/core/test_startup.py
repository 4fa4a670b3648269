"""Start-up: what ``infer predict`` imports before its first batch, and the start-up trace.

The import checks run in a fresh interpreter: this test process has long
imported everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from sleap_infer.core import startup
from sleap_infer.ops import assignment


def _fresh(code: str, **env: str) -> str:
    res = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_the_predict_command_imports_no_other_command_nor_unused_layers() -> None:
    """Nor scipy, nor sleap-io's readers and writers (it loads them on first use: writing
    the output imports them, after the first batch)."""
    out = _fresh(
        """
        import sys
        from sleap_infer.cli import build_app
        import sleap_infer.api, sleap_infer.batch.execute, sleap_infer.pipeline.pipeline
        build_app(["predict"])
        from sleap_infer.layers import build_layer, layer_class
        layer_class("single_instance")
        print(sorted(m for m in sys.modules if m.split(".")[0] == "scipy"
                     or m.startswith(("sleap_infer.bench", "sleap_infer.cli.bench",
                                      "sleap_infer.layers.segmentation", "sleap_io.io.slp",
                                      "sleap_io.io.video_reading"))))
        """
    )
    assert out.strip() == "[]"


def test_hungarian_matching_loads_only_the_solver_and_matches_scipy() -> None:
    out = _fresh(
        """
        import sys
        import numpy as np
        from sleap_infer.ops.assignment import linear_sum_assignment
        rows, cols = linear_sum_assignment(np.array([[4.0, 1.0], [2.0, 8.0]]))
        print(rows.tolist(), cols.tolist(), "scipy.optimize" in sys.modules)
        """
    )
    assert out.split() == ["[0,", "1]", "[1,", "0]", "False"]
    from scipy.optimize import linear_sum_assignment as reference

    rng = np.random.default_rng(0)
    for shape in [(3, 3), (5, 2), (2, 7), (0, 0), (6, 6)]:
        cost = rng.random(shape)
        for got, want in zip(assignment.linear_sum_assignment(cost), reference(cost)):
            assert np.array_equal(got, want) and got.dtype == want.dtype


def test_the_trace_is_off_by_default() -> None:
    if os.environ.get(startup.ENV):
        pytest.skip(f"{startup.ENV} is set for this test run")
    assert not startup.enabled()
    startup.mark("never")
    with startup.span("never"):
        pass
    assert "never" not in startup.report()["marks"]
    assert startup.report()["spans"] == {}


def test_the_trace_writes_marks_and_spans_at_exit(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    _fresh(
        """
        import time
        import sleap_infer
        from sleap_infer.core import startup
        with startup.span("work"):
            time.sleep(0.01)
        with startup.span("work"):
            pass
        startup.mark("done")
        """,
        SLEAP_INFER_STARTUP_TRACE=str(trace),
    )
    data = json.loads(trace.read_text())
    marks = data["marks"]
    assert marks["package"] <= marks["done"] <= marks["exit"]
    assert data["spans"]["work"] >= 0.01 and data["counts"]["work"] == 2
    assert data["process_start"] is None or data["process_start"] <= marks["package"]


def test_the_trace_never_writes_over_a_file_not_ours(tmp_path: Path) -> None:
    """``SLEAP_INFER_STARTUP_TRACE=PATH`` used to overwrite any file (the input video
    included); one warning line now, the file kept, the run's exit unchanged."""
    video = tmp_path / "v.mp4"
    video.write_bytes(b"not a trace")
    res = subprocess.run(
        [sys.executable, "-c", "from sleap_infer.core import startup; startup.mark('x')"],
        capture_output=True,
        text=True,
        env={**os.environ, startup.ENV: str(video)},
        timeout=300,
    )
    assert res.returncode == 0 and video.read_bytes() == b"not a trace"
    [line] = res.stderr.splitlines()
    assert line.startswith(f"warning: {startup.ENV}={video}: exists and is not a start-up trace")
    trace = tmp_path / "trace.json"
    for _ in range(2):  # a trace of ours is replaced by the next one
        _fresh(
            "from sleap_infer.core import startup; startup.mark('x')", **{startup.ENV: str(trace)}
        )
        assert json.loads(trace.read_text())["schema"] == startup.SCHEMA
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
