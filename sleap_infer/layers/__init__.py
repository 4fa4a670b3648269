"""Model-type layers: preprocess -> backend -> postprocess, one class per model type.

Which class runs a model type is said by its entry in
:mod:`sleap_infer.model.registry`; :func:`build_layer` picks it for the
runtime and builds the backend through a :class:`BackendMaker`.

The names below are imported on first use: a run imports only the layers of
its own model types (the segmentation layers alone would add scipy.ndimage to
every start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleap_infer.core.lazy import lazy_exports

if TYPE_CHECKING:
    from sleap_infer.core.options import PredictOptions
    from sleap_infer.layers.base import InferenceLayer
    from sleap_infer.layers.bottomup import BottomUpLayer
    from sleap_infer.layers.bottomup_multiclass import BottomUpMultiClassLayer
    from sleap_infer.layers.build import (
        BackendMaker,
        build_layer,
        exported_layer_class,
        layer_class,
    )
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

# name -> the module that defines it
_WHERE: dict[str, str] = {
    "BackendMaker": "sleap_infer.layers.build",
    "BottomUpLayer": "sleap_infer.layers.bottomup",
    "BottomUpMultiClassLayer": "sleap_infer.layers.bottomup_multiclass",
    "BottomUpSegmentationLayer": "sleap_infer.layers.segmentation",
    "CenteredInstanceLayer": "sleap_infer.layers.centered_instance",
    "CenteredInstanceMaskLayer": "sleap_infer.layers.segmentation",
    "CentroidLayer": "sleap_infer.layers.centroid",
    "InferenceLayer": "sleap_infer.layers.base",
    "MultiClassCenteredInstanceLayer": "sleap_infer.layers.centered_instance",
    "PredictOptions": "sleap_infer.core.options",
    "PreprocInfo": "sleap_infer.layers.preprocessing",
    "Preprocessor": "sleap_infer.layers.preprocessing",
    "SemanticSegmentationLayer": "sleap_infer.layers.segmentation",
    "SingleInstanceLayer": "sleap_infer.layers.single_instance",
    "TiledLayer": "sleap_infer.layers.tiled",
    "TopDownLayer": "sleap_infer.layers.topdown",
    "TopDownMultiClassLayer": "sleap_infer.layers.topdown",
    "TopDownSegmentationLayer": "sleap_infer.layers.topdown_segmentation",
    "build_layer": "sleap_infer.layers.build",
    "exported_layer_class": "sleap_infer.layers.build",
    "layer_class": "sleap_infer.layers.build",
}

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


__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
