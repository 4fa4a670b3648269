"""Top-down segmentation: a centroid model finds the animals, a mask is predicted per crop.

Stage 1 and the crops are the keypoint top-down path's, unchanged
(:class:`~sleap_infer.layers.topdown.TopDownLayer`): the same centroids, the
same integer crop origins, zeros beyond the frame. Stage 2 is a
centered-instance segmentation model, whose mask is kept on its own head grid
and placed in the frame by its offset (the crop's integer corner over the
size-matcher factor) and scale. The mask is not clipped to the frame, and the
centroid's confidence is not its score (sleap-nn 0.3.5 scores it by its mean
foreground probability).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from sleap_infer.core.masks import MaskSet
from sleap_infer.core.options import PredictOptions
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.timing import stage
from sleap_infer.layers.base import PreprocInfo
from sleap_infer.layers.centroid import CentroidLayer
from sleap_infer.layers.segmentation import CenteredInstanceMaskLayer
from sleap_infer.layers.topdown import TopDownLayer
from sleap_infer.ops.crops import crop_origin


class TopDownSegmentationLayer(TopDownLayer):
    model_type = "topdown_segmentation"

    def __init__(
        self,
        centroid: CentroidLayer,
        instance: CenteredInstanceMaskLayer,
        options: PredictOptions | None = None,
    ) -> None:
        super().__init__(centroid, instance, options)  # type: ignore[arg-type]
        self.instance: CenteredInstanceMaskLayer = instance  # type: ignore[assignment]

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        if info.source is None:
            raise ValueError("top-down postprocessing needs PreprocInfo.source (the frames)")
        cents, info, boxes = self.stage1(outputs, info)
        with stage("crop extraction"):
            crops = self.make_crops(info.source, cents)
        batch = int(cents.valid.shape[0])
        preds = BatchPredictions.empty(batch, self.n_nodes)
        n = int(crops.images.shape[0])
        if n == 0:
            preds.masks = MaskSet.empty()
            self.add_boxes(preds, boxes)
            return preds
        # As for keypoints: a crop batch padded to a multiple of the frame batch gives
        # compiled / TensorRT backends fewer shapes; the padded crops are ignored.
        padded = -(-n // batch) * batch
        images = F.pad(crops.images, (0, 0, 0, 0, 0, 0, 0, padded - n))
        result = self.instance.run_crops(images)
        size = self.crop_size
        full = torch.full(crops.top_left.shape, size, dtype=torch.long)
        origin = crop_origin(crops.top_left.cpu(), full)
        frame = crops.frame.cpu().numpy()
        with stage("mask packing"):
            preds.masks = self.instance.package_crop_masks(
                result, frame, origin.numpy(), np.asarray(info.eff_scale)[frame]
            )
        centroids = cents.points.cpu().numpy() / info.eff_scale.astype(np.float32)[:, None, None]
        preds.extras["centroids"] = centroids.astype(np.float32)
        self.add_boxes(preds, boxes)
        return preds

    def warmup(self, frame_shape: tuple[int, int, int, int], iterations: int = 1) -> None:
        """Warm both stages: zero frames have no centroids, so stage 2 is warmed on its own."""
        super(TopDownLayer, self).warmup(frame_shape, iterations)
        self.instance.warmup(frame_shape, iterations)
