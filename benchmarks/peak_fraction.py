"""The network's share of this machine's peak on a realistic network, per backend and
setting, before/after in one run (issue 32 items 2-3).

Builds a random-init sleap-nn model directory (UNet filters 32, max stride 32, as
labs train; ``--model-type`` single_instance or bottomup), counts the network's
FLOPs per frame at the input size with torch's FlopCounterMode, measures the fp32
peak (and int8 with ``--int8``) with the calibration GEMM ``infer bench`` uses,
then times the ``network`` stage of the layer (what ``infer bench`` profiles) for
each variant. Variants run in interleaved rounds (best round kept) so that load
from other processes on a shared machine hits them alike; each is reported as a
share of the peak and as a ratio against the current default of its backend.

    python benchmarks/peak_fraction.py --size 1024 --rounds 3
    python benchmarks/peak_fraction.py --size 1024 --model-type bottomup --int8

On onnx and openvino the network stage also holds the in-graph decoding (global
peaks for single instance; peaks and PAF line scores for bottom-up): their FLOPs are
not counted, so those rows understate the share a little.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the package from this checkout, installed or not
    sys.path.insert(0, str(ROOT))
if str(ROOT / "tests") not in sys.path:
    sys.path.append(str(ROOT / "tests"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from sleap_infer.backends import openvino_backend  # noqa: E402
from sleap_infer.bench.peak import count_flops, gemm_rate  # noqa: E402
from sleap_infer.core.options import PredictOptions  # noqa: E402
from sleap_infer.core.timing import StageTimer  # noqa: E402
from sleap_infer.layers import build_layer  # noqa: E402
from sleap_infer.model.loader import load_model  # noqa: E402
from sleap_infer.runtimes import backend_maker  # noqa: E402

OPENVINO_CONFIG: dict[str, Any] = {}
"""Extra OpenVINO compile properties for the variant being built (patched in below)."""


@dataclass
class Variant:
    name: str
    runtime: str
    baseline: str  # the variant this one is a ratio against (the current default)
    options: dict[str, Any] = field(default_factory=dict)
    openvino: dict[str, Any] = field(default_factory=dict)
    precision: str = "fp32"


VARIANTS = [
    Variant("torch (default: channels_last)", "torch", "torch (default: channels_last)"),
    Variant("torch NCHW", "torch", "torch (default: channels_last)", {"channels_last": False}),
    Variant("onnx (default)", "onnx", "onnx (default)"),
    Variant(
        "onnx graph opt extended", "onnx", "onnx (default)", {"graph_optimization": "extended"}
    ),
    Variant("openvino (default: LATENCY)", "openvino", "openvino (default: LATENCY)"),
    Variant(
        "openvino THROUGHPUT",
        "openvino",
        "openvino (default: LATENCY)",
        openvino={"PERFORMANCE_HINT": "THROUGHPUT"},
    ),
    Variant(
        "openvino LATENCY, 1 stream, pinned",
        "openvino",
        "openvino (default: LATENCY)",
        openvino={"NUM_STREAMS": 1, "ENABLE_CPU_PINNING": True},
    ),
    Variant(
        "openvino LATENCY, not pinned",
        "openvino",
        "openvino (default: LATENCY)",
        openvino={"ENABLE_CPU_PINNING": False},
    ),
]
INT8_VARIANTS = [
    Variant("onnx int8", "onnx", "onnx (default)", {"int8": True}, precision="int8"),
    Variant(
        "openvino int8", "openvino", "openvino (default: LATENCY)", {"int8": True}, precision="int8"
    ),
]
COMPILE_VARIANT = Variant(
    "torch.compile", "torch", "torch (default: channels_last)", {"compile": True}
)


def _patch_openvino() -> None:
    """Let a variant add compile properties to the backend's own (benchmark only)."""
    real_init = openvino_backend.OpenVINOBackend.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        self.config = {**self.config, **OPENVINO_CONFIG}

    openvino_backend.OpenVINOBackend.__init__ = init  # type: ignore[method-assign]


def build_model(folder: Path, model_type: str) -> Path:
    from model_factory import config_dict, write_model_dir

    raw = config_dict(model_type, unet={"filters": 32, "max_stride": 32, "filters_rate": 1.5})
    return write_model_dir(folder / f"{model_type}_unet32", raw, seed=0)


def network_seconds(layer: Any, frames: np.ndarray) -> float:
    """Seconds in the ``network`` stage of one ``layer.predict(frames)``."""
    timer = StageTimer()
    with timer.activate():
        layer.predict(frames)
    return timer.totals["network"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--model-type", default="single_instance")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--int8", action="store_true", help="also onnx/openvino int8 rows")
    parser.add_argument("--compile", action="store_true", help="also torch.compile (slow)")
    parser.add_argument("--only", help="comma-separated runtimes to run (torch,onnx,openvino)")
    parser.add_argument("--cache", type=Path, help="export cache folder (default: a temp one)")
    args = parser.parse_args()
    _patch_openvino()
    variants = list(VARIANTS) + (INT8_VARIANTS if args.int8 else [])
    variants += [COMPILE_VARIANT] if args.compile else []
    if args.only:
        keep = set(args.only.split(","))
        variants = [v for v in variants if v.runtime in keep]

    with tempfile.TemporaryDirectory(prefix="peak_fraction_") as tmp:
        import os

        os.environ.setdefault("SLEAP_INFER_CACHE", str(args.cache or Path(tmp) / "cache"))
        model_dir = build_model(Path(tmp), args.model_type)
        model = load_model(model_dir)
        rng = np.random.default_rng(0)
        frames = rng.integers(0, 256, (1, args.size, args.size, 1), dtype=np.uint8)
        x = torch.from_numpy(frames).permute(0, 3, 1, 2).contiguous()
        with torch.inference_mode():
            gflop = count_flops(lambda: model.network.eval()(x)) / 1e9

        layers: dict[str, Any] = {}
        for v in variants:
            OPENVINO_CONFIG.clear()
            OPENVINO_CONFIG.update(v.openvino)
            maker = backend_maker(v.runtime, "cpu", **v.options)
            layer = build_layer([load_model(model_dir)], maker, PredictOptions())
            if v.options.get("int8"):  # quantised on the first 32 inputs it sees
                for _ in range(33):
                    layer.predict(frames)
            layer.predict(frames)  # export, compile, first-call kernel selection
            layers[v.name] = layer
        OPENVINO_CONFIG.clear()
        cpu = torch.device("cpu")
        shares: dict[str, list[float]] = {v.name: [] for v in variants}
        seconds: dict[str, list[float]] = {v.name: [] for v in variants}
        peaks: dict[str, list[float]] = {"fp32": [], "int8": []}
        for _ in range(args.rounds):  # interleaved: other load hits every variant alike
            for v in variants:
                # The peak right before the network it divides: on a shared machine the
                # load changes by the second, and a share against a peak taken in a quiet
                # moment would read low (or, the other way round, over 100%).
                peak = gemm_rate(v.precision, cpu, repeats=3)
                peaks[v.precision].append(peak)
                t = network_seconds(layers[v.name], frames)
                seconds[v.name].append(t)
                shares[v.name].append(gflop / t / peak)

    threads = torch.get_num_threads()
    top = {k: max(v) for k, v in peaks.items() if v}
    # An int8 product slower than fp32's is torch's reference loop, not a peak (as
    # sleap_infer.bench.peak decides): its shares would read thousands of percent.
    no_int8_peak = "int8" in top and top["int8"] < top["fp32"]
    print(
        f"{args.model_type} UNet filters 32, max stride 32, {args.size}x{args.size}: "
        f"{gflop:.1f} GFLOP/frame; best peak fp32 {top['fp32']:.0f} GFLOP/s"
        + (f", int8 {top['int8']:.0f} GOP/s" if "int8" in top else "")
        + f" ({threads} threads, {args.rounds} interleaved rounds)"
    )
    print()
    header = (
        "variant",
        "network ms/frame (best)",
        "GFLOP/s (best)",
        "% of the run's best peak",
        "% of the peak just before (median)",
        "vs default (median)",
    )
    print("| " + " | ".join(header) + " |")
    print("|---" * len(header) + "|")
    for v in variants:
        mine = seconds[v.name]
        ratios = [b / t for b, t in zip(seconds[v.baseline], mine)] if v.baseline in seconds else []
        ratio = float(np.median(ratios)) if ratios else float("nan")
        fastest = min(mine)
        paired = float(np.median(shares[v.name]))
        best_share, paired_share = f"{gflop / fastest / top[v.precision]:.0%}", f"{paired:.0%}"
        if v.precision == "int8" and no_int8_peak:
            best_share = paired_share = "n/a (no fast int8 product)"
        print(
            f"| {v.name} | {fastest * 1e3:.0f} | {gflop / fastest:.1f} | "
            f"{best_share} | {paired_share} | {ratio:.2f}x |"
        )


if __name__ == "__main__":
    main()
