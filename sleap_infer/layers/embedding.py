"""Embedding models: one L2-normalised appearance vector per detection (re-ID).

An embedding model never finds animals; it describes detections it is given, by a
crop around each (:mod:`sleap_infer.ops.embedding_crops`), as sleap-nn 0.3.5 does
(``data/custom_datasets.py::EmbeddingDataset`` + ``EmbeddingLightningModule``):

* :class:`EmbeddingLayer` embeds given detections of a frame batch: poses
  (:meth:`~EmbeddingLayer.embed_points`, the "pose carrier") or masks
  (:meth:`~EmbeddingLayer.embed_masks`, the "mask carrier"); frames are first
  size-matched to the model's ``max_height x max_width`` (identity for frames of
  that size) and made grey unless the model wants RGB;
* :class:`TopDownEmbeddingLayer` runs a centroid model first and embeds a crop
  around each centroid; the instances it returns have one node, ``centroid``, as
  sleap-nn's fused ``-m centroid -m embedding`` output has.

The crop standardisation is part of the network (uint8 crops in), so torch and
exported graphs agree; burn-in models standardise on the host with the crop's mask
and run on torch only.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from sleap_infer.backends.base import ModelBackend
from sleap_infer.backends.torch_backend import TorchBackend
from sleap_infer.core.config import EmbeddingSettings, ModelConfig, Preprocessing
from sleap_infer.core.errors import ConfigError, UsageError
from sleap_infer.core.masks import MaskSet
from sleap_infer.core.options import PredictOptions
from sleap_infer.core.predictions import BatchPredictions
from sleap_infer.core.timing import stage
from sleap_infer.layers.base import InferenceLayer, PreprocInfo
from sleap_infer.layers.centroid import CentroidLayer
from sleap_infer.layers.topdown import TopDownLayer
from sleap_infer.ops.embedding_crops import (
    mask_center,
    mask_pixels,
    pose_centers,
    sample_crops,
    standardize_crops,
)
from sleap_infer.ops.preprocess import as_nchw, size_match

CROP_BATCH = 64  # crops per network call (sleap-nn's default batch on this route)
CENTROID_NODE = "centroid"


def _crop_preprocessing(config: ModelConfig) -> Preprocessing:
    """Grey crops unless the model wants RGB (sleap-nn resolves embedding channels so)."""
    pre = config.preprocessing
    return replace(pre, ensure_grayscale=not pre.ensure_rgb, scale=1.0, tiling=None)


class EmbeddingLayer(InferenceLayer):
    """Crops around given detections -> ``(n, D)`` float32 vectors."""

    model_type = "embedding"

    def __init__(
        self,
        config: ModelConfig,
        backend: ModelBackend,
        options: PredictOptions | None = None,
        crop_batch: int = CROP_BATCH,
    ) -> None:
        super().__init__(config, backend, options, preprocessing=_crop_preprocessing(config))
        if config.embedding is None:
            raise ConfigError(f"{config.model_type} model is not an embedding model")
        self.settings: EmbeddingSettings = config.embedding
        self.crop_batch = max(1, int(crop_batch))
        self.dim = config.heads[0].channels
        if self.settings.burn_in and not isinstance(backend, TorchBackend):
            raise UsageError(
                "this embedding model burns its masks into the crops (preprocessing.burn_in), "
                "which exported graphs do not take: use --backend torch"
            )
        if self.crop_size < 2:  # a config without one fails here, not mid-video
            raise ConfigError("an embedding crop needs preprocessing.crop_size >= 2")

    # ------------------------------------------------------------------ crops
    def embed_crops(self, crops: torch.Tensor, masks: torch.Tensor | None = None) -> np.ndarray:
        """uint8 ``(n, C, crop, crop)`` crops -> ``(n, D)`` float32 vectors.

        ``masks`` (``(n, 1, crop, crop)`` bool) only matters to burn-in models.
        Crops go in batches of ``crop_batch``, each padded to a power of two so
        compiled / exported backends see few shapes.
        """
        n = int(crops.shape[0])
        out = np.zeros((n, self.dim), np.float32)
        for start in range(0, n, self.crop_batch):
            chunk = crops[start : start + self.crop_batch]
            m = int(chunk.shape[0])
            padded = min(self.crop_batch, 1 << (m - 1).bit_length())
            if padded > m:
                chunk = torch.cat([chunk, chunk.new_zeros((padded - m, *chunk.shape[1:]))])
            x: torch.Tensor = chunk
            if self.settings.burn_in:
                mask = None if masks is None else masks[start : start + m].float()
                if mask is not None and padded > m:
                    mask = torch.cat([mask, mask.new_ones((padded - m, *mask.shape[1:]))])
                x = standardize_crops(chunk.float(), mask, self.settings.background_fill)
            with stage("network"):
                vectors = self.call_backend(x)[self.config.heads[0].name]
            out[start : start + m] = vectors[:m].detach().float().cpu().numpy()
        return out

    def sized_frames(self, frames: np.ndarray | torch.Tensor) -> tuple[torch.Tensor, float]:
        """Channels, then the size matcher: the image crops are cut from, and its factor."""
        return self.size_frames(frames)

    # ------------------------------------------------------------- pose carrier
    def point_centers(self, points: np.ndarray) -> np.ndarray:
        """``(n, 2)`` crop centres (original pixels) of ``(n, N, 2)`` instances; NaN = skip."""
        s = self.settings
        return pose_centers(
            points, s.centroid_method, self.config.anchor_index, s.centroid_fallback
        )

    def embed_points(
        self,
        frames: np.ndarray | torch.Tensor,
        points: np.ndarray,
        valid: np.ndarray | None = None,
    ) -> np.ndarray:
        """Vectors of pose detections: ``(B, I, D)`` float32, NaN where none.

        ``points`` is ``(B, I, N, 2)`` in original frame pixels (NaN = node not
        visible), ``valid`` ``(B, I)``. Each crop centres on the instance's centroid
        (config: nan-mean of visible nodes, or an anchor node); instances without a
        finite centre are skipped, as sleap-nn skips them.
        """
        points = np.asarray(points, np.float32)
        batch, width = points.shape[:2]
        valid = np.ones((batch, width), bool) if valid is None else np.asarray(valid, bool)
        out = np.full((batch, width, self.dim), np.nan, np.float32)
        frame, slot = np.nonzero(valid)
        centers = self.point_centers(points[frame, slot])
        ok = np.isfinite(centers).all(axis=1)
        frame, slot, centers = frame[ok], slot[ok], centers[ok]
        if len(frame) == 0:
            return out
        with stage("crop extraction"):
            sized, eff = self.sized_frames(frames)
            centers = centers * np.float32(eff) if eff != 1.0 else centers
            crops = sample_crops(
                sized, torch.as_tensor(frame), torch.as_tensor(centers), self.crop_size
            )
        masks = torch.ones((len(frame), 1, *crops.shape[-2:]), dtype=torch.bool)
        out[frame, slot] = self.embed_crops(crops, masks)
        return out

    # ------------------------------------------------------------- mask carrier
    def mask_geometry(
        self, masks: MaskSet, k: int, frame_hw: tuple[int, int], eff: float
    ) -> tuple[tuple[float, float], np.ndarray]:
        """Mask ``k``'s crop centre and its pixels, both on the size-matched frame.

        A resized frame gets its mask resized as a float image and re-thresholded
        at 0.5 before the centre is taken (sleap-nn's order).
        """
        pixels = mask_pixels(masks.mask(k), masks.scale[k], masks.offset[k], frame_hw)
        if eff != 1.0:
            pre = self.preprocessing
            grid = torch.from_numpy(pixels.astype(np.float32))[None, None]
            pixels = size_match(grid, pre.max_height, pre.max_width)[0][0, 0].numpy() > 0.5
        return mask_center(pixels, self.settings.crop_centering), pixels

    def embed_masks(self, frames: np.ndarray | torch.Tensor, masks: MaskSet) -> np.ndarray:
        """Vectors of mask detections: ``(M, D)`` float32 in ``masks`` order, NaN rows for
        masks without a pixel (sleap-nn skips those).

        ``masks.frame`` indexes ``frames``; geometry as sleap-io's
        (``image = mask / scale + offset``). Decoded bool masks go in through
        :meth:`MaskSet.build` (frames, masks, scores, scales, offsets).
        """
        x = as_nchw(frames)
        frame_hw = (int(x.shape[-2]), int(x.shape[-1]))
        out = np.full((len(masks), self.dim), np.nan, np.float32)
        keep = np.flatnonzero(masks.areas() > 0)
        if keep.size == 0:
            return out
        with stage("crop extraction"):
            sized, eff = self.sized_frames(frames)
            geometry = [self.mask_geometry(masks, int(k), frame_hw, eff) for k in keep]
            centers = torch.tensor([g[0] for g in geometry], dtype=torch.float64)
            frame = torch.as_tensor(masks.frame[keep].astype(np.int64))
            crops = sample_crops(sized, frame, centers.to(torch.float32), self.crop_size)
            crop_masks = None
            if self.settings.burn_in:
                images = torch.from_numpy(np.stack([g[1] for g in geometry]))[:, None]
                images = images.to(torch.uint8) * 255
                index = torch.arange(len(keep))
                sampled = sample_crops(images, index, centers.to(torch.float32), self.crop_size)
                crop_masks = sampled > 127  # sleap-nn: crop / 255 > 0.5
        out[keep] = self.embed_crops(crops, crop_masks)
        return out

    # ------------------------------------------------------------------ frames
    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        raise UsageError(
            "an embedding model describes detections, it does not find them: give it a "
            "labels file with instances or masks, or add a centroid model (--model DIR)"
        )

    def warmup(self, frame_shape: tuple[int, int, int, int], iterations: int = 1) -> None:
        """Warm on zero crops (frames alone cannot be embedded)."""
        crop = self.crop_size
        crops = torch.zeros((self.crop_batch, self.input_channels, crop, crop), dtype=torch.uint8)
        for _ in range(iterations):
            self.embed_crops(crops, torch.ones((self.crop_batch, 1, crop, crop), dtype=torch.bool))


class TopDownEmbeddingLayer(TopDownLayer):
    """A centroid (or box) model finds the animals; each gets a crop and a vector.

    Instances have one node, ``centroid``, at the centroid in original pixels, scored
    by the centroid's peak value (point and instance score alike), as sleap-nn's
    fused output writes them.
    """

    model_type = "topdown_embedding"

    def __init__(
        self,
        centroid: CentroidLayer,
        instance: EmbeddingLayer,
        options: PredictOptions | None = None,
    ) -> None:
        super().__init__(centroid, instance, options)  # type: ignore[arg-type]
        self.instance: EmbeddingLayer = instance  # type: ignore[assignment]
        self.config = replace(
            instance.config,
            node_names=(CENTROID_NODE,),
            edges=(),
            symmetries=(),
            part_names=(CENTROID_NODE,),
            skeleton_name=CENTROID_NODE,
            anchor_part=None,
            paf_edges=(),
        )

    def preprocess(
        self, frames: np.ndarray | torch.Tensor, keep_source: bool = True
    ) -> tuple[torch.Tensor, PreprocInfo]:
        """The centroid model's input, plus the frames size-matched for the crops."""
        x, info = self.centroid.preprocess(frames, keep_source=False)
        sized, eff = self.instance.sized_frames(frames)
        return x, replace(info, source=sized, crop_eff_scale=np.full(x.shape[0], eff))

    def postprocess(self, outputs: dict[str, torch.Tensor], info: PreprocInfo) -> BatchPredictions:
        if info.source is None:
            raise ValueError("top-down postprocessing needs PreprocInfo.source (the frames)")
        cents, info, boxes = self.stage1(outputs, info)
        valid = cents.valid.cpu().numpy()
        values = cents.values.cpu().numpy().astype(np.float32)
        eff = info.eff_scale.astype(np.float32)
        sized_pts = cents.points.cpu().numpy().astype(np.float32)
        original = sized_pts / eff[:, None, None]
        batch, width = valid.shape
        embeddings = np.full((batch, width, self.instance.dim), np.nan, np.float32)
        frame, slot = np.nonzero(valid)
        if len(frame):
            with stage("crop extraction"):
                crops = sample_crops(
                    info.source,
                    torch.as_tensor(frame),
                    torch.as_tensor(sized_pts[frame, slot]),
                    self.crop_size,
                )
            ones = torch.ones((len(frame), 1, *crops.shape[-2:]), dtype=torch.bool)
            embeddings[frame, slot] = self.instance.embed_crops(crops, ones)
        points = np.where(valid[:, :, None], original, np.nan)[:, :, None, :]
        scores = np.where(valid, values, np.nan)
        preds = BatchPredictions(
            points=points.astype(np.float32),
            point_scores=scores[:, :, None].astype(np.float32),
            instance_scores=values,
            valid=valid,
            embeddings=embeddings,
        )
        preds.extras["centroids"] = original.astype(np.float32)
        self.add_boxes(preds, boxes)
        return preds

    def warmup(self, frame_shape: tuple[int, int, int, int], iterations: int = 1) -> None:
        """Warm both stages: zero frames have no centroids, so stage 2 is warmed on its own."""
        super(TopDownLayer, self).warmup(frame_shape, iterations)
        self.instance.warmup(frame_shape, iterations)
