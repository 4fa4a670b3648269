"""Masks for the instances of a pose ``.slp``, written to a new ``.slp`` (``--mask-backend``).

As sleap-nn 0.3.5 does it (``run_sam_segmentation``): the poses come from the
input file, not from a model run; every labeled frame (or those ``--frames``
names) is encoded once and each instance with a visible keypoint becomes one
prompt; the masks are ``sio.PredictedSegmentationMask`` at frame resolution
(identity scale/offset) carrying the raw predicted IoU as ``score``, the
instance's track and, for predicted instances only, the instance itself (a
user's instance is an annotation, not a prediction). Frames keep their
instances and are kept even where SAM found nothing, so a reviewer sees every
frame. The output references the input's images instead of embedding them.

Unlike sleap-nn, a file that exists is never replaced without ``--overwrite``,
and the input never: a ``.pkg.slp`` holds the frames the masks are drawn on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from sleap_infer.core.errors import OutputExistsError, UsageError
from sleap_infer.sam.recipe import PROMPT_MODES, Prompt, disjointify, gray, prompt_for


class MaskModel(Protocol):
    iou_floor: float

    def masks(
        self, image: np.ndarray, prompts: Sequence[Prompt]
    ) -> tuple[list[np.ndarray], list[float]]: ...


@dataclass(frozen=True)
class SamOptions:
    """The ``--mask-backend`` run's choices, with sleap-nn's defaults."""

    backend: str = "sam"
    checkpoint: str | None = None
    model_type: str = "vit_h"
    prompt_mode: str = "pose"
    anchor_ind: int | None = None
    disjointify: bool = False
    sam3_model_id: str = "facebook/sam3"
    overlay_path: Path | None = None


def default_output(source: Path) -> Path:
    """``x.pkg.slp`` -> ``x.pkg.predictions.slp`` beside it (infer's default output name)."""
    return source.with_name(source.name.removesuffix(".slp") + ".predictions.slp")


def check_paths(source: Path, targets: Sequence[Path], overwrite: bool) -> None:
    """Refuse, before the model loads, to write over the input or an existing file."""
    src = source.resolve()
    for target in targets:
        if target.resolve() == src:
            raise UsageError(f"{target}: is the input; write the masks to another file (-o)")
        if target.exists() and not overwrite:
            raise OutputExistsError(f"{target}: exists; pass --overwrite to replace it")


def build_model(options: SamOptions, device: str) -> MaskModel:
    """The chosen backend, loaded (every model problem is one line, raised here)."""
    from sleap_infer.sam import models

    if options.backend == "sam":
        return models.Sam1(models.load_sam(options.checkpoint, options.model_type, device))
    if options.backend == "sam3":
        model, processor = models.load_sam3(options.sam3_model_id, device)
        return models.Sam3(model, processor, device)
    raise UsageError(f"--mask-backend {options.backend}: expected sam or sam3")


def frame_masks(
    model: MaskModel, image: np.ndarray, instances: Sequence[Any], options: SamOptions
) -> list[dict[str, Any]]:
    """One frame's masks, as sleap-nn's ``SamSegmentationLayer.masks_for_frame`` makes them."""
    import sleap_io as sio

    img = gray(image)
    hw = (int(img.shape[0]), int(img.shape[1]))
    prompts, kept = [], []
    for inst in instances:
        points = np.asarray(inst.numpy()[:, :2], dtype=np.float32)
        prompt = prompt_for(options.prompt_mode, points, hw, options.anchor_ind)
        if prompt is None:
            continue
        prompts.append(prompt)
        kept.append((inst, points[np.isfinite(points).all(axis=1)]))
    if not prompts:
        return []
    masks, scores = model.masks(img, prompts)
    if options.disjointify and len(masks) >= 2:
        masks = disjointify(masks, [k for _, k in kept])
    out = []
    for (inst, _), mask, score in zip(kept, masks, scores, strict=True):
        if not mask.any():
            continue
        ts = getattr(inst, "tracking_score", None)
        out.append(
            {
                "mask": np.ascontiguousarray(mask, dtype=bool),
                "score": float(score),
                "instance": inst if isinstance(inst, sio.PredictedInstance) else None,
                "track": getattr(inst, "track", None),
                "tracking_score": None if ts is None else float(ts),
            }
        )
    return out


def to_sio(entry: dict[str, Any]) -> Any:
    import sleap_io as sio

    extra = {k: entry[k] for k in ("instance", "track", "tracking_score") if entry[k] is not None}
    return sio.PredictedSegmentationMask.from_numpy(
        entry["mask"], score=entry["score"], scale=(1.0, 1.0), offset=(0.0, 0.0), **extra
    )


def segment(
    source: Path,
    output: Path,
    options: SamOptions,
    device: str,
    frames: Sequence[tuple[int, int | None]] | None = None,
    overwrite: bool = False,
    model: MaskModel | None = None,
    on_frame: Callable[[int, int, int], None] | None = None,
) -> tuple[int, int]:
    """Write ``output`` (and the overlay); returns (frames, masks). ``on_frame(done, total,
    frame_idx)`` is called after each frame: a ViT on a CPU takes seconds per frame.
    ``frames``: inclusive ranges of frame indices (``hi`` None: to the end), as
    ``--frames`` gives them; labeled frames outside them are left out (as sleap-nn)."""
    import sleap_io as sio

    if options.prompt_mode not in PROMPT_MODES:
        raise UsageError(f"--sam-prompt-mode {options.prompt_mode}: expected pose, centroid or box")
    if source.suffix != ".slp":
        raise UsageError(
            f"{source}: --mask-backend masks the poses of a .slp file (give one, not a video)"
        )
    targets = [output] + ([options.overlay_path] if options.overlay_path else [])
    check_paths(source, targets, overwrite)
    labels = sio.load_slp(str(source))
    if model is None:
        model = build_model(options, device)
    chosen = [
        lf
        for lf in labels.labeled_frames
        if frames is None
        or any(lo <= lf.frame_idx and (hi is None or lf.frame_idx <= hi) for lo, hi in frames)
    ]
    new_frames, n_masks = [], 0
    for i, lf in enumerate(chosen):
        masks = [to_sio(e) for e in frame_masks(model, lf.image, lf.instances, options)]
        n_masks += len(masks)
        new_frames.append(
            sio.LabeledFrame(
                video=lf.video, frame_idx=lf.frame_idx, instances=list(lf.instances), masks=masks
            )
        )
        if on_frame is not None:
            on_frame(i + 1, len(chosen), int(lf.frame_idx))
    out = sio.Labels(
        videos=list(labels.videos), skeletons=list(labels.skeletons), labeled_frames=new_frames
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    out.save(str(output), embed=False, restore_original_videos=False)
    if options.overlay_path is not None:
        from sleap_infer.sam.overlay import save_overlay

        save_overlay(out, options.overlay_path, model.iou_floor)
    return len(new_frames), n_masks
