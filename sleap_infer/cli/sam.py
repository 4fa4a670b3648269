"""``infer predict --mask-backend sam|sam3``: masks for the poses of a ``.slp``, no pose model.

sleap-nn 0.3.5's ``predict --mask_backend`` spelled ours (its underscore
spellings are aliases, :mod:`sleap_infer.cli.sleap_nn_flags`). The run is
:func:`sleap_infer.sam.run.segment`; this module checks the command line
around it (one input, no ``-m``, no tracking: sleap-nn refuses those too) and
prints a line per frame, since a ViT on a CPU takes seconds for each.
"""

from __future__ import annotations

import enum
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from sleap_infer.cli.console import console
from sleap_infer.core.errors import UsageError


class MaskBackend(str, enum.Enum):
    sam = "sam"
    sam3 = "sam3"


class PromptMode(str, enum.Enum):
    pose = "pose"
    centroid = "centroid"
    box = "box"


MaskBackendOption = Annotated[
    MaskBackend | None,
    typer.Option(
        "--mask-backend",
        case_sensitive=False,
        help="Masks for the poses of an input .slp with Segment Anything instead of "
        "predicting: sam (SAM1, needs --sam-checkpoint and pip install 'sleap-infer[sam]') "
        "or sam3 (transformers, a local --sam3-model-id folder). No -m.",
        show_default=False,
    ),
]
SamCheckpoint = Annotated[
    Path | None,
    typer.Option(
        "--sam-checkpoint", metavar="PTH", help="SAM1 checkpoint (.pth) for --mask-backend sam."
    ),
]
SamModelType = Annotated[
    str,
    typer.Option(
        "--sam-model-type", metavar="vit_b|vit_l|vit_h", help="SAM1 architecture of the checkpoint."
    ),
]
SamPromptMode = Annotated[
    PromptMode,
    typer.Option(
        "--sam-prompt-mode",
        help="pose: the visible keypoints and their padded box; centroid: one point "
        "(--sam-anchor-ind's node, else the keypoints' mean); box: the padded box alone.",
    ),
]
SamAnchorInd = Annotated[
    int | None,
    typer.Option(
        "--sam-anchor-ind", metavar="NODE", help="Node index for --sam-prompt-mode centroid."
    ),
]
SamDisjointify = Annotated[
    bool,
    typer.Option(
        "--sam-disjointify-masks",
        help="Give a pixel two masks claim to the instance with the nearest keypoint.",
    ),
]
Sam3ModelId = Annotated[
    str,
    typer.Option(
        "--sam3-model-id",
        metavar="DIR",
        help="Local folder of a transformers SAM3 model (e.g. a download of facebook/sam3); "
        "nothing is downloaded at run time.",
    ),
]
OverlayPath = Annotated[
    Path | None,
    typer.Option(
        "--overlay-path",
        metavar="PNG",
        help="--mask-backend: also draw the first frame's masks here (low scores in red).",
    ),
]

# predict's parameters that are this run's alone (never pipeline options).
SAM_PARAMS = frozenset(
    {
        "mask_backend",
        "sam_checkpoint",
        "sam_model_type",
        "sam_prompt_mode",
        "sam_anchor_ind",
        "sam_disjointify_masks",
        "sam3_model_id",
        "overlay_path",
    }
)

# Options of predict that mean nothing to a mask run; given, they are refused by name.
_POSE_ONLY = ("tracking", "video_index", "only_labeled_frames", "only_suggested_frames")
_POSE_ONLY_MORE = ("exclude_user_labeled", "only_predicted_frames", "merge_into_project")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def run_masks(params: dict[str, Any]) -> None:
    """The whole ``--mask-backend`` run from predict's parameters; exits 0 or raises."""
    from sleap_infer.sam.run import SamOptions, default_output, segment
    from sleap_infer.sources.frames import frame_ranges

    if params.get("model"):
        raise UsageError("--mask-backend masks the poses of the input .slp: drop -m/--model")
    for name in _POSE_ONLY + _POSE_ONLY_MORE:
        if params.get(name):
            raise UsageError(f"{_flag(name)} is not supported with --mask-backend")
    formats = ",".join(str(f) for f in params.get("output_format") or ["slp"]).split(",")
    if any(f.strip() != "slp" for f in formats):
        raise UsageError("--mask-backend writes .slp only (masks are not in the other formats)")
    videos = list(params["videos"])
    if len(videos) != 1:
        raise UsageError(f"--mask-backend takes one .slp input, got {len(videos)}")
    source = Path(videos[0]).expanduser()
    if not source.is_file():
        raise UsageError(f"{source}: no such file")
    output = params.get("output") or default_output(source)
    device = str(params.get("device") or "auto")
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    options = SamOptions(
        backend=params["mask_backend"].value,
        checkpoint=None if params.get("sam_checkpoint") is None else str(params["sam_checkpoint"]),
        model_type=params["sam_model_type"],
        prompt_mode=params["sam_prompt_mode"].value,
        anchor_ind=params.get("sam_anchor_ind"),
        disjointify=bool(params.get("sam_disjointify_masks")),
        sam3_model_id=params["sam3_model_id"],
        overlay_path=params.get("overlay_path"),
    )
    spec = params.get("frames")
    frames = None if spec is None else frame_ranges(spec)
    quiet = bool(params.get("quiet")) or getattr(params.get("progress"), "value", "") == "none"
    start = time.perf_counter()

    def on_frame(done: int, total: int, frame_idx: int) -> None:
        if not quiet:
            rate = (time.perf_counter() - start) / done
            console.print(
                f"masks: frame {frame_idx} ({done}/{total}, {rate:.1f} s/frame)", highlight=False
            )

    n_frames, n_masks = segment(
        source,
        Path(output),
        options,
        device,
        frames=frames,
        overwrite=bool(params.get("overwrite")),
        on_frame=on_frame,
    )
    console.print(
        f"wrote {escape(str(output))}: {n_masks} masks on {n_frames} frames "
        f"({options.backend}, {options.prompt_mode} prompts, {device})",
        highlight=False,
        soft_wrap=True,
    )
    if options.overlay_path is not None and options.overlay_path.exists():
        console.print(f"overlay: {escape(str(options.overlay_path))}", highlight=False)
