"""Box detectors (``bbox_centernet``, ``bbox_ssd``): boxes instead of keypoint instances.

Decoding is :mod:`sleap_infer.ops.boxes`; this layer maps the boxes back as sleap-nn
0.3.5's ``BBoxLayer`` does: corners / input scale / size-matcher factor (float32,
as sleap-nn holds them), clipped to the *original* frame ``[0, w-1] x [0, h-1]``;
a box left without area there is dropped where it stood (the rest are not
re-sorted). ``peak_threshold`` is the score threshold (``>=``), ``max_instances``
the detections per frame (100 when unset), ``bbox_nms_iou`` the class-wise NMS
IoU (SSD 0.45, CenterNet off by default).

Both layers also stand in for a centroid layer as stage 1 of top-down
(:meth:`BoxLayer.find_centroids`): box centres are the centroids, box scores their
values.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import torch

from sleap_infer.backends.base import ModelBackend
from sleap_infer.core.boxes import BoxSet
from sleap_infer.core.config import BoxDetector, ModelConfig, Preprocessing
from sleap_infer.core.errors import ConfigError
from sleap_infer.core.options import PredictOptions
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.timing import stage
from sleap_infer.layers.base import InferenceLayer, PreprocInfo
from sleap_infer.layers.centroid import Centroids
from sleap_infer.ops.boxes import Detections, clip_boxes, decode_centernet, decode_ssd, make_anchors

MAX_DETECTIONS = 100
"""Boxes per frame when ``max_instances`` is unset (sleap-nn's default)."""


class BoxLayer(InferenceLayer):
    """Shared by both detectors: thresholds, the coordinate ladder, packaging."""

    default_nms_iou: ClassVar[float | None] = None

    @property
    def detector(self) -> BoxDetector:
        if self.config.boxes is None:
            raise ConfigError(f"{self.config.model_type} config has no box detector settings")
        return self.config.boxes

    @property
    def threshold(self) -> float:
        """The score threshold; the top-down stage-1 override wins, as for centroids."""
        return self.stage1_threshold

    @property
    def max_detections(self) -> int:
        return self.options.max_instances or MAX_DETECTIONS

    @property
    def nms_iou(self) -> float | None:
        iou = self.options.bbox_nms_iou
        return self.default_nms_iou if iou is None else iou

    def input_hw(self, info: PreprocInfo) -> tuple[int, int]:
        """The padded network input size, recomputed from the frame size: what boxes are
        clipped to and SSD anchors laid over (``outputs`` do not carry it for SSD)."""
        if info.original_size is None:
            raise ValueError("box decoding needs PreprocInfo.original_size")
        pre = self.preprocessing
        h, w = info.original_size
        h = h if pre.max_height is None else pre.max_height
        w = w if pre.max_width is None else pre.max_width
        if pre.scale != 1.0:
            h, w = int(h * pre.scale), int(w * pre.scale)
        stride = max(self.config.max_stride, 1)
        return -(-h // stride) * stride, -(-w // stride) * stride

    def decode(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> list[Detections]:
        """Per-frame boxes in padded model-input pixels, by descending score."""
        raise NotImplementedError

    def frame_boxes(
        self, outputs: dict[str, torch.Tensor], info: PreprocInfo
    ) -> tuple[list[Detections], torch.Tensor]:
        """Decoded boxes in original frame pixels (float32), and which of them (all frames
        in a row) keep an area once clipped to the frame."""
        with stage("box decoding"):
            frames = self.decode(outputs, info)
        eff = torch.as_tensor(np.asarray(info.eff_scale, np.float32))
        height, width = info.original_size or (0, 0)
        out: list[Detections] = []
        keep: list[torch.Tensor] = []
        for b, det in enumerate(frames):
            corners = det.boxes.reshape(-1, 2, 2).cpu()
            if info.input_scale != 1.0:
                corners = corners / info.input_scale
            boxes = clip_boxes((corners / eff[b]).reshape(-1, 4), height, width)
            ok = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
            ok &= torch.isfinite(det.scores.cpu())
            out.append(Detections(boxes, det.scores.cpu(), det.classes.cpu()))
            keep.append(ok)
        return out, torch.cat(keep) if keep else torch.zeros(0, dtype=torch.bool)

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        preds = BatchPredictions.empty(len(info.eff_scale), self.n_nodes)
        preds.boxes = self._box_set(*self.frame_boxes(outputs, info))
        self._keep_maps(preds, outputs)
        return preds

    def find_centroids(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> Centroids:
        """Stage 1 of top-down: each kept box's centre (from the box clipped to the frame)
        and score, in size-matched pixels, strongest first, NaN / 0 / False padded."""
        return self._centroids(*self.frame_boxes(outputs, info), info)

    def detections(
        self, outputs: dict[str, torch.Tensor], info: PreprocInfo
    ) -> tuple[BoxSet, Centroids]:
        """Box-seeded top-down: the boxes as written and their centres, from one decode."""
        frames, keep = self.frame_boxes(outputs, info)
        return self._box_set(frames, keep), self._centroids(frames, keep, info)

    @staticmethod
    def _box_set(frames: list[Detections], keep: torch.Tensor) -> BoxSet:
        ok = keep.numpy()
        rows = [np.full(len(d.scores), b, np.int32) for b, d in enumerate(frames)]
        if not rows or not ok.any():
            return BoxSet.empty()
        return BoxSet.build(
            np.concatenate(rows)[ok],
            torch.cat([d.boxes for d in frames]).double().numpy()[ok],
            torch.cat([d.scores for d in frames]).numpy()[ok],
            torch.cat([d.classes for d in frames]).numpy()[ok],
        )

    def _centroids(
        self, frames: list[Detections], keep: torch.Tensor, info: PreprocInfo
    ) -> Centroids:
        eff = np.asarray(info.eff_scale, np.float32)
        counts, start, per_frame = [], 0, []
        for det in frames:
            n = len(det.scores)
            ok = keep[start : start + n]
            start += n
            per_frame.append((det.boxes[ok], det.scores[ok]))
            counts.append(int(ok.sum()))
        width = max([1, *counts])
        batch = len(frames)
        points = torch.full((batch, width, 2), float("nan"))
        values = torch.zeros((batch, width))
        valid = torch.zeros((batch, width), dtype=torch.bool)
        for b, (boxes, scores) in enumerate(per_frame):
            n = len(scores)
            centres = torch.stack(
                [(boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2], dim=-1
            )
            points[b, :n] = centres * float(eff[b])
            values[b, :n] = scores
            valid[b, :n] = True
        device = self.device
        return Centroids(points=points.to(device), values=values.to(device), valid=valid.to(device))


class CenterNetLayer(BoxLayer):
    """Anchor-free: one peak of the center heatmap per box, size and offset read there."""

    model_type = "bbox_centernet"
    default_nms_iou = None

    def decode(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> list[Detections]:
        cfg = self.config
        return decode_centernet(
            outputs[cfg.head_for("center").name],
            outputs[cfg.head_for("size").name],
            outputs[cfg.head_for("offset").name],
            self.detector.output_stride,
            self.threshold,
            self.max_detections,
            self.nms_iou,
            self.input_hw(info),
        )


class SSDLayer(BoxLayer):
    """Anchor-based, multi-scale: anchors are rebuilt per input size (and cached)."""

    model_type = "bbox_ssd"
    default_nms_iou = 0.45

    def __init__(
        self,
        config: ModelConfig,
        backend: ModelBackend,
        options: PredictOptions | None = None,
        preprocessing: Preprocessing | None = None,
    ) -> None:
        super().__init__(config, backend, options, preprocessing)
        self._anchors: dict[tuple[int, int], torch.Tensor] = {}

    def anchors(self, input_hw: tuple[int, int]) -> torch.Tensor:
        if input_hw not in self._anchors:
            d = self.detector
            self._anchors[input_hw] = make_anchors(
                input_hw, d.strides, d.anchor_sizes, d.anchor_scales, d.aspect_ratios
            )
        return self._anchors[input_hw]

    def decode(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> list[Detections]:
        raw = outputs[self.config.head_for("ssd").name]
        hw = self.input_hw(info)
        anchors = self.anchors(hw)
        if anchors.shape[0] != raw.shape[1]:
            raise ValueError(
                f"SSD head gave {raw.shape[1]} anchors, the {hw[0]}x{hw[1]} input has "
                f"{anchors.shape[0]}"
            )
        return decode_ssd(
            raw,
            anchors,
            self.detector.box_variances,
            self.threshold,
            self.max_detections,
            self.nms_iou,
            hw,
        )
