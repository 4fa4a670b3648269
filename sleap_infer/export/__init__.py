"""Export models to ONNX / TensorRT with decoding in the graph.

What is in the graph, and why
-----------------------------
An exported graph takes the same uint8 ``(B, C, H, W)`` tensor the torch
backend gets (input named ``image``) and returns decoded peaks:

* ``uint8 -> float / 255``: so callers feed raw pixels, and no runtime
  (Bonsai, C++, TensorRT) can get normalisation wrong;
* the network (optionally in fp16; decoding stays fp32);
* peak finding, with static shapes only: global peaks via ``argmax``; local
  peaks via the strict 8-neighbour test, then ``topk`` to a fixed K per
  channel (empty slots ``-inf``) re-sorted into raster order;
* integral sub-pixel refinement via fixed-size patch gathers (sleap-nn's own
  exports skip it, which costs up to half a grid cell of accuracy);
* coordinates multiplied by ``output_stride / input_scale``.

On the host, before the graph: channel coercion, the size matcher, the input
scale resize and padding to ``max_stride``, all on uint8 exactly as the torch
path does them (a float Resize in the graph would differ by a grey level from
the torch path's uint8 resize, and the stored parity inputs are post-scale).
After the graph: the peak threshold (graphs return every candidate with its
value, so one export serves any ``--peak-threshold``), division by the
size-matcher factor, ``max_instances`` and instance packaging. Static H x W
lets TensorRT specialise; a frame that preprocesses to another shape gets a
clear error, or under ``--backend onnx|trt`` its own export on first use.

Adding a model type
-------------------
1. an :class:`~sleap_infer.export.wrappers.ExportWrapper` subclass (its graph
   and output specs), registered in ``export.wrappers.WRAPPERS``;
2. an adapter layer in :mod:`sleap_infer.layers.exported` that subclasses the
   torch layer and overrides only its decode step, registered in
   ``EXPORTED_LAYERS``.

Bottom-up fits as is: the wrapper returns per-node top-K peaks (the centroid
helpers already work per channel) plus PAF line scores for all K x K
candidate pairs; grouping (Hungarian matching) stays on the host. Multi-class
bottom-up samples class maps at the peaks in-graph.

Top-down (two models)
---------------------
Planned as two sessions, which this framework already supports: ``build_layer``
calls the backend factory once per model, so a top-down layer gets two
``AutoExportBackend`` instances, each with its own export and cache key. Stage 1
is :class:`ExportedCentroidLayer` (its ``find_centroids`` returns the same
``Centroids`` as the torch layer). Crops are cut on the host (or on the GPU
with torch) from the size-matched frames, and stage 2 is a centered-instance
wrapper whose input shape is ``(crop, crop)`` after its own scale and stride
padding (override ``network_input_shape``) and whose graph returns global
peaks, like ``SingleInstanceWrapper``. A single fused graph (crops via
``grid_sample`` in-graph, as sleap-nn's bundle does) could be registered later
under a ``"topdown"`` key, but it changes crop geometry and so parity.
"""

from __future__ import annotations

from sleap_infer.export.settings import DecodeSettings, ExportSettings

__all__ = ["DecodeSettings", "ExportSettings"]
