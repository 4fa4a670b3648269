"""Segmentation models: masks instead of keypoint instances.

Three layers, decoding as sleap-nn 0.3.5 does (``inference/layers/segmentation.py``,
``inference/layers/topdown_segmentation.py``):

* :class:`BottomUpSegmentationLayer`: foreground, center heatmap and center offsets
  -> one mask per center (:mod:`sleap_infer.ops.seg_group`), optionally cleaned
  and merged, scored by the raw center peak (which can exceed 1);
* :class:`SemanticSegmentationLayer`: one foreground mask per frame, scored by its
  mean probability;
* :class:`CenteredInstanceMaskLayer`: stage 2 of top-down segmentation, one mask per
  crop, placed in the frame by the top-down layer with :meth:`package_crop_masks`.

Our networks apply the foreground sigmoid themselves, so ``SegmentationHead`` is a
probability here. The frame-level layers keep masks on the head grid cut to the
frame (``scale = valid / original``, offset 0), or with ``full_res_masks`` on the
original pixels; both drop masks below ``min_mask_area`` original pixels
(:mod:`sleap_infer.ops.seg_masks`). sleap-nn keeps the size-matcher factor as
float32, so it is rounded to float32 here before it enters any mask geometry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from sleap_infer.core.errors import UsageError
from sleap_infer.core.masks import MaskSet
from sleap_infer.core.options import DISTANCE_GATE_ITERS
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.timing import stage
from sleap_infer.layers.base import InferenceLayer, PreprocInfo
from sleap_infer.ops.seg_group import (
    CenterPeaks,
    GridInstance,
    find_center_peaks,
    group_instances,
)
from sleap_infer.ops.seg_masks import (
    clean_mask,
    mask_to_original,
    mask_to_stride,
    stride_area_floor,
)
from sleap_infer.ops.seg_merge import merge_instances


def _eff32(eff: np.ndarray | float) -> np.ndarray:
    """Size-matcher factors as sleap-nn holds them (a float32 tensor), widened back to float64."""
    return np.asarray(eff, np.float32).astype(np.float64)


@dataclass
class _Packed:
    """Masks of a batch on their way into a :class:`MaskSet`."""

    frames: list[int]
    masks: list[np.ndarray]
    scores: list[float]
    scales: list[tuple[float, float]]
    offsets: list[tuple[float, float]]

    def mask_set(self) -> MaskSet:
        return MaskSet.build(self.frames, self.masks, self.scores, self.scales, self.offsets)


class _FrameMaskLayer(InferenceLayer):
    """Packaging shared by the frame-level layers: stride grid (default) or full resolution."""

    @property
    def stride(self) -> int:
        """sleap-nn decodes every head on the foreground head's grid."""
        return self.config.head_for("segmentation").output_stride

    def _new_batch(self) -> _Packed:
        return _Packed([], [], [], [], [])

    def _pack(
        self, out: _Packed, b: int, grid_mask: np.ndarray, score: float, info: PreprocInfo
    ) -> None:
        """Add frame ``b``'s grid mask unless it is below ``min_mask_area``."""
        opts = self.options
        scale = float(_eff32(info.eff_scale[b])) * float(info.input_scale)
        if opts.full_res_masks:
            grid_h, grid_w = grid_mask.shape
            processed = (grid_h * self.stride, grid_w * self.stride)
            mask = mask_to_original(grid_mask, processed, info.original_size, scale)
            if int(mask.sum()) < max(1, opts.min_mask_area):
                return
            sxy = (1.0, 1.0)
        else:
            mask, sxy = mask_to_stride(grid_mask, info.original_size, scale, self.stride)
            if int(mask.sum()) < stride_area_floor(opts.min_mask_area, *sxy):
                return
        out.frames.append(b)
        out.masks.append(mask)
        out.scores.append(score)
        out.scales.append(sxy)
        out.offsets.append((0.0, 0.0))

    def _predictions(
        self, batch: int, packed: _Packed, outputs: dict[str, torch.Tensor]
    ) -> BatchPredictions:
        preds = BatchPredictions.empty(batch, self.n_nodes)
        preds.masks = packed.mask_set()
        self._keep_maps(preds, outputs)
        return preds


class BottomUpSegmentationLayer(_FrameMaskLayer):
    """Panoptic-style instance masks: foreground pixels grouped by predicted center offsets."""

    model_type = "bottomup_segmentation"

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        opts = self.options
        cfg = self.config
        fg = outputs[cfg.head_for("segmentation").name]
        heat = outputs[cfg.head_for("center").name]
        offsets = outputs[cfg.head_for("offsets").name].detach().cpu()
        foreground = (fg[:, 0] > opts.fg_threshold).cpu()
        has_fg = foreground.flatten(1).any(dim=1).tolist()
        with stage("center peaks"):
            peaks = find_center_peaks(
                heat, opts.peak_threshold, opts.center_nms_kernel, opts.max_instances
            )
        heat_np = heat[:, 0].detach().cpu().numpy()
        packed = self._new_batch()
        for b, frame_peaks in enumerate(peaks):
            if not has_fg[b] or len(frame_peaks.values) == 0:
                continue
            with stage("mask grouping"):
                instances = self._frame_instances(
                    foreground[b], offsets[b], frame_peaks, heat_np[b]
                )
            for inst in instances:
                self._pack(packed, b, inst.mask, inst.score, info)
        return self._predictions(fg.shape[0], packed, outputs)

    def _frame_instances(
        self,
        foreground: torch.Tensor,
        offsets: torch.Tensor,
        peaks: CenterPeaks,
        heat: np.ndarray,
    ) -> list[GridInstance]:
        """Group, then the opt-in cleanup (empty masks dropped) and fragment merge."""
        opts = self.options
        instances = group_instances(
            foreground, offsets, peaks, self.stride, opts.distance_gate_alpha, DISTANCE_GATE_ITERS
        )
        if opts.mask_cleanup:
            for inst in instances:
                inst.mask = clean_mask(inst.mask, opts.mask_cleanup_radius)
            instances = [inst for inst in instances if inst.mask.any()]
        if opts.merge_fragments and len(instances) > 1:
            instances = merge_instances(
                instances,
                heat,
                offsets.numpy(),
                self.stride,
                method=opts.merge_method,
                dilate=opts.merge_dilate,
                w_valley=opts.merge_w_valley,
                w_offset=opts.merge_w_offset,
                thresholds=opts.merge_thresholds,
            )
        return instances


class SemanticSegmentationLayer(_FrameMaskLayer):
    """One foreground mask per frame (possibly disconnected), scored by its mean probability."""

    model_type = "semantic_segmentation"

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        prob = outputs[self.config.head_for("segmentation").name][:, 0].detach().cpu()
        foreground = prob > self.options.fg_threshold
        packed = self._new_batch()
        for b in range(prob.shape[0]):
            if not bool(foreground[b].any()):
                continue
            # float32 mean over the selected probabilities, as sleap-nn.
            score = float(prob[b][foreground[b]].mean())
            self._pack(packed, b, foreground[b].numpy(), score, info)
        return self._predictions(prob.shape[0], packed, outputs)


@dataclass
class CropMasks:
    """Stage-2 results, one entry per crop, on the head grid of the (scaled, padded) crop."""

    masks: torch.Tensor  # (n, h, w) bool
    scores: torch.Tensor  # (n,) float32 mean probability over the mask; 0 for an empty one


def pack_crop_masks(
    masks: np.ndarray,
    scores: np.ndarray,
    frame: np.ndarray,
    top_left: np.ndarray,
    eff_scale: np.ndarray,
    input_scale: float,
    stride: int,
) -> MaskSet:
    """Crop masks placed in their frames: ``offset = top_left / eff``, ``scale = eff * s / stride``.

    ``top_left`` is each crop's integer origin in size-matched pixels and ``eff_scale``
    its frame's size-matcher factor. Masks are not clipped to the frame (they may
    reach past any edge); empty masks are dropped; order is kept.
    """
    eff = _eff32(eff_scale)
    keep = [k for k in range(len(masks)) if masks[k].any()]
    return MaskSet.build(
        frames=[int(frame[k]) for k in keep],
        masks=[np.ascontiguousarray(masks[k], bool) for k in keep],
        scores=[float(scores[k]) for k in keep],
        scales=[((eff[k] * input_scale) / stride,) * 2 for k in keep],
        offsets=[(float(top_left[k, 0]) / eff[k], float(top_left[k, 1]) / eff[k]) for k in keep],
    )


class CenteredInstanceMaskLayer(InferenceLayer):
    """Top-down stage 2: one foreground mask per crop (the crops come from a centroid model)."""

    model_type = "centered_instance_segmentation"

    @property
    def stride(self) -> int:
        return self.config.head_for("segmentation").output_stride

    def run_crops(self, crops: torch.Tensor) -> CropMasks:
        """uint8 crops ``(n, C, crop, crop)`` -> masks on the head grid and their scores."""
        with stage("crop preprocess"):
            x = self.crop_input(crops)
        with stage("network"):
            outputs = self.call_backend(x)
        return self.decode(outputs)

    def decode(self, outputs: dict[str, torch.Tensor]) -> CropMasks:
        """``prob > fg_threshold``; score = ``sum(prob * mask) / max(1, sum(mask))`` in float32."""
        probs = outputs[self.config.head_for("segmentation").name].detach()
        masks = (probs > self.options.fg_threshold).float()
        denom = masks.sum(dim=(2, 3)).clamp(min=1.0)
        scores = (probs * masks).sum(dim=(2, 3)) / denom
        return CropMasks(masks=masks[:, 0] > 0, scores=scores[:, 0])

    def package_crop_masks(
        self,
        result: CropMasks,
        frame: torch.Tensor | np.ndarray,
        top_left: torch.Tensor | np.ndarray,
        eff_scale: np.ndarray,
    ) -> MaskSet:
        """:func:`pack_crop_masks` with this model's input scale and stride.

        ``frame`` and ``top_left`` (integer, size-matched pixels) are per crop;
        ``eff_scale`` is per crop too (index the batch's factors by ``frame``).
        Rows past ``len(frame)`` (batch padding) are ignored.
        """
        frame_np = np.asarray(frame.cpu() if isinstance(frame, torch.Tensor) else frame)
        n = len(frame_np)
        tl = top_left.cpu().numpy() if isinstance(top_left, torch.Tensor) else top_left
        return pack_crop_masks(
            result.masks[:n].cpu().numpy(),
            result.scores[:n].cpu().numpy(),
            frame_np,
            np.asarray(tl),
            np.asarray(eff_scale),
            float(self.preprocessing.scale),
            self.stride,
        )

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        raise UsageError(
            "a centered_instance_segmentation model segments crops around animals found by "
            "another model: add a centroid model (--model DIR) to run it (top-down)"
        )

    def warmup(self, frame_shape: tuple[int, int, int, int], iterations: int = 1) -> None:
        """Warm on zero crops of the model's crop size (frames alone cannot be decoded)."""
        crop = self.crop_size
        crops = torch.zeros((frame_shape[0], self.input_channels, crop, crop), dtype=torch.uint8)
        for _ in range(iterations):
            self.run_crops(crops.to(self.device))
