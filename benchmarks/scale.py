#!/usr/bin/env python
"""How cost grows with frame size, animals per frame and number of videos: ours vs sleap-nn.

One command runs three growth series, each row with every tool in the same run, one
after the other on the same input (sleap-nn 0.3.5 lives in its own venv, made on first
use by vs_sleap_nn.py's helper; it is never a dependency of sleap_infer):

    nice .venv/bin/python benchmarks/scale.py                 # the default grid
    nice .venv/bin/python benchmarks/scale.py --quick         # a reduced grid
    .venv/bin/python benchmarks/scale.py --series animals --animals 2,30 --json out.json

- ``sizes``: frames of 384, 1024 and 2048 px through a realistic network (UNet filters
  32, max stride 32, or with ``--backbones convnext`` sleap-nn's ConvNeXt-tiny; random
  seeded weights, output heads zeroed so no noise peaks reach the decoders) for single
  instance, bottom-up and top-down. Measures decode,
  preprocessing and the network as frames grow; instance counts are 0 by construction.
- ``animals``: 2, 10, 30, 60 animals per 512 px frame of the synthetic arena
  (examples/synthetic/crowd.py) through small bottom-up and top-down models trained on it
  (examples/models/crowd_*, made by examples/synthetic/crowd_models.py), so peaks sit on
  real animals and grouping / crops cost what animals cost.
- ``videos``: 1, 100 and 1000 short videos (5 frames, 2 animals, 112 px) in one ``infer
  predict`` run: planning (time to the model_loaded event, minus the 1-video run's),
  model loaded once, per-video overhead. Counts above ``--full-videos`` (100) stop ours
  after its first video: planning and model load only. sleap-nn takes one video per process (a
  multi-video ``.slp`` without labeled frames predicts nothing), so it runs once per
  video on the first few and its total is that per-video cost times the count (marked est.).

Tools per row: ours (``infer predict``, variants with ``--ours LABEL:ARGS``), sleap-nn
torch, sleap-nn torch ``--paf-workers 2`` (bottom-up), sleap-nn onnx (``sleap-nn export``
made once per model and size, cached, not timed). Each tool is one child process; per
row: its wall, CPU seconds (user + sys: robust to other load on a shared machine), peak
RSS (``os.wait4``), its own inference-loop time per frame (ours: the video's frames/fps
from ``--summary-json``; sleap-nn: ``Inference complete ... elapsed=``), instance counts
and keypoint distance (mean / max px) against sleap-nn torch's output. Ours also gets a
per-stage split from its output's provenance (``timing_seconds``: warmup, decode wait,
preprocess, network, postprocess (peaks, grouping, crops), writer (journal append and
tracking when on)). Needs ../shared/fixtures for the training_config template.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "synthetic"))

import crowd  # noqa: E402
import crowd_models  # noqa: E402
from sleap_nn_export import export_case  # noqa: E402
from vs_sleap_nn import FIXTURES, compare, sleap_nn_venv  # noqa: E402

TEMPLATE = FIXTURES / "models" / "minimal_instance_bottomup" / "training_config.yaml"
CROWD_MODELS = ROOT / "examples" / "models"
ARENA = 512  # px, the animal-count frames: room for 81 animals
SHORT = {"animals": 2, "size": 112, "frames": 5}  # each of the many short videos
PAF_WORKERS = 2
KINDS = {
    "single": ("single_instance",),
    "bottomup": ("bottomup",),
    "topdown": ("centroid", "centered_instance"),
}


@dataclass
class Child:
    """One finished tool process: what it cost and what it printed (with arrival times)."""

    cmd: list[str]
    rc: int
    wall: float
    cpu: float
    rss_mb: float
    lines: list[tuple[float, str]]

    @property
    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)


_ENV_WORD = re.compile(r"^[A-Z_][A-Z0-9_]*=")


def split_env(extra: str) -> tuple[dict[str, str], str]:
    """``"NAME=VALUE ... --args"`` (an ``--ours`` variant) -> (its environment, its arguments)."""
    words = shlex.split(extra)
    env = {}
    while words and _ENV_WORD.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return env, shlex.join(words)


def run_child(
    cmd: list[str], stop_at: str | None = None, env_extra: dict[str, str] | None = None
) -> Child:
    """Run ``cmd`` to the end (or interrupt it, as Ctrl-C would, at the first output line
    holding ``stop_at``); its peak RSS and CPU come from ``os.wait4`` on it alone."""
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    env.update(env_extra or {})
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    lines = []
    for line in proc.stdout:  # type: ignore[union-attr]
        lines.append((time.perf_counter() - t0, line.rstrip("\n")))
        if stop_at is not None and stop_at in line:
            proc.send_signal(signal.SIGINT)
            stop_at = None
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    rss = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    return Child(cmd, proc.returncode, wall, usage.ru_utime + usage.ru_stime, rss, lines)


@dataclass
class Row:
    """One tool on one input: cost, its own per-frame time, and agreement with sleap-nn torch."""

    series: str
    case: str
    tool: str
    frames: int
    wall: float | None = None
    cpu: float | None = None
    rss_mb: float | None = None
    loop_ms_per_frame: float | None = None
    instances: int | None = None
    ref_instances: int | None = None
    delta_mean: float | None = None
    delta_max: float | None = None
    stages_ms_per_frame: dict[str, float] = field(default_factory=dict)
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:10]


BACKBONES = {
    "unet": ("realistic", crowd_models.REALISTIC),
    "convnext": ("convnext_tiny", crowd_models.CONVNEXT_TINY),
}
"""The frame-size series' networks: name prefix of the cached model folders, their settings."""


def realistic_models(kind: str, cache: Path, backbone: str = "unet") -> list[Path]:
    """The frame-size series' models (UNet filters 32, max stride 32, or ConvNeXt-tiny), made
    once."""
    template = yaml.safe_load(TEMPLATE.read_text())
    prefix, settings = BACKBONES[backbone]
    out = []
    for sub in KINDS[kind]:
        path = cache / "models" / f"{prefix}_{sub}"
        if not (path / "best.ckpt").is_file():
            crowd_models.write_model(path, template, sub, **settings, seed=0)
        out.append(path)
    return out


def trained_models(kind: str, network: str = "small", cache: Path | None = None) -> list[Path]:
    """The animals series' trained models: the shipped small ones, or (``realistic``) the
    UNet-32 ones crowd_models.py trains into ``cache/crowd32`` (not shipped: 12 MB each)."""
    prefix = crowd_models.NETWORKS[network][0]
    folder = CROWD_MODELS if network == "small" else Path(cache or ".") / "crowd32"
    paths = [folder / f"{prefix}_{sub}" for sub in KINDS[kind]]
    missing = [p for p in paths if not (p / "best.ckpt").is_file()]
    if missing:
        raise SystemExit(
            f"{missing[0]}: not found; make it with examples/synthetic/crowd_models.py"
            f" --template {TEMPLATE} --network {network} --out {folder}"
        )
    return paths


def scene_video(cache: Path, animals: int, size: int, frames: int, seed: int = 0) -> Path:
    path = cache / "videos" / f"crowd_n{animals}_s{size}_f{frames}_seed{seed}.mp4"
    if not path.is_file():
        partial = path.with_suffix(".partial.mp4")
        crowd.write_video(partial, animals, frames, size, seed=seed)
        partial.rename(path)
    return path


def ours_cmd(
    models: list[Path],
    video: Path,
    out: Path,
    args: argparse.Namespace,
    extra: str,
    max_instances: int | None,
    batch: int,
) -> list[str]:
    cmd = [sys.executable, "-m", "sleap_infer", "predict", str(video), "-o", str(out)]
    cmd += ["--overwrite", "--device", "cpu", "--batch-size", str(batch)]
    cmd += ["--summary-json", str(out.with_suffix(".summary.json")), "--progress", "json"]
    for m in models:
        cmd += ["--model", str(m)]
    if max_instances:
        cmd += ["--max-instances", str(max_instances)]
    return cmd + shlex.split(extra) + shlex.split(args.extra)


def sleap_nn_cmd(
    exe: Path,
    models: list[Path],
    video: Path,
    out: Path,
    batch: int,
    max_instances: int | None,
    runtime: str | None = None,
    paf_workers: int = 0,
) -> list[str]:
    cmd = [str(exe), "predict", "--data_path", str(video), "--output_path", str(out)]
    cmd += ["--device", "cpu", "--batch_size", str(batch)]
    for m in models:
        cmd += ["--model_paths", str(m)]
    if runtime:
        cmd += ["--runtime", runtime]
    if max_instances:
        cmd += ["--max_instances", str(max_instances)]
    if paf_workers:
        cmd += ["--paf-workers", str(paf_workers)]
    return cmd


_ELAPSED = re.compile(r"Inference complete \| frames=(\d+).*?elapsed=([\d.]+)s")


def sleap_nn_loop(child: Child) -> float | None:
    """sleap-nn's own inference-loop ms/frame (its ``Inference complete`` log line)."""
    for _, line in child.lines:
        m = _ELAPSED.search(line)
        if m and int(m.group(1)):
            return 1000 * float(m.group(2)) / int(m.group(1))
    return None


def ours_numbers(out: Path, frames: int) -> tuple[float | None, dict[str, float]]:
    """Ours' loop ms/frame (from the summary's fps) and per-stage ms/frame (provenance)."""
    import sleap_io as sio

    summary = json.loads(out.with_suffix(".summary.json").read_text())
    fps = summary["videos"][0]["fps"]
    timing = sio.load_slp(str(out)).provenance.get("timing_seconds", {})
    stages = {k: 1000 * v / frames for k, v in timing.items()}
    return (1000 / fps if fps else None), stages


class Series:
    """Runs the tools of one input and turns them into rows."""

    def __init__(self, args: argparse.Namespace, exe: Path, tmp: Path) -> None:
        self.args, self.exe, self.tmp = args, exe, tmp
        self.rows: list[Row] = []

    def _export(
        self, name: str, models: list[Path], size: int, batch: int, max_instances: int | None
    ) -> tuple[Path | None, str]:
        key = "_".join(_sha(m / "best.ckpt") for m in models)
        export = export_case(
            self.exe,
            f"scale_{name}_{key}",
            models,
            self.args.export_cache,
            height=size,
            width=size,
            batch_size=batch,
            max_instances=max_instances,
            peak_threshold=None,
        )
        return export.dir, export.reason or ""

    def one_input(
        self,
        series: str,
        case: str,
        kind: str,
        models: list[Path],
        video: Path,
        size: int,
        frames: int,
        batch: int,
        max_instances: int | None,
    ) -> None:
        print(f"\n{series} / {case}: {frames} frames {size}x{size}, batch {batch}", flush=True)
        tmp = self.tmp / f"{series}_{case}"
        tmp.mkdir(parents=True, exist_ok=True)
        ref_out = tmp / "sleap_nn_torch.slp"
        runs: list[tuple[str, list[str], Path]] = []
        envs: dict[str, dict[str, str]] = {}
        for label, extra in self.args.ours_variants:
            out = tmp / f"ours_{label}.slp"
            envs[f"ours {label}"], extra = split_env(extra)
            runs.append(
                (
                    f"ours {label}",
                    ours_cmd(models, video, out, self.args, extra, max_instances, batch),
                    out,
                )
            )
        runs.append(
            (
                "sleap-nn torch",
                sleap_nn_cmd(self.exe, models, video, ref_out, batch, max_instances),
                ref_out,
            )
        )
        if kind == "bottomup" and series == "animals":
            out = tmp / "sleap_nn_paf.slp"
            cmd = sleap_nn_cmd(
                self.exe, models, video, out, batch, max_instances, paf_workers=PAF_WORKERS
            )
            runs.append((f"sleap-nn torch paf-workers {PAF_WORKERS}", cmd, out))
        export_dir, reason = self._export(
            f"{series}_{kind}_{size}", models, size, batch, max_instances
        )
        out = tmp / "sleap_nn_onnx.slp"
        if export_dir is not None:
            runs.append(
                (
                    "sleap-nn onnx",
                    sleap_nn_cmd(
                        self.exe, [export_dir], video, out, batch, max_instances, runtime="onnx"
                    ),
                    out,
                )
            )
        else:
            self.rows.append(
                Row(series, case, "sleap-nn onnx", frames, note=f"export failed: {reason}")
            )
        done: list[tuple[Row, Path]] = []
        for label, cmd, out in runs:
            load = os.getloadavg()[0]
            child = run_child(cmd, env_extra=envs.get(label))
            row = Row(series, case, label, frames, child.wall, child.cpu, child.rss_mb)
            row.extra["load"] = load
            if child.rc != 0:
                tail = child.text.splitlines()[-3:]
                row.note = f"exit {child.rc}: {' | '.join(tail)}"[:300]
                row.wall = row.cpu = None
            elif label.startswith("ours"):
                row.loop_ms_per_frame, row.stages_ms_per_frame = ours_numbers(out, frames)
            else:
                row.loop_ms_per_frame = sleap_nn_loop(child)
            if self.args.show_commands:
                row.extra["cmd"] = shlex.join(cmd)
            done.append((row, out))
            self.rows.append(row)
            print("  " + row_line(row), flush=True)
        if ref_out.is_file():
            for row, out in done:
                if row.wall is not None and out.is_file():
                    n_a, n_b, mean, worst = compare(out, ref_out)
                    row.instances, row.ref_instances = n_a, n_b
                    row.delta_mean, row.delta_max = mean, worst


def row_line(row: Row) -> str:
    if row.wall is None:
        return f"{row.tool:<32} {row.note}"
    loop = f"{row.loop_ms_per_frame:8.1f} ms/frame" if row.loop_ms_per_frame else " " * 17
    return (
        f"{row.tool:<32} wall {row.wall:7.2f} s  cpu {row.cpu:7.2f} s  rss {row.rss_mb:6.0f} MB"
        f"  loop {loop}"
    )


def sizes_series(s: Series, args: argparse.Namespace) -> None:
    for backbone in args.backbones:
        for kind in args.kinds:
            models = realistic_models(kind, args.cache, backbone)
            for size in args.sizes:
                frames = args.size_frames[size]
                animals = min(10, crowd.max_animals(size))
                video = scene_video(args.cache, animals, size, frames)
                batch = args.batch_size if size <= 512 else 1
                case = f"{kind} {size}px" + (" convnext-tiny" if backbone == "convnext" else "")
                s.one_input("sizes", case, kind, models, video, size, frames, batch, None)


def animals_series(s: Series, args: argparse.Namespace) -> None:
    for kind in ("bottomup", "topdown"):
        if kind not in args.kinds:
            continue
        models = trained_models(kind, args.crowd_network, args.cache)
        for n in args.animals:
            video = scene_video(args.cache, n, ARENA, args.animal_frames)
            s.one_input(
                "animals",
                f"{kind} {n} animals" + (" unet-32" if args.crowd_network == "realistic" else ""),
                kind,
                models,
                video,
                ARENA,
                args.animal_frames,
                args.batch_size,
                n,
            )


def _event_times(child: Child) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {}
    for t, line in child.lines:
        if line.startswith("{"):
            try:
                event = json.loads(line)["event"]
            except (ValueError, KeyError):
                continue
            times.setdefault(event, []).append(t)
    return times


def videos_series(s: Series, args: argparse.Namespace) -> None:
    """Many short videos in one run (ours) / one process a video (sleap-nn)."""
    models = trained_models("bottomup")
    folder_all = args.cache / "videos" / "short"
    n_max = max(args.videos)
    paths = [
        scene_video(folder_all.parent, SHORT["animals"], SHORT["size"], SHORT["frames"], seed=i)
        for i in range(n_max)
    ]
    base_planning = None
    for n in sorted(args.videos):
        folder = s.tmp / f"videos_{n}"
        folder.mkdir(exist_ok=True)
        for p in paths[:n]:
            link = folder / p.name
            if not link.exists():
                link.symlink_to(p)
        out = s.tmp / f"videos_{n}_out"
        label, extra = args.ours_variants[0]
        env, extra = split_env(extra)
        cmd = [
            sys.executable,
            "-m",
            "sleap_infer",
            "predict",
            str(folder),
            "-o",
            str(out),
            "--overwrite",
            "--device",
            "cpu",
            "--progress",
            "json",
            "--model",
            str(models[0]),
            *shlex.split(extra),
        ]
        partial = n > args.full_videos
        stop_at = '"event": "video_finished"' if partial else None
        child = run_child(cmd, stop_at=stop_at, env_extra=env)
        case = f"{n} videos"
        frames = n * SHORT["frames"]
        row = Row("videos", case, f"ours {label}", frames, child.wall, child.cpu, child.rss_mb)
        if partial:  # planning and model load only: the run is stopped after its first video
            ev = _event_times(child)
            loaded = ev.get("model_loaded", [float("nan")])[0]
            row.wall = row.cpu = None
            row.extra = {"to_model_loaded_s": loaded, "planning_s": loaded - (base_planning or 0)}
            row.note = (
                f"stopped after the first video (exit {child.rc}): planning + model load only;"
                f" model_loaded at {loaded:.2f} s, planning vs 1 video:"
                f" +{row.extra['planning_s']:.2f} s"
            )
        elif child.rc != 0:
            row.note = f"exit {child.rc}: {child.text.splitlines()[-1:]}"[:200]
            row.wall = None
        else:
            ev = _event_times(child)
            loaded = ev.get("model_loaded", [float("nan")])[0]
            first = ev.get("video_started", [float("nan")])[0]
            last = ev.get("video_finished", [float("nan")])[-1]
            base_planning = loaded if base_planning is None else base_planning
            row.extra = {
                "to_model_loaded_s": loaded,
                "planning_s": loaded - base_planning,
                "per_video_ms": 1000 * (last - first) / n,
                "after_last_video_s": child.wall - last,
            }
            row.loop_ms_per_frame = 1000 * (last - first) / frames
        s.rows.append(row)
        print(f"\nvideos / {case}: " + row_line(row) + f"  {row.extra}", flush=True)
    # sleap-nn: one process per video, on the first few; the rest is that cost times n.
    k = args.sleap_nn_videos
    ref = s.tmp / "sleap_nn_videos"
    ref.mkdir(exist_ok=True)
    walls, cpus, rss = [], [], 0.0
    for p in paths[:k]:
        child = run_child(sleap_nn_cmd(s.exe, models, p, ref / f"{p.stem}.slp", 4, None))
        walls.append(child.wall)
        cpus.append(child.cpu)
        rss = max(rss, child.rss_mb)
    per_wall, per_cpu = sum(walls) / k, sum(cpus) / k
    ours_first = s.tmp / f"videos_{min(args.videos)}_out"
    for n in sorted(args.videos):
        row = Row(
            "videos",
            f"{n} videos",
            "sleap-nn torch",
            n * SHORT["frames"],
            per_wall * n,
            per_cpu * n,
            rss,
        )
        row.note = "" if n <= k else f"est.: {k} processes measured, {per_wall:.1f} s each"
        row.loop_ms_per_frame = 1000 * per_wall / SHORT["frames"]
        row.extra = {"per_video_ms": 1000 * per_wall, "measured_videos": min(n, k)}
        if n == min(args.videos):
            pairs = [
                (o, ref / f"{p.stem}.slp")
                for p in paths[: min(n, k)]
                for o in ours_first.rglob(f"{p.name}*.slp")
            ]
            counts = [compare(a, b) for a, b in pairs]
            row.instances = sum(c[0] for c in counts)
            row.ref_instances = sum(c[1] for c in counts)
            row.delta_max = max((c[3] for c in counts), default=None)
            row.delta_mean = max((c[2] for c in counts), default=None)  # worst video's mean
        s.rows.append(row)
        print(f"videos / {n} videos: " + row_line(row) + f" {row.note}", flush=True)


def _f(x: float | None, fmt: str = ".1f") -> str:
    return "–" if x is None or x != x else format(x, fmt)


def markdown(rows: list[Row]) -> str:
    """A table per series, then ours' per-stage split."""
    out = []
    for series in ("sizes", "animals", "videos"):
        part = [r for r in rows if r.series == series]
        if not part:
            continue
        out += [
            f"### {series}",
            "",
            "| case | tool | frames | wall s | CPU s | peak RSS MB | loop ms/frame |"
            " instances (ours/torch) | Δ mean px | Δ max px | note |",
            "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|",
        ]
        for r in part:
            inst = "–" if r.instances is None else f"{r.instances}/{r.ref_instances}"
            note = r.note
            if series == "videos" and r.tool.startswith("ours") and "per_video_ms" in r.extra:
                note = (
                    f"model_loaded at {r.extra['to_model_loaded_s']:.2f} s (planning vs 1"
                    f" video: +{r.extra['planning_s']:.2f} s); {r.extra['per_video_ms']:.0f}"
                    " ms/video"
                )
            out.append(
                f"| {r.case} | {r.tool} | {r.frames} | {_f(r.wall)} | {_f(r.cpu)} |"
                f" {_f(r.rss_mb, '.0f')} | {_f(r.loop_ms_per_frame)} | {inst} |"
                f" {_f(r.delta_mean, '.4f')} | {_f(r.delta_max, '.3f')} | {note} |"
            )
        out.append("")
    staged = [r for r in rows if r.stages_ms_per_frame]
    if staged:
        names: list[str] = []
        for r in staged:
            names += [k for k in r.stages_ms_per_frame if k not in names]
        out += [
            "### ours per stage (ms/frame, from the output's provenance timing_seconds)",
            "",
            "| case | tool | " + " | ".join(names) + " | rest of wall |",
            "|---|---|" + "---:|" * (len(names) + 1),
        ]
        for r in staged:
            st = r.stages_ms_per_frame
            rest = 1000 * (r.wall or 0) / r.frames - sum(st.values())
            cells = [_f(st.get(k)) for k in names]
            out.append(f"| {r.case} | {r.tool} | " + " | ".join(cells) + f" | {rest:.1f} |")
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="a reduced grid (see --help defaults)")
    p.add_argument("--series", default="sizes,animals,videos")
    p.add_argument("--sizes", default=None, help="frame sizes, px (default 384,1024,2048)")
    p.add_argument(
        "--kinds",
        default="single,bottomup,topdown",
        help="for the sizes series; bottomup / topdown also pick the animals series' rows",
    )
    p.add_argument(
        "--backbones", default="unet", help="for the sizes series: unet (filters 32), convnext"
    )
    p.add_argument("--animals", default=None, help="animals per frame (default 2,10,30,60)")
    p.add_argument("--videos", default=None, help="video counts (default 1,100,1000)")
    p.add_argument("--animal-frames", type=int, default=None, help="frames per animal row (20)")
    p.add_argument(
        "--crowd-network",
        choices=sorted(crowd_models.NETWORKS),
        default="small",
        help="the animals series' trained models: small (UNet filters 8, shipped) or"
        " realistic (filters 32, max stride 32; train them first, see crowd_models.py)",
    )
    p.add_argument(
        "--full-videos",
        type=int,
        default=100,
        help="video counts above this only time planning + model load (ours is stopped"
        " after its first video; per-video cost comes from the largest full run)",
    )
    p.add_argument(
        "--sleap-nn-videos",
        type=int,
        default=None,
        help="videos sleap-nn runs (one process each) in the videos series (5)",
    )
    p.add_argument("--batch-size", type=int, default=4, help="both tools (1 above 512 px)")
    p.add_argument(
        "--ours",
        action="append",
        default=None,
        metavar="LABEL[:ARGS]",
        help="a variant of infer predict, e.g. 'onnx:--backend onnx' (repeatable); leading"
        " NAME=VALUE words are its environment, e.g. 'glibc malloc:GLIBC_TUNABLES=...'",
    )
    p.add_argument("--extra", default="", help="more infer predict options for every ours run")
    p.add_argument("--venv", type=Path, default=ROOT / ".bench-venv" / "sleap-nn")
    p.add_argument(
        "--cache",
        type=Path,
        default=ROOT / ".bench-venv" / "scale",
        help="generated videos and random-weight models, reused",
    )
    p.add_argument("--export-cache", type=Path, default=ROOT / ".bench-venv" / "sleap-nn-exports")
    p.add_argument("--show-commands", action="store_true")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--markdown", type=Path, default=None, help="write the tables here too")
    args = p.parse_args()
    if not TEMPLATE.is_file():
        raise SystemExit(f"shared fixtures not found at {FIXTURES} (set SLEAP_INFER_FIXTURES)")

    def ints(text: str | None, full: str, quick: str) -> list[int]:
        return [int(x) for x in (text or (quick if args.quick else full)).split(",")]

    args.sizes = ints(args.sizes, "384,1024,2048", "384,1024")
    args.animals = ints(args.animals, "2,10,30,60", "2,30")
    args.videos = ints(args.videos, "1,100,1000", "1,100")
    args.animal_frames = args.animal_frames or (10 if args.quick else 20)
    args.sleap_nn_videos = args.sleap_nn_videos or (3 if args.quick else 5)
    args.size_frames = {
        s: (10 if args.quick else 20) if s <= 512 else (3 if s <= 1024 else 2) for s in args.sizes
    }
    args.kinds = args.kinds.split(",")
    args.backbones = args.backbones.split(",")
    if unknown := set(args.backbones) - set(BACKBONES):
        p.error(f"--backbones: unknown {sorted(unknown)}; choose from {sorted(BACKBONES)}")
    args.ours_variants = [v.partition(":")[::2] for v in (args.ours or ["torch"])]
    exe = sleap_nn_venv(args.venv)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="scale_") as tmp:
        s = Series(args, exe, Path(tmp))
        for name in args.series.split(","):
            {"sizes": sizes_series, "animals": animals_series, "videos": videos_series}[name](
                s, args
            )
    total = time.perf_counter() - t0
    text = markdown(s.rows)
    print(f"\n{text}\n\ntotal {total / 60:.1f} min")
    report = {
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "argv": sys.argv,
        "total_s": total,
        "rows": [asdict(r) for r in s.rows],
    }
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    if args.markdown:
        args.markdown.write_text(text + "\n")


if __name__ == "__main__":
    main()
