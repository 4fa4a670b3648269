"""The README's quick start runs top to bottom as written, on one video (issue 44 item 1).

Its command lines are read out of README.md and run in a folder laid out as they
expect: ``models/<type>`` are sleap-nn's fixture checkpoints, ``video.mp4`` is four
frames of a real video (cut to 128x128 to keep this quick), ``labels.slp`` and
``labels.pkg.slp`` a SLEAP project of it (suggestions on frames 1-3), ``/data/videos``
and ``/data/out`` folders here. Nothing else of a line is changed, except that the
``infer bench`` line measures the bundled synthetic model: bench times every installed
runtime at three batch sizes, minutes with the fixture bottom-up model on two cores.
Before, 4 of its 7 lines on ``video.mp4`` failed: each new model wrote the same
default file, refused as "predicted with other settings".
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import av
import numpy as np
import pytest
import sleap_io as sio

from cli_runs import error_lines, run_cli
from conftest import SYNTHETIC_MODEL

ROOT = Path(__file__).resolve().parents[1]
MODELS = {
    "single_instance": "minimal_instance_single_instance",
    "centroid": "minimal_instance_centroid",
    "centered_instance": "minimal_instance_centered_instance",
    "bottomup": "minimal_instance_bottomup",
}


def quick_start_lines(readme: Path = ROOT / "README.md") -> list[list[str]]:
    """The ``infer`` command lines of the README's quick start, as argument lists
    (backslash continuations joined, comments dropped)."""
    section = readme.read_text().split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None, "no bash block in the README's quick start"
    text = block[1].replace("\\\n", " ")
    lines = [shlex.split(line, comments=True) for line in text.splitlines()]
    return [words for words in lines if words]


def test_the_quick_start_is_read_whole() -> None:
    lines = quick_start_lines()
    assert all(words[0] == "infer" for words in lines), lines
    commands = [words[1] for words in lines]
    for name in ("predict", "track", "eval", "render", "export", "info", "system", "bench"):
        assert name in commands, commands
    assert sum(1 for words in lines if "video.mp4" in words and words[1] == "predict") >= 5


def _video(path: Path, source: Path, n: int = 4) -> None:
    """The first ``n`` frames of ``source``, its 128x128 middle (where the flies are)."""
    with av.open(str(source)) as src, av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=30)
        stream.width = stream.height = 128
        stream.pix_fmt = "yuv420p"
        for i, frame in enumerate(src.decode(video=0)):
            if i >= n:
                break
            crop = np.ascontiguousarray(frame.to_ndarray(format="rgb24")[128:256, 128:256])
            out.mux(stream.encode(av.VideoFrame.from_ndarray(crop, format="rgb24")))
        out.mux(stream.encode())


def _projects(folder: Path, shared: Path) -> None:
    """``labels.slp``: the fixture project's user instances on frame 0 of ``video.mp4``;
    ``labels.pkg.slp``: the same with frames 1-3 suggested."""
    fixture = sio.load_slp(str(shared / "videos" / "minimal_instance.pkg.slp"))
    skeleton = fixture.skeletons[0]
    video = sio.Video.from_filename(str(folder / "video.mp4"))
    instances = [
        sio.Instance.from_numpy(inst.numpy(), skeleton=skeleton)
        for inst in fixture.labeled_frames[0].instances
    ]
    frame = sio.LabeledFrame(video=video, frame_idx=0, instances=instances)
    labels = sio.Labels(labeled_frames=[frame], videos=[video], skeletons=[skeleton])
    sio.save_slp(labels, str(folder / "labels.slp"), embed=False, verbose=False)
    labels.suggestions = [sio.SuggestionFrame(video=video, frame_idx=i) for i in (1, 2, 3)]
    sio.save_slp(labels, str(folder / "labels.pkg.slp"), embed=False, verbose=False)


def test_the_quick_start_runs_top_to_bottom_on_one_video(
    shared: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "models").mkdir()
    for name, fixture in MODELS.items():
        (tmp_path / "models" / name).symlink_to(shared / "models" / fixture)
    _video(tmp_path / "video.mp4", shared / "videos" / "centered_pair_small.mp4")
    (tmp_path / "videos" / "day1").mkdir(parents=True)
    (tmp_path / "videos" / "day1" / "v.mp4").write_bytes((tmp_path / "video.mp4").read_bytes())
    _projects(tmp_path, shared)
    monkeypatch.chdir(tmp_path)
    here = {"/data/videos": "videos", "/data/out": "out"}
    for words in quick_start_lines():
        args = [here.get(word, word) for word in words[1:]]
        if args[0] == "bench":
            args = [str(SYNTHETIC_MODEL) if a == "models/bottomup" else a for a in args]
        code, err = run_cli(capsys, *args)
        assert code == 0, (shlex.join(words), err)
    assert (tmp_path / "out" / "day1" / "v.mp4.predictions.slp").is_file()
    for name in ("topdown.slp", "tracked.slp", "onnx.slp", "exported.slp"):
        assert (tmp_path / name).is_file(), name

    # The rule stays: a rerun skips its finished output, and another model into the
    # same file is refused in one line that says what differs, in words.
    first, second = quick_start_lines()[:2]
    code, err = run_cli(capsys, *first[1:])
    assert code == 0 and "skipped" in err, err
    code, err = run_cli(capsys, *second[1 : second.index("-o")])
    assert code == 1, err
    assert error_lines(err) == [
        "error: video.mp4.predictions.slp: exists, predicted with other models; "
        "--overwrite replaces it, or -o writes this run elsewhere"
    ], err
