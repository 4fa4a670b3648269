"""SAM models that answer :mod:`sleap_infer.sam.recipe`'s prompts: SAM1 and SAM3.

SAM1 (``--mask-backend sam``) is Meta's ``segment-anything`` network, built by
its own registry from a checkpoint (``vit_b``/``vit_l``/``vit_h``). Its
``SamPredictor`` is re-done here, step for step, instead of imported: the
package's ``__init__`` imports torchvision for one PIL resize, and a CPU torch
next to a CUDA torchvision (what PyPI serves) cannot import torchvision at all.
The steps are the predictor's: resize the longest side to 1024 with PIL's
bilinear filter (what torchvision's ``resize`` does on a PIL image), normalise
and pad, encode once per frame, scale prompt coordinates by the same ratios,
decode three candidates, upsample them to the frame, threshold at 0.

SAM3 (``--mask-backend sam3``) runs through transformers'
``Sam3TrackerModel`` from a local folder (``--sam3-model-id``), never a hub
download at run time; its masks get sleap-nn's speckle cleanup. Its processor is
re-done for the same reason as SAM1's predictor: transformers builds
``Sam3ImageProcessor`` on torchvision only (:class:`Sam3Processor`).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sleap_infer.core.errors import ModelError, UsageError
from sleap_infer.sam.recipe import IOU_FLOOR, Prompt, clahe_rgb, gray, pick

SAM_EXTRA = "pip install 'sleap-infer[sam]'"
SAM_MODEL_TYPES = ("vit_b", "vit_l", "vit_h")


def sam_registry() -> dict[str, Any]:
    """``segment_anything``'s ``sam_model_registry``, loaded without its package
    ``__init__`` (which needs torchvision) where that import fails."""
    try:
        from segment_anything import sam_model_registry

        return dict(sam_model_registry)
    except ImportError as exc:
        if importlib.util.find_spec("segment_anything") is None:
            raise UsageError(
                f"--mask-backend sam needs the segment-anything package: {SAM_EXTRA}"
            ) from exc
    except RuntimeError:  # a CUDA torchvision next to a CPU torch
        pass
    for name in [
        m for m in sys.modules if m == "segment_anything" or m.startswith("segment_anything.")
    ]:
        del sys.modules[name]
    spec = importlib.util.find_spec("segment_anything")
    assert spec is not None and spec.submodule_search_locations is not None
    package = importlib.util.module_from_spec(spec)  # the package, its __init__ not run
    sys.modules["segment_anything"] = package
    build = importlib.import_module("segment_anything.build_sam")
    return dict(build.sam_model_registry)


def load_sam(checkpoint: str | Path | None, model_type: str, device: str) -> Any:
    """The SAM1 network of ``model_type`` with ``checkpoint``'s weights, on ``device``."""
    if model_type not in SAM_MODEL_TYPES:
        raise UsageError(
            f"--sam-model-type {model_type}: expected one of {', '.join(SAM_MODEL_TYPES)}"
        )
    if checkpoint is None:
        raise UsageError("--mask-backend sam needs --sam-checkpoint (a SAM .pth checkpoint)")
    path = Path(checkpoint).expanduser()
    if not path.is_file():
        raise UsageError(f"--sam-checkpoint {path}: no such file")
    registry = sam_registry()
    try:
        model = registry[model_type](checkpoint=str(path))
    except (RuntimeError, KeyError) as exc:  # wrong model type for these weights
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(
            f"--sam-checkpoint {path}: not a SAM {model_type} checkpoint ({first})"
        ) from exc
    return model.to(device).eval()


class SamPredictor:
    """``segment_anything.SamPredictor``'s ``set_image``/``predict`` (see the module docstring)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.size = int(model.image_encoder.img_size)
        self.features: Any = None
        self.original: tuple[int, int] = (0, 0)
        self.input: tuple[int, int] = (0, 0)

    def _shape(self, h: int, w: int) -> tuple[int, int]:
        scale = self.size * 1.0 / max(h, w)
        return int(h * scale + 0.5), int(w * scale + 0.5)

    def _coords(self, xy: np.ndarray) -> np.ndarray:
        (old_h, old_w), (new_h, new_w) = self.original, self.input
        out = np.array(xy, dtype=float)
        out[..., 0] = out[..., 0] * (new_w / old_w)
        out[..., 1] = out[..., 1] * (new_h / old_h)
        return out

    def set_image(self, rgb: np.ndarray) -> None:
        import torch
        from PIL import Image

        h, w = rgb.shape[:2]
        new_h, new_w = self._shape(h, w)
        resized = np.array(Image.fromarray(rgb).resize((new_w, new_h), Image.Resampling.BILINEAR))
        device = next(self.model.parameters()).device
        x = torch.as_tensor(resized, device=device).permute(2, 0, 1).contiguous()[None]
        self.original, self.input = (h, w), (new_h, new_w)
        with torch.no_grad():
            self.features = self.model.image_encoder(self.model.preprocess(x))

    def predict(self, prompt: Prompt) -> tuple[np.ndarray, np.ndarray]:
        """The three candidate masks ``(3, H, W)`` bool and their predicted IoUs."""
        import torch

        device = self.features.device
        points = None
        if prompt.points is not None:
            xy = self._coords(prompt.points.astype(np.float32))
            coords = torch.as_tensor(xy, dtype=torch.float, device=device)[None]
            labels = torch.ones((1, len(xy)), dtype=torch.int, device=device)
            points = (coords, labels)
        boxes = None
        if prompt.box is not None:
            b = self._coords(prompt.box.astype(np.float32).reshape(-1, 2, 2)).reshape(-1, 4)
            boxes = torch.as_tensor(b, dtype=torch.float, device=device)[None]
        with torch.no_grad():
            sparse, dense = self.model.prompt_encoder(points=points, boxes=boxes, masks=None)
            low_res, iou = self.model.mask_decoder(
                image_embeddings=self.features,
                image_pe=self.model.prompt_encoder.get_dense_pe(),
                sparse_prompt_embeddings=sparse,
                dense_prompt_embeddings=dense,
                multimask_output=True,
            )
            masks = self.model.postprocess_masks(low_res, self.input, self.original)
            masks = masks > self.model.mask_threshold
        return masks[0].cpu().numpy(), iou[0].cpu().numpy()


class Sam1:
    """Masks and raw predicted IoUs for one frame's prompts (one encode per frame)."""

    iou_floor = IOU_FLOOR["sam"]

    def __init__(self, model: Any) -> None:
        self.predictor = SamPredictor(model)

    def masks(
        self, image: np.ndarray, prompts: Sequence[Prompt]
    ) -> tuple[list[np.ndarray], list[float]]:
        if not prompts:
            return [], []
        self.predictor.set_image(clahe_rgb(image))
        out_masks, out_scores = [], []
        for prompt in prompts:
            ms, sc = self.predictor.predict(prompt)
            b = pick(ms, sc, prompt.reject_box)
            out_masks.append(ms[b].astype(bool))
            out_scores.append(float(sc[b]))
        return out_masks, out_scores


def _cleanup_speckle(mask: np.ndarray, seeds: np.ndarray, radius: int = 3) -> np.ndarray:
    """sleap-nn's SAM3 cleanup: open + close, keep the components a seed point lies in
    (else the largest; the raw mask where opening erased everything)."""
    import cv2
    from scipy import ndimage

    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return mask
    k = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
    mm = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_OPEN, k)
    mm = cv2.morphologyEx(mm, cv2.MORPH_CLOSE, k)
    labels_arr, n = ndimage.label(mm)
    if n == 0:
        return mask
    h, w = mm.shape
    keep: set[int] = set()
    for x, y in np.asarray(seeds, dtype=np.float32).reshape(-1, 2):
        xi, yi = round(float(x)), round(float(y))
        if 0 <= yi < h and 0 <= xi < w and labels_arr[yi, xi] > 0:
            keep.add(int(labels_arr[yi, xi]))
    if not keep:
        sizes = ndimage.sum(np.ones_like(labels_arr), labels_arr, range(1, n + 1))
        keep = {int(np.argmax(sizes)) + 1}
    return np.isin(labels_arr, list(keep))


def _seeds(prompt: Prompt) -> np.ndarray:
    if prompt.points is not None and len(prompt.points):
        return np.asarray(prompt.points, dtype=np.float32).reshape(-1, 2)
    b = np.asarray(prompt.reject_box, dtype=np.float32).reshape(4)
    return np.array([[(b[0] + b[2]) / 2.0, (b[1] + b[3]) / 2.0]], dtype=np.float32)


SAM3_PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json")


@dataclass(frozen=True)
class Sam3Processor:
    """transformers' ``Sam3TrackerProcessor``, re-done for the one image and the calls
    sleap-nn makes. Its image processor (``Sam3ImageProcessor``) exists only on
    torchvision, which a CPU torch cannot import next to PyPI's CUDA build (the reason
    SAM1's predictor is re-done too), so the processor class cannot even be built here.
    The steps are its steps: the RGB frame resized to ``size`` (bilinear, antialiased,
    rounded back to 8 bits as torchvision does on a uint8 tensor), rescaled by
    ``rescale`` and normalised; prompt coordinates scaled by ``target_size`` over the
    frame's sides, each object's points padded to the longest with ``pad`` (points and
    labels alike); masks upsampled bilinearly to the frame and thresholded at 0."""

    size: tuple[int, int] = (1008, 1008)
    target_size: int = 1008
    mean: tuple[float, ...] = (0.5, 0.5, 0.5)
    std: tuple[float, ...] = (0.5, 0.5, 0.5)
    rescale: float = 1 / 255
    pad: int = -10

    @classmethod
    def from_folder(cls, path: Path, image_size: int) -> Sam3Processor:
        """The settings ``Sam3TrackerProcessor.save_pretrained`` wrote into ``path``
        (``processor_config.json``, its image processor nested or in
        ``preprocessor_config.json``); missing ones take ``Sam3ImageProcessor``'s
        defaults, the size the model's own ``image_size``."""
        found: dict[str, Any] = {}
        for name in reversed(SAM3_PROCESSOR_FILES):
            file = path / name
            if not file.is_file():
                continue
            try:
                data = json.loads(file.read_text())
            except (OSError, ValueError) as exc:
                raise ModelError(f"--sam3-model-id {file}: not readable JSON ({exc})") from exc
            if isinstance(data, dict):
                found.update(data.get("image_processor") or {})
                found.update(data)
        size = found.get("size") or {}
        h = int(size.get("height", image_size)) if isinstance(size, dict) else image_size
        w = int(size.get("width", image_size)) if isinstance(size, dict) else image_size
        do_rescale, do_normalize = found.get("do_rescale", True), found.get("do_normalize", True)
        return cls(
            size=(h, w),
            target_size=int(found.get("target_size") or h),
            mean=tuple(found.get("image_mean", cls.mean)) if do_normalize else (0.0, 0.0, 0.0),
            std=tuple(found.get("image_std", cls.std)) if do_normalize else (1.0, 1.0, 1.0),
            rescale=float(found.get("rescale_factor", cls.rescale)) if do_rescale else 1.0,
            pad=int(found.get("point_pad_value", cls.pad)),
        )

    def pixels(self, rgb: np.ndarray) -> Any:
        """``pixel_values`` ``(1, 3, h, w)`` float32 for an ``(H, W, 3)`` uint8 frame."""
        import torch
        import torch.nn.functional as F

        x = torch.as_tensor(np.ascontiguousarray(rgb)).permute(2, 0, 1)[None].float()
        x = F.interpolate(x, size=self.size, mode="bilinear", align_corners=False, antialias=True)
        x = x.round().clamp(0, 255) * self.rescale
        mean = torch.tensor(self.mean, dtype=torch.float32).view(1, -1, 1, 1)
        std = torch.tensor(self.std, dtype=torch.float32).view(1, -1, 1, 1)
        return (x - mean) / std

    def prompts(self, prompts: Sequence[Prompt], hw: tuple[int, int]) -> dict[str, Any]:
        """``input_points``/``input_labels`` (where a prompt has points) and
        ``input_boxes`` (where one has a box), one object per prompt."""
        import torch

        sx, sy = self.target_size / hw[1], self.target_size / hw[0]
        out: dict[str, Any] = {}
        pts = [np.zeros((0, 2)) if p.points is None else np.asarray(p.points) for p in prompts]
        longest = max(len(p) for p in pts)
        if longest:  # sleap-nn hands box-only prompts empty point lists (see Sam3.masks)
            points = np.full((1, len(pts), longest, 2), float(self.pad), dtype=np.float32)
            labels = np.full((1, len(pts), longest), self.pad, dtype=np.int64)
            for j, p in enumerate(pts):
                points[0, j, : len(p)] = np.asarray(p, dtype=np.float32) * (sx, sy)
                labels[0, j, : len(p)] = 1
            out["input_points"] = torch.from_numpy(points)
            out["input_labels"] = torch.from_numpy(labels)
        if any(p.box is not None for p in prompts):
            boxes = [np.asarray(p.box, dtype=np.float32).reshape(4) for p in prompts]
            scaled = np.stack(boxes) * np.array([sx, sy, sx, sy], dtype=np.float32)
            out["input_boxes"] = torch.from_numpy(scaled[None].astype(np.float32))
        return out

    def masks(self, pred_masks: Any, hw: tuple[int, int]) -> np.ndarray:
        """``(objects, candidates, H, W)`` bool: ``post_process_masks`` with ``binarize``."""
        import torch.nn.functional as F

        up = F.interpolate(pred_masks[0], hw, mode="bilinear", align_corners=False)
        return np.asarray((up > 0.0).cpu().numpy()).astype(bool)


def load_sam3(model_dir: str, device: str) -> tuple[Any, Sam3Processor]:
    """transformers' SAM3 tracker model from a local folder (no download), and the
    processor settings saved beside it (:class:`Sam3Processor`)."""
    path = Path(model_dir).expanduser()
    if not path.is_dir():
        raise UsageError(
            f"--sam3-model-id {model_dir}: not a local folder; download the model first "
            "(e.g. 'hf download facebook/sam3 --local-dir sam3') and pass that folder"
        )
    try:
        from transformers import Sam3TrackerModel
    except (ImportError, RuntimeError) as exc:
        # transformers hides why (a CUDA torchvision next to a CPU torch, say): name it.
        cause = exc.__cause__ or exc
        why = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        raise UsageError(
            "--mask-backend sam3 needs transformers>=5 with its SAM3 tracker importable "
            f"(pip install 'sleap-infer[hf]'); here it fails: {why}"
        ) from exc
    import torch

    try:
        model: Any = Sam3TrackerModel.from_pretrained(str(path), local_files_only=True)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(
            f"--sam3-model-id {path}: not a SAM3 tracker model folder ({first})"
        ) from exc
    processor = Sam3Processor.from_folder(path, int(model.config.vision_config.image_size))
    dtype = torch.bfloat16  # sleap-nn runs SAM3 in bfloat16
    return model.to(device=device, dtype=dtype).eval(), processor


class Sam3:
    """sleap-nn's SAM3 backend: all of a frame's prompts in one batched pass."""

    iou_floor = IOU_FLOOR["sam3"]

    def __init__(self, model: Any, processor: Sam3Processor, device: str) -> None:
        self.model, self.processor, self.device = model, processor, device

    def masks(
        self, image: np.ndarray, prompts: Sequence[Prompt]
    ) -> tuple[list[np.ndarray], list[float]]:
        """As sleap-nn's ``Sam3Backend.masks``, but a frame of box-only prompts goes
        without points: sleap-nn hands transformers empty point lists there, which its
        processor refuses (``--sam-prompt-mode box`` with sam3 fails in sleap-nn 0.3.5)."""
        import torch

        img = gray(image)
        h, w = img.shape
        if not prompts:
            return [], []
        inputs = {"pixel_values": self.processor.pixels(clahe_rgb(img))}
        inputs.update(self.processor.prompts(prompts, (h, w)))
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        with torch.no_grad():
            out = self.model(**inputs, multimask_output=True)
        cands = self.processor.masks(out.pred_masks, (h, w))
        scores = np.asarray(out.iou_scores.float().cpu().numpy()[0])
        out_masks, out_scores = [], []
        for j, p in enumerate(prompts):
            b = pick(cands[j], scores[j], p.reject_box)
            out_masks.append(_cleanup_speckle(cands[j][b], _seeds(p)).astype(bool))
            out_scores.append(float(scores[j][b]))
        for m in out_masks:
            if m.shape != (h, w):
                raise ModelError(f"SAM3 returned a {m.shape} mask for a {(h, w)} frame")
        return out_masks, out_scores
