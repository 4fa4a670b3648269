"""Top-down: a centroid model finds the animals, a centered-instance model poses each crop.

A box detector can stand in for the centroid model (sleap-nn 0.3.5's box-seeded
top-down): crops are centred on the boxes' centres, cut from the frame
size-matched for the *crop* model (its own training size), and the boxes are
written too. A crop model trained with ``crop_mode: bbox`` gets each box resized
to its crop instead (:mod:`sleap_infer.ops.box_crops`); it needs a box detector.

Stage 1 runs the centroid layer on the frames. Stage 2 cuts one
``crop_size`` square per centroid out of the size-matched (unscaled) frames,
all crops in one gather, and runs the centered-instance layer on them as a
single batch. Crop-local keypoints are shifted by the box's float top-left
and mapped to original pixels. With a multi-class centered-instance model,
each frame's crops are also matched to identity classes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from sleap_infer.core.boxes import BoxSet
from sleap_infer.core.errors import ConfigError, UsageError
from sleap_infer.core.options import PredictOptions
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.timing import stage
from sleap_infer.layers.base import InferenceLayer, PreprocInfo
from sleap_infer.layers.centered_instance import CenteredInstanceLayer
from sleap_infer.layers.centroid import CentroidLayer, Centroids
from sleap_infer.model.registry import MODEL_TYPES
from sleap_infer.ops.box_crops import BoxCropSpec, cut_box_crops, points_from_crop
from sleap_infer.ops.crops import centered_boxes, crop_origin, gather_crops
from sleap_infer.ops.identity import assign_crop_classes


@dataclass
class Crops:
    """Stage-2 inputs: one crop per valid centroid, frame-major."""

    images: torch.Tensor  # (n, C, crop, crop) uint8
    top_left: torch.Tensor  # (n, 2) float offset of each crop in size-matched pixels
    frame: torch.Tensor  # (n,) frame index
    slot: torch.Tensor  # (n,) centroid slot within the frame
    # Box-scaled crops: edge-coordinate windows (n, 4) and frame-to-crop scales (n, 2).
    windows: torch.Tensor | None = None
    scales: torch.Tensor | None = None

    def to_frame(self, local: torch.Tensor) -> torch.Tensor:
        """Crop-pixel keypoints ``(n, nodes, 2)`` in the crop source's pixels."""
        if self.windows is None or self.scales is None:
            return local + self.top_left.to(local.device)[:, None, :]
        return points_from_crop(local, self.windows.to(local.device), self.scales.to(local.device))


BOX_CROP_MODEL_TYPES = ("centered_instance", "multi_class_topdown")
"""Crop models that may be trained on box-scaled crops (sleap-nn 0.3.5)."""


class TopDownLayer(InferenceLayer):
    model_type = "topdown"
    multi_class = False  # identities from a multi-class instance model's class vectors

    def __init__(
        self,
        centroid: CentroidLayer,
        instance: CenteredInstanceLayer,
        options: PredictOptions | None = None,
    ) -> None:
        # Frames are preprocessed like the centroid model's input; the output skeleton (and
        # classes) are the instance model's.
        self.decodes_in_graph = centroid.decodes_in_graph
        super().__init__(
            instance.config, centroid.backend, options, preprocessing=centroid.preprocessing
        )
        self.centroid = centroid
        self.instance = instance
        self._crop_size = instance.crop_size  # a config without one fails here, not mid-video
        entry = MODEL_TYPES.get(centroid.config.model_type)
        self.box_seeded = entry is not None and entry.boxes
        self.box_crop = self._box_crop_spec(centroid, instance, self.box_seeded)

    @staticmethod
    def _box_crop_spec(
        centroid: InferenceLayer, instance: InferenceLayer, box_seeded: bool
    ) -> BoxCropSpec | None:
        """The crop model's ``crop_mode: bbox`` settings, refused where sleap-nn 0.3.5 does."""
        try:
            spec = BoxCropSpec.from_raw(instance.config.raw)
        except ValueError as exc:
            raise ConfigError(f"{instance.config.model_type} model: {exc}") from exc
        if spec is None:
            return None
        kind = instance.config.model_type
        if kind not in BOX_CROP_MODEL_TYPES:
            raise ConfigError(
                f"{kind} model trained with preprocessing.crop_mode: bbox: box-scaled crops "
                f"are supported for {' and '.join(BOX_CROP_MODEL_TYPES)} models only"
            )
        if not box_seeded:
            raise UsageError(
                f"the {kind} model crops each animal's box (preprocessing.crop_mode: bbox): "
                f"pair it with a bbox_centernet or bbox_ssd model, not a "
                f"{centroid.config.model_type} model"
            )
        return spec

    @property
    def input_channels(self) -> int:
        return self.centroid.input_channels

    @property
    def crop_size(self) -> int:
        return self._crop_size

    def preprocess(
        self, frames: np.ndarray | torch.Tensor, keep_source: bool = True
    ) -> tuple[torch.Tensor, PreprocInfo]:
        """The centroid model's input, keeping the size-matched frames to crop from
        (box-seeded: size-matched for the crop model)."""
        x, info = self.centroid.preprocess(frames, keep_source=True)
        if not self.box_seeded:
            return x, info
        sized, eff = self.instance.size_frames(frames)
        return x, replace(info, source=sized, crop_eff_scale=np.full(x.shape[0], eff))

    def stage1(
        self, outputs: dict[str, torch.Tensor], info: PreprocInfo
    ) -> tuple[Centroids, PreprocInfo, BoxSet | None]:
        """The animals' centres in the crop source's pixels, the info whose ``eff_scale``
        maps those pixels back to the frame, and (box-seeded) the boxes, decoded once."""
        boxes = None
        if self.box_seeded:
            boxes, cents = self.centroid.detections(outputs, info)
        else:
            cents = self.centroid.find_centroids(outputs, info)
        crop_eff = info.crop_eff_scale
        if crop_eff is None or np.array_equal(crop_eff, info.eff_scale):
            return cents, info, boxes
        ratio = torch.as_tensor(crop_eff / info.eff_scale, dtype=cents.points.dtype)
        points = cents.points * ratio.to(cents.points.device)[:, None, None]
        cents = Centroids(points, cents.values, cents.valid)
        return cents, replace(info, eff_scale=crop_eff), boxes

    def box_stage1(
        self, outputs: dict[str, torch.Tensor], info: PreprocInfo
    ) -> tuple[Centroids, torch.Tensor, PreprocInfo, BoxSet]:
        """Box-scaled crops: the boxes decoded once, as centroids (their centres) and
        ``(B, K, 4)`` corners in the crop source's pixels (NaN padded), plus the
        info mapping those pixels back, and the boxes as written."""
        boxes = self.centroid.postprocess(outputs, info).boxes
        if boxes is None:
            boxes = BoxSet.empty()
        eff = info.crop_eff_scale if info.crop_eff_scale is not None else info.eff_scale
        eff = np.asarray(eff, np.float32)
        batch = len(eff)
        rows = [boxes.in_frame(b) for b in range(batch)]
        width = max([1, *map(len, rows)])
        corners = torch.full((batch, width, 4), float("nan"))
        values = torch.zeros((batch, width))
        valid = torch.zeros((batch, width), dtype=torch.bool)
        for b, idx in enumerate(rows):
            # float32 original-pixel corners times the float32 factor, as sleap-nn holds them.
            xyxy = torch.as_tensor(boxes.xyxy[idx], dtype=torch.float32)
            corners[b, : len(idx)] = xyxy * torch.tensor(eff[b])
            values[b, : len(idx)] = torch.as_tensor(boxes.score[idx])
            valid[b, : len(idx)] = True
        centres = (corners[..., :2] + corners[..., 2:]) / 2
        device = self.centroid.device
        cents = Centroids(centres.to(device), values.to(device), valid.to(device))
        return cents, corners, replace(info, eff_scale=eff.astype(np.float64)), boxes

    def make_box_crops(
        self, source: torch.Tensor, cents: Centroids, corners: torch.Tensor
    ) -> Crops:
        """Resize every valid box of ``source`` (``corners`` in its pixels) to a crop."""
        frame, slot = torch.nonzero(cents.valid.cpu(), as_tuple=True)
        assert self.box_crop is not None
        images, windows, scales = cut_box_crops(
            source, corners[frame, slot], frame, self.crop_size, self.box_crop
        )
        dev = source.device
        top_left = (windows[:, :2] - 0.5).to(dev)  # crop corner in keypoint coordinates
        return Crops(images, top_left, frame.to(dev), slot.to(dev), windows, scales)

    @staticmethod
    def add_boxes(preds: BatchPredictions, boxes: BoxSet | None) -> None:
        """Box-seeded: the detector's boxes go into the output too (as sleap-nn writes them)."""
        if boxes is not None:
            preds.boxes = boxes

    def info_for_input(
        self, x: torch.Tensor, eff_scale: float = 1.0, source: torch.Tensor | None = None
    ) -> PreprocInfo:
        return self.centroid.info_for_input(x, eff_scale, source)

    def make_crops(self, source: torch.Tensor, cents: Centroids) -> Crops:
        """Cut a ``crop_size`` square around every valid centroid of ``source``.

        ``source`` holds the size-matched uint8 frames. Every crop has the full
        size, as in sleap-nn 0.3.5, which passes the crop size to its cropper
        (older releases sized a frame's crops from float box corners, one
        pixel short for a few percent of centroids: see :mod:`sleap_infer.ops.crops`).
        """
        frame, slot = torch.nonzero(cents.valid, as_tuple=True)
        size = self.crop_size
        top_left, _ = centered_boxes(cents.points[frame, slot], size, size)
        frame, top_left = frame.to(source.device), top_left.to(source.device)
        full = torch.full(top_left.shape, size, dtype=torch.long, device=source.device)
        images = gather_crops(source, frame, crop_origin(top_left, full), size, size)
        return Crops(images, top_left, frame, slot.to(source.device))

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        if info.source is None:
            raise ValueError("top-down postprocessing needs PreprocInfo.source (the frames)")
        if self.box_crop is not None:
            cents, corners, info, boxes = self.box_stage1(outputs, info)
            with stage("crop extraction"):
                crops = self.make_box_crops(info.source, cents, corners)
        else:
            cents, info, boxes = self.stage1(outputs, info)
            with stage("crop extraction"):
                crops = self.make_crops(info.source, cents)
        batch, width = cents.valid.shape
        n = crops.images.shape[0]
        # Pad the crop batch to a multiple of the frame batch: fewer distinct shapes for
        # compiled / TensorRT backends. Padded crops are dropped right after.
        padded = -(-n // batch) * batch if n else 0
        images = F.pad(crops.images, (0, 0, 0, 0, 0, 0, 0, padded - n))
        peaks = self.instance.run_crops(images) if n else None

        n_nodes = self.n_nodes
        points = np.full((batch, width, n_nodes, 2), np.nan, np.float32)
        scores = np.full((batch, width, n_nodes), np.nan, np.float32)
        frame = crops.frame.cpu().numpy()
        slot = crops.slot.cpu().numpy()
        eff = info.eff_scale.astype(np.float32)
        if peaks is not None:
            local = peaks.points[:n].cpu()
            pts = crops.to_frame(local).numpy() / eff[frame, None, None]
            points[frame, slot] = pts
            scores[frame, slot] = peaks.values[:n].cpu().numpy()
        found = ~np.isnan(points).all(axis=(2, 3))
        preds = BatchPredictions(
            points=points,
            point_scores=scores,
            instance_scores=cents.values.cpu().numpy().astype(np.float32),
            valid=cents.valid.cpu().numpy() & found,
        )
        if peaks is not None and peaks.class_probs is not None:
            self._add_classes(preds, peaks.class_probs[:n].cpu().numpy(), frame, slot)
        elif self.multi_class:
            preds.class_ids = np.full((batch, width), -1, np.int32)
            preds.class_scores = np.full((batch, width), np.nan, np.float32)
        centroids = cents.points.cpu().numpy() / eff[:, None, None]
        preds.extras["centroids"] = centroids.astype(np.float32)
        self.add_boxes(preds, boxes)
        return preds

    @staticmethod
    def _add_classes(
        preds: BatchPredictions, probs: np.ndarray, frame: np.ndarray, slot: np.ndarray
    ) -> None:
        """Match each frame's crops to classes (Hungarian), store ids and matched probs."""
        ids, probs_matched = assign_crop_classes(probs, frame)
        preds.class_ids = np.full(preds.valid.shape, -1, np.int32)
        preds.class_scores = np.full(preds.valid.shape, np.nan, np.float32)
        preds.class_ids[frame, slot] = ids
        preds.class_scores[frame, slot] = probs_matched

    def warmup(self, frame_shape: tuple[int, int, int, int], iterations: int = 1) -> None:
        """Warm both stages: zero frames have no centroids, so stage 2 is warmed on its own."""
        super().warmup(frame_shape, iterations)
        crop = self.crop_size
        crops = torch.zeros(
            (frame_shape[0], self.instance.input_channels, crop, crop), dtype=torch.uint8
        )
        shape = tuple(self.instance.crop_input(crops).shape)
        for _ in range(iterations):
            self.instance.backend.warmup(shape)


class TopDownMultiClassLayer(TopDownLayer):
    """Top-down with a multi-class centered-instance model: identities from class vectors."""

    model_type = "multi_class_topdown"
    multi_class = True
