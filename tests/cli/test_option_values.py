"""Numbers are checked where options are parsed; conflicting or empty flags are usage errors.

Issue 29: ``--peak-threshold nan`` was accepted, failed after predicting, and the
suggested ``--resume`` could never work; ``--fp16 --bf16`` exited 1 (usage errors are
2); ``--frames ''`` meant every frame.
"""

from __future__ import annotations

import math

import pytest

import sleap_infer
from sleap_infer.core.errors import OptionValueError, UsageError
from sleap_infer.core.options import check_number
from sleap_infer.pipeline.spec import bind

from cli_runs import error_lines, run_cli
from conftest import counter_frames, write_video
from model_factory import config_dict, write_model_dir


@pytest.fixture
def model(tmp_path):
    return write_model_dir(tmp_path / "model", config_dict("single_instance"))


@pytest.fixture
def video(tmp_path):
    return write_video(tmp_path / "v.mp4", counter_frames(3))


def _refused(capsys, *args) -> str:
    code, err = run_cli(capsys, *args)
    lines = error_lines(err)
    assert code == 2 and len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--peak-threshold", "nan"], "--peak-threshold nan: must be a finite number"),
        (["--peak-threshold", "inf"], "--peak-threshold inf"),
        (["--centroid-peak-threshold", "-inf"], "--centroid-peak-threshold -inf"),
        (["--max-edge-length-ratio", "0"], "--max-edge-length-ratio 0: must be > 0"),
        (["--min-line-scores", "nan"], "--min-line-scores nan"),
        (["--filter-min-visible-node-fraction", "1.5"], "must be in [0, 1]"),
        (["--input-scale", "nan"], "--input-scale nan"),
        (["--merge-thresholds", "0.5,nan"], "--merge-thresholds nan"),
        (["--progress-interval", "inf"], "--progress-interval inf"),
        (["--fp16", "--bf16"], "--fp16 and --bf16 conflict"),
        (["--frames", ""], "--frames '': selects no frame"),
        (["--frames", " , "], "selects no frame"),
    ],
)
def test_predict_refuses_at_parse_time(capsys, tmp_path, model, video, flags, said) -> None:
    line = _refused(capsys, "predict", video, "-m", model, "-q", *flags)
    assert said in line
    assert not list(tmp_path.glob("v.predictions*"))  # nothing ran, no journal to resume


def test_other_commands_refuse_non_finite_numbers(capsys, tmp_path, model) -> None:
    missing = tmp_path / "absent.slp"  # parsing fails before the file is looked at
    assert "--peak-threshold nan" in _refused(capsys, "export", model, "--peak-threshold", "nan")
    assert "--peak-threshold nan" in _refused(capsys, "bench", model, "--peak-threshold", "nan")
    assert "--match-threshold nan" in _refused(
        capsys, "eval", missing, missing, "--match-threshold", "nan"
    )
    assert "--oks-scale -1" in _refused(capsys, "eval", missing, missing, "--oks-scale", "-1")
    assert "--oks-stddev nan" in _refused(capsys, "eval", missing, missing, "--oks-stddev", "nan")
    assert "--oks-stddev inf" in _refused(capsys, "track", missing, "--oks-stddev", "inf")


def test_python_api_refuses_with_a_value_error(model) -> None:
    for kwargs in ({"peak_threshold": math.nan}, {"max_edge_length_ratio": -1.0}):
        with pytest.raises(ValueError) as err:
            sleap_infer.load(model, device="cpu", **kwargs)
        assert isinstance(err.value, OptionValueError) and isinstance(err.value, UsageError)
        assert str(err.value).startswith(next(iter(kwargs)))
    with pytest.raises(UsageError, match="conflict"):
        bind([str(model)], fp16=True, bf16=True)
    with pytest.raises(ValueError, match="merge_thresholds"):
        bind([str(model)], merge_thresholds=[0.5, math.inf])


def test_check_number_ranges() -> None:
    check_number("peak_threshold", -1000.0)  # "keep every peak": a real use
    check_number("fg_threshold", 0.0)
    with pytest.raises(OptionValueError, match=r"in \[0, 1\)"):
        check_number("fg_threshold", 1.0)
    check_number("anything", "text")  # not a number: other checks own it
    check_number("flag", True)
