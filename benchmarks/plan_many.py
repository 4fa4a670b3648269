"""How long ``infer predict`` takes to plan N inputs before any model loads (issue 32).

Writes N copies of a tiny video into a temporary folder and times
``sleap_infer.plan(folder, model)`` (inputs expanded, every output path planned,
finished outputs judged): first with no outputs there (a fresh run), then with a
finished output beside every video (a rerun that skips them all: each output's
provenance is read and compared). ``--profile`` prints cProfile's top functions.

    python benchmarks/plan_many.py --n 1000 [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the package from this checkout, installed or not
    sys.path.insert(0, str(ROOT))

MODEL = ROOT / "examples" / "models" / "synthetic_single_instance"


def tiny_video(path: Path) -> Path:
    import av
    import numpy as np

    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=30)
        stream.height, stream.width, stream.pix_fmt = 32, 32, "yuv420p"
        for i in range(2):
            frame = np.full((32, 32, 3), 40 * i, np.uint8)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode())
    return path


def timed_plan(folder: Path, profile: bool) -> tuple[float, object]:
    import sleap_infer

    profiler = cProfile.Profile() if profile else None
    t0 = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    batch = sleap_infer.plan(folder, MODEL, device="cpu")
    if profiler is not None:
        profiler.disable()
    seconds = time.perf_counter() - t0
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return seconds, batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    import sleap_infer

    with tempfile.TemporaryDirectory(prefix="plan_many_") as tmp:
        folder = Path(tmp) / "videos"
        folder.mkdir()
        first = tiny_video(folder / "v0000.mp4")
        for i in range(1, args.n):
            shutil.copyfile(first, folder / f"v{i:04d}.mp4")
        sleap_infer.plan(folder / "v0000.mp4", MODEL, device="cpu")  # imports, warm caches
        fresh, batch = timed_plan(folder, args.profile)
        print(f"fresh: {args.n} inputs planned in {fresh:.3f} s ({len(batch.todo)} to predict)")
        # A finished output beside every video: predict one, copy its output.
        done = sleap_infer.plan(first, MODEL, device="cpu")
        done.run()
        output = next(folder.glob("v0000*.slp"))
        for i in range(1, args.n):
            shutil.copyfile(output, folder / output.name.replace("v0000", f"v{i:04d}"))
        rerun, batch = timed_plan(folder, args.profile)
        print(f"rerun: {args.n} inputs planned in {rerun:.3f} s ({len(batch.skipped)} skipped)")
        # The same rerun judged as before issue 32 (each output opened twice, h5py.File).
        from sleap_infer.batch import tasks
        from sleap_infer.writers import outputs

        def two_opens(path: Path, fmt: object) -> tuple[object, object]:
            found = outputs.existing_output(path, fmt)
            return found, outputs.stored_provenance(path) if found == outputs.COMPLETE else None

        current = tasks.judge_output
        tasks.judge_output = two_opens
        try:
            before, _ = timed_plan(folder, False)
        finally:
            tasks.judge_output = current
        after, _ = timed_plan(folder, False)
        print(
            f"rerun judged the old way (two h5py.File opens per output): {before:.3f} s; "
            f"now {after:.3f} s ({before / after:.2f}x, same run)"
        )


if __name__ == "__main__":
    main()
