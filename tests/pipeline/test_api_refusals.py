"""What the Python API refuses, in one line of Python's words (issue 45: bad 1, unclear 10,
12, 19, 25; issue 44 §2: errors name keyword arguments, not flags)."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import sleap_io as sio

import sleap_infer
from sleap_infer.core.errors import OutputExistsError, SleapInferError, UsageError
from sleap_infer.pipeline.python_terms import python_words

from conftest import SYNTHETIC_MODEL, counter_frames, write_video


@pytest.fixture(scope="module")
def pipe() -> sleap_infer.Pipeline:
    return sleap_infer.load(SYNTHETIC_MODEL, device="cpu")


@pytest.fixture()
def video(tmp_path: Path) -> Path:
    return write_video(tmp_path / "v.mp4", counter_frames(6))


# ------------------------------------------------------------------ bad 1
def test_predict_to_file_never_writes_over_its_input(
    pipe: sleap_infer.Pipeline, video: Path
) -> None:
    before = video.read_bytes()
    with pytest.raises(UsageError, match=r"v\.mp4: is the input of this run"):
        pipe.predict_to_file(video, video, overwrite=True)
    with pytest.raises(UsageError, match="is the input of this run"):
        pipe.predict_to_file(video, str(video.parent / "." / video.name), overwrite=True)
    assert video.read_bytes() == before


def test_predict_to_file_never_writes_over_the_models_files(tmp_path: Path, video: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(SYNTHETIC_MODEL, model)
    pipe = sleap_infer.load(model, device="cpu")
    ckpt = model / "best.ckpt"
    before = ckpt.read_bytes()
    for target in (ckpt, model / "training_config.yaml"):
        with pytest.raises(UsageError, match="is a file of the model"):
            pipe.predict_to_file(video, target, overwrite=True)
    assert ckpt.read_bytes() == before
    out = pipe.predict_to_file(video, model / "new.slp", progress=False)  # a new file: fine
    assert out.output.exists()
    again = pipe.predict_to_file(video, model / "new.slp", overwrite=True, progress=False)
    assert again.output.exists()  # a finished output of ours there is no model file


# --------------------------------------------------------------- unclear 10
def test_frames_bool_mask_float_index(pipe: sleap_infer.Pipeline, video: Path) -> None:
    mask = np.zeros(6, bool)
    mask[[2, 4]] = True
    assert pipe.predict(video, frames=mask, progress=False).frame_indices.tolist() == [2, 4]
    with pytest.raises(ValueError, match="a boolean mask must have one entry per frame"):
        pipe.predict(video, frames=[True, False])
    with pytest.raises(TypeError, match="a float index is refused, never truncated"):
        pipe.predict(video, frames=[0.0, 1.7])
    with pytest.raises(TypeError, match="give a list of indices"):
        pipe.predict(video, frames=3)  # type: ignore[arg-type]


def test_channel_first_frame_is_ambiguous(pipe: sleap_infer.Pipeline) -> None:
    with pytest.raises(ValueError, match=r"\(3, 64, 80\) are ambiguous.*np.moveaxis.*np.newaxis"):
        pipe.predict(np.zeros((3, 64, 80), np.uint8))
    # said explicitly, both readings run
    assert len(pipe.predict(np.zeros((64, 80, 3), np.uint8))) == 1
    assert len(pipe.predict(np.zeros((3, 64, 80, 1), np.uint8))) == 3


# --------------------------------------------------------------- unclear 12
def test_one_line_errors(pipe: sleap_infer.Pipeline, video: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.mp4: sio.Video's file does not exist"):
        pipe.predict(sio.Video(filename=str(tmp_path / "nope.mp4")))
    with pytest.raises(TypeError, match="peak_threshold='0.3': must be a number"):
        sleap_infer.load(SYNTHETIC_MODEL, device="cpu", peak_threshold="0.3")
    with pytest.raises(TypeError, match="max_instances=2.5: must be a whole number"):
        sleap_infer.load(SYNTHETIC_MODEL, device="cpu", max_instances=2.5)
    with pytest.raises(TypeError, match="tracking='no': must be True or False"):
        sleap_infer.load(SYNTHETIC_MODEL, device="cpu", tracking="no")
    with pytest.raises(ValueError, match="resume=True and overwrite=True contradict"):
        pipe.predict_to_file(video, tmp_path / "o.slp", resume=True, overwrite=True)
    with pytest.raises(TypeError, match="overwrite='no': must be True or False"):
        pipe.predict_to_file(video, tmp_path / "o.slp", overwrite="no")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="video_index='0': must be a whole number or None"):
        pipe.predict_to_file(video, tmp_path / "o.slp", video_index="0")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="batch_size=2.5"):
        pipe.predict(video, batch_size=2.5)  # type: ignore[arg-type]


def test_huge_batch_size_is_the_frames_there_are(pipe: sleap_infer.Pipeline, video: Path) -> None:
    small = pipe.predict(video, progress=False)
    huge = pipe.predict(video, batch_size=10**9, progress=False)
    assert np.array_equal(huge.points, small.points, equal_nan=True)


def test_predict_to_file_takes_indices_and_sio_video(
    pipe: sleap_infer.Pipeline, video: Path, tmp_path: Path
) -> None:
    by_list = pipe.predict_to_file(video, tmp_path / "a.slp", frames=[0, 1], progress=False)
    assert by_list.counts.frames == 2
    by_video = pipe.predict_to_file(
        sio.load_video(str(video)), tmp_path / "b.slp", frames=range(2), progress=False
    )
    assert by_video.counts.frames == 2
    with pytest.raises(TypeError, match="indices must be ints"):
        pipe.predict_to_file(video, tmp_path / "c.slp", frames=[0.5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="cannot read a ndarray"):
        pipe.predict_to_file(np.zeros((2, 8, 8), np.uint8), tmp_path / "d.slp")


# --------------------------------------------------------------- unclear 19
def test_small_frames_warn_in_memory() -> None:
    """The example model's max stride is 16: an 8x8 frame is mostly padding."""
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu")
    with pytest.warns(UserWarning, match="smaller than the model's max stride"):
        pipe.predict(np.zeros((2, 8, 8), np.uint8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pipe.predict(np.zeros((2, 64, 64), np.uint8))


def test_small_frames_warn_in_files(tmp_path: Path) -> None:
    pipe = sleap_infer.load(SYNTHETIC_MODEL, device="cpu")
    video = write_video(tmp_path / "tiny.mp4", counter_frames(2, height=8, width=8))
    with pytest.warns(UserWarning, match="smaller than the model's max stride 16"):
        pipe.predict(video, progress=False)
    with pytest.warns(UserWarning, match="smaller than the model's max stride 16"):
        result = pipe.predict_to_file(video, tmp_path / "tiny.slp", progress=False)
    assert any("max stride" in w for w in result.warnings)


# --------------------------------------------------------------- unclear 25
def test_load_refuses_what_the_command_line_refuses() -> None:
    """Every ``infer predict`` option with a lower or upper bound in its parser: the binder
    refuses a value just outside it for ``load`` too (one rule for both)."""
    import typer

    from sleap_infer.cli import app
    from sleap_infer.pipeline.spec import bind, option_names

    command = typer.main.get_command(app).commands["predict"]  # type: ignore[attr-defined]
    names = set(option_names())
    checked = []
    for param in command.params:
        low, high = param.__dict__.get("min"), param.__dict__.get("max")
        if param.param_type_name != "option" or param.name not in names:
            continue
        if low is None and high is None:
            continue
        value = low - 1 if low is not None else high + 1
        with pytest.raises(SleapInferError):
            bind((str(SYNTHETIC_MODEL),), tracking=True, **{param.name: value})
        checked.append(param.name)
    assert {"batch_size", "max_instances", "n_points", "min_new_track_points"} <= set(checked)


# ------------------------------------------------------------- Python words
def test_errors_name_keyword_arguments(
    pipe: sleap_infer.Pipeline, video: Path, tmp_path: Path
) -> None:
    out = tmp_path / "o.slp"
    pipe.predict_to_file(video, out, progress=False)
    with pytest.raises(OutputExistsError) as caught:
        pipe.predict_to_file(video, out, progress=False)
    assert str(caught.value) == f"{out} exists (overwrite=True replaces it)"
    with pytest.raises(UsageError) as caught:
        sleap_infer.load(SYNTHETIC_MODEL, device="cpu", use_kalman=True)
    assert "--" not in str(caught.value)
    assert "tracking=True" in str(caught.value)


def test_python_words() -> None:
    assert python_words("-o/--output x: is an input") == "output x: is an input"
    assert python_words("--resume and --overwrite") == "resume=True and overwrite=True"
    assert python_words("--peak-threshold nan") == "peak_threshold nan"
    assert python_words("--use-flow only matters with --tracking (-t)") == (
        "use_flow=True only matters with tracking=True"
    )
    assert python_words("frames 0-99 of a-b--c") == "frames 0-99 of a-b--c"
    assert python_words("--format csv: cannot write") == "format='csv': cannot write"
    assert python_words("unknown --format 'mat'") == "unknown format 'mat'"
