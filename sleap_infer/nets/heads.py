"""Output heads with sleap-nn's module names (``head_layers.{i}.{HeadName}.0``)."""

from __future__ import annotations

from collections import OrderedDict

from torch import nn

from sleap_infer.vocab.config import HeadConfig


def make_spatial_head(head: HeadConfig, in_channels: int) -> nn.Sequential:
    """A 1x1 conv (+ sigmoid for class maps) wrapped the way sleap-nn nests it."""
    act: nn.Module = nn.Sigmoid() if head.activation == "sigmoid" else nn.Identity()
    conv = nn.Conv2d(in_channels, head.channels, kernel_size=1, padding="same")
    return nn.Sequential(OrderedDict({head.name: nn.Sequential(conv, act)}))


def make_class_vectors_head(head: HeadConfig, in_channels: int) -> nn.Sequential:
    """Global max pool -> MLP -> softmax over classes (outputs probabilities)."""
    layers: OrderedDict[str, nn.Module] = OrderedDict()
    if head.global_pool:
        layers["pre_classification_global_pool"] = nn.AdaptiveMaxPool2d(1)
    layers["pre_classification_flatten"] = nn.Flatten(start_dim=1)
    width = in_channels
    for i in range(head.num_fc_layers):
        layers[f"pre_classification{i}_fc"] = nn.Linear(width, head.num_fc_units)
        layers[f"pre_classification{i}_relu"] = nn.ReLU()
        width = head.num_fc_units
    layers["ClassVectorsHead"] = nn.Linear(width, head.channels)
    layers["softmax"] = nn.Softmax(dim=-1)
    return nn.Sequential(layers)
