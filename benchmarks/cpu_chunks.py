#!/usr/bin/env python
"""Images per network call on the CPU: speed and peak memory of each choice (torch backend).

``TorchBackend`` runs a CPU batch in chunks whose first activation holds at most
``cpu_chunk_floats`` floats. This measures what other chunk sizes would cost: for each
``MODEL:SIZE:BATCH:CHUNKS:CALLS`` case, one child process per chunk size (two rounds,
the second in reverse order) builds the backend, forces ``cpu_chunk_pixels`` to that many
images, makes one warm call on random frames, then times ``CALLS`` calls; it prints the
median ms per image and the child's peak RSS.

    python benchmarks/cpu_chunks.py examples/models/crowd_bottomup:512:4:1,4:10 \\
        .bench-venv/scale/models/realistic_bottomup:384:4:1,4:6
"""

from __future__ import annotations

import argparse
import subprocess
import sys

CHILD = r"""
import resource, statistics, sys, time, torch
from sleap_infer.model.loader import load_model
from sleap_infer.backends.torch_backend import TorchBackend
path, size, n, chunk, calls = sys.argv[1], *map(int, sys.argv[2:6])
backend = TorchBackend(load_model(path).network, "cpu")
print("rule", backend.chunk_size(torch.zeros((n, 1, size, size))), file=sys.stderr)
backend.cpu_chunk_pixels = chunk * size * size
x = torch.randint(0, 255, (n, 1, size, size), dtype=torch.uint8).float()
backend(x)
times = []
for _ in range(calls):
    t = time.perf_counter()
    backend(x)
    times.append(time.perf_counter() - t)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(statistics.median(times) * 1000 / n, rss)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", metavar="MODEL:SIZE:BATCH:CHUNKS:CALLS")
    args = parser.parse_args()
    print("| model | size | batch | per call | ms/image | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|")
    for case in args.cases:
        path, size, batch, chunks, calls = case.split(":")
        sizes = [int(c) for c in chunks.split(",")]
        for order in (sizes, sizes[::-1]):
            for chunk in order:
                run = subprocess.run(
                    [sys.executable, "-c", CHILD, path, size, batch, str(chunk), calls],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                ms, rss = map(float, run.stdout.split())
                rule = run.stderr.split()[-1]
                name = path.rstrip("/").split("/")[-1]
                cells = [name, size, batch, f"{chunk} (rule: {rule})", f"{ms:.1f}", f"{rss:.0f}"]
                print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
