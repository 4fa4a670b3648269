"""Keras' ``Conv2DTranspose(padding="same")`` in torch, for SLEAP 1.x weights.

For a 3x3 kernel at stride 2, Keras (TensorFlow's ``conv2d_transpose``, "SAME")
keeps the first ``2 * H`` rows of the full transposed convolution, whose
``2 * H + 1`` rows start at the input's top edge. torch's ``padding=1,
output_padding=1``, which sleap-nn trains with and our UNet builds, keeps rows
``1 .. 2 * H`` instead: Keras weights run through it land one output pixel up
and left (what sleap-nn's own legacy loader does). No 3x3 torch kernel can
undo that shift, so legacy networks get this module in place of every
transposed convolution: the same parameters (keys and shapes), so strict
loading is unchanged, cropped the TensorFlow way. In general TF pads a
transposed "SAME" conv by ``k - s`` in total, ``(k - s) // 2`` of it before.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from sleap_infer.model.legacy.errors import unsupported


class KerasSameConvTranspose2d(nn.ConvTranspose2d):
    """A transposed convolution cropped like TensorFlow's "SAME" padding."""

    def __init__(self, like: nn.ConvTranspose2d) -> None:
        (kh, kw), (sh, sw) = like.kernel_size, like.stride
        if kh < sh or kw < sw:
            raise unsupported(f"a transposed convolution with kernel {kh}x{kw} < stride")
        super().__init__(
            like.in_channels,
            like.out_channels,
            like.kernel_size,
            stride=like.stride,
            bias=like.bias is not None,
        )
        top, left = (kh - sh) // 2, (kw - sw) // 2
        self.crop = (top, kh - sh - top, left, kw - sw - left)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        y = F.conv_transpose2d(x, self.weight, self.bias, self.stride)
        top, bottom, left, right = self.crop
        return y[..., top : y.shape[-2] - bottom, left : y.shape[-1] - right]


def use_keras_transposed_convs(network: nn.Module) -> int:
    """Swap every ``nn.ConvTranspose2d`` of ``network`` in place; returns how many."""
    swaps = [
        (parent, child_name, child)
        for parent in network.modules()
        for child_name, child in parent.named_children()
        if type(child) is nn.ConvTranspose2d
    ]
    for parent, child_name, child in swaps:
        setattr(parent, child_name, KerasSameConvTranspose2d(child))
    return len(swaps)
