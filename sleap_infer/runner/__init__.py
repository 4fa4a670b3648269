"""Streaming execution: decode in the background, batch, warm up, predict."""

from sleap_infer.runner.runner import Runner, RunStats

__all__ = ["RunStats", "Runner"]
