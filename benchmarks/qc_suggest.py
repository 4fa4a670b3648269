"""Do the frames ``infer qc --suggest`` picks hold the model's real mistakes? (issue 47, item 5)

Measured, not tested (it predicts a video: seconds on a CPU, too slow for the suite):

    python benchmarks/qc_suggest.py [--frames 300] [--n 20] [--seeds 0 1 2]

For each seed, the synthetic demo animal (``examples/synthetic/scene.py``) is rendered
with 10% of its frames degraded (a third each: heavy noise, blur, low contrast), the
bundled demo model (``examples/models/synthetic_single_instance``) predicts it through
``sleap_infer.load(...).predict``, and :func:`sleap_infer.qc.suggest.suggest_frames`
ranks ``--n`` frames from the predictions alone (no ground truth, no events: the event
finders are measured in ``benchmarks/qc_accuracy.py``; here the ranking has only the
scores to go on). The figure: the suggested frames' true keypoint error (against the
scene's exact keypoints) over the video's mean error; the goal is >= 3x. A node the
model did not find counts as ``MISSING_PX`` of error (half the frame: it is lost), and
the ratio over found nodes only is printed too. Also printed: how many picks are
degraded frames (a random pick would hit 10%).

With ``--sleap-python PY`` (a venv with SLEAP 1.6: ``python3 -m venv /tmp/q3sleap &&
/tmp/q3sleap/bin/pip install "sleap==1.6.*"``), the last seed's picks are also written
with :func:`write_suggestions` into a copy of the fixture project
``minimal_instance.pkg.slp`` (which lacks the video: it gets added), and SLEAP's GUI opens
the copy offscreen: the project must load and its Labeling Suggestions table must list
the picks. Exit 1 if not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import av
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "synthetic"))

import sleap_infer  # noqa: E402
from sleap_infer.qc.records import VideoData  # noqa: E402
from sleap_infer.qc.suggest import suggest_frames, write_suggestions  # noqa: E402

import scene  # noqa: E402

MODEL = ROOT / "examples" / "models" / "synthetic_single_instance"
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))

# Runs in the SLEAP venv with Qt offscreen: the GUI opens the project copy and we read
# back what its suggestions panel lists. A file, not ``-c``: importing sleap.gui.app
# re-executes ``sys.argv`` once to set its environment.
GUI_OPENER = r"""
import json, os
from qtpy import QtWidgets
app = QtWidgets.QApplication([])
import sleap
from sleap.gui.app import MainWindow
window = MainWindow()
window.commands.loadProjectFile(os.environ["QC_SUGGEST_OPENS"])
app.processEvents()
labels = window.labels
print(json.dumps({
    "sleap": sleap.__version__,
    "loaded": bool(window.state["project_loaded"]),
    "suggestions": [[labels.videos.index(s.video), int(s.frame_idx)] for s in labels.suggestions],
    "table_rows": window.suggestions_dock.table.model().rowCount(),
}))
os._exit(0)
"""
MISSING_PX = scene.SIZE / 2
DEGRADED_SHARE = 0.10


def _blur(img: np.ndarray, sigma: float) -> np.ndarray:
    """Separable Gaussian blur (numpy only, edges clamped)."""
    radius = int(3 * sigma)
    k = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2)
    k /= k.sum()
    padded = np.pad(img, radius, mode="edge")
    rows = np.apply_along_axis(lambda r: np.convolve(r, k, mode="valid"), 1, padded)
    return np.apply_along_axis(lambda c: np.convolve(c, k, mode="valid"), 0, rows)


def degrade(img: np.ndarray, kind: int, rng: np.random.Generator) -> np.ndarray:
    """One of three degradations a real camera produces: sensor noise, motion/focus blur,
    a dim or washed-out frame."""
    x = img.astype(np.float64)
    if kind == 0:
        x = x + rng.normal(0, 45, x.shape)
    elif kind == 1:
        x = _blur(x, 3.5)
    else:
        x = x.mean() + 0.2 * (x - x.mean()) + rng.normal(0, 4, x.shape)
    return np.clip(x, 0, 255).astype(np.uint8)


def render(path: Path, n_frames: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Write the demo video with ``DEGRADED_SHARE`` of its frames degraded; returns the
    ground truth ``(n, 2, 2)`` and the degraded frames' indices."""
    rng = np.random.default_rng(seed)
    background = scene._background(rng)
    # Start the path at a seed-dependent phase so seeds differ in more than the noise.
    shift = int(rng.integers(0, 600))
    centers, angles = scene.trajectory(n_frames + shift)
    centers, angles = centers[shift:], angles[shift:]
    truth = np.stack([scene.keypoints(c, a) for c, a in zip(centers, angles)])
    degraded = np.sort(rng.choice(n_frames, round(DEGRADED_SHARE * n_frames), replace=False))
    kinds = {int(f): i % 3 for i, f in enumerate(rng.permutation(degraded))}
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.width = stream.height = scene.SIZE
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": "12"}
        for i, (c, a) in enumerate(zip(centers, angles)):
            gray = scene.render(c, a, background)
            if i in kinds:
                gray = degrade(gray, kinds[i], rng)
            frame = av.VideoFrame.from_ndarray(np.repeat(gray[..., None], 3, axis=2), "rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode())
    return truth, degraded


def video_data(pred: Any, video: str, n_frames: int) -> VideoData:
    """The predictions as qc's dense arrays (one column: a single-instance model)."""
    points = np.asarray(pred.points, dtype=np.float64)
    scores = np.asarray(pred.point_scores, dtype=np.float64)
    inst = np.asarray(pred.instance_scores, dtype=np.float64)
    present = np.asarray(np.isfinite(points).all(axis=-1).any(axis=-1))
    return VideoData(
        video=video,
        video_index=0,
        frames=np.arange(len(points), dtype=np.int64),
        n_frames=n_frames,
        tracked=False,
        track_names=[""] * points.shape[1],
        node_names=list(scene.NODE_NAMES),
        edges=[(0, 1)],
        points=points,
        point_scores=np.where(np.isfinite(points).all(axis=-1), scores, 0.0),
        instance_scores=np.where(present, inst, 0.0),
        present=present,
    )


def sleap_shows(sleap_python: Path, video: Path, picks: list[Any]) -> bool:
    """Write ``picks`` into a copy of the fixture project and open it in SLEAP's GUI."""
    project = FIXTURES / "videos" / "minimal_instance.pkg.slp"
    if not project.is_file():
        print(f"SLEAP check skipped: {project} not found")
        return True
    copy = video.parent / "labels.suggested.pkg.slp"
    counts = write_suggestions(project, copy, {str(video): picks})
    opener = video.parent / "gui_opener.py"
    opener.write_text(GUI_OPENER)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "QC_SUGGEST_OPENS": str(copy)}
    done = subprocess.run(
        [str(sleap_python), str(opener)], capture_output=True, text=True, env=env, timeout=600
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    seen = json.loads(lines[-1]) if lines else {"error": f"exit {done.returncode}"}
    want = sorted([1, p.frame] for p in picks)
    ok = bool(seen.get("loaded")) and sorted(seen.get("suggestions", [])) == want
    ok = ok and seen.get("table_rows") == len(want)
    print(
        f"SLEAP {seen.get('sleap', '?')} GUI on a copy of {project.name} with {counts}: "
        f"loaded {seen.get('loaded')}, suggestions panel rows {seen.get('table_rows')} "
        f"(want {len(want)}) -> {'shows them' if ok else 'DOES NOT show them: ' + str(seen)}"
    )
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--sleap-python", type=Path, help="a python with SLEAP 1.6 installed")
    args = parser.parse_args()

    pipe = sleap_infer.load(MODEL, device="cpu")
    ratios, found_ratios = [], []
    print(
        f"$ python benchmarks/qc_suggest.py --frames {args.frames} --n {args.n} "
        f"--seeds {' '.join(map(str, args.seeds))}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            path = Path(tmp) / f"degraded_{seed}.mp4"
            truth, degraded = render(path, args.frames, seed)
            start = time.perf_counter()
            pred = pipe.predict(path, progress=False)
            took = time.perf_counter() - start
            data = video_data(pred, path.name, args.frames)
            dist = np.linalg.norm(data.points[:, 0] - truth, axis=-1)  # (F, 2 nodes)
            error = np.where(np.isfinite(dist), dist, MISSING_PX).mean(axis=1)
            with warnings.catch_warnings():  # a frame with no node found: NaN, on purpose
                warnings.simplefilter("ignore", RuntimeWarning)
                found_error = np.nanmean(dist, axis=1)
            start = time.perf_counter()
            picks = suggest_frames(data, [], args.n)
            rank_ms = 1000 * (time.perf_counter() - start)
            chosen = np.array([p.frame for p in picks])
            ratio = error[chosen].mean() / error.mean()
            found_ratio = np.nanmean(found_error[chosen]) / np.nanmean(found_error)
            ratios.append(ratio)
            found_ratios.append(found_ratio)
            hits = np.isin(chosen, degraded).sum()
            reasons = sorted({p.reason for p in picks})
            print(
                f"seed {seed}: video mean error {error.mean():.2f} px, suggested {len(picks)} "
                f"frames' {error[chosen].mean():.2f} px -> {ratio:.1f}x "
                f"(found nodes only: {found_ratio:.1f}x); {hits}/{len(picks)} picks degraded "
                f"(random: {DEGRADED_SHARE:.0%}); nodes lost in "
                f"{int((~np.isfinite(dist)).any(axis=1).sum())} frames; reasons {reasons}; "
                f"predict {took:.1f} s, rank {rank_ms:.1f} ms"
            )
        if args.sleap_python is not None and not sleap_shows(args.sleap_python, path, picks):
            sys.exit(1)
    print(
        f"\nsuggested frames' true keypoint error / video mean: "
        f"min {min(ratios):.1f}x, mean {np.mean(ratios):.1f}x over {len(ratios)} seeds "
        f"(found nodes only: min {min(found_ratios):.1f}x); goal >= 3x: "
        + ("met" if min(ratios) >= 3 else "NOT met")
    )


if __name__ == "__main__":
    main()
