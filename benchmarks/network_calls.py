#!/usr/bin/env python
"""Where a torch prediction's network time goes: each network input shape's calls and
milliseconds per call, on a real video (and, with ``--profile``, the CPU operators of
one call per shape).

``scale.py`` reports the network as one stage; a top-down run has two networks with
very different inputs (frames for the centroid model, crops for the instance model),
and only their per-call cost says which one a change should aim at.

    python benchmarks/network_calls.py VIDEO MODEL [MODEL ...] [--batch-size 4] [--profile]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sleap_infer
from sleap_infer.backends.torch_backend import TorchBackend


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("video")
    parser.add_argument("models", nargs="+")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--profile", action="store_true", help="top operators per shape")
    args = parser.parse_args()
    calls: dict[tuple[int, ...], list[float]] = {}
    first: dict[tuple[int, ...], tuple[TorchBackend, torch.Tensor]] = {}
    timed = TorchBackend.__call__

    def spy(self: TorchBackend, x: torch.Tensor) -> dict[str, torch.Tensor]:
        t = time.perf_counter()
        out = timed(self, x)
        shape = tuple(int(d) for d in x.shape)
        calls.setdefault(shape, []).append(time.perf_counter() - t)
        first.setdefault(shape, (self, x.clone()))
        return out

    TorchBackend.__call__ = spy  # type: ignore[method-assign]
    pipe = sleap_infer.load(args.models, device="cpu", batch_size=args.batch_size)
    t0 = time.perf_counter()
    pipe.predict(args.video)
    wall = time.perf_counter() - t0
    TorchBackend.__call__ = timed  # type: ignore[method-assign]
    print(f"predict: {wall:.2f} s wall")
    print("| input shape | calls | ms per call (median) | s in all |")
    print("|---|---:|---:|---:|")
    for shape, times in sorted(calls.items(), key=lambda kv: -sum(kv[1])):
        median = sorted(times)[len(times) // 2] * 1000
        print(f"| {shape} | {len(times)} | {median:.1f} | {sum(times):.2f} |")
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        for shape, (backend, x) in first.items():
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                backend(x)
            table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=8)
            print(f"\n{shape}\n{table}")


if __name__ == "__main__":
    main()
