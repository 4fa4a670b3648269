"""Planning many inputs grows linearly, and a rerun opens each finished output once
(issue 32: planning 1000 inputs <= 1 s). Counted in calls, never timed."""

from __future__ import annotations

import cProfile
import pstats
import shutil
from pathlib import Path

import h5py
import pytest

import sleap_infer
from sleap_infer.writers.outputs import judge_output, stored_provenance
from sleap_infer.writers.registry import FORMATS

import scene
from conftest import SYNTHETIC_MODEL

MODEL = str(SYNTHETIC_MODEL)


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A tiny video and the finished output a run made of it."""
    folder = tmp_path_factory.mktemp("plan_scale")
    video = folder / "v000.mp4"
    scene.write_video(video, n_frames=2)
    sleap_infer.plan(video, MODEL, device="cpu").run()
    return video, folder / "v000.mp4.predictions.slp"


def _folder_of(finished: tuple[Path, Path], root: Path, n: int) -> Path:
    """``n`` copies of the video, each with its finished output beside it."""
    video, output = finished
    folder = root / f"n{n}"
    folder.mkdir()
    for i in range(n):
        shutil.copyfile(video, folder / f"v{i:03d}.mp4")
        shutil.copyfile(output, folder / f"v{i:03d}.mp4.predictions.slp")
    return folder


def _calls_to_plan(folder: Path) -> int:
    profiler = cProfile.Profile()
    profiler.enable()
    batch = sleap_infer.plan(folder, MODEL, device="cpu")
    profiler.disable()
    assert len(batch.skipped) == len(list(folder.glob("*.mp4"))) and not batch.todo
    return pstats.Stats(profiler).total_calls  # type: ignore[attr-defined]


def test_planning_work_grows_linearly_with_the_inputs(
    finished: tuple[Path, Path], tmp_path: Path
) -> None:
    """Python calls to plan (and skip) 8, 16, 24 finished inputs: each 8 more cost the
    same, so a per-input loop over all inputs (quadratic) shows as a growing step."""
    _calls_to_plan(_folder_of(finished, tmp_path, 1))  # imports and caches, once
    calls = [_calls_to_plan(_folder_of(finished, tmp_path, n)) for n in (8, 16, 24)]
    first, second = calls[1] - calls[0], calls[2] - calls[1]
    assert first > 0
    assert abs(second - first) <= 0.02 * first, calls


def test_a_rerun_opens_each_finished_output_once(
    finished: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder_of(finished, tmp_path, 5)
    opened: list[bytes] = []
    real_open = h5py.h5f.open

    def counting_open(name: bytes, *args: object, **kwargs: object) -> object:
        opened.append(name)
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(h5py.h5f, "open", counting_open)
    batch = sleap_infer.plan(folder, MODEL, device="cpu")
    assert len(batch.skipped) == 5 and all("exists" in o.message for o in batch.skipped)
    outputs = [n for n in opened if n.endswith(b".slp")]
    assert len(outputs) == len(set(outputs)) == 5, opened


def test_one_opening_judges_as_the_two_calls_did(finished: tuple[Path, Path]) -> None:
    _, output = finished
    slp = FORMATS["slp"]
    found, provenance = judge_output(output, slp)
    assert found == "complete" and provenance == stored_provenance(output)
    assert isinstance(provenance, dict) and provenance
    assert judge_output(output.with_name("absent.slp"), slp) == (None, None)
    foreign = output.with_name("foreign.slp")
    foreign.write_bytes(b"not hdf5 at all")
    assert judge_output(foreign, slp) == ("foreign", None)
    with h5py.File(foreign, "w") as f:  # HDF5, but not a .slp of ours
        f["frames"] = [1]
    assert judge_output(foreign, slp) == ("foreign", None)
