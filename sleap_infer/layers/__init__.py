"""Model-type layers: preprocess -> backend -> postprocess, one class per model type.

Which class runs a model type is said by its entry in
:mod:`sleap_infer.model.registry`; :func:`build_layer` picks it for the
runtime and builds the backend through a :class:`BackendMaker`.
"""

from __future__ import annotations

from sleap_infer.layers.base import InferenceLayer
from sleap_infer.layers.bottomup import BottomUpLayer
from sleap_infer.layers.bottomup_multiclass import BottomUpMultiClassLayer
from sleap_infer.layers.build import BackendMaker, build_layer, exported_layer_class, layer_class
from sleap_infer.layers.centered_instance import (
    CenteredInstanceLayer,
    MultiClassCenteredInstanceLayer,
)
from sleap_infer.layers.centroid import CentroidLayer
from sleap_infer.layers.preprocessing import Preprocessor, PreprocInfo
from sleap_infer.layers.segmentation import (
    BottomUpSegmentationLayer,
    CenteredInstanceMaskLayer,
    SemanticSegmentationLayer,
)
from sleap_infer.layers.single_instance import SingleInstanceLayer
from sleap_infer.layers.tiled import TiledLayer
from sleap_infer.layers.topdown import TopDownLayer, TopDownMultiClassLayer
from sleap_infer.layers.topdown_segmentation import TopDownSegmentationLayer
from sleap_infer.vocab.options import PredictOptions

__all__ = [
    "BackendMaker",
    "BottomUpLayer",
    "BottomUpMultiClassLayer",
    "BottomUpSegmentationLayer",
    "CenteredInstanceLayer",
    "CenteredInstanceMaskLayer",
    "CentroidLayer",
    "InferenceLayer",
    "MultiClassCenteredInstanceLayer",
    "PredictOptions",
    "PreprocInfo",
    "Preprocessor",
    "SemanticSegmentationLayer",
    "SingleInstanceLayer",
    "TiledLayer",
    "TopDownLayer",
    "TopDownMultiClassLayer",
    "TopDownSegmentationLayer",
    "build_layer",
    "exported_layer_class",
    "layer_class",
]
