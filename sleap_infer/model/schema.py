"""Every key of sleap-nn 0.3.5's training-config schema, and what inference does with it.

sleap-nn keeps adding config keys; a key we do not know may change the forward
pass (``use_sigmoid_activation`` did: its maps were logits here, probabilities
there). So nothing is dropped silently: each key of sleap-nn 0.3.5's
``model_config`` and ``data_config.preprocessing`` has a verdict here:

* ``honour``: read, and inference does what sleap-nn does with it;
* ``not needed``: training-only, bookkeeping, or read by sleap-nn only in a mode
  sleap_infer does not offer (ground-truth-centroid crops);
* ``refuse``: changes sleap-nn's predictions in a way not reproduced here. Loading
  fails with one line naming the key and the model, when the value is one that
  matters (``refuse_if``); the default values load.

A key outside the schema is warned about once per process (:func:`check_keys`),
never dropped without a word. ``docs/config_keys.md`` is generated from this
table (:func:`markdown_table`); tests compare both with the key list read from
sleap-nn 0.3.5's source (``tools/sleap_nn_config_keys.py``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sleap_infer.core.errors import ConfigError

HONOUR = "honour"
NOT_NEEDED = "not needed"
REFUSE = "refuse"
VERDICTS = (HONOUR, NOT_NEEDED, REFUSE)
SCHEMA_VERSION = "0.3.5"


class UnknownConfigKeyWarning(UserWarning):
    """A ``training_config.yaml`` key that sleap-nn 0.3.5's schema does not have."""


@dataclass(frozen=True)
class KeyRule:
    verdict: str
    note: str
    refuse_if: Callable[[Any], bool] | None = None  # REFUSE: the values that change predictions


def _set(value: Any) -> bool:
    return value not in (None, False, [], {})


def _not(default: Any) -> Callable[[Any], bool]:
    return lambda value: value is not None and value != default


RULES: dict[str, KeyRule] = {}


def _add(verdict: str, note: str, *keys: str, refuse_if: Callable[[Any], bool] | None = None):
    for key in keys:
        assert key not in RULES, key
        RULES[key] = KeyRule(verdict, note, refuse_if)


def _under(prefix: str, *names: str) -> list[str]:
    return [f"{prefix}.{n}" if n else prefix for n in names]


# ----------------------------------------------------------------- model_config
M = "model_config"
TRAIN_INIT = "weight initialisation for training; the checkpoint holds the weights"
_add(HONOUR, "the backbone block in use is the one non-null entry", f"{M}.backbone_config")
_add(HONOUR, "the model type is the one non-null head block", f"{M}.head_configs")
_add(NOT_NEEDED, TRAIN_INIT, *_under(M, "init_weights", "pretrained_backbone_weights"))
_add(NOT_NEEDED, TRAIN_INIT, f"{M}.pretrained_head_weights")
_add(HONOUR, "checked against the checkpoint's parameter count (`infer info`)", f"{M}.total_params")

B = f"{M}.backbone_config"
_DECODER = ("in_channels", "kernel_size", "filters_rate", "convs_per_block", "up_interpolate")
_add(
    HONOUR,
    "rebuilds the network (layouts sleap-nn itself cannot run are refused by backbones.py)",
    *_under(f"{B}.unet", "", "in_channels", "kernel_size", "filters", "filters_rate"),
    *_under(f"{B}.unet", "max_stride", "stem_stride", "middle_block", "up_interpolate"),
    *_under(f"{B}.unet", "stacks", "convs_per_block", "output_stride"),
)
for kind in ("convnext", "swint"):
    _add(NOT_NEEDED, "ImageNet weights to start training from", f"{B}.{kind}.pre_trained_weights")
    _add(
        NOT_NEEDED,
        "ignored by sleap-nn too: the max stride is stem stride x 16",
        f"{B}.{kind}.max_stride",
    )
    _add(HONOUR, "rebuilds the network", *_under(f"{B}.{kind}", "", "model_type", "arch"))
    _add(HONOUR, "rebuilds the network", *_under(f"{B}.{kind}", *_DECODER, "output_stride"))
    _add(HONOUR, "rebuilds the network", f"{B}.{kind}.stem_patch_stride")
_add(HONOUR, "rebuilds the network", f"{B}.convnext.stem_patch_kernel")
_add(HONOUR, "rebuilds the network", *_under(f"{B}.swint", "patch_size", "window_size"))

P = f"{B}.pretrained"
_PLAIN_VIT = (
    "plain-ViT pyramid neck (sleap-nn's Case C, also timm ViTs): rebuilds it; on "
    "hierarchical backbones sleap-nn ignores it, and so do we"
)
_add(
    HONOUR,
    "HuggingFace backbone through `transformers` (extra `hf`), config from the model folder "
    "or the local HF cache; see docs/pretrained_backbones.md",
    P,
    f"{P}.model_name",
    f"{P}.revision",
)
_add(REFUSE, "only `hf` exists in sleap-nn 0.3.5", f"{P}.source", refuse_if=_not("hf"))
_add(NOT_NEEDED, "whether training downloaded weights; the checkpoint holds them", f"{P}.weights")
_add(
    HONOUR,
    "decoder (Case A, or Case C's pyramid neck on a plain ViT) or pooled encoder (Case B); "
    "see the pretrained notes",
    f"{P}.mode",
)
_add(
    HONOUR,
    "a frozen encoder makes an unset embedding pool `avg` (sleap-nn's default)",
    f"{P}.freeze",
)
_add(
    HONOUR,
    "per-channel normalisation inside the network (mean/std buffers come from the checkpoint)",
    *_under(P, "normalize", "image_mean", "image_std"),
)
_add(HONOUR, "which HF stages feed the decoder", f"{P}.out_indices")
_add(HONOUR, "rebuilds the decoder", *_under(P, *_DECODER, "output_stride"))
_add(NOT_NEEDED, "sleap-nn probes the real deepest stride and uses that", f"{P}.max_stride")
_add(HONOUR, _PLAIN_VIT, *_under(P, "layers", "vit_neck", "neck_channels", "token_stride"))
_add(HONOUR, _PLAIN_VIT, *_under(P, "detail_stem", "detail_channels"))
_add(NOT_NEEDED, "training speed / learning rates", *_under(P, "gradient_checkpointing"))
_add(NOT_NEEDED, "training speed / learning rates", *_under(P, "encoder_lr_scale", "layer_decay"))

H = f"{M}.head_configs"
TARGETS = "training targets (Gaussian spread, loss weights)"
GT_ONLY = (
    "training crops; at inference sleap-nn reads it only for ground-truth-centroid crops, "
    "which sleap_infer does not offer"
)
STRUCT = "the head block: sets the model type and its heads"
_add(
    HONOUR,
    "head width, or the skeleton's nodes when null",
    *(
        f"{H}.{t}.confmaps.part_names"
        for t in (
            "single_instance",
            "centered_instance",
            "bottomup",
            "multi_class_bottomup",
            "multi_class_topdown",
        )
    ),
)
for t, subs in {
    "single_instance": ("confmaps",),
    "centroid": ("confmaps",),
    "centered_instance": ("confmaps",),
    "bottomup": ("confmaps", "pafs"),
    "multi_class_bottomup": ("confmaps", "class_maps"),
    "multi_class_topdown": ("confmaps", "class_vectors"),
    "bottomup_segmentation": ("segmentation", "center", "offsets"),
    "centered_instance_segmentation": ("segmentation",),
    "semantic_segmentation": ("segmentation",),
    "embedding": ("embedding",),
    "bbox_centernet": ("center", "size", "offset"),
    "bbox_ssd": ("ssd",),
}.items():
    _add(HONOUR, STRUCT, f"{H}.{t}", *(f"{H}.{t}.{s}" for s in subs))
    for s in subs:
        if t != "embedding":
            _add(
                HONOUR,
                "where the head reads the decoder; coordinates scale by it",
                f"{H}.{t}.{s}.output_stride",
            )
        if s in ("confmaps", "pafs", "class_maps", "center"):  # the blocks with a sigma
            _add(NOT_NEEDED, TARGETS, f"{H}.{t}.{s}.sigma")
        if not (
            t in ("single_instance", "centroid", "centered_instance_segmentation")
            or t == "embedding"
        ):
            _add(NOT_NEEDED, TARGETS, f"{H}.{t}.{s}.loss_weight")
_add(NOT_NEEDED, TARGETS, f"{H}.centered_instance_segmentation.segmentation.loss_weight")

C = f"{H}.centroid.confmaps"
_add(HONOUR, "the node a centroid-only output writes the centroid on", f"{C}.anchor_part")
_add(
    NOT_NEEDED,
    "how training placed the target centroid",
    *_under(C, "centroid_method", "centroid_fallback", "centroid_source"),
)
_add(
    HONOUR,
    "a sigmoid after the head's 1x1 conv (in the exported graph too)",
    f"{C}.use_sigmoid_activation",
)
_add(
    NOT_NEEDED,
    "focal training loss",
    *_under(C, "focal_loss_alpha", "focal_loss_beta", "focal_loss_pos_threshold"),
)
for t in ("centered_instance", "multi_class_topdown"):
    _add(NOT_NEEDED, GT_ONLY, *_under(f"{H}.{t}.confmaps", "anchor_part", "centroid_method"))
    _add(NOT_NEEDED, GT_ONLY, f"{H}.{t}.confmaps.centroid_fallback")
_add(
    NOT_NEEDED,
    GT_ONLY,
    *_under(
        f"{H}.centered_instance_segmentation.segmentation",
        "anchor_part",
        "centroid_method",
        "centroid_fallback",
    ),
)
_add(HONOUR, "PAF channels (skeleton edges when null)", f"{H}.bottomup.pafs.edges")
for t, s in (("multi_class_bottomup", "class_maps"), ("multi_class_topdown", "class_vectors")):
    _add(HONOUR, "identity class names (tracks)", f"{H}.{t}.{s}.classes")
    _add(
        REFUSE,
        "`identity` also stamps a sio.Identity per class on the output; only `track` is written",
        f"{H}.{t}.{s}.class_output",
        refuse_if=_not("track"),
    )
_add(
    HONOUR,
    "rebuilds the class-vector head",
    *_under(
        f"{H}.multi_class_topdown.class_vectors", "num_fc_layers", "num_fc_units", "global_pool"
    ),
)
_add(
    NOT_NEEDED,
    "segmentation training loss",
    *(
        f"{H}.{t}.segmentation.{k}"
        for t in ("bottomup_segmentation", "semantic_segmentation")
        for k in ("bce_weight", "dice_weight", "bce_pos_weight", "target_maxpool")
    ),
)

E = f"{H}.embedding.embedding"
_add(
    HONOUR,
    "rebuilds the embedding head",
    *_under(E, "embedding_dim", "num_fc_layers", "num_fc_units", "pool", "normalize"),
)
_add(HONOUR, "the embedding head reads the bottleneck whatever the stride", f"{E}.output_stride")
_add(HONOUR, "a frozen pretrained encoder makes an unset pool `avg`", f"{E}.freeze_backbone")
_add(
    HONOUR,
    "how each crop is centred",
    *_under(E, "anchor_part", "centroid_method", "centroid_fallback", "detection_mode"),
)
OBJ = f"{E}.objective"
_add(
    NOT_NEEDED,
    "contrastive training objective (the projection head is dropped at inference)",
    OBJ,
    *_under(OBJ, "positives", "positives.scope", "positives.aug_views", "negatives"),
    *_under(OBJ, "negatives.sources", "negatives.exclude_same_track"),
    *_under(OBJ, "negatives.restrict_same_video", "loss", "loss.name", "loss.temperature"),
    *_under(OBJ, "loss.margin", "sampler", "sampler.kind", "sampler.groups_per_batch"),
    *_under(OBJ, "sampler.samples_per_group", "use_projection", "projection_dim"),
)

BC = f"{H}.bbox_centernet.center"
_add(
    HONOUR, "box classes (one centre map each)", f"{BC}.categories", f"{H}.bbox_ssd.ssd.categories"
)
_add(
    NOT_NEEDED,
    "CenterNet training targets and focal loss",
    *_under(BC, "min_overlap", "focal_alpha", "focal_beta"),
)
S = f"{H}.bbox_ssd.ssd"
_add(
    HONOUR,
    "rebuilds the anchors and the SSD head",
    *_under(S, "num_levels", "anchor_sizes", "anchor_scales", "aspect_ratios", "box_variances"),
    *_under(S, "head_channels", "head_convs"),
)
_add(
    NOT_NEEDED,
    "SSD anchor matching and hard-negative mining (training)",
    *_under(S, "pos_iou_threshold", "neg_iou_threshold", "neg_pos_ratio"),
)

# ---------------------------------------------------- data_config.preprocessing
D = "data_config.preprocessing"
_add(
    HONOUR,
    "frame channels, size matching and input scale",
    *_under(D, "ensure_rgb", "ensure_grayscale", "max_height", "max_width", "scale"),
)
_add(HONOUR, "top-down crop side", f"{D}.crop_size")
_add(
    NOT_NEEDED,
    "training works out crop_size from these and writes it",
    *_under(D, "min_crop_size", "crop_padding"),
)
_add(
    HONOUR,
    "box-scaled crops (`crop_mode: bbox`)",
    *_under(D, "crop_mode", "crop_bbox_aspect", "crop_bbox_padding", "crop_bbox_min_size"),
)
_add(HONOUR, "embedding crops", *_under(D, "burn_in", "background_fill", "crop_centering"))
T = f"{D}.tiling"
_add(
    HONOUR,
    "tiled inference",
    *_under(T, "", "enabled", "tile_size", "overlap", "min_overlap_fraction", "blend"),
    *_under(T, "sigma_scale", "tile_batch_size"),
)
_add(
    NOT_NEEDED,
    "where sleap-nn keeps its stitching buffers (memory, not results)",
    *_under(T, "accumulator_device", "cpu_thresh"),
)
_add(
    NOT_NEEDED,
    "training tile sampling",
    *_under(T, "sampling", "tile_fg_fraction", "samples_per_frame", "center_jitter"),
    *_under(T, "min_visible_keypoints", "steps_per_epoch", "full_frame_pass"),
)

OLDER_KEYS: dict[str, KeyRule] = {
    f"{D}.crop_hw": KeyRule(HONOUR, "older sleap-nn's name for crop_size"),
    **{
        f"{B}.{kind}.block_contraction": KeyRule(
            REFUSE, "sleap-nn's builders do not read it", refuse_if=_set
        )
        for kind in ("unet", "convnext", "swint")
    },
}
"""Keys older sleap-nn configs carry that 0.3.5's schema no longer lists."""

ROOTS = ("model_config", "data_config.preprocessing")
_PARENTS = {key.rsplit(".", 1)[0] for key in (*RULES, *OLDER_KEYS)}
_warned: set[str] = set()


def rule(key: str) -> KeyRule | None:
    return RULES.get(key) or OLDER_KEYS.get(key)


def _walk(node: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    """Every ``(dotted key, value)`` under ``node``, descending only into schema sections
    (a ``convnext.arch`` or a skeleton is a value; an unknown block is one unknown key)."""
    if not isinstance(node, dict):
        return
    for name, value in node.items():
        key = f"{prefix}.{name}"
        yield key, value
        if key in _PARENTS:
            yield from _walk(value, key)


def config_keys(raw: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The audited keys a parsed ``training_config.yaml`` holds, with their values."""
    yield from _walk(raw.get("model_config"), "model_config")
    data = raw.get("data_config")
    if isinstance(data, dict):
        yield from _walk(data.get("preprocessing"), "data_config.preprocessing")


def check_keys(raw: dict[str, Any], source: str, own_types: frozenset[str] = frozenset()) -> None:
    """Refuse a key whose value changes predictions in a way not reproduced here; warn once
    per key (per process) about keys outside sleap-nn 0.3.5's schema.

    ``own_types`` are model types registered here beyond sleap-nn's: their head blocks are
    their registry entry's to read, not the schema's (a model type is one entry plus its
    layer, with no schema edit)."""
    own = {f"{H}.{t}" for t in own_types} - RULES.keys()
    for key, value in config_keys(raw):
        if own and ".".join(key.split(".")[:3]) in own:
            continue
        found = rule(key)
        if found is None:
            if key in _warned:
                continue
            _warned.add(key)
            warnings.warn(
                f"{source}: {key} is not a sleap-nn {SCHEMA_VERSION} config key; ignored "
                "(predictions may differ from the sleap-nn that wrote it)",
                UnknownConfigKeyWarning,
                stacklevel=3,
            )
            continue
        if found.verdict == REFUSE and found.refuse_if is not None and found.refuse_if(value):
            raise ConfigError(f"{key}: {value!r} is not supported ({found.note})")


def markdown_table() -> str:
    """``docs/config_keys.md``'s table: every 0.3.5 key, its verdict and why."""
    counts = {v: sum(r.verdict == v for r in RULES.values()) for v in VERDICTS}
    lines = [
        f"{len(RULES)} keys: " + ", ".join(f"{n} {v}" for v, n in counts.items()) + ".",
        "",
        "| key | affects inference | verdict | what we do |",
        "|---|---|---|---|",
    ]
    for key in sorted(RULES, key=lambda k: (not k.startswith("model_config"), k)):
        r = RULES[key]
        affects = "no" if r.verdict == NOT_NEEDED else "yes"
        lines.append(f"| `{key}` | {affects} | {r.verdict} | {r.note} |")
    return "\n".join(lines) + "\n"
