"""Does the SLEAP GUI package (``sleap`` 1.6) open our ``.slp`` files? (issue 30, item 5)

Measured, not tested: ``sleap`` brings PySide6, OpenCV, scikit-learn and more (about
1 GB), too much for the test suite's environment, so it lives in a venv of its own:

    python3 -m venv /tmp/sleap-venv && /tmp/sleap-venv/bin/pip install "sleap==1.6.*"
    python benchmarks/sleap_gui_opens.py --sleap-python /tmp/sleap-venv/bin/python

For each kind of output (pose, tracked pose, masks, boxes) this writes one with
``infer predict`` on the shared fixtures, then loads it in the other venv with
``load_labels_video_search``, the loader the GUI's File > Open runs (``sleap`` 1.6
has no ``sleap.load_file``; it reads ``.slp`` through sleap-io), and compares what SLEAP sees
with what sleap-io sees in ours. sleap-nn 0.3.5's own reference outputs of the same
models go through the same loader as a control: a file kind that SLEAP cannot open
from sleap-nn either is SLEAP's limit, not ours. Exit 1 if any of ours fails to open
where sleap-nn's opens.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(os.environ.get("SLEAP_INFER_FIXTURES", ROOT.parent / "shared" / "fixtures"))

# name: (models, video, extra flags, sleap-nn's reference output of the same run or None)
CASES: dict[str, tuple[list[str], str, list[str], str | None]] = {
    "pose": (["minimal_instance_bottomup"], "centered_pair_small.mp4", ["--frames", "0-9"], None),
    "tracked": (
        ["minimal_instance_bottomup"],
        "centered_pair_small.mp4",
        ["--frames", "0-9", "--tracking"],
        None,
    ),
    "masks": (
        ["synthetic_bottomup_segmentation"],
        "synthetic_multi.mp4",
        [],
        "bottomup_segmentation.slp",
    ),
    "masks_tracked": (
        ["synthetic_bottomup_segmentation"],
        "synthetic_multi.mp4",
        ["--tracking"],
        "bottomup_segmentation_tracked.slp",
    ),
    "boxes": (["synthetic_bbox_centernet"], "synthetic_multi.mp4", [], "bbox_centernet.slp"),
}

# Runs in the sleap venv: what the GUI's loader makes of one file, as one JSON line.
LOADER = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
import sleap
out = {"sleap": sleap.__version__}
try:
    from sleap.sleap_io_adaptors.lf_labels_utils import load_labels_video_search

    # What the GUI's File > Open runs (LoadProjectFile.ask), with the file's own folder
    # as the video search path, minus the Qt dialog for videos it cannot find.
    labels = load_labels_video_search(sys.argv[1], video_search=[sys.argv[1]])
    frames = list(labels.labeled_frames)
    out.update(
        ok=True,
        masks=sum(len(getattr(lf, "masks", ())) for lf in frames),
        boxes=sum(len(getattr(lf, "bboxes", ())) for lf in frames),
        frames=len(frames),
        instances=sum(len(lf.instances) for lf in frames),
        tracks=len(labels.tracks),
        nodes=len(labels.skeletons[0].nodes) if labels.skeletons else 0,
        videos=len(labels.videos),
    )
except Exception as exc:  # what the GUI would show in its error box
    out.update(ok=False, error=f"{type(exc).__name__}: {exc}"[:300])
print(json.dumps(out))
"""


# Runs in the sleap venv with Qt offscreen: the GUI itself opens one file (a fresh
# window per file: SLEAP 1.6's status bar raises UnboundLocalError when a second
# project replaces the first in one window). A file, not ``-c``: importing
# sleap.gui.app re-executes ``sys.argv`` once to set its environment.
GUI_OPENER = r"""
import json, os, sys
path = os.environ["SLEAP_GUI_OPENS"]
from qtpy import QtWidgets
app = QtWidgets.QApplication([])
from sleap.gui.app import MainWindow
window = MainWindow()
window.commands.loadProjectFile(path)
app.processEvents()
frames = window.labels.labeled_frames
print(json.dumps({
    "ok": bool(window.state["project_loaded"]) and window.state["filename"] == path,
    "frames": len(frames),
    "instances": sum(len(lf.instances) for lf in frames),
    "tracks": len(window.labels.tracks),
}))
"""


def open_in_gui(sleap_python: Path, path: Path, work: Path) -> dict[str, object]:
    script = work / "gui_opener.py"
    script.write_text(GUI_OPENER)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "SLEAP_GUI_OPENS": str(path)}
    done = subprocess.run(
        [str(sleap_python), str(script)], capture_output=True, text=True, env=env, timeout=600
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"ok": False, "error": f"exit {done.returncode}"}
    seen = json.loads(lines[-1])
    if "Traceback" in done.stderr:
        seen["ok"], seen["error"] = False, done.stderr.strip().splitlines()[-1]
    return seen


def predict(name: str, out_dir: Path) -> Path:
    models, video, flags, _ = CASES[name]
    out = out_dir / f"{name}.slp"
    args = [sys.executable, "-m", "sleap_infer", "predict", str(FIXTURES / "videos" / video)]
    for model in models:
        args += ["-m", str(FIXTURES / "models" / model)]
    args += [*flags, "-o", str(out), "--overwrite", "-q"]
    subprocess.run(args, check=True, cwd=ROOT)
    return out


def ours(path: Path) -> dict[str, int]:
    """What sleap-io (our own reader's library) sees in the same file."""
    import sleap_io

    labels = sleap_io.load_slp(str(path))
    frames = labels.labeled_frames
    return {
        "frames": len(frames),
        "instances": sum(len(lf.instances) for lf in frames),
        "tracks": len(labels.tracks),
        "masks": sum(len(getattr(lf, "masks", ())) for lf in frames),
        "boxes": sum(len(getattr(lf, "bboxes", ())) for lf in frames),
    }


def open_in_sleap(sleap_python: Path, path: Path) -> dict[str, object]:
    done = subprocess.run(
        [str(sleap_python), "-c", LOADER, str(path)], capture_output=True, text=True, timeout=600
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"ok": False, "error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sleap-python", type=Path, required=True, help="python with sleap")
    parser.add_argument("--out", type=Path, default=ROOT / ".bench-venv" / "sleap_gui_opens")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--no-gui", action="store_true", help="skip the Qt window check")
    args = parser.parse_args()
    if not (FIXTURES / "models").is_dir():
        print(f"shared fixtures not found at {FIXTURES}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, object]] = {}
    failed = False
    gui_line = "" if args.no_gui else " | the GUI (offscreen window) opens ours"
    print(
        f"{'case':<14} {'ours (sleap-io)':<36} {'SLEAP 1.6 opens ours':<44} sleap-nn's file"
        + gui_line
    )
    for name, (_, _, _, reference) in CASES.items():
        path = predict(name, args.out)
        seen = open_in_sleap(args.sleap_python, path)
        control = None
        if reference is not None:
            control = open_in_sleap(args.sleap_python, FIXTURES / "reference" / reference)
        gui = None if args.no_gui else open_in_gui(args.sleap_python, path, args.out)
        results[name] = {
            "file": str(path),
            "ours": ours(path),
            "sleap": seen,
            "sleap_nn": control,
            "gui": gui,
        }
        if not seen.get("ok") and (control is None or control.get("ok")):
            failed = True
        failed = failed or (gui is not None and not gui.get("ok"))
        print(
            f"{name:<14} {_counts(results[name]['ours']):<36} {_status(seen):<44} "
            f"{'-' if control is None else _status(control)}"
            + ("" if gui is None else f" | {_status(gui)}")
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 1 if failed else 0


def _counts(c: object) -> str:
    assert isinstance(c, dict)
    extra = "".join(f", {c[k]} {k}" for k in ("masks", "boxes") if c.get(k))
    return f"{c['frames']} fr, {c['instances']} inst, {c['tracks']} tr{extra}"


def _status(seen: dict[str, object]) -> str:
    if seen.get("ok"):
        return "opens: " + _counts(seen)
    return f"FAILS: {seen.get('error')}"


if __name__ == "__main__":
    sys.exit(main())
