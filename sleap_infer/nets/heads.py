"""Output heads with sleap-nn's module names (``head_layers.{i}.{HeadName}.0``)."""

from __future__ import annotations

from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from sleap_infer.core.config import BoxDetector, HeadConfig


def make_spatial_head(head: HeadConfig, in_channels: int) -> nn.Sequential:
    """A 1x1 conv (+ sigmoid for class maps) wrapped the way sleap-nn nests it."""
    act: nn.Module = nn.Sigmoid() if head.activation == "sigmoid" else nn.Identity()
    conv = nn.Conv2d(in_channels, head.channels, kernel_size=1, padding="same")
    return nn.Sequential(OrderedDict({head.name: nn.Sequential(conv, act)}))


def _add_fc_layers(
    layers: OrderedDict[str, nn.Module], prefix: str, width: int, head: HeadConfig
) -> int:
    """The vector heads' hidden layers, ``{prefix}{i}_fc`` + ``_relu`` (sleap-nn's key
    names); returns the width they end with."""
    for i in range(head.num_fc_layers):
        layers[f"{prefix}{i}_fc"] = nn.Linear(width, head.num_fc_units)
        layers[f"{prefix}{i}_relu"] = nn.ReLU()
        width = head.num_fc_units
    return width


def make_class_vectors_head(head: HeadConfig, in_channels: int) -> nn.Sequential:
    """Global max pool -> MLP -> softmax over classes (outputs probabilities)."""
    layers: OrderedDict[str, nn.Module] = OrderedDict()
    if head.global_pool:
        layers["pre_classification_global_pool"] = nn.AdaptiveMaxPool2d(1)
    layers["pre_classification_flatten"] = nn.Flatten(start_dim=1)
    width = _add_fc_layers(layers, "pre_classification", in_channels, head)
    layers["ClassVectorsHead"] = nn.Linear(width, head.channels)
    layers["softmax"] = nn.Softmax(dim=-1)
    return nn.Sequential(layers)


class SSDPredictor(nn.Module):
    """sleap-nn's multi-level SSD head (keys ``towers.{l}.{2j}``, ``cls_preds.{l}``,
    ``box_preds.{l}``): per level a 3x3 conv + ReLU tower, then class and delta predictors.

    Returns ``(B, A_total, K + 1 + 4)``: per level, rows in (row, column, anchor) order,
    levels finest first, so row ``i`` pairs with anchor ``i`` of
    :func:`sleap_infer.ops.boxes.make_anchors`. Logit 0 is the background.
    """

    def __init__(self, boxes: BoxDetector, n_categories: int, in_channels: list[int]) -> None:
        super().__init__()
        anchors = boxes.anchors_per_location
        self.num_logits = n_categories + 1
        width = boxes.head_channels
        self.towers = nn.ModuleList()
        self.cls_preds = nn.ModuleList()
        self.box_preds = nn.ModuleList()
        for c_in in in_channels:
            layers: list[nn.Module] = []
            for j in range(boxes.head_convs):
                layers += [nn.Conv2d(c_in if j == 0 else width, width, 3, 1, 1), nn.ReLU()]
            c_out = width if boxes.head_convs > 0 else c_in
            self.towers.append(nn.Sequential(*layers))
            self.cls_preds.append(nn.Conv2d(c_out, anchors * self.num_logits, 3, 1, 1))
            self.box_preds.append(nn.Conv2d(c_out, anchors * 4, 3, 1, 1))

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        rows = []
        for feat, tower, cls_pred, box_pred in zip(
            features, self.towers, self.cls_preds, self.box_preds
        ):
            x = tower(feat)
            b = x.shape[0]
            cls = cls_pred(x).permute(0, 2, 3, 1).reshape(b, -1, self.num_logits)
            box = box_pred(x).permute(0, 2, 3, 1).reshape(b, -1, 4)
            rows.append(torch.cat([cls, box], dim=-1))
        return torch.cat(rows, dim=1)


GEM_P_RANGE = (1.0, 6.0)  # the exponent GeM actually uses is clamped into this
GEM_EPS = 1e-6


class GeM(nn.Module):
    """Generalised-mean pooling ``mean(clamp(x, 1e-6) ** p) ** (1 / p)`` -> ``(B, C)``.

    ``p`` is the checkpoint's learnt exponent (key ``pre_embedding_pool.p``, a scalar),
    clamped to [1, 6] at use, as sleap-nn 0.3.5 does (a stored value above 6 pools
    as 6). The input floor makes negative activations count as ~0.
    """

    def __init__(self, p: float = 3.0) -> None:
        super().__init__()
        self.p = nn.Parameter(torch.tensor(float(p)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        p = self.p.clamp(*GEM_P_RANGE)
        pooled = F.adaptive_avg_pool2d(x.clamp(min=GEM_EPS).pow(p), 1)
        return pooled.pow(1.0 / p).flatten(1)


class L2Norm(nn.Module):
    """``F.normalize(x, dim=1)``: unit vectors (eps 1e-12 keeps a zero vector at zero)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, dim=1)


def make_embedding_head(head: HeadConfig, in_channels: int) -> nn.Sequential:
    """Pool the bottleneck -> FC + ReLU layers -> ``EmbeddingHead`` Linear -> [L2 norm].

    Only GeM owns a parameter; avg / max pools add no keys.
    """
    layers: OrderedDict[str, nn.Module] = OrderedDict()
    if head.pool == "gem":
        layers["pre_embedding_pool"] = GeM()
    elif head.pool == "max":
        layers["pre_embedding_pool"] = nn.AdaptiveMaxPool2d(1)
    else:
        layers["pre_embedding_pool"] = nn.AdaptiveAvgPool2d(1)
    layers["pre_embedding_flatten"] = nn.Flatten(start_dim=1)
    width = _add_fc_layers(layers, "pre_embedding", in_channels, head)
    layers["EmbeddingHead"] = nn.Linear(width, head.channels)
    if head.normalize:
        layers["l2norm"] = L2Norm()
    return nn.Sequential(layers)
