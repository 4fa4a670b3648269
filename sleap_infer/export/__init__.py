"""Export models to ONNX / TensorRT with decoding in the graph (keypoint models) or on
the host (segmentation and tiled models: see "Raw maps" below).

What is in the graph, and why
-----------------------------
A keypoint model's exported graph takes the same uint8 ``(B, C, H, W)`` tensor
the torch backend gets (input named ``image``) and returns decoded peaks:

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
   and output specs);
2. an adapter layer in :mod:`sleap_infer.layers.exported` that subclasses the
   torch layer and overrides only its decode step;
3. both named in the type's entry in :mod:`sleap_infer.model.registry`, with
   what runs in the graph and on the host.

Raw maps (segmentation, tiled models)
-------------------------------------
Some decoding is no fixed-shape graph: segmentation groups pixels into masks
(connected components, nearest centers, run-length encoding), and a tiled
model's tiles are stitched before anything is decoded. These models export
the network alone (:class:`~sleap_infer.export.wrappers.RawMapsWrapper`):
uint8 in, ``/ 255`` and the heads' sigmoids inside (written out, as for class
maps), one output per spatial head under the head's name, exactly what the
torch backend returns. The metadata says ``"graph_outputs": "raw_maps"`` (a
decoding graph: ``"decoded"``), backends report ``does_baked_postproc =
False`` for it, and the model type's ordinary layer decodes on the host. A
tiled model is traced at its tile size with a dynamic batch (tiles per
call). sleap-nn cannot export segmentation models at all, and exports tiled
ones whole-frame (no tiling).

Using an export
---------------
This package writes exports. Finding one that fits a run, or making one on
first use, is :mod:`sleap_infer.runtimes` (one floor up); reading one is the
artifact contract in :mod:`sleap_infer.core.artifact` (backends read it).

Bottom-up
---------
Every node gets ``K = max_peaks`` peak slots (the strongest local maxima,
refined, raster order), plus the value of the first maximum that did not fit:
the host compares it with its own threshold and warns (``PeakOverflowWarning``)
when a frame had more peaks than slots, rather than silently differ from the
torch path. ``bottomup`` also scores all ``K x K`` slot pairs of every edge
against the PAFs in the graph (the torch path's sampling, rounding and
distance penalty); ``multi_class_bottomup`` samples the class maps at every
slot. Matching and assembly (Hungarian, sequential, tiny) stay on the host,
in the torch layer's own code: the adapter layers only turn slots back into
the flat peak list it expects.

Top-down (two models)
---------------------
Two graphs, two sessions: ``build_layer`` calls the backend maker once per
model, so a top-down layer gets two ``AutoExportBackend`` instances, each with
its own export and cache key. Stage 1 is :class:`ExportedCentroidLayer` (its
``find_centroids`` returns the same ``Centroids`` as the torch layer). Crops
are cut on the host from the size-matched frames exactly as on the torch path,
and stage 2 is a centered-instance graph traced at the crop size (after its own
scale and stride padding) returning global peaks and, for multi-class models,
the class probabilities; the per-frame Hungarian class assignment stays on the
host. ``infer export CENTROID INSTANCE`` writes both stages into one folder
(:mod:`sleap_infer.export.pipeline`). A single fused graph (crops via
``grid_sample`` in-graph, as sleap-nn's bundle does) would change crop
geometry and so parity, which is why it is not done.
"""

from __future__ import annotations

from sleap_infer.export.settings import ExportSettings

__all__ = ["ExportSettings"]
