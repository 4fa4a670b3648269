"""``infer bench``: backends x batch sizes on this machine, measured the same way."""

from sleap_infer.bench.measure import Measurement, keypoint_delta, measure_layer
from sleap_infer.bench.suite import BenchConfig, run_bench

__all__ = ["BenchConfig", "Measurement", "keypoint_delta", "measure_layer", "run_bench"]
