"""sleap_infer: fast, robust batch pose prediction for sleap-nn models.

    import sleap_infer

    pipe = sleap_infer.load("models/bottomup")          # or load(centroid, instance)
    pred = pipe.predict(frames)                         # numpy, list, path, sio.Video
    pred.points, pred.to_labels(), pred[0], pred.to_dataframe()
    for frame in pipe.stream("video.mp4"): ...      # one frame at a time, flat memory
    pipe.predict_to_file("video.mp4")                   # resumable, atomic, never overwrites
    sleap_infer.predict(["a.mp4", "b.mp4"], "models/bottomup", output="preds/")
    sleap_infer.qc("preds/a.slp")                        # swaps, jumps, low confidence

The names below are imported on first use, so ``import sleap_infer`` (and the
``infer`` command's start-up) does not pay for torch until a model is loaded.
"""

from __future__ import annotations

import os as _os

from sleap_infer.core.lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    "load": "sleap_infer.api",
    "predict": "sleap_infer.api",
    "plan": "sleap_infer.api",
    "Pipeline": "sleap_infer.pipeline.pipeline",
    "PipelineSpec": "sleap_infer.pipeline.spec",
    "Prediction": "sleap_infer.pipeline.result",
    "FrameResult": "sleap_infer.pipeline.result",
    "VideoResult": "sleap_infer.pipeline.video_job",
    "Batch": "sleap_infer.batch.run",
    "BatchResult": "sleap_infer.batch.run",
    "Counts": "sleap_infer.core.products",
    "Product": "sleap_infer.core.products",
    "SleapInferError": "sleap_infer.core.errors",
    "qc": "sleap_infer.qc",
}
__all__ = [
    "Batch",
    "BatchResult",
    "Counts",
    "FrameResult",
    "Pipeline",
    "PipelineSpec",
    "Prediction",
    "Product",
    "SleapInferError",
    "VideoResult",
    "__version__",
    "load",
    "plan",
    "predict",
    "qc",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if _os.environ.get("SLEAP_INFER_STARTUP_TRACE"):  # see sleap_infer.core.startup
    from sleap_infer.core import startup as _startup

    _startup.mark("package")
