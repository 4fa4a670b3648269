"""``infer predict`` over many videos: failures per video, bad models, kill and resume,
shards, finished outputs kept, formats, and several worker processes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sleap_io as sio
import yaml

from sleap_infer.batch.execute import JobSettings
from sleap_infer.batch.pool import run_on_devices
from sleap_infer.batch.tasks import DONE, FAILED, VideoTask
from sleap_infer.cli import main
from sleap_infer.journal import journal_path, read_journal
from sleap_infer.sources import video as video_module

import scene
from broken_videos import (
    avi_claiming,
    faststart_mp4,
    noisy_frames,
    truncated_copy,
    write_video,
    zero_frame_mp4,
)
from cli_runs import as_from_a_terminal, error_lines, infer_stopping, run_cli
from conftest import SYNTHETIC_MODEL, assert_same_predictions, counter_frames
from fakes import CrashingSpec
from model_factory import config_dict, write_model_dir

MODEL = str(SYNTHETIC_MODEL)


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three short synthetic videos in one folder."""
    folder = tmp_path_factory.mktemp("clips")
    for i in range(3):
        scene.write_video(folder / f"clip{i}.mp4", n_frames=12, seed=i)
    return folder


def test_one_bad_video_never_stops_the_others(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, clips: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    good = data / "good.mp4"
    scene.write_video(good, n_frames=10)
    full = faststart_mp4(tmp_path / "full.mp4", noisy_frames(40))
    truncated_copy(full, data / "truncated.mp4", 0.5)
    unfinished = write_video(tmp_path / "rec.mp4", noisy_frames(20))
    truncated_copy(unfinished, data / "unfinished.mp4", 0.6)
    zero_frame_mp4(data / "zero.mp4")
    (data / "notes.mp4").write_text("not a video\n")
    avi_claiming(data / "long.avi", counter_frames(20), claimed=8)
    out = tmp_path / "out"
    code, err = run_cli(
        capsys,
        "predict",
        data,
        tmp_path / "missing.mp4",
        str(tmp_path / "*.mkv"),
        "-m",
        MODEL,
        "--device",
        "cpu",
        "-o",
        out,
        "--progress",
        "none",  # not -q: -q prints only errors, and the warning below is checked
    )
    assert code == 1, err
    errors = error_lines(err)
    expected = {
        "notes.mp4": "not a readable video",
        "truncated.mp4": "truncated: ",
        "unfinished.mp4": "no 'moov' index atom",
        "zero.mp4": "contains no video stream",
        "missing.mp4": "video not found",
        "*.mkv": "no files match this pattern",
    }
    assert len(errors) == len(expected), err
    for name, needle in expected.items():
        assert [e for e in errors if f"{name}: " in e and needle in e], (name, err)
    assert "warning: " in err and "long.avi: decoded 20 frames but its metadata says 8" in err
    assert "Traceback" not in err
    # Everything that could be predicted was, including the readable part of the truncated one.
    labels = sio.load_slp(str(out / "good.mp4.predictions.slp"))
    assert len(labels) == 10
    # The stored shape (open_videos=False: with OpenCV installed, sleap-io would reopen the
    # .avi and report its header's count instead of what the file records).
    long = sio.load_slp(str(out / "long.avi.predictions.slp"), open_videos=False)
    assert long.provenance["frames_processed"] == 20
    assert long.videos[0].shape[0] == 20  # the decoded count, not the header's 8
    truncated = sio.load_slp(str(out / "truncated.mp4.predictions.slp"))
    assert truncated.provenance["bad_frames"][-1]["kind"] == "end"
    prov = truncated.provenance
    assert prov["frames_processed"] + prov["bad_frames"][-1]["count"] == 40
    summary = err[err.index("┏") :]
    for name in ("good.mp4", "notes.mp4", "long.avi", "zero.mp4"):
        assert name in summary
    assert "8 videos: 2 done, 5 failed, 1 truncated" in summary
    assert not list(out.rglob("*.partial"))


def _broken_models(root: Path) -> dict[str, tuple[list[Path], str]]:
    missing_cfg = write_model_dir(root / "no_cfg", config_dict("single_instance"))
    (missing_cfg / "training_config.yaml").unlink()
    missing_ckpt = write_model_dir(root / "no_ckpt", config_dict("single_instance"))
    (missing_ckpt / "best.ckpt").unlink()
    mismatch = write_model_dir(root / "mismatch", config_dict("single_instance"))
    raw = yaml.safe_load((mismatch / "training_config.yaml").read_text())
    raw["model_config"]["backbone_config"]["unet"]["filters"] = 6
    (mismatch / "training_config.yaml").write_text(yaml.safe_dump(raw))
    backbone = write_model_dir(root / "backbone", config_dict("single_instance"))
    raw = yaml.safe_load((backbone / "training_config.yaml").read_text())
    raw["model_config"]["backbone_config"] = {
        "unet": None,
        "pretrained": {"model_name": "x", "source": "timm"},
    }
    (backbone / "training_config.yaml").write_text(yaml.safe_dump(raw))
    other = write_model_dir(root / "other", config_dict("single_instance"), seed=1)
    return {
        "missing config": ([missing_cfg], "no_cfg: no training_config.yaml"),
        "missing checkpoint": ([missing_ckpt], "no_ckpt: no best.ckpt"),
        "weights do not match": ([mismatch], "weights do not match training_config.yaml"),
        "unsupported backbone": ([backbone], "pretrained.source: 'timm' is not supported"),
        "not a top-down pair": ([SYNTHETIC_MODEL, other], "cannot combine models"),
    }


@pytest.mark.parametrize("devices", [None, "cpu,cpu"])
def test_bad_models_fail_before_any_video_is_opened(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    clips: Path,
    monkeypatch: pytest.MonkeyPatch,
    devices: str | None,
) -> None:
    opened: list[Path] = []
    real_init = video_module.VideoReader.__init__

    def recording_init(self, path, *args, **kwargs):
        opened.append(Path(path))
        real_init(self, path, *args, **kwargs)

    monkeypatch.setattr(video_module.VideoReader, "__init__", recording_init)
    extra = ["--devices", devices] if devices else ["--device", "cpu"]
    for case, (models, needle) in _broken_models(tmp_path).items():
        model_args = [arg for m in models for arg in ("-m", str(m))]
        out = tmp_path / "out" / case
        code, err = run_cli(
            capsys, "predict", clips, *model_args, *extra, "-o", out, "--progress", "none"
        )
        errors = error_lines(err)
        assert code in (1, 2) and len(errors) == 1 and needle in errors[0], (case, err)
        assert not out.exists(), case
    assert opened == []


def infer(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sleap_infer", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_killed_run_resumes_to_the_same_result(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    video = tmp_path / "long.mp4"
    scene.write_video(video, n_frames=60, seed=7)
    args = ["predict", video, "-m", MODEL, "--device", "cpu", "-b", "4", "--progress", "none"]
    resumed_slp = tmp_path / "resumed.slp"
    killed = infer_stopping("SIGKILL", 6, *args, "-o", resumed_slp)
    assert killed.returncode == -9, killed.stderr
    assert not resumed_slp.exists()  # never a half-written .slp
    journal = read_journal(journal_path(resumed_slp))
    assert journal.predicted.tolist() == list(range(24))

    code, err = run_cli(capsys, *args, "-o", resumed_slp)
    assert code == 1 and "pass --resume" in error_lines(err)[0]  # nothing is thrown away
    code, err = run_cli(capsys, *args, "-o", resumed_slp, "--resume")
    assert code == 0, err
    assert "60 frames (resumed after 24)" in err
    code, err = run_cli(capsys, *args, "-o", tmp_path / "clean.slp")
    assert code == 0, err
    assert_same_predictions(tmp_path / "clean.slp", resumed_slp)
    assert not journal_path(resumed_slp).exists()


def test_ctrl_c_stops_cleanly_and_resume_finishes_the_batch(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, clips: Path
) -> None:
    out = tmp_path / "out"
    args = ["predict", clips, "-m", MODEL, "--device", "cpu", "-b", "2", "--progress", "none"]
    stopped = infer_stopping("SIGINT", 8, *args, "-o", out)  # clip0 done (6 batches), clip1 not
    assert stopped.returncode == 130, stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert "clip1.mp4: interrupted; predictions so far are kept in" in stopped.stderr
    assert "rerun the same command with --resume" in stopped.stderr
    assert (out / "clip0.mp4.predictions.slp").exists()
    assert read_journal(journal_path(out / "clip1.mp4.predictions.slp")).n_predicted == 4
    code, err = run_cli(capsys, *args, "-o", out, "--resume")
    assert code == 0, err
    assert "clip0.mp4: skipped" in err
    assert "12 frames (resumed after 4)" in err
    code, err = run_cli(capsys, *args, "-o", tmp_path / "clean")
    assert code == 0, err
    for i in range(3):
        name = f"clip{i}.mp4.predictions.slp"
        assert_same_predictions(tmp_path / "clean" / name, out / name)


def test_sigterm_stops_like_ctrl_c(tmp_path: Path, clips: Path) -> None:
    """SLURM preemption sends SIGTERM: the journal is closed and resumable, exit 130."""
    out = tmp_path / "clip0.slp"
    args = [
        "predict",
        clips / "clip0.mp4",
        "-m",
        MODEL,
        "--device",
        "cpu",
        "-b",
        "2",
        "--progress",
        "none",
    ]
    stopped = infer_stopping("SIGTERM", 2, *args, "-o", out)
    assert stopped.returncode == 130, stopped.stderr
    assert "clip0.mp4: interrupted; predictions so far are kept in" in stopped.stderr
    assert read_journal(journal_path(out)).n_predicted == 4
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]


def test_shards_partition_the_batch_and_a_rerun_skips_finished_outputs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, clips: Path
) -> None:
    listing = tmp_path / "videos.txt"
    listing.write_text("".join(f"{clips / f'clip{i}.mp4'}\n" for i in range(3)))
    base = [
        "predict",
        listing,
        "-m",
        MODEL,
        "--device",
        "cpu",
        "--frames",
        "0-3",
        "--progress",
        "none",
    ]
    written = []
    for shard in ("0/2", "1/2"):
        out = tmp_path / shard.replace("/", "of")
        code, err = run_cli(capsys, *base, "-o", out, "--shard", shard)
        assert code == 0, err
        written.append(sorted(p.name for p in out.iterdir()))
    assert written == [
        ["clip0.mp4.predictions.slp", "clip2.mp4.predictions.slp"],
        ["clip1.mp4.predictions.slp"],
    ]
    out = tmp_path / "0of2"
    before = (out / "clip0.mp4.predictions.slp").stat().st_mtime_ns
    code, err = run_cli(capsys, *base, "-o", out)  # the default: finished outputs are kept
    assert code == 0, err
    assert err.count(": skipped, ") == 2 and "clip1.mp4: 4 frames" in err
    assert err.count("exists (--overwrite replaces it)") == 2
    assert (out / "clip0.mp4.predictions.slp").stat().st_mtime_ns == before
    code, err = run_cli(capsys, *base, "-o", out, "--skip-existing")  # old scripts still run
    assert code == 0 and err.count(": skipped, ") == 3, err
    code, err = run_cli(capsys, *base, "-o", out, "--frames", "0-1", "--overwrite")
    assert code == 0 and "clip0.mp4: 2 frames" in err, err
    assert (out / "clip0.mp4.predictions.slp").stat().st_mtime_ns != before
    code, err = run_cli(capsys, *base, "--shard", "5/4")
    assert code == 2 and "--shard '5/4'" in error_lines(err)[0]
    code, err = run_cli(capsys, *base, "--shard", "3/4")  # 3 videos: shard 3 gets none
    assert code == 0 and "nothing to predict: shard 3/4" in err


@pytest.mark.parametrize(("fmt", "suffix"), [("csv", ".csv"), ("analysis-h5", ".analysis.h5")])
def test_other_formats_from_the_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, clips: Path, fmt: str, suffix: str
) -> None:
    code, err = run_cli(
        capsys, "predict", clips / "clip0.mp4", "-m", MODEL, "--device", "cpu",
        "--format", fmt, "-o", tmp_path, "--progress", "none",
    )  # fmt: skip
    assert code == 0, err
    out = tmp_path / f"clip0.mp4.predictions{suffix}"
    assert out.stat().st_size > 0
    if fmt == "analysis-h5":
        assert len(sio.load_analysis_h5(str(out))) == 12
    else:
        assert len(out.read_text().splitlines()) == 13  # header + 12 frames


def test_two_cpu_workers_match_a_single_process_run(tmp_path: Path, clips: Path) -> None:
    args = ["predict", clips, "-m", MODEL, "--frames", "0-5", "--progress", "none"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "sleap_infer", *args, "--devices", "cpu,cpu", "-o", tmp_path / "w"],
        stderr=subprocess.PIPE,
        text=True,
    )
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert "2 workers (cpu, cpu)" in stderr
    single = infer(*args, "--device", "cpu", "-o", tmp_path / "s")
    assert single.returncode == 0, single.stderr
    for i in range(3):
        name = f"clip{i}.mp4.predictions.slp"
        # Each CPU worker gets half the torch threads, and oneDNN's summation order
        # depends on the thread count: expect agreement to float32 rounding, not bits.
        assert_same_predictions(tmp_path / "s" / name, tmp_path / "w" / name, rtol=1e-6)
        sessions = sio.load_slp(str(tmp_path / "w" / name)).provenance["sessions"]
        assert sessions[0]["pid"] != proc.pid  # predicted in a worker, not the parent


def test_ctrl_c_with_workers_keeps_every_partial(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    videos = tmp_path / "videos"
    for i in range(2):
        scene.write_video(videos / f"long{i}.mp4", n_frames=80, seed=i)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "sleap_infer", "predict", str(videos), "-m", MODEL]
    proc = subprocess.Popen(
        [*cmd, "--devices", "cpu,cpu", "-b", "1", "-o", str(out), "--progress", "none"],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, like a shell job
        preexec_fn=as_from_a_terminal,
    )
    deadline = time.monotonic() + 240
    while len(list(out.glob("*.partial"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # until both workers are midway through a video
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stderr.count(": interrupted; predictions so far are kept in") == 2, stderr
    journals = list(out.glob("*.partial"))
    assert journals and all(read_journal(j).n_predicted > 0 for j in journals)
    code, err = run_cli(capsys, "predict", videos, "-m", MODEL, "--device", "cpu", "-o", out,
                        "--progress", "none", "--resume")  # fmt: skip
    assert code == 0, err
    code, err = run_cli(capsys, "predict", videos, "-m", MODEL, "--device", "cpu", "-o",
                        tmp_path / "clean", "--progress", "none")  # fmt: skip
    assert code == 0, err
    for i in range(2):
        name = f"long{i}.mp4.predictions.slp"
        assert_same_predictions(tmp_path / "clean" / name, out / name, rtol=1e-6)
    assert not list(out.glob("*.partial"))


class _Recorder:
    def __init__(self) -> None:
        self.finished: list[str] = []
        self.frames = 0

    def video_started(self, task: VideoTask, total_frames: int) -> None:
        pass

    def frames_done(self, task: VideoTask, n: int) -> None:
        self.frames += n

    def video_finished(self, outcome) -> None:
        self.finished.append(outcome.task.video.name)


def test_a_dead_worker_costs_only_its_video(tmp_path: Path) -> None:
    names = ["a.mp4", "crash.mp4", "b.mp4", "c.mp4"]
    tasks = [VideoTask(i, tmp_path / n, tmp_path / f"{n}.out") for i, n in enumerate(names)]
    events, notes = _Recorder(), []
    outcomes, interrupted = run_on_devices(
        ["cpu", "cpu", "broken"], CrashingSpec(model_paths=()), tasks, JobSettings(), events,
        notes.append,
    )  # fmt: skip
    assert not interrupted
    assert [o.status for o in outcomes] == [DONE, FAILED, DONE, DONE]
    assert "worker on cpu died (exit code -9)" in outcomes[1].message
    assert "crash.mp4" in outcomes[1].message
    assert any("worker on broken: device 'broken'" in n for n in notes)
    assert sorted(events.finished) == sorted(names) and events.frames == 9
    assert all((tmp_path / f"{n}.out").exists() for n in names if n != "crash.mp4")


# ------------------------------------------------------------- run summary
def _slp_counts(path: Path) -> tuple[int, int, float]:
    """Instances, frames with instances, and their mean score, read back from a .slp."""
    labels = sio.load_slp(str(path))
    scores = [inst.score for lf in labels for inst in lf.instances]
    frames_with = sum(1 for lf in labels if len(lf.instances) > 0)
    return len(scores), frames_with, sum(scores) / len(scores)


def test_summary_json_and_json_progress_of_a_real_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, clips: Path
) -> None:
    out, summary_path = tmp_path / "out", tmp_path / "logs" / "run.json"
    with pytest.raises(SystemExit) as exit_info:
        main(
            ["predict", str(clips), str(tmp_path / "gone.mp4"), "-m", MODEL, "--device", "cpu",
             "--frames", "0-7", "-o", str(out), "--progress", "json", "--summary-json",
             str(summary_path)]
        )  # fmt: skip
    captured = capsys.readouterr()
    assert exit_info.value.code == 1, captured.err  # the missing video failed
    summary = json.loads(summary_path.read_text())
    assert not [p for p in summary_path.parent.iterdir() if p != summary_path]
    assert summary["status"] == "failed" and summary["exit_code"] == 1
    assert summary["output_folder"] == str(out.resolve())
    # The default backend is auto: chosen per video (8 frames each, nothing exported yet:
    # torch), which each video's record says.
    assert summary["model"]["where"] == "auto/cpu" and summary["model"]["batch_size"] == 4
    videos = {Path(v["video"]).name: v for v in summary["videos"]}
    assert videos["gone.mp4"]["status"] == FAILED and videos["gone.mp4"]["backend"] is None
    assert {v["backend"] for n, v in videos.items() if n != "gone.mp4"} == {"torch"}
    assert "gone.mp4: video not found" in videos["gone.mp4"]["message"]
    for i in range(3):
        v = videos[f"clip{i}.mp4"]
        slp = out / f"clip{i}.mp4.predictions.slp"
        instances, frames_with, mean_score = _slp_counts(slp)
        assert (v["status"], v["output"], v["frames"]) == (DONE, str(slp), 8)
        assert (v["instances"], v["frames_with_instances"]) == (instances, frames_with)
        assert v["mean_score"] == pytest.approx(mean_score, abs=1e-5)
        assert v["fps"] > 0 and v["journal"] is None
    assert summary["totals"] == {
        "videos": 4, "done": 3, "truncated": 0, "skipped": 0, "failed": 1, "interrupted": 0,
        "not_started": 0, "frames": 24, "instances": sum(v["instances"] for v in videos.values()),
        "masks": 0, "boxes": 0, "embeddings": 0,
    }  # fmt: skip
    # stdout: nothing but JSON events, ending with the same summary.
    events = [json.loads(line) for line in captured.out.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "model_loaded" and kinds[-1] == "summary"
    assert kinds.count("video_started") == 3 and kinds.count("video_finished") == 4
    assert {k: v for k, v in events[-1].items() if k not in ("event", "time")} == summary
    finished = {Path(e["video"]).name: e for e in events if e["event"] == "video_finished"}
    assert finished["clip1.mp4"]["instances"] == videos["clip1.mp4"]["instances"]
    assert "outputs in " + str(out.resolve()) in captured.err  # the table's heading


def test_interrupted_run_writes_its_summary_and_shows_frames_saved(
    tmp_path: Path, clips: Path
) -> None:
    out, summary_path = tmp_path / "out", tmp_path / "run.json"
    stopped = infer_stopping(
        "SIGTERM", 2, "predict", clips, "-m", MODEL, "--device", "cpu", "-b", "2",
        "-o", out, "--summary-json", summary_path, "--progress-interval", "0",
    )  # fmt: skip
    assert stopped.returncode == 130, stopped.stderr
    summary = json.loads(summary_path.read_text())
    assert summary["status"] == "interrupted" and summary["exit_code"] == 130
    first, *rest = summary["videos"]
    journal = journal_path(out / "clip0.mp4.predictions.slp")
    saved = read_journal(journal).n_predicted
    assert saved == 4
    assert (first["status"], first["frames"], first["journal"]) == ("interrupted", 4, str(journal))
    assert [v["status"] for v in rest] == ["not_started", "not_started"]
    # stderr is a pipe: plain, timestamped progress lines (every batch, interval 0).
    stamp = r"\[\d\d:\d\d:\d\d\] "
    assert re.search(
        stamp + re.escape(f"{clips / 'clip0.mp4'}: started, 12 frames"), stopped.stderr
    )
    assert re.search(stamp + r".*clip0\.mp4: 2/12 frames \(16\.7%\), [\d.]+ FPS", stopped.stderr)
    assert "interrupted (4 frames saved)" in stopped.stderr
    assert "3 videos: 1 interrupted, 2 not started" in stopped.stderr
